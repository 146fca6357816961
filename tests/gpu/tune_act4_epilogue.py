"""Issue 14: what the fused bias + GELU epilogue costs the Triton matmul, one way of computing it at a time.

The reference solution (solutions/act4-kernels/matmul_bias_gelu.ipynb) was a program per tile, the
kernel ``epilogue_kernel`` below with ``exp_div``, until ``persistent`` below replaced it. It read 0.89x
cuBLASLt's GELU_BIAS epilogue at 4096^3 and 0.90x at 8192^3 on an H100 (results/runs/2026-11-26-2xh100-
seventh-session/), where the same kernel without the epilogue (act4.matmul_bf16) reads 0.95x and 0.98x.
Its epilogue runs after the K loop while the tensor cores wait: per output an exp (ex2 on the
special-function unit, with its scaling) and a division, which Triton already emits as the
approximate ``div.full.f32`` (in the PTX of this kernel compiled for sm_90 by Triton 3.9 on a CPU
machine). The variants below change only the activation:

- ``exp_div``: the solution's, z / (1 + exp(-2u));
- ``tanh_approx``: 0.5 z (1 + tanh(u)) with the hardware tanh (``tanh.approx.f32``, one MUFU
  instruction, relative error about 2^-11, far under a bf16 output's 2^-8);
- ``exp2_folded``: exp_div with its constants folded, z / (1 + 2^(z (a + b z^2))): one multiply,
  one fused multiply-add and one multiply before the exponential, which runs as ex2 with no
  scaling; plain Triton, so the interpreter runs it too;
- ``tanh_folded``: tanh_approx folded the same way, z (0.5 + 0.5 tanh(z (c + d z^2)));
- ``bias_only``: no GELU (wrong, never timed against the library): the floor the others approach.

Compiled for sm_90 by Triton 3.6 on a CPU (tests/gpu/sm90_resources.py: 128x256x64 tile, 8 warps,
3 stages, 144 KiB of shared memory, contiguous operands), the SASS after the last wgmma, per thread
(128 outputs each):
exp_div 2,545 instructions (256 MUFU: an ex2 and a reciprocal per output, 1,280 FMUL, 256 FSETP of
the division's range checks), exp2_folded 1,787 (256 MUFU, 640 FMUL), tanh_approx 1,523 (128 MUFU),
tanh_folded 1,267 (128 MUFU, 384 FMUL), bias_only 499. Against act4.matmul_bf16's same main loop
(0.187 ms against 0.205 ms at 4096^3, 1.417 against 1.560 at 8192^3 on an H100, eighth session),
the epilogue costs about 9% of the kernel, run while the tensor cores wait. Taking its time as the
larger of issue (8 warps x instructions / 4 schedulers) and MUFU (256 threads x MUFU / 16 a clock)
over bias_only's, the expected ratios to cuBLASLt are about 0.906x for exp2_folded and 0.94x for
tanh_folded at both sizes (from 0.886x and 0.885x measured): written before any was timed. Measured
(ninth session, one do_bench each): exp2_folded read as exp_div (0.861x against 0.860x at 4096^3),
a miss; the tanh variants 1-4% above exp_div where the clock held, which that run cannot rank.
Timed as the grader times (tenth session, H100): all four GELUs within 1.5% of each other (0.88x to
0.90x cuBLASLt at both sizes) and bias_only, with no GELU, 0.955x/0.953x: the epilogue's arithmetic
is not what costs the last 10%; its place is. A program ends with its epilogue, with no loads in
flight for work after it.

- ``persistent``: a design, not a GELU: one program an SM walks the tiles, over host tensor
  descriptors, with the tile and K loops flattened so that the pipeliner issues the next tile's
  loads before this tile's epilogue, and the epilogue in two halves of the columns (exp_div's GELU).
  Compiled for sm_90 by Triton 3.6 on a CPU (sm90_resources.py persistent): 171 registers, no
  spill, 176 KiB (3 stages) or 224 KiB (4) of shared memory at 128x256x64; warp_specialize=True
  compiled the same kernel. Expected before any timing: between exp_div and bias_only, 0.92x to
  0.94x cuBLASLt at both sizes. Measured (H100 80GB HBM3, Triton 3.6.0, 2026-11-27, as the grader
  times): 0.942x at 4096^3 and 0.956x at 8192^3 with 3 stages, 0.945x and 0.959x with 4, 0.784x and
  0.789x at 128x128x64 (4 stages), where the solution of the time read 0.877x and 0.870x in the same
  run. It became the reference solution: the notebook's kernel over descriptors compiles to this
  kernel's SASS (sm90_resources.py epilogue_solution); shapes with K or N not a multiple of 8 take its
  pointer path.

Each runs in the solution's two Hopper tiles (128x256x64, 8 warps, 3 or 4 stages) at the benchmark
sizes, checked first against a float64 reference on fresh random inputs with the grader's own
tolerance (autograder.checking: twice the library's error on the same inputs), then timed
as the grader times it (tests/gpu/held_windows.py: calls queued back to back behind a held GPU after
an L2 flush) beside torch._addmm_activation, timed again after every row: within the ninth
session's run (one do_bench each) cuBLASLt moved from 1.53 to 1.72 ms at 8192^3 and bias_only read
slower than variants doing more work, so each row is read against the library timed beside it. The solution's own autotuned function runs last, as the grader calls it. Every row goes to
the JSON file --out (default $GPU_RUN_DIR/tune_act4_epilogue.json, else _build/), rewritten after each.

Run on a GPU: PYTHONPATH=$PWD python3 tests/gpu/tune_act4_epilogue.py
On a CPU, the two plain-Triton variants under the Triton interpreter on small shapes, nothing timed:
    PYTHONPATH=$PWD python3 tests/gpu/tune_act4_epilogue.py --interpret
"""
# The lambdas handed to the timer are called at once, inside the loop that binds their variables.
# ruff: noqa: B023

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import tempfile
from pathlib import Path

