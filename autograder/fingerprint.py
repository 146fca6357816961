"""The fingerprint of the sealed worker (autograder.seal): every name each module that decides what
the worker reports binds, and every function's code, by identity, taken before the learner's code
loads and compared before every reply and every interpreted launch."""

from __future__ import annotations

import sys

# The worker's own modules that it imports lazily after the learner's code is in: imported while
# sealing, so that a module object planted in their place is a change the fingerprint sees.
WORKER_MODULES = ("arrays", "bounds", "canary", "cuda_driver", "jsonable", "launch_record", "kernel_python", "relay", "replay", "rewrites", "shared", "watch", "wire")
# The standard modules the worker's code reaches by attribute as it reports (the profiler's warnings on
# stop, paths and the environment, the wire's packing, the channel's signature): a rebound warnings.warn
# would run the learner's code inside a report. Not sys, whose streams a learner's code may redirect,
# nor threading, whose hooks libraries set, nor time: the worker's clocks decide nothing the judge
# grades by (case patches_timer: a patched clock changes nothing, and the grading stands).
STANDARD = ("warnings", "os", "posixpath", "math", "statistics", "pickle", "struct", "hashlib", "hmac", "re")
# Modules whose bindings decide what the worker reports: the grader's own, the libraries whose code
# builds its facts (the profiler's events, the interpreter's launches) or its replies, and builtins,
# which every one of them looks up as it runs (a rebound sorted() dropped PyTorch's operators from
# the profiler's report: case rebinds_a_builtin).
FINGERPRINTED_PACKAGES = ("autograder",)
FINGERPRINTED = ("builtins", *STANDARD, "torch.profiler", "torch.profiler.profiler", "torch.autograd.profiler", "torch.autograd.profiler_util", "torch._C._autograd",
                 "torch._C._profiler", "triton.runtime.interpreter", "json", "json.encoder")
# Triton's compiler, on every device: on a GPU it checks whose code a kernel of the learner's marked
# name is (autograder.own_compile), on a CPU it decides whether a kernel compiles for a GPU.
TRITON_COMPILER = ("triton", "triton.compiler", "triton.compiler.compiler", "triton.compiler.code_generator", "triton.runtime.jit",
                   "triton.backends.compiler", "triton.backends.nvidia.compiler")
# The language the interpreter runs on a CPU (its front end compiles it for a GPU); and on a CPU, where
# the interpreter computes with NumPy, the bounds guard and the launch record read memory with it, and
# an output's bytes are taken through torch.Tensor's methods: NumPy (every module of it), the standard
# modules the interpreter rewrites kernels with, and torch.Tensor's own methods (new ones counting). A
# patched numpy.searchsorted ran the learner's code inside every load and store, a patched
# torch.Tensor.numpy sent bytes the output did not hold, and a patched textwrap.dedent ran inside the
# rewriting of a kernel. (The torch namespace itself is not: PyTorch rebinds some of its own names as
# its compiler loads, and the learner's patch of torch.allclose changes nothing the worker uses.)
FINGERPRINTED_ON_CPU = ("triton.language", "triton.language.core", "triton.language.math", "triton.language.standard",
                        "textwrap", "ast", "linecache", "tokenize", "inspect", "copy", "functools", "gc")
FINGERPRINTED_PACKAGES_ON_CPU = ("numpy",)
FINGERPRINTED_CLASSES_ON_CPU = (("torch", "Tensor"),)
DATA = (bool, int, float, complex, str, bytes, type(None), tuple, list, dict, set, frozenset)
# A name Python itself adds to a class the first time an instance is copied or pickled.
ADDED_BY_PYTHON = frozenset({"__slotnames__"})


def _code_bindings(namespace) -> dict:
    """The names bound to code (functions, classes, modules, descriptors): what decides what runs.
    Data is left out: libraries rebind their own flags as they work (PyTorch's profiler toggles
    ``torch.autograd.profiler._is_profiler_enabled`` on every start and stop)."""
    return {key: value for key, value in namespace.items() if not isinstance(value, DATA)}


