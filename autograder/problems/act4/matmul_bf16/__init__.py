"""Act 4: the Triton matmul, graded in bfloat16."""
