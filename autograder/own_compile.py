"""Whose code a Triton kernel compiled on a GPU is, decided inside Triton's compiler from the code it
compiles, not from the kernel's name.

On a GPU the profiler knows a kernel by its name alone, so the worker compiles the learner's kernels
under a marked name (``honesty.OWN_MARK``). The name is made in the learner's process from Python
attributes any code there can set (a JIT function's ``_repr``, ``repr``, ``src`` or ``parse``), so the
mark is checked where the binary is made. A kernel may bear it only when:

- the function body the code generator turns into the kernel is one of the learner's file, as parsed
  from that file before any of its code ran (compared as syntax trees, decorators left out);
- every Triton function it calls, inlined into it, is the learner's or Triton's own (triton.language's,
  triton.tools'): a library's kernel called as a device function is library work inside a kernel of
  the learner's name;
- nothing replaced the IR between the code generator and the binary: no override folder, no
  configuration's ``ir_override``, no stage hook, no IR file handed to ``triton.compile``.

A compile that would give the mark to anything else fails with the reason, before its binary is
written to the cache. On a CPU, where no kernel is marked, the same comparison runs while Triton's
front end builds a launched kernel's IR (autograder.triton_frontend): a kernel of the learner's that
inlines a library's Triton function is reported as library work there too. What this cannot see, a
binary of a library's code renamed after it was built and loaded by other means (a planted cache
entry, a driver or CuPy module load), is said on the grading page: the learner's process makes the
binary, and only an observer outside it could tell.
"""

from __future__ import annotations

import ast
import copy
import inspect
import os
import sys
import textwrap
import threading

from .honesty import FOREIGN_CALLEE, OWN_MARK, REFUSED_CALLEE


class NotYourKernel(RuntimeError):
    """A compile that would give the learner's mark to code that is not the learner's."""


def body_shape(node: ast.AST) -> str:
    """A function's syntax tree without its decorators and line numbers: the same for the function as
    written in a file and as Triton parses it (from its source, decorators cut off)."""
    bare = copy.copy(node)
    bare.decorator_list = []
    return ast.dump(bare)