def _bindings_and_constants(namespace) -> dict:
    """Every name but those bound to mutable containers (caches the grader fills as it works)."""
    return {key: value for key, value in namespace.items() if not isinstance(value, (list, dict, set))}


def take_fingerprint(device: str) -> list[tuple[object, dict, bool]]:
    """(object, its bindings, whether new names count) for every fingerprinted module and each class
    it defines; functions are kept with their code. The worker's lazily loaded state is loaded first
    (the driver library on a GPU), so that only a change of the learner's differs later."""
    import importlib

    for name in WORKER_MODULES:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except Exception:  # noqa: BLE001 -- a module this machine cannot load is one the worker never uses
            continue
    if device == "cuda":
        try:
            sys.modules[f"{__package__}.cuda_driver"]._driver()
        except Exception:  # noqa: BLE001 -- without the driver library nothing here loads it later either
            pass
    roots = FINGERPRINTED_PACKAGES + (FINGERPRINTED_PACKAGES_ON_CPU if device == "cpu" else ())
    packages = tuple(f"{package}." for package in roots)
    named = FINGERPRINTED + TRITON_COMPILER + (FINGERPRINTED_ON_CPU if device == "cpu" else ())
    prints = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name in named or name in roots or name.startswith(packages)):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        # The grader's own modules: their constants too (a rebound tuple of allowed names would widen a check).
        own = name in FINGERPRINTED_PACKAGES or name.startswith(packages[: len(FINGERPRINTED_PACKAGES)])
        prints.append((module, _code_bindings(namespace) if not own else _bindings_and_constants(namespace), False))
        for value in list(namespace.values()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                # The interpreter adds methods to the language's tensor for its launches (__repr__).
                prints.append((value, _code_bindings(value.__dict__), not name.startswith("triton.language")))
    if device == "cpu":
        import gc

        # Called by the collector inside any allocation, a replayed kernel's among them; audited by nothing.
        prints.append((gc.callbacks, dict(enumerate(gc.callbacks)), False))
    for module_name, class_name in FINGERPRINTED_CLASSES_ON_CPU if device == "cpu" else ():
        owner = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(owner, type):
            prints.append((owner, _code_bindings(owner.__dict__), True))
    codes = {}
    for _, bindings, _ in prints:
        for value in bindings.values():
            code = getattr(value, "__code__", None) if callable(value) and type(value).__name__ == "function" else None
            if code is not None:
                codes[id(value)] = (value, code)
    prints.append((None, codes, False))
    return prints


def make_check(prints: list[tuple[object, dict, bool]]):
    """A function with no free names that says what changed since ``prints`` were taken (None if nothing)."""
    missing = object()
    getattr_, isinstance_, added_by_python, data = getattr, isinstance, ADDED_BY_PYTHON, DATA
    # Bound now: builtins are fingerprinted, and a rebound one is what this check must report.
    len_, any_, enumerate_ = len, any, enumerate

    def check() -> str | None:
        for owner, bindings, closed in prints:
            if owner is None:
                for value, code in bindings.values():
                    if getattr_(value, "__code__", None) is not code:
                        return f"the code of {getattr_(value, '__qualname__', '?')}"
                continue
            if owner.__class__ is list:
                if len_(owner) != len_(bindings) or any_(item is not bindings[index] for index, item in enumerate_(owner)):
                    return "gc.callbacks"
                continue
            current = owner.__dict__
            for key, value in bindings.items():
                if current.get(key, missing) is not value:
                    return f"{getattr_(owner, '__name__', '?')}.{key}"
            if closed:
                for key in current:
                    if key not in bindings and key not in added_by_python and not isinstance_(current[key], data):
                        return f"{getattr_(owner, '__name__', '?')}.{key} (added)"
        return None

    return check
