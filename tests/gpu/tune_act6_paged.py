"""Tuning record for Act 6's paged-attention decode at the two benchmark sizes (Llama-3-8B's attention
shape; 64 sequences of up to 4,096 tokens and 256 of up to 1,024, each about 540 MB of keys and
values), with the problem's own inputs. Timed, each after its output is checked against the problem's
float64 reference with the grader's tolerance:

- the reference solution exactly as graded (autotuned), and its kernel at other partitions, tiles
  and pipelines (the autotuner bypassed);
- the previous reference (a sequence-major grid, partitions of 512);
- one kernel that covers KV_PER neighbouring KV heads per program (one to all of them: up to whole
  contiguous blocks per read), on a KV-head-major or a sequence-major grid: what the grid's order and
  the width of each contiguous read are worth;
- the gather + SDPA baseline the grader times beside it.

Diagnostics: the solution's two kernels timed apart (what the combine costs), the solution over a
cache whose blocks lie in order (what the scattered gather costs), and a plain read of both caches
(this GPU's read-stream ceiling). Times are triton.testing.do_bench medians, L2 flushed before every
call; the fraction is of the copy bandwidth the grader measures (autograder.ceilings). Prints one
line per variant and writes every row to act6_paged_tuning.json in $GPU_OUT (else $OUT, else _build/).

Run on a GPU (run.sh's tune step allows it 150 s, compilation included): python3 tests/gpu/tune_act6_paged.py
"""
# The lambdas handed to do_bench are called at once, inside the loop that binds their variables.
# ruff: noqa: B023

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import ceilings, checking  # noqa: E402
from tests.gpu.probe_small_calls import solution_module  # noqa: E402

# run.sh stops the step at 150 s: whatever is not timed by then is listed as skipped.
BUDGET_S = 125.0
DEVICE = "cuda"
LOG2E = 1.4426950408889634


