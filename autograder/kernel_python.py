"""Python in a kernel other than Triton's, refused by the CPU's front-end check.

On a CPU, Triton's interpreter runs a kernel's body as Python on NumPy arrays, and the grader's front
end (autograder.triton_frontend) compiles the same body for a GPU, where its Python runs once, while
compiling, on IR values. Python that looks at a tensor rather than computing with Triton can take one
branch under the interpreter and another in the compiler: a kernel guarded by
``hasattr(x.handle, "data")`` added with NumPy when interpreted and stored x alone when compiled, and
a plain Python helper handed the tensors did the same by the handle's type. Both passed both checks.
Such code never computes on a GPU (a Python function cannot do Triton arithmetic outside a jitted
function), so the front end refuses it: a tensor's internals (``handle``, names starting with ``_``)
read in a kernel, a Python function that is neither Triton's, jitted nor one of Python's builtins
called at all (a module function with no argument, or one wrapped in a constexpr, computed a block with
NumPy under the interpreter and returned a constant to the compiler), and a global or a module's
attribute whose value is not plain data (a constexpr around an object of the learner's ran its
``__getitem__`` there), nor a launch's constexpr argument.
"""

from __future__ import annotations

import os
import types

PLAIN = "a kernel may read plain data (numbers, strings, tuples, dtypes), Triton's functions and modules, and your @triton.jit functions"
# Triton's builtins that may take a tensor and mean the same to the interpreter and the compiler.
SAME_EVERYWHERE = ("isinstance", "len", "range", "min", "max", "print", "list", "float", "int")
# Python's builtins a kernel may call besides the ones Triton's compiler knows (its builtin_namespace):
# functions of plain values only. Not exec, eval, compile or __import__: a string they run under the
# interpreter computes with NumPy on the blocks' memory, while on a GPU it runs once at compile time
# (exec_in_a_kernel.py); nor open, globals, setattr and the like.
PURE_BUILTINS = frozenset({"abs", "all", "any", "bool", "divmod", "enumerate", "pow", "reversed", "round", "sorted", "str", "sum", "tuple", "zip"})


class PythonOnATensor(RuntimeError):
    """Python in a kernel that would read a tensor differently under the interpreter and on a GPU."""


# Triton's installed folder, as imported and as resolved, and the methods Python generated for Triton's
# classes (a dataclass's __init__, compiled from a string): set by ``install`` before the learner's code
# loads (module constants, in the seal's fingerprint from then on).
TRITON_ROOTS: tuple[str, ...] = ()
TRITON_GENERATED: frozenset = frozenset()


def triton_code(function) -> bool:
    """Whether a function's code lies in Triton's installed files (its name and module the learner can
    set; its code object's file it cannot forge: the seal refuses code compiled under an installed
    file's name)."""
    code = getattr(function, "__code__", None)
    if code is None or "/../" in code.co_filename or "/./" in code.co_filename:
        return False
    return code.co_filename.startswith(TRITON_ROOTS or _roots())


def _roots() -> tuple[str, ...]:
    import triton

    folder = os.path.dirname(triton.__file__)
    return tuple({folder + os.sep, os.path.realpath(folder) + os.sep})


def _standard_code(function) -> bool:
    """Whether a function's code is the standard library's (typing.Generic's, say), not an installed package's."""
    folder = os.path.dirname(os.__file__) + os.sep
    name = function.__code__.co_filename
    return name.startswith(folder) and "site-packages" not in name and "/../" not in name


def triton_class(cls) -> bool:
    """A class of Triton's: every method along its classes is Triton's code (or the standard library's,
    for the bases Triton builds on), and every other callable it holds is one of Python's own."""
    for owner in getattr(cls, "__mro__", ()):
        if owner is object:
            continue
        for member in vars(owner).values():
            function = getattr(member, "__func__", member)
            for part in (function, getattr(member, "fget", None), getattr(member, "fset", None)):
                if isinstance(part, types.FunctionType) and not (triton_code(part) or _standard_code(part) or part in TRITON_GENERATED):
                    return False
            if callable(function) and not isinstance(function, (types.FunctionType, type)) and type(function).__module__ != "builtins":
                if not (type(function).__module__ or "").startswith("triton"):
                    return False
    return True


