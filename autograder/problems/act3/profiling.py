"""Act 3, exercise 3.1: reading a profile.

``act3.summarize_trace`` (exact, any machine): the learner's rule applied to Chrome traces drawn
from a seed, in the format torch.profiler exports on a GPU (CPU ranges, runtime launches, kernels on
two streams, copies, flow arrows, a warm-up before the step), compared with autograder.profiles.
``act3.read_trace`` (measured, GPU): the learner profiles a workload the grader built and returns
the same three facts; the judge profiles the same workload itself once the learner's process is
gone and compares, with tolerances for two runs of one GPU.
"""

from __future__ import annotations

import random

from ... import profiles
from ...measured import MeasuredOp, MeasuredProblem
from ...problem import register

NOTEBOOK = "act3-profiling/read_trace"
TOP = 3
MATMUL_NAMES = (
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "ampere_sgemm_128x64_tn",
    "cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4",
    # cuBLASLt's own kernels on Hopper with CUDA 13 (seen on an H100): no "gemm" in the name.
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
)
OTHER_NAMES = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
    "triton_poi_fused_add_gelu_0",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})",
)
# How launches and kernels are spaced in each kind of step, in microseconds: (CPU time between
# launches, kernel duration, share of launches that are matrix multiplies).
FLAVOURS = {
    "overhead": ((6.0, 12.0), (1.0, 4.0), 0.3),
    "memory": ((4.0, 8.0), (40.0, 400.0), 0.15),
    "compute": ((4.0, 8.0), (40.0, 400.0), 0.8),
    "mixed": ((4.0, 40.0), (2.0, 120.0), 0.5),
}


def _trace(r: random.Random, flavour: str, launches: int, matmul_names: tuple = MATMUL_NAMES) -> dict:
    """A Chrome trace of one profiled step, shaped like torch.profiler's on a GPU."""
    (gap_lo, gap_hi), (dur_lo, dur_hi), matmul_share = FLAVOURS[flavour]
    pid, tid, gpu = 4242, 4242, 0
    base = round(r.uniform(1e12, 5e12), 3)
    events = [
        {"ph": "M", "name": "process_name", "ts": base, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "ts": base, "pid": gpu, "tid": 0, "args": {"name": "python"}},
        # A warm-up kernel before the step: not part of it.
        {"ph": "X", "cat": "kernel", "name": MATMUL_NAMES[0], "pid": gpu, "tid": 7, "ts": base + 1.0, "dur": 900.0, "args": {"External id": 1}},
    ]
    start = base + 1000.0
    cpu, stream_end = start + r.uniform(5.0, 30.0), {7: start, 13: start}
    names = [r.choice(matmul_names) if r.random() < matmul_share else r.choice(OTHER_NAMES) for _ in range(launches)]
    for i, name in enumerate(names, start=2):
        op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm" if name in matmul_names else "aten::add", "pid": pid, "tid": tid, "ts": round(cpu, 3), "dur": 5.0, "args": {"External id": i}}
        launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": round(cpu + 1.0, 3), "dur": 3.0, "args": {"correlation": i}}
        stream = 13 if r.random() < 0.15 else 7
        begin = round(max(cpu + 4.0 + r.uniform(1.0, 6.0), stream_end[stream]), 3)
        kernel = {"ph": "X", "cat": "kernel", "name": name, "pid": gpu, "tid": stream, "ts": begin, "dur": round(r.uniform(dur_lo, dur_hi), 3), "args": {"correlation": i, "External id": i}}
        stream_end[stream] = kernel["ts"] + kernel["dur"]
        flow = [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": i, "pid": pid, "tid": tid, "ts": launch["ts"]}, {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": i, "pid": gpu, "tid": stream, "ts": begin, "bp": "e"}]
        events += [op, launch, kernel, *flow]
        if r.random() < 0.05:
            copy_begin = round(stream_end[7] + r.uniform(0.5, 3.0), 3)
            events.append({"ph": "X", "cat": r.choice(("gpu_memcpy", "gpu_memset")), "name": "Memcpy DtoD (Device -> Device)", "pid": gpu, "tid": 7, "ts": copy_begin, "dur": round(r.uniform(1.0, 20.0), 3), "args": {}})
            stream_end[7] = copy_begin + events[-1]["dur"]
        cpu += 9.0 + r.uniform(gap_lo, gap_hi)
    step = {"ph": "X", "cat": "user_annotation", "name": profiles.STEP_NAME, "pid": pid, "tid": tid, "ts": start, "dur": round(cpu - start + 2.0, 3), "args": {"External id": 1}}
    # The GPU timeline's copy of the range: not the CPU's step.
    gpu_step = {"ph": "X", "cat": "gpu_user_annotation", "name": profiles.STEP_NAME, "pid": gpu, "tid": 7, "ts": start - 500.0, "dur": 1.0, "args": {}}
    events += [step, gpu_step]
    r.shuffle(events)
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": events}


