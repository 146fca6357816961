"""Act 6: serving. Its exact serving arithmetic (exact.py), the paged block manager graded through traces
of calls (block_manager.py) and the paged-attention decode kernel (paged_attention/)."""
