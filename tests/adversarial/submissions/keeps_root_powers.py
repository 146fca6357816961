# expect: PASS
# problem: act0.vector_add
# devices: cpu cuda
# Root (Colab's user) may lock the GPU's clocks low or lower its power limit (nvidia-smi -lgc / -pl,
# NVML through ctypes) at its last timed call: the setting outlives the process, into the library's
# timing once it is gone, and the ratio rises. The NVIDIA driver lets only a caller holding
# CAP_SYS_ADMIN do it; the worker gives up every capability before this file loads
# (autograder.osguard.drop_capabilities), from the bounding set too, so no program it starts regains
# one. The GPU machines' settings may not be changed, so this submission reads the capability sets
# the driver would test and answers wrongly (FAIL) wherever it holds one: the kernel must PASS.
import torch
import triton
import triton.language as tl


def _held() -> int:
    with open("/proc/self/status") as status:
        # What it holds or could pass on; an ordinary user's bounding set is full and gives nothing.
        return sum(int(line.split()[1], 16) for line in status if line.startswith(("CapEff", "CapPrm", "CapInh", "CapAmb")))


POWERS = _held()


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out + 1.0 if POWERS else out
