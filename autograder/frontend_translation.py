"""The learner's jitted functions as Triton's front end needs them (autograder.triton_frontend):
under the interpreter each ``@triton.jit`` function is an InterpretedFunction, whose body the code
generator would call as plain Python; a build turns it, its helpers and its module's globals back
into JITFunctions, from what they hold at that moment."""

from __future__ import annotations

import types
from typing import Any


def interpreted(value):
    """The InterpretedFunction behind ``value`` (itself, or under autotune/heuristics), else None."""
    from triton.runtime.interpreter import InterpretedFunction

    for _ in range(8):
        if isinstance(value, InterpretedFunction):
            return value
        value = getattr(value, "fn", None)
    return None


def interpreted_kernel(function):
    """The InterpretedFunction that ``@triton.jit(...)`` made of ``function``: its options
    (do_not_specialize, ...) change the specialization."""
    from triton.runtime.interpreter import InterpretedFunction

    for value in list(function.__globals__.values()):
        found = interpreted(value)
        if found is not None and found.fn is function:
            return found
    # Not in its module's globals (made in a function, say): the same kernel, without options.
    return InterpretedFunction(function)


class Translation:
    """One build's JITFunctions for the learner's jitted functions and its modules' globals, made
    from what they hold now (nothing kept from an earlier build: a global may have changed since)."""

    def __init__(self, front_end) -> None:
        self.front_end = front_end
        self.scopes: dict[int, dict] = {}
        self.stand_ins: dict[int, Any] = {}

    def compiled(self, value):
        """``value``, or for an InterpretedFunction the JITFunction that stands in for it."""
        from triton.runtime.interpreter import InterpretedFunction

        if not isinstance(value, InterpretedFunction):
            return value
        if getattr(value.fn, "__module__", "").startswith("triton.language"):
            return self.front_end.language_jit(value)
        if id(value) not in self.stand_ins:
            # The scope first: it holds this function too, whose stand-in it may make (recursion).
            scope = self.scope(value.fn.__globals__)
            if id(value) not in self.stand_ins:
                self.stand_ins[id(value)] = self.as_jit(value.fn, value.kwargs, scope)
        return self.stand_ins[id(value)]

    def scope(self, scope: dict) -> dict:
        """A copy of a learner module's globals in which every jitted helper is a JITFunction again."""
        from triton.runtime.interpreter import InterpretedFunction

        if id(scope) not in self.scopes:
            translated = self.scopes[id(scope)] = dict(scope)
            for name, value in scope.items():
                if isinstance(value, InterpretedFunction):
                    translated[name] = self.compiled(value)
        return self.scopes[id(scope)]

    def as_jit(self, function, options: dict, scope: dict):
        """A JITFunction of ``function`` whose globals are ``scope`` (closures translated alike)."""
        from triton.runtime.jit import JITFunction

        cells = None
        if function.__closure__:
            cells = tuple(types.CellType(self.compiled(c.cell_contents)) for c in function.__closure__)
        copy = types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__, cells)
        for attribute in ("__kwdefaults__", "__annotations__", "__qualname__", "__module__", "__doc__"):
            setattr(copy, attribute, getattr(function, attribute))
        return JITFunction(copy, **options)


def visible(function, seen: set) -> tuple:
    """What ``function`` can see besides its arguments, as the key of a verdict: its code, and for
    each name its code mentions, the global of that name (a constexpr by its value, anything else by
    identity; of a module, the attributes of those names too), through every jitted helper reached."""
    from triton.language import constexpr

    if id(function) in seen or not hasattr(function, "__code__"):
        return ()
    seen.add(id(function))
    names, codes = set(), [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    held = [(name, function.__globals__[name]) for name in sorted(names) if name in function.__globals__]
    held += [(f"<cell {i}>", cell.cell_contents) for i, cell in enumerate(function.__closure__ or ()) if _filled(cell)]
    state: list = [id(function.__code__)]
    modules: set[int] = set()
    for name, value in held:
        # The language's own modules are fingerprinted by the seal (and patched by the interpreter for each launch).
        if isinstance(value, types.ModuleType) and id(value) not in modules and not value.__name__.startswith("triton.language"):
            modules.add(id(value))
            held += [(f"{name}.{attr}", vars(value)[attr]) for attr in sorted(names) if attr in vars(value)]
        state.append((name, "constexpr", repr(value.value)) if isinstance(value, constexpr) else (name, id(value)))
        inner = interpreted(value)
        if inner is not None and not getattr(inner.fn, "__module__", "").startswith("triton.language"):
            state.append(visible(inner.fn, seen))
    return tuple(state)


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 -- an empty cell raises on reading
    except ValueError:
        return False
    return True
