"""Act 7: the int4 weight-only GEMV / skinny GEMM in Triton."""
