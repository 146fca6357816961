"""Tuning record for Act 1's reference kernels (CuPy RawKernels), timed with the grader's own
protocol (fresh L2, synchronised end event) against this GPU's copy bandwidth measured here the way
autograder/ceilings.py measures it, and against the library timed in the same run.

- 2-D indexing (scale_shift_2d): block width and rows per thread.
- transpose: tile size, threads per block (rows of the tile per pass), padding on/off, and the
  naive kernel; torch's x.t().contiguous() as the baseline.
- reduction: threads per block, float4 loads in flight per thread (UNROLL), waves of blocks, and
  how the block partials are combined (second pass, one atomicAdd per block, last block done);
  cupy.sum as the baseline.
- finally the solution notebooks' own functions, host wrapper included.

Every variant is checked against a float64 reference on an awkward shape first (max error shown).
Run on a GPU: python tests/gpu/tune_act1.py (about a minute).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import cupy as cp
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

REPEATS = 15


# --- timing -------------------------------------------------------------------------------------


def measure_copy_bandwidth() -> float:
    """As autograder/ceilings.py: a device-to-device copy of up to 1 GB, bytes read plus written."""
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(1 << 30, free // 8)
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(30):
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return 2 * src.numel() * 4 / (statistics.median(times) * 1e-3)


class FlushTimer:
    """CUDA events around one call, L2 flushed before each (used when autograder.timing is missing)."""

    def __init__(self) -> None:
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        self.sync_overhead_ms = 0.0

    def time_call(self, call):
        self.flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end), out


def make_timer():
    try:
        from autograder import timing

        return timing.Timer(), "autograder.timing.Timer (the grader's protocol)"
    except Exception as exc:  # noqa: BLE001 -- fall back to a plain flushed-event timer
        return FlushTimer(), f"CUDA events with an L2 flush (autograder.timing unavailable: {exc})"


def median_ms(timer, call) -> float:
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    return statistics.median(timer.time_call(call)[0] for _ in range(REPEATS))


def line(name: str, ms: float, moved: float, copy_bw: float, library_ms: float | None, error: float | None = None, mark: str = "") -> None:
    ratio = f"{library_ms / ms:5.2f}x lib" if library_ms else " " * 9
    err = f"  max err {error:.2e}" if error is not None else ""
    print(f"    {name:<46} {ms * 1e3:9.1f} us {moved / (ms * 1e-3) / 1e9:8,.0f} GB/s {moved / (ms * 1e-3) / copy_bw:6.1%} of copy  {ratio}{err}{mark}")


# --- 1. 2-D indexing -----------------------------------------------------------------------------

INDEXING_SOURCE = r"""
extern "C" __global__
void scale_shift_2d_kernel(const float* __restrict__ x, const float* __restrict__ row_scale,
                           const float* __restrict__ col_shift, float* __restrict__ out,
                           const int rows, const int cols, const long long pitch) {
    const int col = blockIdx.x * TILE_COLS + threadIdx.x;
    const int row0 = blockIdx.y * (BLOCK_ROWS * ROWS_PER_THREAD) + threadIdx.y;
    if (col >= cols) return;
    const float shift = col_shift[col];
    float v[ROWS_PER_THREAD];
    #pragma unroll
    for (int k = 0; k < ROWS_PER_THREAD; ++k) {
        const int row = row0 + k * BLOCK_ROWS;
        v[k] = row < rows ? row_scale[row] * x[row * pitch + col] + shift : 0.0f;
    }
    #pragma unroll
    for (int k = 0; k < ROWS_PER_THREAD; ++k) {
        const int row = row0 + k * BLOCK_ROWS;
        if (row < rows) out[(long long)row * cols + col] = v[k];
    }
}
"""


def indexing_inputs(rows, cols, pitch):
    base = torch.randn(rows, pitch, device="cuda")
    return base[:, :cols], torch.randn(rows, device="cuda"), torch.randn(cols, device="cuda")


def tune_indexing(timer, copy_bw) -> None:
    print("\n== act1.indexing_2d: out = row_scale[:, None] * x + col_shift[None, :], x with a row pitch")
    variants = [(32, 8, 1), (32, 8, 4), (32, 8, 8), (32, 4, 8), (64, 4, 4), (128, 2, 4), (128, 4, 2)]
    kernels = {}
    for tc, br, rpt in variants:
        opts = (f"-DTILE_COLS={tc}", f"-DBLOCK_ROWS={br}", f"-DROWS_PER_THREAD={rpt}")
        kernels[(tc, br, rpt)] = cp.RawKernel(INDEXING_SOURCE, "scale_shift_2d_kernel", options=opts)

    def run(key, x, s, b):
        tc, br, rpt = key
        rows, cols = x.shape
        out = torch.empty(rows, cols, device="cuda")
        grid = ((cols + tc - 1) // tc, (rows + br * rpt - 1) // (br * rpt))
        kernels[key](grid, (tc, br), (cp.from_dlpack(x), cp.from_dlpack(s), cp.from_dlpack(b), cp.from_dlpack(out), cp.int32(rows), cp.int32(cols), cp.int64(x.stride(0))))
        return out

    x, s, b = indexing_inputs(1823, 781, 800)
    ref = s.double()[:, None] * x.double() + b.double()[None, :]
    errors = {key: float((run(key, x, s, b).double() - ref).abs().max()) for key in variants}
    for rows, cols, pitch in ((8192, 8192, 8192), (16384, 8000, 8192)):
        x, s, b = indexing_inputs(rows, cols, pitch)
        moved = 4.0 * (2 * rows * cols + rows + cols)
        print(f"  {rows}x{cols} (pitch {pitch})")
        lib = median_ms(timer, lambda x=x, s=s, b=b: torch.addcmul(b[None, :], s[:, None], x))
        line("torch.addcmul", lib, moved, copy_bw, None)
        for key in variants:
            mark = "  <- solution" if key == (32, 8, 4) else ""
            line(f"block {key[0]}x{key[1]}, {key[2]} rows/thread", median_ms(timer, lambda k=key, x=x, s=s, b=b: run(k, x, s, b)), moved, copy_bw, lib, errors[key], mark)


# --- 2. transpose --------------------------------------------------------------------------------

TRANSPOSE_SOURCE = r"""
extern "C" __global__
void transpose_kernel(const float* __restrict__ x, float* __restrict__ out, const int rows, const int cols) {
    __shared__ float tile[TILE_DIM][TILE_DIM + PAD];
    const int col = blockIdx.x * TILE_DIM + threadIdx.x;
    const int row = blockIdx.y * TILE_DIM + threadIdx.y;
    #pragma unroll
    for (int k = 0; k < TILE_DIM; k += BLOCK_ROWS)
        if (row + k < rows && col < cols) tile[threadIdx.y + k][threadIdx.x] = x[(long long)(row + k) * cols + col];
    __syncthreads();
    const int out_col = blockIdx.y * TILE_DIM + threadIdx.x;
    const int out_row = blockIdx.x * TILE_DIM + threadIdx.y;
    #pragma unroll
    for (int k = 0; k < TILE_DIM; k += BLOCK_ROWS)
        if (out_row + k < cols && out_col < rows) out[(long long)(out_row + k) * rows + out_col] = tile[threadIdx.x][threadIdx.y + k];
}

