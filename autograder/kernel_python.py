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

import types

PLAIN = "a kernel may read plain data (numbers, strings, tuples, dtypes), Triton's functions and modules, and your @triton.jit functions"
# Triton's builtins that may take a tensor and mean the same to the interpreter and the compiler.
SAME_EVERYWHERE = ("isinstance", "len", "range", "min", "max", "print", "list", "float", "int")


class PythonOnATensor(RuntimeError):
    """Python in a kernel that would read a tensor differently under the interpreter and on a GPU."""


def plain(value) -> bool:
    """Data a kernel may read from Python: built-in numbers, strings, None, tuples and lists of them,
    Triton's own objects (dtypes, constexprs of plain data, jitted functions), and modules, functions
    and classes (whose calls are checked where they are made)."""
    import types

    from triton.language import core

    if isinstance(value, core.constexpr):
        value = value.value
    if type(value) in (bool, int, float, str, type(None)):
        return True
    if type(value) in (tuple, list):
        return all(plain(item) for item in value)
    if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
        return True
    # Triton's own objects, and NumPy's scalars (data with NumPy's methods).
    return (type(value).__module__ or "").startswith("triton") or type(value).__module__ == "numpy"


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


def install() -> None:
    """Refuse both in the code generator of the CPU's front end (safe to call again)."""
    from triton.compiler import code_generator
    from triton.language import core

    generator = code_generator.CodeGenerator
    if getattr(generator.call_Function, "_refuses_python_on_tensors", False):
        return
    original_attribute, original_call, original_name = generator.get_Attribute, generator.call_Function, generator.visit_Name
    jitted = tuple(getattr(code_generator, name) for name in ("JITFunction", "BoundJITMethod") if hasattr(code_generator, name))
    # A constexpr function of the learner's is plain Python to both: the compiler hands it IR values.
    constexpr_functions = tuple(getattr(code_generator, name) for name in ("BoundConstexprFunction", "ConstexprFunction") if hasattr(code_generator, name))

    def get_Attribute(self, lhs, attribute):
        if isinstance(lhs, core.tensor) and _internal(attribute):
            raise PythonOnATensor(f"reads .{attribute} of a tensor: a kernel computes with Triton's operations, not with a tensor's internals")
        value = original_attribute(self, lhs, attribute)
        if isinstance(lhs, types.ModuleType) and not lhs.__name__.startswith("triton") and not plain(value):
            raise PythonOnATensor(f"reads {lhs.__name__}.{attribute}, a {type(value).__name__} object: {PLAIN}")
        return value

    def visit_Name(self, node):
        value = original_name(self, node)
        if not isinstance(value, str) and node.id not in self.lscope and not plain(value):
            raise PythonOnATensor(f"reads the global {node.id}, a {type(getattr(value, 'value', value)).__name__} object: {PLAIN}")
        return value

    def call_Function(self, node, fn, args, kws):
        name = getattr(fn, "__name__", type(fn).__name__)
        if core.is_builtin(fn) and not (getattr(fn, "__module__", None) or "").startswith("triton"):
            # Triton hands its builtins the compiler's state; the interpreter calls them on the values.
            raise PythonOnATensor(f"calls {name}, marked as one of Triton's builtins but defined outside Triton")
        defined_in = getattr(fn, "__module__", None) or getattr(getattr(fn, "fn", None), "__module__", None) or ""
        triton_own = (
            isinstance(fn, jitted)
            or (isinstance(fn, constexpr_functions) and defined_in.startswith("triton"))
            or core.is_builtin(fn)
            or isinstance(getattr(fn, "__self__", None), core.base_value)
        )
        builtin = name in SAME_EVERYWHERE + ("getattr", "hasattr") and fn in generator.builtin_namespace.values()
        if not triton_own and not builtin and not defined_in.startswith(("triton", "math", "builtins")):
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
