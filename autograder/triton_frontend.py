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
import types
from typing import Any

# Hopper, whatever the machine: a GPU on which every exercise's kernel compiles (FP8 needs sm_89).
TARGET_ARCH = ("cuda", 90, 32)
_MISSING = object()
# (kernel function, specialization) -> None when it compiles, else why not.
_verdicts: dict[tuple, str | None] = {}
# The learner's kernel function -> its JITFunction and argument binder.
_jitted: dict[Any, tuple[Any, Any]] = {}
# An InterpretedFunction (by id, kept alive here) -> the JITFunction that stands in for it.
_stand_ins: dict[int, tuple[Any, Any]] = {}
# A learner module's globals (by id, kept alive here) -> the copy its kernels compile with.
_scopes: dict[int, tuple[dict, dict]] = {}
_backend: list = []


def backend():
    """The nominal target and its backend (made once: loading it is most of the first compile's time)."""
    if not _backend:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend

        target = GPUTarget(*TARGET_ARCH)
        _backend.extend([target, make_backend(target)])
    return _backend[0], _backend[1]


def warm() -> None:
    """Pay the first compile's one-time costs now (the backend, the language's JITFunctions, the
    modules the specializer imports, the dialects): a process that forks workers calls it once."""
    import importlib

    from triton._C.libtriton import ir

    _, gpu = backend()
    _language_swaps()
    try:
        # The JIT's specializer imports Gluon at its first call (Triton 3.9).
        importlib.import_module("triton.experimental.gluon")
    except ImportError:
        pass
    context = ir.context()
    ir.load_dialects(context)
    gpu.load_dialects(context)


def compile_error(function, args: tuple, kwargs: dict) -> str | None:
    """None when Triton's front end builds ``function``'s IR for the launch ``function[grid](*args,
    **kwargs)``; else the compiler's reason, in one line. ``function`` is the learner's Python
    function (the one ``@triton.jit`` decorated)."""
    from triton.runtime.jit import create_function_from_signature

    target, gpu = backend()
    try:
        if function not in _jitted:
            jit = _as_compiled(_interpreted_kernel(function))
            _jitted[function] = (jit, create_function_from_signature(jit.signature, jit.params, gpu))
        jit, binder = _jitted[function]
        # A jitted function passed as a constexpr (an activation, say) is compiled into the kernel.
        args, kwargs = [_as_compiled(a) for a in args], {k: _as_compiled(v) for k, v in kwargs.items()}
        bound, specialization, options = binder(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 -- a launch the JIT cannot even bind fails on a GPU too
        return _reason(error)
    # The IR depends on the argument types and the constexpr values; an integer's divisibility by 16
    # only annotates it, so sizes that differ in it alone share one compile. A jitted function passed
    # as a constexpr counts by identity, as two may share a name.
    from triton.runtime.jit import JITFunction

    shape = [(kind, value if kind == "constexpr" else None) for kind, value in specialization]
    key = (function, repr(shape), tuple(id(value) for _, value in shape if isinstance(value, JITFunction)))
    if key not in _verdicts:
        _verdicts[key] = _build_ir(jit, gpu, target, kwargs, bound, specialization, options)
    return _verdicts[key]


def _build_ir(jit, gpu, target, kwargs: dict, bound, specialization, options) -> str | None:
    from triton import knobs
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource

    # Said here so that the backend does not warn that the default changes in Triton 3.10.
    kwargs = {"enable_fp_fusion": True, **kwargs}
    swaps = _language_swaps()
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
        ASTSource(jit, signature, constexprs, attrs).make_ir(target, options, gpu.get_codegen_implementation(options), gpu.get_module_map(), context)
        return None
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


def _interpreted(value):
    """The InterpretedFunction behind ``value`` (itself, or under autotune/heuristics), else None."""
    from triton.runtime.interpreter import InterpretedFunction

    for _ in range(8):
        if isinstance(value, InterpretedFunction):
            return value
        value = getattr(value, "fn", None)
    return None


def _interpreted_kernel(function):
    """The InterpretedFunction that ``@triton.jit(...)`` made of ``function``: its options
    (do_not_specialize, ...) change the specialization."""
    from triton.runtime.interpreter import InterpretedFunction

    for value in list(function.__globals__.values()):
        interpreted = _interpreted(value)
        if interpreted is not None and interpreted.fn is function:
            return interpreted
    # Not in its module's globals (made in a function, say): the same kernel, without options.
    return InterpretedFunction(function)


def _translated_scope(scope: dict) -> dict:
    """A copy of the learner's globals in which every jitted helper is a JITFunction again (made at
    the first compile of one of the module's kernels)."""
    from triton.runtime.interpreter import InterpretedFunction

    if id(scope) not in _scopes:
        translated = dict(scope)
        _scopes[id(scope)] = (scope, translated)
        for name, value in scope.items():
            if isinstance(value, InterpretedFunction):
                translated[name] = _as_compiled(value)
    return _scopes[id(scope)][1]


def _as_compiled(value):
    """``value``, or for an InterpretedFunction the JITFunction that stands in for it."""
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(value, InterpretedFunction):
        return value
    if getattr(value.fn, "__module__", "").startswith("triton.language"):
        return _language_jit(value)
    scope = _translated_scope(value.fn.__globals__)
    return _stand_in(value, lambda: _as_jit(value.fn, value.kwargs, scope))


def _stand_in(interpreted, make):
    if id(interpreted) not in _stand_ins:
        _stand_ins[id(interpreted)] = (interpreted, make())
    return _stand_ins[id(interpreted)][1]


def _as_jit(function, options: dict, scope: dict):
    """A JITFunction of ``function`` whose globals are ``scope`` (closures translated alike)."""
    from triton.runtime.jit import JITFunction

    cells = None
    if function.__closure__:
        cells = tuple(types.CellType(_as_compiled(c.cell_contents)) for c in function.__closure__)
    copy = types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__, cells)
    for attribute in ("__kwdefaults__", "__annotations__", "__qualname__", "__module__", "__doc__"):
        setattr(copy, attribute, getattr(function, attribute))
    return JITFunction(copy, **options)


def _language_swaps() -> list[tuple[Any, str, Any, Any]]:
    """(owner, name, InterpretedFunction, JITFunction) for triton.language's jitted functions and the
    tensor methods that forward to them (``x.sum()``)."""
    import triton.language as tl

    swaps = []
    for name, module in list(sys.modules.items()):
        if module is not None and (name == "triton.language" or name.startswith("triton.language.")):
            swaps += [(module, attr, value, jitted) for attr, value in list(vars(module).items()) if (jitted := _language_jit(value)) is not None]
    for attr, value in list(vars(tl.tensor).items()):
        for cell in getattr(value, "__closure__", None) or ():
            jitted = _language_jit(cell.cell_contents)
            if jitted is not None:
                swaps.append((tl.tensor, attr, value, jitted))
    return swaps


def _language_jit(value):
    """The stand-in of one of triton.language's jitted functions (its globals are the language's
    own modules, swapped in place), None for anything else."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if not isinstance(value, InterpretedFunction):
        return None
    return _stand_in(value, lambda: JITFunction(value.fn, **value.kwargs))


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
