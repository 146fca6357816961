"""The few library functions the sealed worker lets read frames under the learner's call (autograder.seal):
each takes a caller's name, file, line or a warning's stack level from a frame and keeps no frame.

A consumer is known by its own code object, collected when sealing, and is let ask only at its own
call sites (where its code loads a frame function such as ``sys._getframe``, ``traceback.extract_stack``
or ``inspect.currentframe``, or reads a traceback's ``tb_frame``, and calls it), only with its own
module's globals, and only for a frame (READERS_EVENTS). Many of them also call what they are given
(pyparsing's parse-action wrapper calls the action; formatException hands on a traceback whose
attributes' getters could be C functions): anywhere else the call is judged as any other, by whose
code is on the stack.
"""

from __future__ import annotations

import sys

from .fingerprint import _code_bindings, make_check

# Attributes whose reading hands over a frame (from which every caller's locals follow).
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# What a reader may be let do: take a frame, or read one off a traceback or generator. Never the
# collector's objects, other threads' frames or a hook: an attribute getter of the learner's making
# (a property over a C function) could make any call at a reader's site.
READERS_EVENTS = frozenset({"sys._getframe", "object.__getattr__"})
CONSUMERS = (("/collections/__init__.py", "namedtuple"), ("/enum.py", "_create_"), ("/typing.py", "_caller"), ("/warnings.py", "warn"),
             ("/typing_extensions.py", "_caller"), ("/typing_extensions.py", "_has_generic_or_protocol_as_origin"), ("/logging/__init__.py", "findCaller"),
             ("/logging/__init__.py", "formatException"), ("/triton/compiler/compiler.py", "filter_traceback"), ("/autograder/interpreter.py", "_launch_states"),
             ("/torch/library.py", "__init__"), ("/torch/library.py", "_register_fake"), ("/torch/_library/utils.py", "get_source"), ("/torch/fx/_symbolic_trace.py", "wrap"),  # PyTorch's operator registry: file, line, module
             *(("/pyparsing/core.py", own) for own in ("_trim_arity", "wrapper", "__init__", "__lshift__", "__or__", "parseImpl")),  # lines, for matplotlib
             ("/matplotlib/_api/__init__.py", "warn_external"))  # a warning's stack level, before Python 3.12
# Consumers only when an installed file's named function calls them: logging.currentframe (it returns its caller's frame), a generator
# of filter_traceback, sympy's dispatch decorator (it hands back a local of its caller's) at the top of a module, as sympy loads.
CALLED_BY = {("/logging/__init__.py", "<lambda>"): ("/logging/__init__.py", "findCaller"), ("/triton/compiler/compiler.py", "<genexpr>"): ("/triton/compiler/compiler.py", "filter_traceback"),
             ("/sympy/multipledispatch/core.py", "_"): ("", "<module>")}
# Where each consumer's code lives (and the package whose loading brings that module, "" for one loaded when sealing wherever installed):
# consumers are those functions' own code objects, by identity, not any code that claims their file and name.
CONSUMER_MODULES = (("collections", "collections"), ("enum", "enum"), ("typing", "typing"), ("warnings", "warnings"),
                    ("typing_extensions", "typing_extensions"), ("logging", "logging"), ("triton.compiler.compiler", "triton"),
                    ("autograder.interpreter", "triton"), ("torch.library", "torch"), ("torch._library.utils", "torch"),
                    ("torch.fx._symbolic_trace", "torch"), ("sympy.multipledispatch.core", "torch"), ("pyparsing.core", ""), ("matplotlib._api", ""))
# What a consumer's own call sites load: the frame functions of sys, traceback and inspect, logging's
# currentframe, and the attributes that hand over frames.
FRAME_NAMES = frozenset({"_getframe", "_getframemodulename", "_current_frames", "exc_info", "exception", "currentframe", "extract_stack",
                         "extract_tb", "format_stack", "format_tb", "format_exception", "format_exc", "print_exception", "print_exc",
                         "print_stack", "walk_stack", "walk_tb", "stack", "trace", "getframeinfo", "getouterframes", "getinnerframes",
                         *FRAME_ATTRIBUTES})
