# expect: FAIL
# problem: act0.vector_add
# devices: cuda
# alone: yes
# Remembers answers by input address: correct the first time, stale once the values change in place.
# Alone: it keeps every output it returned, so beside other gradings (three a GPU in a verdict shard,
# each planning its windows on half the free memory) it ran out of memory on an H200 (ERROR, not FAIL).
import torch
import triton
import triton.language as tl

_cache = {}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x, y):
    key = (x.data_ptr(), y.data_ptr(), x.numel())
    if key not in _cache:
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
        _cache[key] = out
    return _cache[key].clone()
