"""Act 4, SGEMM step 8: double buffering."""
