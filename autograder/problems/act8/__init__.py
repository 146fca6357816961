"""Act 8: megakernels. The bubbles of an op-by-op decode step, measured; one transformer layer fused
into a few launches; the whole decode step of the tiny model in one persistent launch."""
