"""Whether Triton's interpreter runs the code of the kernels it was handed.

The interpreter runs a rewritten copy of each jitted function, made from its source and kept in a
dict any code can write (``InterpretedFunction.rewritten_fn``, source function -> copy). The launch
record and Triton's front end read the source; the interpreter runs the copy. A copy put in another's
place (a helper's that adds with NumPy, a library kernel's) ran other code under an honest kernel's
name. So every copy is compared with a fresh rewrite of its own source before a launch (once per copy
and call), and a launch whose function is no copy of a jitted function is refused as well.
"""

from __future__ import annotations

import inspect

from . import kernel_python

# The words of the refusal, which honesty.judge_cpu puts in its own sentence.
NOT_ITS_SOURCE = "the interpreter was made to run code that is not your kernel's source"


def forged(interpreter, running, verified: dict) -> str | None:
    """What was put in place of a rewritten copy, in words, or None. ``running``: the function a launch
    is about to run; ``verified``: the copies found right so far in this call (kept by the caller)."""
    copies = interpreter.InterpretedFunction.rewritten_fn
    entries = list(copies.items())
    if not any(copy is running for _, copy in entries):
        return f"{NOT_ITS_SOURCE} ({getattr(running, '__qualname__', '?')} is no rewrite of a jitted function)"
    for source, copy in entries:
        if verified.get(id(source)) is copy:
            continue
        if _two_definitions(source):
            # The rewriter starts at the last line beginning with "def ", the compiler at the first.
            return f"{NOT_ITS_SOURCE} (its source has two lines starting with def: the interpreter runs from the last, a GPU compiles from the first)"
        fresh = interpreter.FunctionRewriter(source).rewrite_ast()
        same = copy is source if fresh is source else _same_function(copy, fresh, source)
        if not same:
            return f"{NOT_ITS_SOURCE} (the rewritten copy of {getattr(source, '__qualname__', '?')} was replaced)"
        # The source is kept alive by the dict; the copy by this entry.
        verified[id(source)] = copy
    return None


def _two_definitions(source) -> bool:
    """Whether a function of the learner's (not Triton's own) has more than one line of its source
    starting with "def " (a docstring can hold one)."""
    code = getattr(source, "__code__", None)
    if code is None or kernel_python.triton_code(source):
        return False
    try:
        lines, _ = inspect.getsourcelines(source)
    except (OSError, TypeError):
        return False
    return sum(line.strip().startswith("def ") for line in lines) > 1


def _same_function(copy, fresh, source) -> bool:
    code = getattr(copy, "__code__", None)
    return (
        code is not None
        and code == fresh.__code__
        and getattr(copy, "__globals__", None) is source.__globals__
        and copy.__defaults__ == fresh.__defaults__
        and copy.__kwdefaults__ == fresh.__kwdefaults__
        and copy.__closure__ is None
    )
