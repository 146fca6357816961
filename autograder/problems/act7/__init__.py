"""Act 7: quantisation. Its exact exercises (quantize.py) and its kernel problem folders (int4_gemv, fp8_matmul)."""
