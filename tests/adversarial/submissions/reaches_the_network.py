# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# The host's services act with more authority than the worker: a Jupyter server opens terminals
# for whoever holds its token (in a runtime file any process of the user can read), Docker's socket
# starts containers, a GPU host engine sets clocks. Through any of them the worker's code could do
# what its sandbox refuses, outside it. The worker's system call filter refuses a new socket and any
# connection (autograder.seccomp.NETWORK; NCCL's ranks keep the loopback network). This submission
# opens one of each kind a service listens on and answers wrongly (FAIL) wherever one opens: the
# kernel must PASS.
import socket

import torch
import triton
import triton.language as tl


def _opened() -> int:
    opened = 0
    for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
        try:
            socket.socket(family, socket.SOCK_STREAM).close()
            opened += 1
        except OSError:
            pass
    return opened


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out + 1.0 if _opened() else out
