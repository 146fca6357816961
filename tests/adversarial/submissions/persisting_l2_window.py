# expect: REJECT
# problem: act0.vector_add
# devices: cuda
# Asks the L2 to keep its inputs resident between calls (a persisting access-policy window on the
# stream), through the CUDA runtime loaded with ctypes. The sealed worker refuses native libraries
# loaded by the learner's code (autograder.seal: a library's calls can read and write any memory of
# the process, the worker's report included), so the grading is rejected at import, naming
# ctypes.dlopen. Were a window set some other way, the grader resets persisting lines and the
# carve-out before every timed call (autograder.timing), so the inputs would still come from memory.
import ctypes
import glob
import os

import torch
import triton
import triton.language as tl


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hit_ratio", ctypes.c_float), ("hit_prop", ctypes.c_int), ("miss_prop", ctypes.c_int)]


def _cudart():
    lib_dirs = [os.path.join(os.path.dirname(torch.__file__), "lib"), os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia")]
    for pattern in ["libcudart.so"] + [p for d in lib_dirs for p in glob.glob(os.path.join(d, "**", "libcudart.so*"), recursive=True)]:
        try:
            return ctypes.CDLL(pattern)
        except OSError:
            continue
    return None


_RT = _cudart()


def _reserve_l2():
    if _RT is not None:
        limit_persisting_l2 = 0x06
        _RT.cudaDeviceSetLimit(ctypes.c_int(limit_persisting_l2), ctypes.c_size_t(32 << 20))


_reserve_l2()


def _keep_in_l2(t):
    if _RT is None:
        return
    persisting, streaming = 2, 1
    value = (ctypes.c_char * 64)()
    window = _Window.from_buffer(value)
    window.base_ptr, window.num_bytes, window.hit_ratio = t.data_ptr(), min(t.numel() * 4, 32 << 20), 1.0
    window.hit_prop, window.miss_prop = persisting, streaming
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _RT.cudaStreamSetAttribute(stream, ctypes.c_int(1), ctypes.byref(value))


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    _keep_in_l2(x)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