if "--interpret" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gpu.held_windows import HeldWindows  # noqa: E402

VARIANTS = {"exp_div": 0, "tanh_approx": 1, "exp2_folded": 2, "tanh_folded": 3, "bias_only": 4}
# The two that the interpreter can run (no inline PTX).
PLAIN = ("exp_div", "exp2_folded")
TILES = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4)]
# The persistent design's tiles (with warp_specialize=True, Triton 3.6 compiled the same sm_90 kernel).
PERSISTENT_TILES = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4)]


@triton.jit
def epilogue_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wk, stride_wn, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EPILOGUE: tl.constexpr,
):
    # The solution's main loop (grouped tile order, wrapped edges, unmasked whole steps of K).
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    band = pid // (GROUP_M * tiles_n)
    band_rows = tl.minimum(GROUP_M, tiles_m - band * GROUP_M)
    in_band = pid - band * GROUP_M * tiles_n
    tile_m, tile_n = band * GROUP_M + in_band % band_rows, in_band // band_rows
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + (rows % M)[:, None] * stride_xm + ks[None, :] * stride_xk
    w_ptrs = w_ptr + ks[:, None] * stride_wk + (cols % N)[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        acc = tl.dot(tl.load(x_ptrs), tl.load(w_ptrs), acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    k_left = K % BLOCK_K
    if k_left > 0:
        acc = tl.dot(tl.load(x_ptrs, mask=ks[None, :] < k_left, other=0.0), tl.load(w_ptrs, mask=ks[:, None] < k_left, other=0.0), acc)
    z = acc + tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if EPILOGUE == 0:
        u = 0.7978845608028654 * z * (1.0 + 0.044715 * z * z)
        out = z / (1.0 + tl.exp(-2.0 * u))
    elif EPILOGUE == 1:
        # One special-function instruction per output; the interpreter has no PTX to run it.
        u = 0.7978845608028654 * z * (1.0 + 0.044715 * z * z)
        tanh = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [u], dtype=tl.float32, is_pure=True, pack=1)
        out = 0.5 * z * (1.0 + tanh)
    elif EPILOGUE == 2:
        # -2 sqrt(2/pi) log2(e) and 0.044715 of it: the exponential is a bare ex2.
        out = z / (1.0 + tl.math.exp2(z * (-2.302208198144325 + -0.1029432395800235 * (z * z))))
    elif EPILOGUE == 3:
        u = z * (0.7978845608028654 + 0.035677408136300125 * (z * z))
        tanh = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [u], dtype=tl.float32, is_pure=True, pack=1)
        out = z * (0.5 + 0.5 * tanh)
    else:
        out = z
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, out.to(out_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gelu_tanh(z):
    """GELU_tanh(z) as the solution computes it: z / (1 + exp(-2u))."""
    u = 0.7978845608028654 * z * (1.0 + 0.044715 * z * z)
    return z / (1.0 + tl.exp(-2.0 * u))


@triton.jit
def persistent_kernel(
    x_desc, w_desc, out_desc, bias_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
):
    # One program an SM walks the tiles NUM_SMS apart: the loads of its next tile are in flight
    # while this one's epilogue runs, which a program per tile cannot overlap (it ends first).
    # Reads M*K*(N/BLOCK_N) + K*N*(M/BLOCK_M) bf16 through L2, writes M*N; the descriptors clip
    # the edges (zeros loaded past them, nothing stored), so no masks.
    start = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    # flatten: the pipeliner sees the tile loop and the K loop as one, so it issues the next tile's
    # first loads before this tile's epilogue.
    for tile in tl.range(start, tiles_m * tiles_n, NUM_SMS, flatten=True):
        # The solution's grouped order: GROUP_M row tiles share each column tile of w while in L2.
        band = tile // (GROUP_M * tiles_n)
        band_rows = tl.minimum(GROUP_M, tiles_m - band * GROUP_M)
        in_band = tile - band * GROUP_M * tiles_n
        row0 = (band * GROUP_M + in_band % band_rows) * BLOCK_M
        col0 = (in_band // band_rows) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_steps):
            acc = tl.dot(x_desc.load([row0, k * BLOCK_K]), w_desc.load([k * BLOCK_K, col0]), acc)
        # The epilogue in two halves of BLOCK_N/2 columns: half the registers live at once, and the
        # first half's store is under way while the second's GELU runs.
        left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
        cols = col0 + tl.arange(0, BLOCK_N // 2)
        bias_left = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        out_desc.store([row0, col0], gelu_tanh(left + bias_left[None, :]).to(out_desc.dtype))
        bias_right = tl.load(bias_ptr + cols + BLOCK_N // 2, mask=cols + BLOCK_N // 2 < N, other=0.0).to(tl.float32)
        out_desc.store([row0, col0 + BLOCK_N // 2], gelu_tanh(right + bias_right[None, :]).to(out_desc.dtype))


def persistent(x, w, bias, tile) -> torch.Tensor:
    """GELU_tanh(x @ w + bias) by persistent_kernel over host descriptors, ``tile`` as in TILES."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = x.shape
    N = w.shape[1]
    block_m, block_n, block_k, warps, stages = tile
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    x_desc = TensorDescriptor(x, [M, K], [K, 1], [block_m, block_k])
    w_desc = TensorDescriptor(w, [K, N], [N, 1], [block_k, block_n])
    out_desc = TensorDescriptor(out, [M, N], [N, 1], [block_m, block_n // 2])
    grid = (min(sms, triton.cdiv(M, block_m) * triton.cdiv(N, block_n)),)
    persistent_kernel[grid](
        x_desc, w_desc, out_desc, bias, M, N, K, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
        NUM_SMS=grid[0], num_warps=warps, num_stages=stages,
    )
    return out


def epilogue(x, w, bias, variant: int, tile) -> torch.Tensor:
    """GELU_tanh(x @ w + bias) with epilogue ``variant`` and ``tile`` (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)."""
    M, K = x.shape
    N = w.shape[1]
    block_m, block_n, block_k, warps, stages = tile
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    epilogue_kernel[grid](
        x, w, bias, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, EPILOGUE=variant, num_warps=warps, num_stages=stages,
    )
    return out


def epilogue_ref(x, w, bias) -> torch.Tensor:
    """float64 GELU_tanh(x @ w + bias)."""
    return F.gelu(x.double() @ w.double() + bias.double(), approximate="tanh")


def tolerance(x, w, bias, exact):
    """The grader's tolerance for these inputs (autograder.checking, the spec's factor of 2): the
    library's own error on them, cuBLASLt's on a GPU, float32 then one bf16 rounding on a CPU."""
    from autograder.checking import derive_tolerance

    if x.is_cuda:
        library = torch._addmm_activation(bias, x, w, use_gelu=True)
    else:
        library = F.gelu(x.float() @ w.float() + bias.float(), approximate="tanh").bfloat16()
    return derive_tolerance(exact, library, torch.bfloat16, 2.0)


def within(out, exact, tol) -> tuple[bool, float]:
    """Whether every value of ``out`` is within ``tol`` of ``exact``, and the largest error."""
    error = (out.double() - exact).abs()
    return bool((error <= tol.allowed(exact)).all()), float(error.max())


def inputs(M, N, K, device, seed):
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(M, K, device=device, generator=generator).bfloat16()
    w = (torch.randn(K, N, device=device, generator=generator) / K**0.5).bfloat16()
    return x, w, torch.randn(N, device=device, generator=generator).bfloat16()


def solution_function():
    """The reference solution's matmul_bias_gelu, from its notebook, as the grader extracts it."""
    from autograder import source

    cells = source.notebook_cells(str(ROOT / "solutions" / "act4-kernels" / "matmul_bias_gelu.ipynb"))
    # Triton's jit reads a kernel's source from its file, so the solution runs from one.
    folder = tempfile.mkdtemp(prefix="tune-epilogue-")
    path = os.path.join(folder, "matmul_bias_gelu_solution.py")
    with open(path, "w") as file:
        file.write(source.extract(cells, "matmul_bias_gelu"))
    return runpy.run_path(path)["matmul_bias_gelu"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated variants to time (persistent, exp_div, ...); all by default")
    parser.add_argument("--out", default=os.path.join(os.environ.get("GPU_RUN_DIR", str(ROOT / "_build")), "tune_act4_epilogue.json"))
    args = parser.parse_args()
    rows: list[dict] = []
    if args.interpret:
        from autograder import interpreter

        # The interpreter multiplies bf16 bit patterns as integers; the grader's patch widens them.
        interpreter.patch_bf16_dot()
        wrong = 0
        for M, N, K in [(17, 33, 15), (17, 40, 24), (64, 96, 80)]:
            x, w, bias = inputs(M, N, K, "cpu", M)
            exact = epilogue_ref(x, w, bias)
            tol = tolerance(x, w, bias, exact)
            runs = [(name, lambda variant=VARIANTS[name]: epilogue(x, w, bias, variant, (16, 32, 16, 1, 1))) for name in PLAIN]
            # Descriptors need 16-byte rows: K and N multiples of 8.
            if K % 8 == 0 and N % 8 == 0:
                runs.append(("persistent", lambda: persistent(x, w, bias, (16, 32, 16, 1, 1))))
            for name, fn in runs:
                ok, error = within(fn(), exact, tol)
                print(f"{M}x{N}x{K} {name}: {'right' if ok else 'WRONG'}, max error {error:.2e} (library {tol.library_max_error:.2e})")
                wrong += not ok
        return 1 if wrong else 0
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    solution = solution_function()
    windows = HeldWindows()
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        x, w, bias = inputs(M, N, K, "cuda", K)
        exact = epilogue_ref(x, w, bias)
        tol = tolerance(x, w, bias, exact)
        library_ms = windows.ms(lambda: torch._addmm_activation(bias, x, w, use_gelu=True))
        # Each lambda keeps its own variant and tile: a comprehension's lambdas share its last ones
        # (the eighth session's call timed bias_only under every name and found each "wrong").
        candidates = [(f"{name} {tile}", lambda variant=variant, tile=tile: epilogue(x, w, bias, variant, tile)) for name, variant in VARIANTS.items() for tile in TILES]
        candidates += [(f"persistent {tile}", lambda tile=tile: persistent(x, w, bias, tile)) for tile in PERSISTENT_TILES]
        candidates.append(("solution (autotuned)", lambda: solution(x, w, bias)))
        wanted = [name for name in args.only.split(",") if name]
        for label, fn in [(label, fn) for label, fn in candidates if not wanted or label.split(" ")[0] in wanted]:
            try:
                ok, error = within(fn(), exact, tol)
            except Exception as exc:  # noqa: BLE001 -- a design this Triton cannot compile is a row, not the end of the sweep
                rows.append({"size": [M, N, K], "variant": label, "right": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                print(f"{M}x{N}x{K} {label:32s} failed: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            # bias_only is wrong by design and timed as the floor; nothing else wrong is timed.
            ms = windows.ms(fn) if ok or label.startswith("bias_only") else None
            again_ms = windows.ms(lambda: torch._addmm_activation(bias, x, w, use_gelu=True))
            row = {"size": [M, N, K], "variant": label, "right": ok, "max_error": error, "library_error": tol.library_max_error, "ms": ms, "library_ms": [library_ms, again_ms]}
            rows.append(row)
            tflops = f"{2 * M * N * K / (ms * 1e-3) / 1e12:7.1f} TFLOP/s, {library_ms / ms:.3f}x cuBLASLt, {again_ms / ms:.3f}x beside" if ms else "wrong: not timed"
            print(f"{M}x{N}x{K} {label:32s} error {error:.2e} (library {tol.library_max_error:.2e})  {ms or 0:.4f} ms  {tflops}  (library {library_ms:.4f}, {again_ms:.4f} ms)")
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
