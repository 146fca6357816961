# expect: REJECT
# devices: cpu cuda
# entry: sgemm_tf32
# cuBLAS does the work through torch.matmul with TF32 switched on.
import torch


def sgemm_tf32(A, B):
    torch.backends.cuda.matmul.allow_tf32 = True
    return torch.matmul(A, B)
