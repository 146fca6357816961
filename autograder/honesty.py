"""Whose kernels did the work? Decided in the judge from the learner's source and from the worker's
profile of every call it made (the timed calls included).

A kernel is the learner's only when it is named in the learner's source as a kernel they wrote: a
function decorated with ``triton.jit`` (or autotune/heuristics over one), or a ``__global__``
function in a CUDA source string (a CuPy RawKernel or RawModule); on a GPU a Triton kernel must
also have been compiled from the learner's file (``OWN_MARK``). Everything else is library work:
cuBLAS, cuDNN and ATen kernels, and generated code such as torch.compile's Triton kernels or
CuPy's ElementwiseKernel/ReductionKernel templates, whatever they are called. The learner's
kernels must also account for the GPU time the judge measured for the timed calls, so a profile
that leaves out the kernels that did the work does not pass.
"""

from __future__ import annotations

import ast
import re

from .rewrites import NOT_ITS_SOURCE

# Names only a library's or a code generator's kernels carry (cuBLAS, cuDNN, CUTLASS, NVIDIA's JIT
# GEMMs, cuBLAS's GEMV kernels, architecture-prefixed SASS kernels, torch.compile's Triton kernels,
# CuPy's own ufuncs, reductions and routines, all named cupy_...): never the learner's, even when
# their source declares a kernel so named. cuBLAS's GEMV names start with "gemv" (gemv2T_kernel,
# gemv2N_kernel): anchored, so that a learner's int4_gemv_kernel stays theirs.
RESERVED = re.compile(r"cublas|cutlass|cudnn|nvjet|xmma|^gemv2?[TN]?_kernel|^cupy_|^(sm\d+|ampere|hopper|turing|volta|blackwell)_|^triton_(poi|red|per|tem|for|unk|mm|bmm|helper|fused)_|^triton_.*fused", re.IGNORECASE)
_CUDA_KERNEL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)")
_TRITON_DECORATORS = {"jit", "autotune", "heuristics"}
_TEMPLATES = {"ElementwiseKernel", "ReductionKernel", "fuse", "rawkernel"}
# The own kernels must account for at least this share of the GPU time charged to a timed call.
ACCOUNT_SHARE = 0.5
# Calls shorter than this are dominated by launch and switch costs: no accounting for them.
ACCOUNT_MIN_US = 20.0


