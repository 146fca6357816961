"""Act 4: writing the kernels. The SGEMM progression in CUDA C through CuPy RawKernels (nine steps,
one folder each) and its last step on TF32 tensor cores in Triton, then Triton: a fused softmax, a matmul in bfloat16 and float16, and FlashAttention's
forward pass. What the matrix products share is in ``matmul``.

Each Triton kernel avoids materialising a large intermediate in HBM. The softmax reads each row once
and writes it once (graded as a fraction of copy bandwidth); the matmul keeps tiles of A and B on
chip (graded against cuBLAS); attention never builds the S x S scores (graded against PyTorch's SDPA
flash backend, with cuDNN's attention timed beside it).
"""
