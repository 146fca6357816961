"""Act 3: bias + GELU fused into one Triton kernel."""
