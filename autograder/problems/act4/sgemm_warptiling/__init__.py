"""Act 4, SGEMM step 9: warp tiling and autotuning."""
