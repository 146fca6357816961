"""Act 4, SGEMM step 10: the same product on TF32 tensor cores (Triton)."""
