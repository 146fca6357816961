"""Triton's real front end for the kernels the interpreter runs, as a GPU would compile them.

Under ``TRITON_INTERPRET=1`` a ``@triton.jit`` function's body is plain Python: a kernel that loads
its blocks with ``tl.load`` and multiplies them with ``np.matmul`` runs, and its answer is right,
although no GPU compiler accepts it. ``compile_error`` builds the kernel's Triton IR for a nominal
GPU (``TARGET_ARCH``) from the arguments of the launch, once per kernel and specialization, and says
why that failed; it needs no GPU and stops before any GPU-specific pass.

The interpreter replaced every ``@triton.jit`` function, the learner's helpers and triton.language's
own (``tl.sum``, ``tl.cdiv``, ...), with an InterpretedFunction, which the code generator would call
as plain Python: for the time of a compile they are JITFunctions again, as without the interpreter.
"""

from __future__ import annotations

import sys
from typing import Any

from . import kernel_python, own_compile
from .frontend_translation import Translation, interpreted_kernel, visible

# Hopper, whatever the machine: a GPU on which every exercise's kernel compiles (FP8 needs sm_89).
TARGET_ARCH = ("cuda", 90, 32)
_MISSING = object()


class FrontEnd:
    """Triton's front end with its caches: the verdicts, each kernel's JITFunction and binder, and
    the JITFunctions standing in for triton.language's. The worker makes one for each call of the
    learner's function and keeps it in that call's frame (interpreter.run_recorded), where nothing
    the learner's code can name leads to it: caches of this module's own could be filled with
    verdicts nobody computed. Each entry is keyed by what the kernel can see besides its arguments
    (``frontend_translation.visible``): the interpreter reads a kernel's globals afresh at every launch, so a verdict
    kept from before a global changed would be about another kernel."""

    def __init__(self) -> None:
        self.verdicts: dict[tuple, str | None] = {}
        self.jitted: dict[tuple, tuple[Any, Any]] = {}
        self.language: dict[int, tuple[Any, Any]] = {}
        self.target_and_backend: tuple | None = None

    def backend(self):
        """The nominal target and its backend."""
        if self.target_and_backend is None:
            from triton.backends.compiler import GPUTarget
            from triton.compiler import make_backend

            target = GPUTarget(*TARGET_ARCH)
            self.target_and_backend = (target, make_backend(target))
        return self.target_and_backend

    def compile_error(self, function, args: tuple, kwargs: dict) -> str | None:
        """None when Triton's front end builds ``function``'s IR for the launch ``function[grid](*args,
        **kwargs)``; else the compiler's reason, in one line. ``function`` is the learner's Python
        function (the one ``@triton.jit`` decorated)."""
        from triton.runtime.jit import JITFunction, create_function_from_signature

        odd = kernel_python.unplain_argument(args, kwargs)
        if odd is not None:
            return odd
        target, gpu = self.backend()
        visible_now = visible(function, set())
        try:
            if (function, visible_now) not in self.jitted:
                jit = Translation(self).compiled(interpreted_kernel(function))
                self.jitted[(function, visible_now)] = (jit, create_function_from_signature(jit.signature, jit.params, gpu))
            jit, binder = self.jitted[(function, visible_now)]
            # A jitted function passed as a constexpr (an activation, say) is compiled into the kernel.
            translation = Translation(self)
            args, kwargs = [translation.compiled(a) for a in args], {k: translation.compiled(v) for k, v in kwargs.items()}
            bound, specialization, options = binder(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 -- a launch the JIT cannot even bind fails on a GPU too
            return _reason(error)
        # The IR depends on the argument types and the constexpr values; an integer's divisibility by 16
        # only annotates it, so sizes that differ in it alone share one compile. A jitted function passed
        # as a constexpr counts by what it can see.
        shape = [(kind, value if kind == "constexpr" else None) for kind, value in specialization]
        key = (function, visible_now, repr(shape), tuple(visible(value.fn, set()) for _, value in shape if isinstance(value, JITFunction)))
        if key not in self.verdicts:
            self.verdicts[key] = _build_ir(jit, gpu, target, kwargs, bound, specialization, options, self.language_swaps())
        return self.verdicts[key]

    def language_swaps(self) -> list[tuple[Any, str, Any, Any]]:
        """(owner, name, InterpretedFunction, JITFunction) for triton.language's jitted functions and
        the tensor methods that forward to them (``x.sum()``)."""
        import triton.language as tl

        swaps = []
        for name, module in list(sys.modules.items()):
            if module is not None and (name == "triton.language" or name.startswith("triton.language.")):
                swaps += [(module, attr, value, jitted) for attr, value in list(vars(module).items()) if (jitted := self.language_jit(value)) is not None]
        for attr, value in list(vars(tl.tensor).items()):
            for cell in getattr(value, "__closure__", None) or ():
                jitted = self.language_jit(cell.cell_contents)
                if jitted is not None:
                    swaps.append((tl.tensor, attr, value, jitted))
        return swaps

    def language_jit(self, value):
        """The stand-in of one of triton.language's jitted functions (its globals are the language's
        own modules, swapped in place), None for anything else."""
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        if not isinstance(value, InterpretedFunction):
            return None
        if id(value) not in self.language:
            self.language[id(value)] = (value, JITFunction(value.fn, **value.kwargs))
        return self.language[id(value)][1]


# For callers outside a recorded call (tests, a notebook's own checks): the worker passes its own.
_SHARED = FrontEnd()


def backend():
    """The nominal target and its backend (made once: loading it is most of the first compile's time)."""
    return _SHARED.backend()


def warm() -> None:
    """Pay the first compile's one-time costs now (the backend, the language's JITFunctions, the
    modules the specializer imports, the dialects): a process that forks workers calls it once."""
    import importlib

    from triton._C.libtriton import ir

    _, gpu = backend()
    _SHARED.language_swaps()
    try:
        # The JIT's specializer imports Gluon at its first call (Triton 3.9).
        importlib.import_module("triton.experimental.gluon")
    except ImportError:
        pass
    context = ir.context()
    ir.load_dialects(context)
    gpu.load_dialects(context)


def compile_error(function, args: tuple, kwargs: dict, front_end: FrontEnd | None = None) -> str | None:
    """``FrontEnd.compile_error`` with ``front_end``'s caches (else this module's)."""
    return (front_end or _SHARED).compile_error(function, args, kwargs)


def _build_ir(jit, gpu, target, kwargs: dict, bound, specialization, options, swaps) -> str | None:
    from triton import knobs
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource

    # Said here so that the backend does not warn that the default changes in Triton 3.10.
    kwargs = {"enable_fp_fusion": True, **kwargs}
    interpreting = knobs.runtime.__dict__.get("interpret", _MISSING)
    try:
        options, signature, constexprs, attrs = jit._pack_args(gpu, kwargs, bound, specialization, options)
        # Constexpr functions give constexprs only when Triton believes it is compiling.
        knobs.runtime.__dict__["interpret"] = False
        for owner, name, _, jitted in swaps:
            setattr(owner, name, jitted)
        context = ir.context()
        ir.load_dialects(context)
        gpu.load_dialects(context)
        source = ASTSource(jit, signature, constexprs, attrs)
        # A kernel of the learner's that inlines a library's Triton function compiles, as library work.
        return own_compile.foreign_callee(lambda: source.make_ir(target, options, gpu.get_codegen_implementation(options), gpu.get_module_map(), context))
    except Exception as error:  # noqa: BLE001 -- whatever stops the front end stops the GPU's compile
        return _reason(error)
    finally:
        for owner, name, interpreted, _ in swaps:
            setattr(owner, name, interpreted)
        if interpreting is _MISSING:
            knobs.runtime.__dict__.pop("interpret", None)
        else:
            knobs.runtime.__dict__["interpret"] = interpreting


def _reason(error: Exception) -> str:
    """The compiler's complaint in one line, with the line of the kernel it is about."""
    from triton.compiler.errors import CompilationError

    text = str(error).strip().splitlines()
    if not isinstance(error, CompilationError):
        return _short(f"{type(error).__name__}: {text[-1] if text else ''}")
    complaint = (error.error_message or (text[-1] if text else "")).strip().splitlines()
    lines = (error.src or "").splitlines()
    number = getattr(error.node, "lineno", 0)
    where = f"`{lines[number - 1].strip()}`: " if 0 < number <= len(lines) else ""
    return _short(where + (complaint[0] if complaint else type(error).__name__))


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def restore_language_after_device_calls(interpreter) -> None:
    """A jitted helper the kernel calls patches triton.language for the interpreter and never puts
    it back (Triton 3.7 to 3.9): a helper from another module, such as ``tl.sum``, leaves ``tl.core``'s
    functions the interpreter's after the launch, and the next compile would see them. Each such
    call now undoes its own patch."""
    global _original_device_call, _interpreter
    function = interpreter.InterpretedFunction
    if function.__call__ is _device_call:
        return
    # Module bindings, not a closure: the seal's fingerprint sees a rebinding of either.
    _original_device_call, _interpreter = function.__call__, interpreter
    function.__call__ = _device_call


_original_device_call = _interpreter = None


def _device_call(self, *args, **kwargs):
    scope = _interpreter._patch_lang(self.fn)
    try:
        return _original_device_call(self, *args, **kwargs)
    finally:
        scope.restore()
