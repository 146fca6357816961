"""Act 4: FlashAttention's forward pass in Triton, with the causal mask."""
