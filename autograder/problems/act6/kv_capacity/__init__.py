"""Act 6, exact answer: KV-cache capacity: bytes per token, blocks, the largest batch."""