def _cpu_only_trace(r: random.Random) -> dict:
    """A trace taken without CUDA activity: a step and its operators, no kernel at all."""
    start = round(r.uniform(1e12, 5e12), 3)
    events = [{"ph": "X", "cat": "user_annotation", "name": profiles.STEP_NAME, "pid": 1, "tid": 1, "ts": start, "dur": 250.0, "args": {}}]
    events += [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": start + 10.0 * i, "dur": 8.0, "args": {}} for i in range(1, 20)]
    return {"traceEvents": events}


def trace_cases(seed: int) -> list[dict]:
    r = random.Random(seed)
    cases = [dict(trace=_cpu_only_trace(r), top=TOP), dict(trace=_trace(r, "compute", 3), top=5)]
    cases += [dict(trace=_trace(r, flavour, r.randrange(40, 160)), top=TOP) for flavour in ("overhead", "memory", "compute")]
    # A compute-bound step on an H100, whose matrix multiplies are all cuBLASLt's nvjet kernels.
    cases.append(dict(trace=_trace(r, "compute", r.randrange(40, 160), MATMUL_NAMES[-1:]), top=TOP))
    cases += [dict(trace=_trace(r, r.choice(tuple(FLAVOURS)), r.randrange(20, 200)), top=r.randrange(1, 6)) for _ in range(5)]
    return cases


def describe_trace_case(case: dict) -> str:
    events = case["trace"]["traceEvents"]
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    return f"a trace of {len(events)} events ({kernels} kernels), top={case['top']}"



# --- The same facts from a real profile on this GPU ------------------------------------------------

# Two profiles of one step on one GPU: kernel times agree to a few percent, the idle share moves with
# the CPU's speed between runs (a few points). The bounds leave room for that and still catch a
# profile of a cold first call, a CPU timeline read as the GPU's, or a sum of kernel times taken
# for their union.
IDLE_AGREEMENT = 0.15
KERNEL_TIME_AGREEMENT = 1.5
# Except where the GPU waits most of the step: its clocks drop between kernels of a few microseconds,
# and on four H200s sharing one host's cores the decode loop's GEMV read 91.9 us in the solution's
# profile and 61.2 us in the grader's (idle 90%).
IDLE_STEP_SHARE, IDLE_KERNEL_TIME_AGREEMENT = 0.5, 2.0
TOP_COVERAGE = 0.8
# A step this close to a threshold of the rule may fall on either side of it in another profile.
MATMUL_SHARE_AGREEMENT = 0.1


def workloads(device: str) -> list[MeasuredOp]:
    """Three steps, one per regime, sized for a 16 GB T4 and far from the rule's thresholds."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator(device=device).manual_seed(random.SystemRandom().getrandbits(62))

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=generator, device=device) * scale

    width, layers = 256, 24
    weights = [randn(width, width, scale=width**-0.5) for _ in range(layers)]
    token = randn(1, width)

    def decode_loop():
        # Batch 1: every kernel takes a few microseconds, every launch from Python several more.
        h = token
        for w in weights:
            h = F.layer_norm(h + F.gelu(h @ w), (width,))
        return h

    activations, bias = randn(4096, 8192), randn(8192)

    def elementwise():
        return F.layer_norm(F.gelu(activations + bias), (8192,)) + activations

    tokens, hidden = 8192, 1024
    x = randn(tokens, hidden)
    w1 = randn(hidden, 4 * hidden, scale=hidden**-0.5).requires_grad_()
    w2 = randn(4 * hidden, hidden, scale=(4 * hidden) ** -0.5).requires_grad_()

    def mlp_training_step():
        w1.grad = w2.grad = None
        loss = (F.gelu(x @ w1) @ w2).square().mean()
        loss.backward()
        return loss

    return [
        MeasuredOp(f"decode-like loop at batch 1 ({layers} layers of width {width})", decode_loop, flops=0.0, bytes_moved=0.0),
        MeasuredOp("bias + GELU + LayerNorm + residual on 4096x8192 float32", elementwise, flops=0.0, bytes_moved=0.0),
        MeasuredOp(f"MLP training step, {tokens} tokens, {hidden} -> {4 * hidden} -> {hidden}, float32", mlp_training_step, flops=0.0, bytes_moved=0.0),
    ]


def measure_profile(op: MeasuredOp, device: str) -> dict:
    return profiles.profile_step(op.call, TOP)


def judge_profile(got, op: MeasuredOp, peak: float, bandwidth: float, mine: dict) -> tuple[bool, str]:
    """The learner's summary of their own profile against the grader's profile of the same step."""
    evidence = f"grader: idle {mine['idle_share']:.0%}, {mine['regime']}"
    if not isinstance(got, dict) or set(got) != {"top_kernels", "idle_share", "regime"}:
        return False, "return summarize_trace's dict: top_kernels, idle_share and regime"
    idle = got["idle_share"]
    if not isinstance(idle, (int, float)) or abs(idle - mine["idle_share"]) > IDLE_AGREEMENT:
        return False, f"idle share {idle!r}, the grader's profile says {mine['idle_share']:.1%} (allowed: within {IDLE_AGREEMENT:.0%}); warm the step up before profiling it"
    accepted = profiles.regimes_within(mine, IDLE_AGREEMENT / 2, MATMUL_SHARE_AGREEMENT)
    if got["regime"] not in accepted:
        return False, f"you said {got['regime']!r} ({evidence})"
    agreement = IDLE_KERNEL_TIME_AGREEMENT if mine["idle_share"] >= IDLE_STEP_SHARE else KERNEL_TIME_AGREEMENT
    found = _kernel_mismatch(got["top_kernels"], mine["all_kernels"], agreement)
    if found:
        return False, f"{found} ({evidence})"
    return True, f"idle {idle:.0%}, {got['regime']} ({evidence})"


def _kernel_mismatch(top, kernels: dict, agreement: float) -> str | None:
    expected = sorted(kernels.values(), reverse=True)[:TOP]
    if not isinstance(top, list) or len(top) != len(expected):
        return f"top_kernels must list the {len(expected)} kernels with the most time, as [name, microseconds] pairs"
    names = [pair[0] if isinstance(pair, (list, tuple)) and len(pair) == 2 else None for pair in top]
    if len(set(names)) != len(names):
        return "top_kernels names a kernel twice"
    for name, pair in zip(names, top, strict=True):
        if name not in kernels:
            return f"{str(name)[:80]!r} did not run in the grader's profile of this step"
        micros = pair[1]
        if not isinstance(micros, (int, float)) or not kernels[name] / agreement <= micros <= kernels[name] * agreement:
            return f"{name[:60]}...: you measured {micros!r} us, the grader {kernels[name]:.1f} us (allowed: within {agreement}x)"
    covered = sum(kernels[name] for name in names)
    if covered < TOP_COVERAGE * sum(expected):
        return f"your top kernels hold {covered:.0f} us of the grader's top {len(expected)}'s {sum(expected):.0f} us: they are not the top kernels"
    return None


register(
    MeasuredProblem(
        name="act3.read_trace",
        title="Reading your GPU's profile",
        notebook=NOTEBOOK,
        function="read_trace",
        arguments=("step",),
        make_ops=workloads,
        judge=judge_profile,
        measure=measure_profile,
        needs_gpu_reason="profiles steps on an NVIDIA GPU and compares your reading with the grader's own profile; on a CPU, summarize_trace is graded instead",
    )
)
