# expect: REJECT
# devices: cpu cuda
# torch._scaled_mm (cuBLASLt's fp8 GEMM, the baseline itself) does the work.
import torch


def fp8_matmul(a, b, scale_a, scale_b):
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        return torch._scaled_mm(a, b.t(), scale_a=scale_a.reshape(()), scale_b=scale_b.reshape(()), out_dtype=torch.bfloat16)
    return torch._scaled_mm(a, b.t(), scale_a=scale_a.reshape(-1, 1), scale_b=scale_b.reshape(1, -1), out_dtype=torch.bfloat16)