def triton_callable(fn) -> bool:
    """Triton's own function or method: its code is Triton's, or it is bound to an object of a class
    of Triton's with a method of Triton's code."""
    if isinstance(fn, types.FunctionType):
        return triton_code(fn)
    if isinstance(fn, types.MethodType):
        return triton_callable(fn.__func__) and (isinstance(fn.__self__, type) or triton_class(type(fn.__self__)))
    if isinstance(fn, types.BuiltinFunctionType):
        return False
    # An object of Triton's class may wrap a function of the learner's (a constexpr function does).
    wrapped = [getattr(fn, name, None) for name in ("fn", "func", "__wrapped__")]
    if any(isinstance(inner, types.FunctionType) and not triton_code(inner) for inner in wrapped):
        return False
    return triton_class(type(fn))


def plain(value) -> bool:
    """Data a kernel may read from Python: built-in numbers, strings, None, tuples and lists of them,
    NumPy's scalars, objects of Triton's classes (dtypes, constexprs of plain data, jitted functions),
    and modules, functions and classes (whose calls and attributes are checked where they are used)."""
    import numpy as np

    if type(value) in (bool, int, float, str, type(None)) or type(value) in set(np.sctypeDict.values()):
        return True
    if type(value) in (tuple, list):
        return all(plain(item) for item in value)
    if isinstance(value, (types.ModuleType, types.FunctionType)) or _python_builtin(value):
        return True
    if isinstance(value, type):
        # Indexed or called, a class runs its own methods (__class_getitem__): Triton's or Python's only.
        return triton_class(value)
    if not triton_class(type(value)):
        return False
    from triton.language import core

    # A constexpr carries any object as its value or type: both must be plain too.
    return not isinstance(value, core.constexpr) or (plain(value.value) and plain(getattr(value, "type", None)))


def _python_builtin(value) -> bool:
    import builtins

    return isinstance(value, types.BuiltinFunctionType) and getattr(builtins, getattr(value, "__name__", ""), None) is value


def unplain_argument(args, kwargs: dict) -> str | None:
    """The first argument of a launch that is neither a tensor nor plain data, in words, or None."""
    import torch

    for name, value in [*enumerate(args), *kwargs.items()]:
        if not isinstance(value, torch.Tensor) and not plain(value):
            return f"its argument {name} is a {type(value).__name__} object: a kernel takes tensors and plain values (numbers, strings, tuples, dtypes)"
    return None


def _internal(attribute) -> bool:
    return not isinstance(attribute, str) or attribute == "handle" or attribute.startswith("_")


def _has_tensor(values) -> bool:
    from triton.language import core

    triton_tuple = getattr(core, "tuple", ())
    for value in values:
        if isinstance(value, core.tensor) or (isinstance(value, (tuple, list)) and _has_tensor(value)):
            return True
        if triton_tuple and isinstance(value, triton_tuple) and _has_tensor(value.values):
            return True
    return False


def _generated_methods() -> frozenset:
    """The methods of Triton's classes whose code Python generated (dataclasses' and named tuples'),
    with triton.tools.tensor_descriptor loaded first (kernels take its descriptors)."""
    import importlib
    import sys

    try:
        importlib.import_module("triton.tools.tensor_descriptor")
    except ImportError:
        pass
    generated = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "triton" or name.startswith("triton.")):
            continue
        for cls in [value for value in list(vars(module).values()) if isinstance(value, type) and (value.__module__ or "").startswith("triton")]:
            for member in vars(cls).values():
                function = getattr(member, "__func__", member)
                if isinstance(function, types.FunctionType) and not triton_code(function):
                    generated.add(function)
    return frozenset(generated)