// Coalesced reads, strided writes: a warp's 32 stores land `rows` floats apart.
extern "C" __global__
void transpose_naive_kernel(const float* __restrict__ x, float* __restrict__ out, const int rows, const int cols) {
    const int col = blockIdx.x * TILE_DIM + threadIdx.x;
    const int row = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int k = 0; k < TILE_DIM; k += BLOCK_ROWS)
        if (row + k < rows && col < cols) out[(long long)col * rows + row + k] = x[(long long)(row + k) * cols + col];
}
"""


def tune_transpose(timer, copy_bw) -> None:
    print("\n== act1.transpose: out = x.T, contiguous")
    variants = [(32, 8, 1), (32, 8, 0), (32, 4, 1), (32, 16, 1), (32, 32, 1), (64, 8, 1), (64, 16, 1), (64, 4, 1), (16, 16, 1)]
    kernels = {}
    for tile, block_rows, pad in variants:
        module = cp.RawModule(code=TRANSPOSE_SOURCE, options=(f"-DTILE_DIM={tile}", f"-DBLOCK_ROWS={block_rows}", f"-DPAD={pad}"))
        kernels[(tile, block_rows, pad)] = module
    naive_key = (32, 8, 1)

    def run(key, x, name="transpose_kernel"):
        tile, block_rows, _ = key
        rows, cols = x.shape
        out = torch.empty(cols, rows, device="cuda")
        grid = ((cols + tile - 1) // tile, (rows + tile - 1) // tile)
        kernels[key].get_function(name)(grid, (tile, block_rows), (cp.from_dlpack(x), cp.from_dlpack(out), cp.int32(rows), cp.int32(cols)))
        return out

    x = torch.randn(1823, 781, device="cuda")
    errors = {key: float((run(key, x) - x.t()).abs().max()) for key in variants}
    naive_error = float((run(naive_key, x, "transpose_naive_kernel") - x.t()).abs().max())
    for rows, cols in ((8192, 8192), (16384, 8192)):
        x = torch.randn(rows, cols, device="cuda")
        moved = 8.0 * rows * cols
        print(f"  {rows}x{cols}")
        lib = median_ms(timer, lambda x=x: x.t().contiguous())
        line("torch x.t().contiguous()", lib, moved, copy_bw, None)
        line("naive (strided writes), 32x8 threads", median_ms(timer, lambda x=x: run(naive_key, x, "transpose_naive_kernel")), moved, copy_bw, lib, naive_error)
        for key in variants:
            tile, block_rows, pad = key
            mark = "  <- solution" if key == (64, 4, 1) else ""
            name = f"tile {tile}x{tile}, {tile}x{block_rows} threads, {'padded' if pad else 'no padding'}"
            line(name, median_ms(timer, lambda k=key, x=x: run(k, x)), moved, copy_bw, lib, errors[key], mark)


# --- 3. reduction --------------------------------------------------------------------------------

REDUCTION_SOURCE = r"""
__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_totals[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? warp_totals[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

__device__ __forceinline__ float thread_sum(const float* __restrict__ x, const long long n, const long long n_vec4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const long long stride = (long long)gridDim.x * THREADS;
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (; i + (UNROLL - 1) * stride < n_vec4; i += UNROLL * stride) {
        float4 v[UNROLL];
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = x4[i + u * stride];
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) { acc.x += v[u].x; acc.y += v[u].y; acc.z += v[u].z; acc.w += v[u].w; }
    }
    for (; i < n_vec4; i += stride) { const float4 v = x4[i]; acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w; }
    for (long long j = 4 * n_vec4 + (long long)blockIdx.x * THREADS + threadIdx.x; j < n; j += stride) acc.x += x[j];
    return (acc.x + acc.y) + (acc.z + acc.w);
}

extern "C" __global__ __launch_bounds__(THREADS, MIN_BLOCKS)
void sum_partials_kernel(const float* __restrict__ x, float* __restrict__ partials, const long long n, const long long n_vec4) {
    const float total = block_sum(thread_sum(x, n, n_vec4));
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ __launch_bounds__(1024)
void sum_final_kernel(const float* __restrict__ partials, float* __restrict__ out, const int count) {
    float v = 0.0f;
    for (int i = threadIdx.x; i < count; i += blockDim.x) v += partials[i];
    v = block_sum(v);
    if (threadIdx.x == 0) out[0] = v;
}

extern "C" __global__ __launch_bounds__(THREADS, MIN_BLOCKS)
void sum_atomic_kernel(const float* __restrict__ x, float* __restrict__ out, const long long n, const long long n_vec4) {
    // out must be zeroed before the launch; float atomics make the order (and the rounding) vary.
    const float total = block_sum(thread_sum(x, n, n_vec4));
    if (threadIdx.x == 0) atomicAdd(out, total);
}

__device__ unsigned int retired_blocks = 0;

extern "C" __global__ __launch_bounds__(THREADS, MIN_BLOCKS)
void sum_last_block_kernel(const float* __restrict__ x, float* __restrict__ partials, float* __restrict__ out, const long long n, const long long n_vec4) {
    // One launch: every block writes its partial; the last block to finish adds them all.
    __shared__ bool is_last;
    const float total = block_sum(thread_sum(x, n, n_vec4));
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        is_last = atomicInc(&retired_blocks, gridDim.x - 1) == gridDim.x - 1;  // wraps to 0 for the next launch
    }
    __syncthreads();
    if (is_last) {
        float v = 0.0f;
        for (int i = threadIdx.x; i < gridDim.x; i += THREADS) v += __ldcg(partials + i);
        v = block_sum(v);
        if (threadIdx.x == 0) out[0] = v;
    }
}
"""


def tune_reduction(timer, copy_bw, sms: int, threads_per_sm: int) -> None:
    print("\n== act1.reduction: sum of a float32 vector (nonzero mean), cupy.sum as the library")
    configs = [(threads, unroll) for threads in (256, 512, 1024) for unroll in (2, 4, 8)]
    modules = {}
    for threads, unroll in configs:
        opts = (f"-DTHREADS={threads}", f"-DUNROLL={unroll}", f"-DMIN_BLOCKS={max(1, threads_per_sm // threads)}")
        modules[(threads, unroll)] = cp.RawModule(code=REDUCTION_SOURCE, options=opts)

    def runner(threads, unroll, waves, finish):
        module = modules[(threads, unroll)]
        partials_k, final_k = module.get_function("sum_partials_kernel"), module.get_function("sum_final_kernel")
        atomic_k, last_k = module.get_function("sum_atomic_kernel"), module.get_function("sum_last_block_kernel")

        def run(x):
            n = x.size
            n_vec4 = n // 4 if x.data.ptr % 16 == 0 else 0
            blocks = max(1, min(waves * sms * (threads_per_sm // threads), -(-n // (4 * threads))))
            args = (cp.int64(n), cp.int64(n_vec4))
            if finish == "atomic":
                out = cp.zeros((), dtype=cp.float32)
                atomic_k((blocks,), (threads,), (x, out, *args))
                return out
            out = cp.empty((), dtype=cp.float32)
            partials = cp.empty(blocks, dtype=cp.float32)
            if finish == "two-pass":
                partials_k((blocks,), (threads,), (x, partials, *args))
                final_k((1,), (1024,), (partials, out, cp.int32(blocks)))
            else:
                last_k((blocks,), (threads,), (x, partials, out, *args))
            return out

        return run

    variants = [(t, u, w, f) for t, u in configs for w in (1, 2) for f in ("two-pass", "atomic", "last-block")]
    runs = {v: runner(*v) for v in variants}
    # Correctness on an awkward length, against float64, with cupy.sum's own error for scale.
    x = cp.random.standard_normal(1_000_003, dtype=cp.float32) + 0.7
    exact = float(x.astype(cp.float64).sum())
    print(f"  n=1,000,003: cupy.sum error {abs(float(cp.sum(x)) - exact):.3e} (sum {exact:.6e})")
    errors = {v: abs(float(runs[v](x)) - exact) for v in variants}
    for log_n in (26, 27, 28):
        n = 1 << log_n
        x = cp.random.standard_normal(n, dtype=cp.float32) + 0.7
        exact = float(x.astype(cp.float64).sum())
        moved = 4.0 * n
        lib_err = abs(float(cp.sum(x)) - exact)
        print(f"  n=2^{log_n}: cupy.sum error {lib_err:.3e}, the grader allows about {4 * max(lib_err, 1.19e-7 * abs(exact)) + 4 * 1.19e-7 * abs(exact):.3e}")
        lib = median_ms(timer, lambda x=x: cp.sum(x))
        line("cupy.sum", lib, moved, copy_bw, None)
        for v in variants:
            err = abs(float(runs[v](x)) - exact)
            mark = "  <- solution" if v == (1024, 4, 1, "last-block") else ""
            line(f"{v[0]} thr, unroll {v[1]}, {v[2]} wave(s), {v[3]}", median_ms(timer, lambda r=runs[v], x=x: r(x)), moved, copy_bw, lib, max(err, errors[v]), mark)


# --- 4. the solution notebooks' functions ---------------------------------------------------------


def solution_namespace(notebook: str) -> dict:
    cells = json.loads((ROOT / "solutions" / "act1-hierarchy" / notebook).read_text())["cells"]
    code = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code" and c["metadata"]["nbgrader"].get("solution"))
    namespace: dict = {}
    exec(compile(code, notebook, "exec"), namespace)  # noqa: S102 -- the project's own solution cells
    return namespace


def tune_solutions(timer, copy_bw) -> None:
    print("\n== the solution notebooks' functions, host wrapper and allocation included")
    scale_shift_2d = solution_namespace("indexing_2d.ipynb")["scale_shift_2d"]
    transpose = solution_namespace("transpose.ipynb")["transpose"]
    reduce_sum = solution_namespace("reduction.ipynb")["reduce_sum"]
    for rows, cols, pitch in ((8192, 8192, 8192), (16384, 8000, 8192)):
        xt, st, bt = indexing_inputs(rows, cols, pitch)
        x, s, b = cp.from_dlpack(xt), cp.from_dlpack(st), cp.from_dlpack(bt)
        lib = median_ms(timer, lambda xt=xt, st=st, bt=bt: torch.addcmul(bt[None, :], st[:, None], xt))
        err = float(cp.abs(scale_shift_2d(x, s, b).astype(cp.float64) - (s.astype(cp.float64)[:, None] * x + b[None, :])).max())
        line(f"scale_shift_2d {rows}x{cols} pitch {pitch}", median_ms(timer, lambda x=x, s=s, b=b: scale_shift_2d(x, s, b)), 4.0 * (2 * rows * cols + rows + cols), copy_bw, lib, err)
    for rows, cols in ((8192, 8192), (16384, 8192)):
        xt = torch.randn(rows, cols, device="cuda")
        x = cp.from_dlpack(xt)
        lib = median_ms(timer, lambda xt=xt: xt.t().contiguous())
        err = float(cp.abs(transpose(x) - x.T).max())
        line(f"transpose {rows}x{cols}", median_ms(timer, lambda x=x: transpose(x)), 8.0 * rows * cols, copy_bw, lib, err)
    for log_n in (26, 27, 28):
        x = cp.random.standard_normal(1 << log_n, dtype=cp.float32) - 0.4
        exact = float(x.astype(cp.float64).sum())
        lib = median_ms(timer, lambda x=x: cp.sum(x))
        line(f"reduce_sum 2^{log_n}", median_ms(timer, lambda x=x: reduce_sum(x)), 4.0 * x.size, copy_bw, lib, abs(float(reduce_sum(x)) - exact))


def main() -> None:
    started = time.perf_counter()
    props = torch.cuda.get_device_properties(0)
    print(f"# Act 1 tuning sweep: {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size / 2**20:.0f} MiB; torch {torch.__version__}, CuPy {cp.__version__}")
    copy_bw = measure_copy_bandwidth()
    timer, how = make_timer()
    print(f"copy bandwidth {copy_bw / 1e9:,.0f} GB/s (device-to-device copy, read + write); timing: {how}; median of {REPEATS}")
    print("columns: time, GB/s (minimum traffic), fraction of copy bandwidth, library time / this time, max error vs float64")
    tune_indexing(timer, copy_bw)
    tune_transpose(timer, copy_bw)
    tune_reduction(timer, copy_bw, props.multi_processor_count, getattr(props, "max_threads_per_multi_processor", 2048))
    tune_solutions(timer, copy_bw)
    print(f"\n# done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
