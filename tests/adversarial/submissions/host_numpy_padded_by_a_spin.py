# expect: REJECT
# problem: act0.vector_add
# devices: cpu cuda
# says: never read x, y
# NumPy adds on the host and a kernel of its own copies the sum, as host_numpy_then_copy does, and a
# second kernel of its own spins for longer than the host's arithmetic took, so that its kernels
# account for more than half of every timed call's GPU time. It gives up the speed points to keep
# the correctness ones. On a CPU its kernels never read x and y (numpy_then_touch_inputs adds those
# loads, and the replay on other values stores the old answer again). On a GPU nothing yet follows
# the data from the inputs through the kernels: the function waits for the GPU (x.cpu()) inside the
# timed call, reads the inputs the judge wrote after the window's gate, and the spin satisfies the
# accounting. Not yet graded on a GPU, where the verdict is likely wrong until the grader refuses a
# timed call that waits for its own GPU work.
import time

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def spin_kernel(scratch_ptr, iterations):
    value = tl.load(scratch_ptr)
    for _ in range(iterations):
        value = value * 0.999999 + 1e-6
    tl.store(scratch_ptr, value)


_ns_per_iteration = []


def _spin_iterations(seconds: float, device) -> int:
    if device.type != "cuda":
        return 1
    if not _ns_per_iteration:
        scratch = torch.zeros(1, device=device)
        spin_kernel[(1,)](scratch, 10)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        spin_kernel[(1,)](scratch, 1_000_000)
        end.record()
        end.synchronize()
        _ns_per_iteration.append(start.elapsed_time(end) * 1e6 / 1_000_000)
    # Half again as long as the host's work: the kernels then account for three fifths of the call.
    return int(1.5 * seconds * 1e9 / _ns_per_iteration[0])


def vector_add(x, y):
    started = time.perf_counter()
    answer = torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device)
    host_seconds = time.perf_counter() - started
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](answer, out, x.numel(), BLOCK_SIZE=1024)
    spin_kernel[(1,)](torch.zeros(1, device=x.device), _spin_iterations(host_seconds, x.device))
    return out
