"""Act 4: the Triton matmul, graded in float16."""
