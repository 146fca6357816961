"""Act 4: FlashAttention's backward pass in Triton."""
