"""Act 6: serving. Its serving arithmetic (serving_math.py, graded by its exact folders), the paged block manager graded through traces
of calls (block_manager.py), the continuous-batching scheduler graded by carrying out its plans (scheduler.py, its engine in
batching_engine.py) and the paged-attention decode kernel (paged_attention/)."""
