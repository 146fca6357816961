"""Act 7, exact answer: int8 per-channel symmetric quantisation."""