def install() -> None:
    """Refuse what the module says in the code generator of the CPU's front end (safe to call again)."""
    from triton.compiler import code_generator
    from triton.language import core

    global TRITON_ROOTS, TRITON_GENERATED
    TRITON_ROOTS = _roots()
    TRITON_GENERATED = _generated_methods()
    generator = code_generator.CodeGenerator
    if getattr(generator.call_Function, "_refuses_python_on_tensors", False):
        return
    original_attribute, original_call, original_name = generator.get_Attribute, generator.call_Function, generator.visit_Name
    original_subscript = generator.visit_Subscript_Load
    jitted = tuple(getattr(code_generator, name) for name in ("JITFunction", "BoundJITMethod") if hasattr(code_generator, name))
    # A constexpr function of the learner's is plain Python to both: the compiler hands it IR values.
    constexpr_functions = tuple(getattr(code_generator, name) for name in ("BoundConstexprFunction", "ConstexprFunction") if hasattr(code_generator, name))

    def get_Attribute(self, lhs, attribute):
        if isinstance(lhs, core.tensor) and _internal(attribute):
            raise PythonOnATensor(f"reads .{attribute} of a tensor: a kernel computes with Triton's operations, not with a tensor's internals")
        value = original_attribute(self, lhs, attribute)
        if not isinstance(lhs, core.tensor) and not (plain(value) or triton_callable(value)):
            raise PythonOnATensor(f"reads .{attribute} of {getattr(lhs, '__name__', type(lhs).__name__)}, a {type(value).__name__} object: {PLAIN}")
        return value

    def visit_Subscript_Load(self, node):
        # What is indexed must be a tensor or plain data: an object's __getitem__ runs Python.
        saved, value_node, visit = self.__dict__.get("visit"), node.value, self.visit

        def checked_visit(child):
            result = visit(child)
            if child is value_node and not (isinstance(result, core.tensor) or plain(result)):
                raise PythonOnATensor(f"indexes a {type(result).__name__} object: {PLAIN}")
            return result

        self.visit = checked_visit
        try:
            return original_subscript(self, node)
        finally:
            if saved is None:
                self.__dict__.pop("visit", None)
            else:
                self.visit = saved

    def visit_Name(self, node):
        value = original_name(self, node)
        if not isinstance(value, str) and node.id not in self.lscope and not plain(value):
            raise PythonOnATensor(f"reads the global {node.id}, a {type(getattr(value, 'value', value)).__name__} object: {PLAIN}")
        return value

    def call_Function(self, node, fn, args, kws):
        name = getattr(fn, "__name__", type(fn).__name__)
        if core.is_builtin(fn) and not triton_callable(fn):
            # Triton hands its builtins the compiler's state; the interpreter calls them on the values.
            raise PythonOnATensor(f"calls {name}, marked as one of Triton's builtins but defined outside Triton")
        defined_in = getattr(fn, "__module__", None) or getattr(getattr(fn, "fn", None), "__module__", None) or ""
        triton_own = (
            type(fn) in jitted
            or (type(fn) in constexpr_functions and triton_callable(getattr(fn, "fn", None)))
            or triton_callable(fn)
        )
        builtin = fn in generator.builtin_namespace.values() or (_python_builtin(fn) and name in PURE_BUILTINS) or (isinstance(fn, type) and triton_class(fn))
        if not triton_own and _python_builtin(fn) and not builtin:
            raise PythonOnATensor(f"calls {name}, a Python builtin a kernel may not call: on a GPU it runs once while compiling, under the interpreter on every block")
        if not triton_own and not builtin:
            raise PythonOnATensor(
                f"calls {name}, a Python function of {defined_in or 'your code'}: a kernel may call Triton's functions, your @triton.jit "
                "functions and Python's builtins; on a GPU other Python runs once while compiling, under the interpreter on every block"
            )
        if not triton_own and _has_tensor([*args, *kws.values()]):
            if name in ("getattr", "hasattr") and fn in generator.builtin_namespace.values():
                if len(args) > 1 and _internal(core._unwrap_if_constexpr(args[1])):
                    raise PythonOnATensor(f"{name}() on a tensor's internals: a kernel computes with Triton's operations, not with a tensor's internals")
            elif not (name in SAME_EVERYWHERE and fn in generator.builtin_namespace.values()):
                raise PythonOnATensor(
                    f"calls {name}, a Python function that is not Triton's nor jitted, with a tensor: on a GPU it runs once while "
                    "compiling, on no values, and under the interpreter on the values; compute with tl functions or a @triton.jit function"
                )
        return original_call(self, node, fn, args, kws)

    call_Function._refuses_python_on_tensors = True
    generator.get_Attribute, generator.call_Function, generator.visit_Name = get_Attribute, call_Function, visit_Name
    generator.visit_Subscript_Load = visit_Subscript_Load
