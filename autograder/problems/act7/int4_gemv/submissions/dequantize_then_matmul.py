# expect: REJECT
# devices: cpu cuda
# The weights dequantized to bf16 with PyTorch, then cuBLAS: right answers, no kernel of the learner's, and the bf16 weight written out in full.
import torch


def int4_gemv(x, w_packed, scale, zero):
    q = torch.stack([w_packed & 0xF, w_packed >> 4], dim=2).reshape(w_packed.shape[0], -1).float()
    w = ((q - zero.float().repeat_interleave(128, dim=1)) * scale.float().repeat_interleave(128, dim=1)).to(torch.bfloat16)
    return torch.matmul(x, w.t())