def file_shapes(paths) -> frozenset[str]:
    """Every function of the Python files ``paths``, as ``body_shape`` gives it (files that cannot be
    read or parsed give none)."""
    shapes = set()
    for path in paths:
        try:
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read())
        except (OSError, SyntaxError, ValueError):
            continue
        shapes.update(body_shape(node) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return frozenset(shapes)


def language_shapes() -> frozenset[str]:
    """Every jitted function of Triton's own modules (triton.language and its extras, Gluon's language),
    as loaded before the learner's code: ``tl.sum``, ``tl.cdiv`` and the like, and the combine functions
    of the reductions. Under the interpreter they are InterpretedFunctions, read from their source."""
    import importlib

    for name in ("triton.language", "triton.language.extra.libdevice", "triton.experimental.gluon.language"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 -- a Triton without Gluon has no Gluon functions to allow
            continue
    shapes = set()
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("triton."):
            continue
        values = list(vars(module).values())
        values += [v for c in values if isinstance(c, type) and c.__module__ == name for v in vars(c).values()]
        for value in values:
            shape = _jitted_shape(value)
            if shape is not None:
                shapes.add(shape)
    return frozenset(shapes)


# Triton's folders whose modules define jitted functions a kernel may call (triton.tools.ragged_tma's
# helpers among them, which nothing imports until the learner does).
TRITON_FOLDERS = ("language", "tools", os.path.join("experimental", "gluon", "language"))


def triton_file_shapes(root: str) -> frozenset[str]:
    """Every function of Triton's own files under ``root`` (its installed package folder, which the
    learner's process cannot write), read from disk: the modules loaded after ``install`` too."""
    return file_shapes(
        os.path.join(directory, name)
        for folder in TRITON_FOLDERS
        for directory, _, names in os.walk(os.path.join(root, folder))
        for name in sorted(names)
        if name.endswith(".py")
    )


def _jitted_shape(value, anonymous: bool = False) -> str | None:
    """``body_shape`` of a jitted function (a JITFunction, or an InterpretedFunction under the
    interpreter), None for anything else or a function whose source cannot be read. ``anonymous``:
    the function's name left out (``anonymous_shape``)."""
    from triton.runtime.jit import JITFunction

    # Loaded where the interpreter runs kernels (a CPU), and not imported for this elsewhere.
    interpreted = getattr(sys.modules.get("triton.runtime.interpreter"), "InterpretedFunction", ())
    shape = anonymous_shape if anonymous else body_shape
    try:
        if isinstance(value, JITFunction):
            return shape(value.parse().body[0])
        if isinstance(value, interpreted):
            return shape(ast.parse(textwrap.dedent(inspect.getsource(value.fn))).body[0])
        return None
    except Exception:  # noqa: BLE001 -- a function whose source Triton cannot read never compiles either
        return None


def anonymous_shape(node: ast.AST) -> str:
    """``body_shape`` without the function's name: a copy of a function renamed has the same."""
    bare = copy.copy(node)
    bare.name = ""
    return body_shape(bare)


def ir_injected(ir_override: str | None) -> str:
    """What replaces Triton's IR on its way to the binary, if anything is set to: '' when nothing.
    ``ir_override``: the compile's option of that name."""
    from triton import knobs

    if ir_override:
        return f"a configuration's ir_override ({ir_override})"
    if knobs.compilation.override:
        return "TRITON_KERNEL_OVERRIDE (kernels read from an override folder)"
    if knobs.runtime.add_stages_inspection_hook is not None:
        return "a hook on the compiler's stages (add_stages_inspection_hook)"
    return ""


# The compile and the code generation running on this thread (the JIT may compile on a pool's threads).
_STATE = threading.local()


def install(files: tuple[str, ...], device: str, refused: tuple[str, ...] = ()) -> None:
    """In the worker, before the learner's module loads. On a GPU: the learner's Triton kernels
    (defined in ``files``) compile under their names with ``OWN_MARK`` appended, and every compile is
    checked as the module says; kernels of any other file keep their names, and code that undoes the
    marking only takes the mark off the learner's own kernels. On a CPU: the code generation is watched
    for ``foreign_callee``. ``refused``: names of triton.language functions that count as foreign here
    (the exercise's Problem.refused_language), known by their code, whatever name calls them."""
    import triton
    import triton.language as tl
    from triton.compiler import code_generator

    learner, language = file_shapes(files), language_shapes()
    refused_shapes = {_jitted_shape(getattr(tl, name, None), anonymous=True): f"tl.{name}" for name in refused} if refused else {}
    refused_shapes.pop(None, None)
    # Read only if a kernel calls a function of neither (a Triton module loaded later, or a library's).
    root, on_disk = os.path.dirname(os.path.realpath(triton.__file__)), []

    def triton_own(shape: str) -> bool:
        if not on_disk:
            on_disk.append(triton_file_shapes(root))
        return shape in on_disk[0]

    original_generate, original_visit = code_generator.ast_to_ttir, code_generator.CodeGenerator.visit_FunctionDef

    def ast_to_ttir(fn, *args, **kwargs):
        generating = {"kernel": None, "foreign": []}
        outer, _STATE.generating = getattr(_STATE, "generating", None), generating
        try:
            module = original_generate(fn, *args, **kwargs)
        finally:
            _STATE.generating = outer
        _STATE.last = generating
        name, own = generating["kernel"] or ("", False)
        if OWN_MARK in name:
            injected = ir_injected(getattr(kwargs.get("options"), "ir_override", None))
            if injected:
                raise NotYourKernel(f"{name}: its IR would be replaced on the way to the binary by {injected}; a kernel of yours is compiled from your code alone")
            if not own:
                raise NotYourKernel(f"a kernel that is not yours was compiled under your kernel's name {name}: its code is not a function of your file")
            if generating["foreign"]:
                callee = generating["foreign"][0]
                raise NotYourKernel(f"your kernel {name.removesuffix(OWN_MARK)} {_calls(callee)}: {'write it in your code' if callee.startswith('tl.') else WRITE_IT}")
        record = getattr(_STATE, "record", None)
        if record is not None:
            record["generated"] = name
        return module

    def visit_FunctionDef(self, node):
        generating = getattr(_STATE, "generating", None)
        if generating is not None:
            shape = body_shape(node)
            if self.is_kernel and generating["kernel"] is None:
                generating["kernel"] = (self.function_name, shape in learner)
            elif refused_shapes and anonymous_shape(node) in refused_shapes:
                generating["foreign"].append(refused_shapes[anonymous_shape(node)])
            elif shape not in learner and shape not in language and not triton_own(shape):
                generating["foreign"].append(node.name)
        return original_visit(self, node)

    code_generator.ast_to_ttir = ast_to_ttir
    code_generator.CodeGenerator.visit_FunctionDef = visit_FunctionDef
    if device == "cuda":
        _mark_and_gate(files)
    else:
        from . import kernel_python

        kernel_python.install()


# What a kernel of the learner's may call, in the refusal's words (honesty.judge_cpu reads FOREIGN_CALLEE).
WRITE_IT = "a kernel of yours may call only functions you wrote and Triton's own; write it in your code"


def _calls(callee: str) -> str:
    """The refusal's words; a refused triton.language function is named as tl.<name>."""
    return f"calls {callee}, {REFUSED_CALLEE if callee.startswith('tl.') else FOREIGN_CALLEE}"


def foreign_callee(build) -> str | None:
    """Run ``build`` (one code generation of Triton's front end, on a CPU) and say what it found: "calls
    <function>, ..." when the kernel is one of the learner's and inlines a Triton function from
    elsewhere, else None (also where ``install`` never ran)."""
    _STATE.last = None
    build()
    last = _STATE.last
    if last and last["kernel"] and last["kernel"][1] and last["foreign"]:
        return _calls(last["foreign"][0])
    return None


def _mark_and_gate(files: tuple[str, ...]) -> None:
    """The GPU's half of ``install``: the mark, and the compile's checks around the code generation."""
    from triton import compiler as compiler_package
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.compiler import compiler
    from triton.runtime.jit import JITFunction

    learner_files = {os.path.realpath(f) for f in files}
    original_init, original_compile, original_cubin = JITFunction.__init__, compiler.compile, CUDABackend.make_cubin

    def init(self, fn, *args, **kwargs):
        original_init(self, fn, *args, **kwargs)
        code = getattr(fn, "__code__", None)
        if code is not None and os.path.realpath(code.co_filename) in learner_files:
            self._repr = lambda _specialization, name=fn.__name__ + OWN_MARK: name

    def compile(src, *args, **kwargs):
        outer, _STATE.record = getattr(_STATE, "record", None), {}
        try:
            kernel = original_compile(src, *args, **kwargs)
            record = _STATE.record
        finally:
            _STATE.record = outer
        name = kernel.name
        if OWN_MARK in name:
            if isinstance(src, str):
                raise NotYourKernel(f"{name} comes from the IR file {src}, not from your code: a kernel of yours is compiled from your Triton functions")
            if "generated" in record and record.get("gated") != name:
                # Generated here and turned into a binary by a stage other than Triton's own.
                raise NotYourKernel(f"{name}: its binary was not made by Triton's own stages from your code (a replaced compiler stage)")
        return kernel

    def make_cubin(self, src, metadata, *args, **kwargs):
        name = metadata.get("name", "")
        if OWN_MARK in name:
            record = getattr(_STATE, "record", None) or {}
            injected = ir_injected(metadata.get("ir_override"))
            if injected:
                raise NotYourKernel(f"{name}: its IR was replaced on the way to the binary by {injected}; a kernel of yours is compiled from your code alone")
            if record.get("generated") != name:
                raise NotYourKernel(f"{name} was not generated from your code in this compile (its IR came from elsewhere)")
            record["gated"] = name
        return original_cubin(self, src, metadata, *args, **kwargs)

    JITFunction.__init__ = init
    compiler.compile = compiler_package.compile = compile
    if getattr(sys.modules.get("triton"), "compile", None) is original_compile:
        sys.modules["triton"].compile = compile
    CUDABackend.make_cubin = make_cubin