# Globals and attributes only: a closure's cells can be of the learner's making.
LOADS = ("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL")
CALLS = frozenset({"CALL", "CALL_KW", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX"})


def call_sites(code) -> frozenset:
    """The bytecode offsets (as a running frame's ``f_lasti`` reads them) at which ``code`` asks for
    frames itself: each load of one of FRAME_NAMES (an attribute's getter runs there) and, for each
    such load, the next call (with 3.11's PRECALL before it), where what was loaded is called. An
    instruction's inline caches count as its own: a call into Python code stops at its last one."""
    import dis

    instructions = list(dis.get_instructions(code))
    ends = [following.offset for following in instructions[1:]] + [len(code.co_code)]
    sites, owed = set(), 0
    for instruction, end in zip(instructions, ends, strict=True):
        if instruction.opname.startswith(LOADS) and instruction.argval in FRAME_NAMES:
            sites.update(range(instruction.offset, end, 2))
            # A frame attribute hands its frame over as it is read; a function, when the call after it runs.
            owed += instruction.argval not in FRAME_ATTRIBUTES
        elif owed and (instruction.opname == "PRECALL" or instruction.opname in CALLS):
            sites.update(range(instruction.offset, end, 2))
            owed -= instruction.opname in CALLS
    return frozenset(sites)


def consumer_codes() -> dict:
    """The code objects of the consumers' functions (nested ones included) in their modules as loaded now, each with its call
    sites (``call_sites``) and the globals it runs with (a function built on its code with globals of the learner's making
    would call what those name at the same sites); a module not loaded yet is loaded first where the package named beside it
    is, or none is named (PyTorch loads sympy lazily, as the learner's call may)."""
    import importlib
    import types

    pairs = (*CONSUMERS, *CALLED_BY, *CALLED_BY.values())
    found, todo = {}, []
    for name, package in CONSUMER_MODULES:
        try:
            module = sys.modules.get(name) or (importlib.import_module(name) if not package or package in sys.modules else None)
        # Not installed, or unusable here: matplotlib raises OSError where it finds no writable
        # folder (a memory exercise's worker may write none). Its readers are then let read nothing.
        except (ImportError, OSError):
            module = None
        for value in vars(module).values() if module is not None else ():
            members = vars(value).values() if isinstance(value, type) and value.__module__ == name else (value,)
            functions = [getattr(m, "__func__", m) for m in members]
            todo += [(f.__code__, f.__globals__) for f in functions if isinstance(getattr(f, "__code__", None), types.CodeType)]
    while todo:
        code, namespace = todo.pop()
        todo += [(const, namespace) for const in code.co_consts if isinstance(const, types.CodeType)]
        if any(code.co_name == own and code.co_filename.endswith(suffix) for suffix, own in pairs):
            found[code] = (call_sites(code), namespace)
    return found


def consumers_unchanged():
    """A check that the consumers' modules, the modules they hand frames to (traceback, inspect) and
    sys's frame functions are bound as when sealed: a binding replaced for a moment (sys._getframe
    wrapped in a C cache, logging._is_internal_frame, which findCaller hands each frame) would carry
    a frame a consumer took out to the learner's code, and no check before a reply would see it."""
    # The interpreter's module is in the worker's own fingerprint, checked before every interpreted launch.
    names = [name for name, _ in CONSUMER_MODULES if name != "autograder.interpreter"] + ["traceback", "inspect"]
    # warnings.catch_warnings(record=True), which libraries use, rebinds these two; they are handed no frame.
    prints = [(sys.modules[name], {k: v for k, v in _code_bindings(vars(sys.modules[name])).items() if k not in ("showwarning", "_showwarnmsg_impl")}, False)
              for name in names if name in sys.modules]
    prints.append((sys, {name: getattr(sys, name) for name in ("_getframe", "_current_frames", "exc_info", "exception") if hasattr(sys, name)}, False))
    changed = make_check(prints)
    return lambda: changed() is None
