"""Act 4: FlashAttention's forward pass in Triton."""
