"""Act 8: one decode layer of the tiny transformer fused into a few Triton launches."""
