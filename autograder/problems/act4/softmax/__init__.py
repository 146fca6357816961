"""Act 4: a fused row softmax in Triton."""
