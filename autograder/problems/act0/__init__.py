"""Act 0: two memory-bound kernels whose only job is to move bytes at the speed of the memory."""
