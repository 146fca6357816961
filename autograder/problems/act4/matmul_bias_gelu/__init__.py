"""Act 4: the Triton matmul with its epilogue fused, bias + GELU (tanh approximation) in bfloat16."""
