"""Tuning record for Act 0's reference kernels: block sizes and warps for the Triton vector add,
and thread shapes for the CuPy SAXPY, timed with the grader's own protocol (fresh L2, synchronised
end event) against this GPU's copy bandwidth. Run on a GPU: python tests/gpu/tune_act0.py"""

from __future__ import annotations

import statistics

import cupy as cp
import torch
import triton
import triton.language as tl

from autograder import ceilings, timing


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


SAXPY_VARIANTS = r"""
extern "C" __global__ void scalar(float a, const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void vec4(float a, const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n4 = n / 4;
    if (i < n4) {
        float4 xv = reinterpret_cast<const float4*>(x)[i], yv = reinterpret_cast<const float4*>(y)[i], r;
        r.x = a * xv.x + yv.x; r.y = a * xv.y + yv.y; r.z = a * xv.z + yv.z; r.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(out)[i] = r;
    }
}
extern "C" __global__ void vec4x2(float a, const float* x, const float* y, float* out, long long n) {
    // Two float4 per thread, a block apart, both loads issued before either store.
    long long n4 = n / 4;
    long long i = (long long)blockIdx.x * blockDim.x * 2 + threadIdx.x;
    long long j = i + blockDim.x;
    float4 x0 = make_float4(0, 0, 0, 0), y0 = x0, x1 = x0, y1 = x0;
    if (i < n4) { x0 = reinterpret_cast<const float4*>(x)[i]; y0 = reinterpret_cast<const float4*>(y)[i]; }
    if (j < n4) { x1 = reinterpret_cast<const float4*>(x)[j]; y1 = reinterpret_cast<const float4*>(y)[j]; }
    if (i < n4) reinterpret_cast<float4*>(out)[i] = make_float4(a * x0.x + y0.x, a * x0.y + y0.y, a * x0.z + y0.z, a * x0.w + y0.w);
    if (j < n4) reinterpret_cast<float4*>(out)[j] = make_float4(a * x1.x + y1.x, a * x1.y + y1.y, a * x1.z + y1.z, a * x1.w + y1.w);
}
"""


def _report(timer, copy_bw: float, n: int, name: str, call) -> None:
    for _ in range(3):
        call()
    ms = statistics.median(timer.time_call(call)[0] for _ in range(40))
    print(f"  n=2^{n.bit_length() - 1} {name:<28} {ms * 1e3:8.1f} us {12 * n / ms / 1e6:8,.0f} GB/s {12 * n / (ms * 1e-3) / copy_bw:6.1%}")


def tune_size(timer, copy_bw: float, n: int) -> None:
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    _report(timer, copy_bw, n, "torch.add", lambda: torch.add(x, y, out=out))
    for block in (1024, 2048, 4096, 8192):
        for warps in (4, 8, 16):
            grid = (triton.cdiv(n, block),)
            _report(timer, copy_bw, n, f"triton BLOCK={block} warps={warps}", lambda g=grid, b=block, w=warps: add_kernel[g](x, y, out, n, BLOCK_SIZE=b, num_warps=w))
    module = cp.RawModule(code=SAXPY_VARIANTS)
    args = (cp.float32(2.5), cp.from_dlpack(x), cp.from_dlpack(y), cp.from_dlpack(out), cp.int64(n))
    for threads in (128, 256, 512, 1024):
        for name, per_thread in (("scalar", 1), ("vec4", 4), ("vec4x2", 8)):
            kernel = module.get_function(name)
            blocks = (-(-n // (per_thread * threads)),)
            _report(timer, copy_bw, n, f"cupy {name} t={threads}", lambda k=kernel, b=blocks, t=threads: k(b, (t,), args))


def main() -> None:
    copy_bw = ceilings.copy_bandwidth(ceilings.load())
    timer = timing.Timer()
    print(f"copy bandwidth {copy_bw / 1e9:,.0f} GB/s; synchronisation cost {timer.sync_overhead_ms * 1e3:.1f} us")
    for n in (1 << 25, 1 << 27):
        tune_size(timer, copy_bw, n)


if __name__ == "__main__":
    main()