@triton.jit
def previous_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, partial_acc_ptr, partial_max_ptr, partial_sum_ptr,
                    stride_q_seq, stride_q_head, stride_k_block, stride_k_slot, stride_k_head, stride_table, max_splits, scale,
                    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                    TILE: tl.constexpr, PARTITION: tl.constexpr):
    """The reference before this record (commit aeadfe4): program (seq, kv_head, split), the sequence
    on the grid's fastest axis, every program writing a partial result even past its sequence."""
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + seq)
    start = split * PARTITION
    end = tl.minimum(start + PARTITION, seq_len)
    rows = tl.arange(0, GROUP_PAD)
    heads = kv_head * GROUP + rows
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + seq * stride_q_seq + heads[:, None] * stride_q_head + dims[None, :], mask=(rows < GROUP)[:, None], other=0.0)
    running_max = tl.full([GROUP_PAD], float("-inf"), dtype=tl.float32)
    running_sum = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    for tile_start in range(start, end, TILE):
        tokens = tile_start + tl.arange(0, TILE)
        valid = tokens < end
        blocks = tl.load(block_tables_ptr + seq * stride_table + tokens // BLOCK_SIZE, mask=valid, other=0)
        rows_of_cache = blocks.to(tl.int64) * stride_k_block + (tokens % BLOCK_SIZE) * stride_k_slot + kv_head * stride_k_head
        k = tl.load(k_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        scores = tl.where(valid[None, :], scores, float("-inf"))
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        correction = tl.exp(running_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        running_sum = running_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        running_max = new_max
    out_rows = (seq * tl.num_programs(1) * GROUP + heads) * max_splits + split
    head_mask = rows < GROUP
    tl.store(partial_acc_ptr + out_rows[:, None] * HEAD_DIM + dims[None, :], acc, mask=head_mask[:, None])
    tl.store(partial_max_ptr + out_rows, running_max, mask=head_mask)
    tl.store(partial_sum_ptr + out_rows, running_sum, mask=head_mask)


@triton.jit
def previous_combine_kernel(partial_acc_ptr, partial_max_ptr, partial_sum_ptr, seq_lens_ptr, out_ptr, heads, max_splits,
                            HEAD_DIM: tl.constexpr, SPLITS_PAD: tl.constexpr, PARTITION: tl.constexpr):
    """The previous reference's merge (natural exponent), program (seq, head)."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    splits = tl.arange(0, SPLITS_PAD)
    used = splits < tl.cdiv(tl.load(seq_lens_ptr + seq), PARTITION)
    row = (seq * heads + head) * max_splits
    maxes = tl.load(partial_max_ptr + row + splits, mask=used, other=float("-inf"))
    sums = tl.load(partial_sum_ptr + row + splits, mask=used, other=0.0)
    dims = tl.arange(0, HEAD_DIM)
    accs = tl.load(partial_acc_ptr + (row + splits)[:, None] * HEAD_DIM + dims[None, :], mask=used[:, None], other=0.0)
    weights = tl.where(used, tl.exp(maxes - tl.max(maxes, axis=0)), 0.0)
    out = tl.sum(accs * weights[:, None], axis=0) / tl.sum(sums * weights, axis=0)
    tl.store(out_ptr + (seq * heads + head) * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


@triton.jit
def kv_chunk_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, partial_acc_ptr, partial_max_ptr, partial_sum_ptr,
                    stride_q_seq, stride_q_head, stride_k_block, stride_k_slot, stride_table, heads, max_splits, qk_scale,
                    GROUP: tl.constexpr, KV_PER: tl.constexpr, HEADS_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                    PARTITION: tl.constexpr, TILE: tl.constexpr, SEQ_MAJOR: tl.constexpr):
    """KV_PER neighbouring KV heads per program, so each token's keys are one read of KV_PER * HEAD_DIM
    contiguous values (a whole contiguous block per tile when KV_PER = kv_heads and TILE = BLOCK_SIZE).
    The scores are computed for every (query head, row) pair of the chunk in one tl.dot, and the pairs
    whose query head does not use the row's KV head are masked out. Partial results laid out as the
    solution's, merged by its combine kernel. Grid (kv_chunk, split, seq), or (seq, kv_chunk, split)
    when SEQ_MAJOR (the previous reference's order). KV_PER = 1 is the solution's design."""
    if SEQ_MAJOR:
        seq = tl.program_id(0)
        kv_chunk = tl.program_id(1)
        split = tl.program_id(2)
    else:
        kv_chunk = tl.program_id(0)
        split = tl.program_id(1)
        seq = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + seq)
    start = split * PARTITION
    if start < seq_len:
        end = tl.minimum(start + PARTITION, seq_len)
        local_heads = tl.arange(0, HEADS_PAD)
        head_ok = local_heads < GROUP * KV_PER
        head_ids = kv_chunk * GROUP * KV_PER + local_heads
        dims = tl.arange(0, HEAD_DIM)
        q = tl.load(q_ptr + seq * stride_q_seq + head_ids[:, None] * stride_q_head + dims[None, :], mask=head_ok[:, None], other=0.0)
        r = tl.arange(0, TILE * KV_PER)
        token_of_row = r // KV_PER
        kv_of_row = r % KV_PER
        same = ((local_heads // GROUP)[:, None] == kv_of_row[None, :]) | ~head_ok[:, None]
        running_max = tl.full([HEADS_PAD], float("-inf"), dtype=tl.float32)
        running_sum = tl.zeros([HEADS_PAD], dtype=tl.float32)
        acc = tl.zeros([HEADS_PAD, HEAD_DIM], dtype=tl.float32)
        table_row = block_tables_ptr + seq * stride_table
        for tile_start in range(start, end, TILE):
            tokens = tile_start + token_of_row
            valid = tokens < end
            blocks = tl.load(table_row + tokens // BLOCK_SIZE, mask=valid, other=0)
            rows_of_cache = blocks.to(tl.int64) * stride_k_block + (tokens % BLOCK_SIZE) * stride_k_slot + (kv_chunk * KV_PER + kv_of_row) * HEAD_DIM
            k = tl.load(k_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
            v = tl.load(v_cache_ptr + rows_of_cache[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
            scores = tl.dot(q, tl.trans(k)) * qk_scale
            scores = tl.where(same & valid[None, :], scores, float("-inf"))
            new_max = tl.maximum(running_max, tl.max(scores, axis=1))
            correction = tl.exp2(running_max - new_max)
            p = tl.exp2(scores - new_max[:, None])
            running_sum = running_sum * correction + tl.sum(p, axis=1)
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
            running_max = new_max
        out_rows = (seq * heads + head_ids) * max_splits + split
        tl.store(partial_acc_ptr + out_rows[:, None] * HEAD_DIM + dims[None, :], acc, mask=head_ok[:, None])
        tl.store(partial_max_ptr + out_rows, running_max, mask=head_ok)
        tl.store(partial_sum_ptr + out_rows, running_sum, mask=head_ok)


@triton.jit
def read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    """Sums BLOCK * STEPS contiguous fp16 values per program (16-byte loads), one float out: a plain
    read stream, the most any kernel that reads these bytes once can hope for."""
    start = tl.program_id(0) * BLOCK * STEPS
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for step in range(STEPS):
        offsets = start + step * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


def partials(q, max_splits):
    batch, heads, head_dim = q.shape
    return (torch.empty(batch, heads, max_splits, head_dim, device=q.device, dtype=torch.float32),
            torch.empty(batch, heads, max_splits, device=q.device, dtype=torch.float32),
            torch.empty(batch, heads, max_splits, device=q.device, dtype=torch.float32))


def solution_launches(module, inputs, partition, config):
    """The notebook's wrapper with the partition and the launch configuration given (the autotuner
    bypassed): the attention kernel's launch and the combine's, apart, over buffers allocated once."""
    q, k_cache, block_tables = inputs["q"], inputs["k_cache"], inputs["block_tables"]
    batch, heads, head_dim = q.shape
    _, block_size, kv_heads, _ = k_cache.shape
    group = heads // kv_heads
    max_splits = triton.cdiv(block_tables.shape[1] * block_size, partition)
    acc, mx, sm = partials(q, max_splits)
    out = torch.empty_like(q)

    def attention():
        module.paged_attention_kernel.fn[(kv_heads, max_splits, batch)](
            q, k_cache, inputs["v_cache"], block_tables, inputs["seq_lens"], acc, mx, sm,
            q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0), max_splits,
            LOG2E / head_dim**0.5, GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim,
            BLOCK_SIZE=block_size, PARTITION=partition, **config)

    def combine():
        module.combine_kernel[(heads, batch)](acc, mx, sm, inputs["seq_lens"], out, max_splits, HEAD_DIM=head_dim,
                                              SPLITS_PAD=triton.next_power_of_2(max_splits), PARTITION=partition)
        return out

    return attention, combine


def solution_with(module, partition, config):
    def call(q, k_cache, v_cache, block_tables, seq_lens):
        attention, combine = solution_launches(module, {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_tables": block_tables, "seq_lens": seq_lens}, partition, config)
        attention()
        return combine()
    return call


def previous(q, k_cache, v_cache, block_tables, seq_lens):
    batch, heads, head_dim = q.shape
    _, block_size, kv_heads, _ = k_cache.shape
    group = heads // kv_heads
    partition = 512
    max_splits = triton.cdiv(block_tables.shape[1] * block_size, partition)
    acc, mx, sm = partials(q, max_splits)
    previous_kernel[(batch, kv_heads, max_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, acc, mx, sm,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0), max_splits,
        1.0 / head_dim**0.5, GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        TILE=64, PARTITION=partition, num_warps=4)
    out = torch.empty_like(q)
    previous_combine_kernel[(batch, heads)](acc, mx, sm, seq_lens, out, heads, max_splits,
                                            HEAD_DIM=head_dim, SPLITS_PAD=triton.next_power_of_2(max_splits), PARTITION=partition)
    return out


def kv_chunk_with(module, kv_per, partition, seq_major, config):
    def call(q, k_cache, v_cache, block_tables, seq_lens):
        batch, heads, head_dim = q.shape
        _, block_size, kv_heads, _ = k_cache.shape
        group = heads // kv_heads
        max_splits = triton.cdiv(block_tables.shape[1] * block_size, partition)
        acc, mx, sm = partials(q, max_splits)
        chunks = kv_heads // kv_per
        grid = (batch, chunks, max_splits) if seq_major else (chunks, max_splits, batch)
        kv_chunk_kernel[grid](
            q, k_cache, v_cache, block_tables, seq_lens, acc, mx, sm,
            q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), block_tables.stride(0), heads, max_splits,
            LOG2E / head_dim**0.5, GROUP=group, KV_PER=kv_per, HEADS_PAD=max(16, triton.next_power_of_2(group * kv_per)),
            HEAD_DIM=head_dim, BLOCK_SIZE=block_size, PARTITION=partition, SEQ_MAJOR=seq_major, **config)
        out = torch.empty_like(q)
        module.combine_kernel[(heads, batch)](acc, mx, sm, seq_lens, out, max_splits, HEAD_DIM=head_dim,
                                              SPLITS_PAD=triton.next_power_of_2(max_splits), PARTITION=partition)
        return out
    return call


def in_order(inputs):
    """The same sequences with each one's blocks laid out one after another (a copy of the cache's
    used blocks, in table order): the same bytes and answer, none of the scatter."""
    tables = inputs["block_tables"]
    used = tables >= 0
    order = tables[used].long()
    sorted_tables = torch.full_like(tables, -1)
    sorted_tables[used] = torch.arange(order.numel(), device=tables.device, dtype=tables.dtype)
    return {**inputs, "k_cache": inputs["k_cache"][order], "v_cache": inputs["v_cache"][order], "block_tables": sorted_tables}


def read_both(inputs):
    buffers = [inputs["k_cache"].view(-1), inputs["v_cache"].view(-1)]
    block, steps = 4096, 8
    sums = [torch.empty(triton.cdiv(b.numel(), block * steps), device=b.device) for b in buffers]

    def call():
        for b, s in zip(buffers, sums, strict=True):
            read_kernel[(s.numel(),)](b, s, b.numel(), BLOCK=block, STEPS=steps, num_warps=8)
    return call, float(sum(b.numel() * b.element_size() for b in buffers))


def config_label(config: dict) -> str:
    return " ".join(f"{k.lower().replace('num_', '')}={v}" for k, v in config.items())


# The solution's kernel at other partitions and launch configurations (the autotuner bypassed).
SWEEP = [(256, {"TILE": 64, "num_warps": 4, "num_stages": 3}), (256, {"TILE": 64, "num_warps": 4, "num_stages": 5}),
         (256, {"TILE": 32, "num_warps": 4, "num_stages": 7}), (128, {"TILE": 64, "num_warps": 4, "num_stages": 3}),
         (512, {"TILE": 64, "num_warps": 4, "num_stages": 3}), (512, {"TILE": 64, "num_warps": 4, "num_stages": 5}),
         (256, {"TILE": 128, "num_warps": 8, "num_stages": 3}), (256, {"TILE": 64, "num_warps": 8, "num_stages": 5}),
         (256, {"TILE": 64, "num_warps": 4, "num_stages": 7}), (256, {"TILE": 128, "num_warps": 8, "num_stages": 5}),
         (256, {"TILE": 16, "num_warps": 2, "num_stages": 7})]
# (KV heads a program, sequence-major grid, launch configuration); None stands for all of them. One
# head on either grid order isolates the order; more heads widen each contiguous read, up to whole
# blocks (TILE * KV_PER rows of the tl.dot).
CHUNKED = [(1, True, {"TILE": 64, "num_warps": 4, "num_stages": 3}), (1, False, {"TILE": 64, "num_warps": 4, "num_stages": 3}),
           (2, False, {"TILE": 32, "num_warps": 8, "num_stages": 5}), (4, False, {"TILE": 16, "num_warps": 8, "num_stages": 5}),
           (None, False, {"TILE": 8, "num_warps": 8, "num_stages": 5}), (None, False, {"TILE": 16, "num_warps": 16, "num_stages": 3})]


class Case:
    """One benchmark size: its inputs, the float64 answer and the grader's tolerance, and the rows timed."""

    def __init__(self, problem, size, copy_bw: float, started: float, rows: list, skipped: list):
        self.size, self.label = size, problem.describe_size(size)
        self.inputs = problem.make_inputs(size, 1, DEVICE)
        self.expected = problem.reference(**self.inputs)
        self.tol = checking.derive_tolerance(self.expected, problem.library(**self.inputs), torch.float16, problem.tolerance_factor)
        self.nbytes = problem.bytes_moved(size)
        self.copy_bw, self.started, self.rows, self.skipped = copy_bw, started, rows, skipped

    def record(self, variant: str, fn, args: dict | None, counted: float | None = -1.0, check: bool = True, extra: dict | None = None):
        """Checks the variant's output (unless told not to), then times it; counted is the bytes its
        rate is computed over (the problem's by default; None: time only)."""
        counted = self.nbytes if counted == -1.0 else counted
        if time.perf_counter() - self.started > BUDGET_S:
            self.skipped.append(f"{self.label} | {variant}")
            return None
        row = {"case": self.label, "size": list(self.size), "variant": variant, **(extra or {})}
        try:
            call = (lambda: fn(**args)) if args is not None else fn
            out = call()
            torch.cuda.synchronize()
            if check:
                ok, worst, _ = checking.compare(out, self.expected, self.tol)
                row["max_error"] = worst
                if not ok:
                    row["error"] = f"WRONG: largest error {worst:.2e}, allowed {self.tol.atol:.2e} + {self.tol.rtol:.1e} * |ref|"
            if "error" not in row:
                ms = triton.testing.do_bench(call, warmup=10, rep=60, return_mode="median")
                row["ms"] = ms
                if counted:
                    row.update(GBps=counted / ms / 1e6, copy_fraction=counted / (ms * 1e-3) / self.copy_bw)
        except Exception as exc:  # noqa: BLE001 -- a variant that does not compile or run is reported and skipped
            row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        self.rows.append(row)
        if "error" in row:
            print(f"  {variant:<66} {row['error']}", flush=True)
        else:
            rate = f" {row['GBps']:7,.0f} GB/s {row['copy_fraction']:6.1%} of copy" if counted else ""
            error = f"  max error {row['max_error']:.1e}" if "max_error" in row else ""
            print(f"  {variant:<66} {row['ms']:7.3f} ms{rate}{error}", flush=True)
        return row


def essentials(case: Case, problem, module) -> None:
    """The baseline, the solution as graded, the previous reference, and the diagnostics."""
    print(f"== {case.label}: {case.nbytes / 1e6:,.0f} MB counted", flush=True)
    case.record("gather + SDPA (the grader's baseline)", problem.library, case.inputs)
    row = case.record("solution as graded (autotuned)", module.paged_attention, case.inputs)
    if row and "error" not in row:
        best = module.paged_attention_kernel.best_config
        row["chosen"] = {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}
        print(f"  {'':<66} autotuner chose {config_label(row['chosen'])}", flush=True)
    case.record("previous reference (seq-major grid, partitions of 512)", previous, case.inputs)
    # What each part costs on the default launch: the attention kernel alone (over the problem's
    # bytes), the combine alone (its partials come from DRAM here: L2 is flushed before each call).
    attention, combine = solution_launches(module, case.inputs, 256, {"TILE": 64, "num_warps": 4, "num_stages": 3})
    case.record("  attention kernel alone (P=256 tile=64 warps=4 stages=3)", attention, None, check=False)
    case.record("  combine kernel alone", combine, None, check=False, counted=None)
    sorted_inputs = in_order(case.inputs)
    case.record("solution over blocks in order (no scatter)", module.paged_attention, sorted_inputs)
    del sorted_inputs
    read, read_bytes = read_both(case.inputs)
    case.record("plain read of both whole caches (read ceiling)", read, None, counted=read_bytes, check=False)


def sweeps(case: Case, module) -> None:
    print(f"== {case.label}: other launches and designs", flush=True)
    for partition, config in SWEEP:
        case.record(f"solution kernel P={partition} {config_label(config)}", solution_with(module, partition, config), case.inputs,
                    extra={"partition": partition, **config})
    kv_heads = case.size[2]
    for kv_per, seq_major, config in CHUNKED:
        kv_per = kv_per or kv_heads
        if kv_heads % kv_per:
            continue
        grid = "seq-major" if seq_major else "kv-major"
        case.record(f"{kv_per} KV heads a program, {grid}, P=256 {config_label(config)}", kv_chunk_with(module, kv_per, 256, seq_major, config),
                    case.inputs, extra={"kv_per": kv_per, "seq_major": seq_major, "partition": 256, **config})


def main() -> None:
    started = time.perf_counter()
    problem, module = solution_module("act6.paged_attention")
    copy = ceilings.measure_copy_bandwidth()
    copy_bw = copy["bytes_per_s"]
    device = torch.cuda.get_device_name(0)
    print(f"{device}: copy bandwidth {copy_bw / 1e9:,.0f} GB/s (read + write, {copy['buffer_bytes'] / 2**20:.0f} MiB buffer)", flush=True)
    rows, skipped = [], []
    cases = [Case(problem, size, copy_bw, started, rows, skipped) for size in problem.bench_sizes]
    # Both sizes' essentials before any sweep: a run cut short still has them.
    for case in cases:
        essentials(case, problem, module)
    for case in cases:
        sweeps(case, module)
    print("== fastest correct variants", flush=True)
    for case in cases:
        timed = [r for r in rows if r["case"] == case.label and "copy_fraction" in r and "max_error" in r]
        for r in sorted(timed, key=lambda r: r["ms"])[:3]:
            print(f"  {case.label}: {r['variant']:<66} {r['ms']:7.3f} ms {r['copy_fraction']:6.1%} of copy", flush=True)
    if skipped:
        print(f"skipped (over the {BUDGET_S:.0f} s budget): {'; '.join(skipped)}", flush=True)
    result = {"device": device, "copy_bytes_per_s": copy_bw, "rows": rows, "skipped": skipped, "seconds": time.perf_counter() - started}
    out = Path(os.environ.get("GPU_OUT") or os.environ.get("OUT") or ROOT / "_build") / "act6_paged_tuning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}; {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