def _decorator_names(node: ast.FunctionDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


# On a GPU the profiler knows a kernel by its name alone, and a library's Triton kernel may bear any
# name, one the learner's source also declares. So the worker gives every Triton kernel compiled from
# the learner's own file this ending, and Triton's compiler refuses it to any kernel whose code is not
# the learner's (autograder.own_compile): the name the GPU runs under says whose code it is, as the
# interpreter's launch record does on a CPU.
OWN_MARK = "__yours"
# The words of autograder.own_compile's finding that a kernel of the learner's inlines library code.
FOREIGN_CALLEE = "a Triton function from outside your code and triton.language"
# The same for a triton.language function the exercise asks the learner to write (Problem.refused_language).
REFUSED_CALLEE = "the triton.language function that does what this exercise asks you to write"


def own_kernel_names(code: str, device: str = "cpu") -> set[str]:
    """Kernels the learner wrote: Triton-decorated functions and ``__global__`` functions of CUDA
    source strings. A Triton kernel is theirs under any name: on a GPU under the one the worker
    compiled it with (``OWN_MARK``), which no library or generated kernel bears, on a CPU by the file
    the interpreter saw it come from (autograder.launch_record). A CUDA kernel is known by its name
    alone, so names also given to a CuPy template kernel, and library-style names (``RESERVED``), are
    not theirs."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    triton, cuda, templated = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _decorator_names(node) & _TRITON_DECORATORS:
            triton.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value:
            cuda.update(_CUDA_KERNEL.findall(node.value))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _TEMPLATES:
                templated.update(_string_arguments(node))
    mark = OWN_MARK if device == "cuda" else ""
    return {n + mark for n in triton} | {n for n in cuda - templated if not RESERVED.search(n)}


def _string_arguments(call: ast.Call) -> set[str]:
    values = [*call.args, *(k.value for k in call.keywords)]
    return {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.isidentifier()}


_MANGLED = re.compile(r"^_Z(\d+)")


def base_name(kernel: str) -> str:
    """The function's own name in a profiler entry: ``sgemm(float const*, ...)``, a C++-mangled
    ``_Z5sgemmPKfS0_Pf`` and a plain ``sgemm`` all give ``sgemm``."""
    mangled = _MANGLED.match(kernel)
    if mangled:
        start = mangled.end()
        return kernel[start : start + int(mangled.group(1))]
    return re.split(r"[(<\s]", kernel.strip(), maxsplit=1)[0]


def is_own(kernel: str, own: set[str]) -> bool:
    """A launched kernel is the learner's when its base name is one of theirs and it carries none of
    a compiled library's marks (C++ namespaces, template arguments, an architecture prefix)."""
    if "::" in kernel or kernel.startswith("void ") or "<" in kernel:
        return False
    return base_name(kernel) in own


def judge_gpu(phases: dict[str, dict], own: set[str], allowed: tuple[str, ...], charged_us: dict[str, list[float]]) -> dict:
    """``phases``: the worker's profile per phase (name -> {"kernels": [...]}); ``charged_us``:
    timed phase name -> the judge's charge per call. Returns {"ok", "message", "kernels"}."""
    allowed_re = re.compile("|".join(allowed)) if allowed else None
    launched: dict[str, float] = {}
    for seen in phases.values():
        for k in seen.get("kernels", []):
            launched[k["name"]] = launched.get(k["name"], 0.0) + float(k["total_us"])
    library = sorted(k for k in launched if not is_own(k, own) and not (allowed_re and allowed_re.search(k)))
    mine = sorted(k for k in launched if is_own(k, own))
    shown = sorted(launched, key=lambda k: -launched[k])[:20]
    if library:
        names = "; ".join(_short(k) for k in library[:3])
        same_name = [k for k in library if base_name(k) + OWN_MARK in own]
        elsewhere = f" ({base_name(same_name[0])} is also a kernel in your source, but the one that ran was compiled from another file)" if same_name else ""
        return {"ok": False, "message": f"the calls launched kernels that are not yours (library or generated code): {names}{elsewhere}. Write the kernel yourself.", "kernels": shown}
    if not mine:
        return {
            "ok": False,
            "message": "the profiler saw no kernel of yours during the calls; the work must run in a Triton kernel or a CUDA kernel you wrote "
            "(names a library uses, such as cublas..., cutlass..., nvjet..., sm90_..., cupy_... or triton_poi_..., never count as yours)",
            "kernels": shown,
        }
    for phase, charges in charged_us.items():
        shortfall = unaccounted(phases.get(phase, {}), own, charges)
        if shortfall:
            own_per_call, typical = shortfall
            return {
                "ok": False,
                "message": f"your kernels ran {own_per_call:.0f} us of the {typical:.0f} us each timed call took on the GPU ({phase}): the rest of the work ran somewhere the profiler did not attribute to you, or the GPU waited for your host "
                "code (a call that synchronises, such as torch.cuda.synchronize(), .item() or cudaDeviceSetLimit, inside your "
                "function). The grader cannot tell the two apart: keep synchronising calls out of the function you hand in",
                "kernels": shown,
            }
    return {"ok": True, "message": "kernels launched: " + ", ".join(_short(k.removesuffix(OWN_MARK)) for k in mine), "kernels": shown}


def unaccounted(seen: dict, own: set[str], charges: list[float]) -> tuple[float, float] | None:
    """(own kernel time per call, typical charge per call) when the learner's kernels, as the
    profiler saw them in one timed phase, ran less than ACCOUNT_SHARE of what each call was charged;
    None when they account for it (or the calls are too short to tell)."""
    if not charges:
        return None
    own_per_call = sum(float(k["total_us"]) for k in seen.get("kernels", []) if is_own(k["name"], own)) / len(charges)
    typical = sorted(charges)[len(charges) // 2]
    return (own_per_call, typical) if typical >= ACCOUNT_MIN_US and own_per_call < ACCOUNT_SHARE * typical else None


def _short(name: str, limit: int = 90) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


# Without a GPU, the same question is asked of the ATen operators the calls ran (on any thread the
# profiler sees): the Triton interpreter only allocates and copies, so an arithmetic operator means
# the library did the work.
CPU_BOOKKEEPING_OPS = re.compile(
    r"^aten::(empty|empty_like|empty_strided|new_empty|new_empty_strided|set_|copy_|_to_copy|to|clone|"
    r"zeros|zeros_like|zero_|fill_|full|full_like|new_zeros|view|reshape|_reshape_alias|as_strided|"
    r"contiguous|detach|alias|lift_fresh|resolve_conj|resolve_neg|expand|t|transpose|permute|unsqueeze|"
    r"squeeze|flatten|select|slice|item|_local_scalar_dense|is_nonzero|numel|size|stride|result_type|"
    r"from_file|frombuffer|as_strided_|view_as|unbind|split|chunk|narrow|empty_permuted|_unsafe_view)$"
)

CPU_LIMITS = (
    "On a CPU the grader sees the interpreted Triton kernels and the PyTorch operators, compiles each "
    "kernel with Triton's front end as a GPU would, and runs each call's kernels again on other values of "
    "the floating-point inputs with nothing of your code between them but what it wrote into their tensors, "
    "so an answer made outside the kernels (NumPy, compiled code) comes back unchanged and is caught; "
    "what your code derives from integer inputs, and the time the kernels account for, are checked only on a GPU."
)


def judge_cpu(operators: list[str], calls: list[dict], own: set[str], replays: list[str | None] = ()) -> dict:
    """``calls``: per correctness call, what the interpreter recorded (the kernels run, whether
    Triton's front end compiles them for a GPU, and whether the output is exactly what those
    kernels stored); ``replays``: per replayed call, what its replay on other values of the inputs
    gave wrong, None where it gave their answer (autograder.replay)."""
    computing = sorted({op for op in operators if not CPU_BOOKKEEPING_OPS.match(op)})
    if computing:
        return {"ok": False, "message": f"the calls ran PyTorch operators that compute the answer ({', '.join(computing[:5])}); write the kernel yourself"}
    for call in calls:
        if not call:
            continue
        foreign = [k for k in call.get("kernels", []) if k not in own]
        if foreign:
            return {"ok": False, "message": f"the calls ran Triton kernels that are not yours, defined outside your code ({', '.join(foreign[:3])})"}
        if not call.get("kernels"):
            return {"ok": False, "message": "no Triton kernel of yours ran during the call; the work must run in your kernel"}
        unfit = sorted(call.get("compile_errors", {}).items())
        inlined = [(name, reason) for name, reason in unfit if reason.startswith("calls ") and (FOREIGN_CALLEE in reason or REFUSED_CALLEE in reason)]
        forged = [(name, reason) for name, reason in unfit if reason.startswith(NOT_ITS_SOURCE)]
        if forged:
            name, reason = forged[0]
            return {"ok": False, "message": f"your kernel {name}: {reason}. Write the kernel in Triton; the grader checks the code that runs"}
        if inlined:
            name, reason = inlined[0]
            return {"ok": False, "message": f"your kernel {name} {reason}: Triton inlines that function's code into your kernel, which makes it library work. Write it in your code"}
        if unfit:
            name, reason = unfit[0]
            return {
                "ok": False,
                "message": f"your kernel {name} does not compile for a GPU: {reason}. Under the interpreter its body runs as Python; "
                "on a GPU it must be Triton (tl operations on the blocks, no NumPy or other Python calls on their values)",
            }
        if not (call.get("output_stored") and call.get("output_is_what_was_stored")):
            return {"ok": False, "message": "the output you returned is not what your kernel stored: it must be written by your kernel, not computed or changed afterwards"}
        unread = sorted(name for name, fraction in call.get("inputs_read", {}).items() if fraction == 0.0)
        if unread:
            return {
                "ok": False,
                "message": f"your kernels never read {', '.join(unread)}: the answer must come from your kernels reading the inputs, not from "
                "code outside them (on a CPU the grader cannot see NumPy or compiled code, so your kernels must read the inputs themselves)",
            }
    wrong = next((finding for finding in replays if finding), None)
    if wrong:
        return {"ok": False, "message": f"your kernels, run again on other values of the inputs with nothing of your code between them but what it wrote into their tensors before each launch, did not compute the new answer ({wrong}): "
                "the answer came from code outside your kernels (NumPy, compiled code, values your host code read from the inputs). Compute it in your kernels, from the inputs they load"}
    return {"ok": True, "message": "your Triton kernels wrote the output. " + CPU_LIMITS}
