"""The seal on a learner's worker: what the learner's code may not do in the process that runs it.

The worker must report facts about the learner's calls (which kernels ran: PyTorch's profiler on a
GPU, the interpreter's launch record on a CPU) from inside the very process that runs the learner's
code, so that code could rewrite the reporter instead of writing a kernel. Two locks, set just
before the learner's module is loaded (autograder.worker_setup):

- An audit hook (PEP 578: no Python code can remove one) refuses, to the learner's code, the calls
  that hand a program objects it was never given: the garbage collector's object lists, frames
  (``sys._getframe``, other threads', a traceback's, a generator's), tracing hooks, raw memory and
  native libraries through ctypes, code objects built by hand, and native modules of its own. Whose
  call it is, is read from the stack: the nearest frame that is not a pass-through helper of the
  standard library is the learner's when its file is not an installed one (its submission, a folder
  it may write, code compiled from a string). The calls that hand over frames or objects are the
  learner's while any of its code is on the stack (a library's wrapper would make them for it) and
  in every thread begun after the seal, except to a few readers known by their code objects, at their
  own call sites (autograder.consumers);
  ctypes, which PyTorch and Triton's interpreter use inside a learner's call, only when the
  learner's code makes the call itself.
- A fingerprint of the grader's modules, PyTorch's profiler and Triton's interpreter: every name
  each module and class binds and every function's code, by identity, taken before the learner's
  code loads and compared before every reply. Code that replaced any of them (a profiler that
  renames kernels, a summary that reports honest work) gets its grading rejected instead of a
  forged report.

What this cannot stop is said on the grading page: the process is the learner's, and raw memory or
native code reached through a library's hands could still change objects in place. The judge's own
measurements (times, outputs) never come from this process.
"""

from __future__ import annotations

import _thread
import os
import sys
import threading

from . import torch_hooks
from .consumers import CALLED_BY, CONSUMERS, FRAME_ATTRIBUTES, READERS_EVENTS, consumer_codes, consumers_unchanged
from .fingerprint import make_check, take_fingerprint

REFUSED_EVENTS = frozenset(
    {
        "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "sys._current_frames", "sys._current_exceptions", "sys._getframe",
        "sys.settrace", "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads", "sys.monitoring.register_callback",
        "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at", "ctypes.wstring_at", "ctypes.call_function",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
        "code.__new__", "marshal.load", "marshal.loads",
        # A hook of its own would be handed every audited call's arguments, frames included.
        "sys.addaudithook",
        # Not audited by Python: raised by the stand-in close_signal_handlers puts in its place.
        "signal.signal",
    }
)
# Calls handing over frames or objects, and hooks handed them: refused while any of the learner's code is on the stack (a library's wrapper
# would make them for it), except by the consumers below, which take a caller's name from a frame and return none (the guard's: its record).
REACHING = frozenset(event for event in REFUSED_EVENTS if not event.startswith(("ctypes.", "code.", "marshal.")))  # Triton's interpreter reads tensors through ctypes
# Code compiled under an absolute path could claim an installed file's name; the import system compiles and unmarshals by real names.
NAMED_COMPILE = "compile"
# Attributes whose writing changes a function in place, keeping the identity the fingerprint compares.
WRITTEN_ATTRIBUTES = frozenset({"__code__"})
PASS_THROUGH = ("inspect.py", "traceback.py", "threading.py", "functools.py", "/ctypes/", "/concurrent/futures/")
# The import system: the learner's own when it loads a native module (which could be one it wrote),
# PyTorch's or Triton's when it loads theirs (a Triton the launcher builder does not serve compiles its
# modules into a folder the worker may write); otherwise its own frames stand for themselves.
IMPORT_SYSTEM = ("<frozen importlib", "/importlib/")
# Modules that run native code of the caller's choosing with no audit event to see it (cffi's function
# pointers, llvmlite's and numba's JIT): refused to every frame once sealed, not only the learner's,
# since a library that imports one on the learner's behalf would hand it over (argon2's bindings are
# cffi's). Nothing a grading runs needs them; none is loaded before the seal.
UNAUDITED_NATIVE = frozenset({"_cffi_backend", "cffi", "llvmlite", "numba"})


class SealBroken(PermissionError):
    """The learner's code asked for something the sealed worker refuses."""


def _make_judge(learner_roots: tuple[str, ...], sealed_threads: dict | None = None, trusted: dict | None = None, unchanged=lambda: True):
    """Whether the code that made a call at ``frame`` (or the nearest caller that is not a
    pass-through helper) is the learner's: a file under one of ``learner_roots``, or no installed
    file at all (a string compiled or executed). With no such frame (a thread started on a bare
    callable of the standard library), the learner's too. A ``reaching`` call is the learner's while
    any of its code is on the stack, unless one of the consumers made it, and in every thread begun
    after the seal: ``sealed_threads`` maps each thread running then to the bottom frame of its stack
    (an identifier alone could be reused by a thread started later)."""
    # Every name the judgement uses is bound here, not looked up in this module or in builtins when
    # it runs: the learner's code can rebind those, not these.
    ends, parts, this, importing = PASS_THROUGH[:4], PASS_THROUGH[4:], os.path.abspath(__file__), IMPORT_SYSTEM
    roots, consumers, called_by, readers_events = _roots(learner_roots), CONSUMERS, tuple(CALLED_BY.items()), READERS_EVENTS
    any_, sealed, get_ident, id_ = any, dict(sealed_threads or {}), _thread.get_ident, id
    sites = {id(code): where for code, where in (trusted or {}).items()}
    kept = dict(trusted or {})  # noqa: F841 -- the code objects stay alive, so that no other takes their ids

    def learners(filename: str) -> bool:
        return not filename.startswith(("/", "<frozen")) or filename.startswith(roots)

    def named(frame, pairs, at_a_site: bool = True) -> bool:
        code = frame.f_code
        # A consumer asks only at its own call sites (elsewhere it may be calling what it was given),
        # and with its own module's globals (they name what those sites call).
        offsets, namespace = sites.get(id_(code), ((), None))
        placed = (frame.f_lasti in offsets or not at_a_site) and frame.f_globals is namespace
        return placed and any_(code.co_name == name and code.co_filename.endswith(suffix) for suffix, name in pairs)

    def called_by_its_caller(frame) -> bool:
        caller = frame.f_back
        for own, (suffix, name) in called_by:
            if caller is not None and named(frame, (own,)) and not learners(caller.f_code.co_filename):
                # Any installed module's top may call sympy's decorator: the local it hands back is that caller's own.
                if named(caller, ((suffix, name),), False) or (name == "<module>" and caller.f_code.co_name == name):
                    return True
        return False

    def judge(frame, through_imports: bool, reaching: bool = False, event: str = "") -> bool:
        while frame is not None:
            filename = frame.f_code.co_filename
            passing = filename.endswith(ends) or filename == this or any_(part in filename for part in parts)
            if through_imports and not passing:
                passing = any_(part in filename for part in importing)
            if not passing:
                break
            frame = frame.f_back
        if frame is None or learners(frame.f_code.co_filename) or not reaching:
            return frame is None or learners(frame.f_code.co_filename)
        if event in readers_events and (named(frame, consumers) or called_by_its_caller(frame)) and unchanged():
            return False
        bottom = frame
        while frame is not None and not learners(frame.f_code.co_filename):
            bottom, frame = frame, frame.f_back
        # No code of the learner's on the stack: still the learner's in a thread it started on an
        # installed function that calls what it is given (sched.scheduler.run, say).
        return frame is not None or sealed.get(get_ident()) is not bottom

    return judge


def _where(frame) -> str:
    """The asking code, in words: its file's last two path parts, its function and line, and its caller's."""
    places = []
    while frame is not None and len(places) < 2:
        places.append(f"{'/'.join(frame.f_code.co_filename.split('/')[-2:])}:{frame.f_code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return "from " + " called by ".join(places)


def _bottom(frame):
    while frame.f_back is not None:
        frame = frame.f_back
    return frame


def _roots(learner_roots: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(os.path.join(os.path.abspath(root), "") for root in learner_roots)


def _make_refusal(learner_roots: tuple[str, ...], events: frozenset):
    roots = _roots(learner_roots)
    frames, written, named_compile = FRAME_ATTRIBUTES, WRITTEN_ATTRIBUTES, NAMED_COMPILE
    len_, str_, isinstance_ = len, str, isinstance

    def refusal(event: str, args: tuple) -> str | None:
        """What the call is, in words, when the learner's code may not make it; None when it may."""
        if event in events:
            return event
        if event == "object.__getattr__" and len_(args) > 1 and args[1] in frames:
            return f"reading {args[1]}"
        if event == "object.__setattr__" and len_(args) > 1 and args[1] in written:
            return f"setting {args[1]}"
        if event == "import" and len_(args) > 1 and isinstance_(args[1], str_) and args[1].startswith(roots) and args[1].endswith((".so", ".pyd")):
            return f"loading the native module {args[1]}"
        # Code of its own compiled under a file's name, relative ("submission.py", resolved from the
        # working folder) or absolute, would pass for that file's: its kernels for the submission's.
        if event == named_compile and len_(args) > 1 and isinstance_(args[1], str_) and not args[1].startswith("<"):
            return f"compiling code named {args[1]} (name code you compile in angle brackets, such as <generated>)"
        return None

    return refusal


def seal(learner_roots: tuple[str, ...], device: str):
    """Seal this worker (``learner_roots``: the folders the learner's files are in or can be written to);
    returns the check made before every reply (and every interpreted launch): what the learner's code
    changed or tried to reach, or None; a change once seen is kept, though put back before the reply."""
    refused = install_hook(learner_roots)
    # Loaded before the seal (by nothing a grading runs, so far), one would come back from sys.modules
    # with no import to refuse: forgotten, the next import goes through the hook.
    for name in [name for name in sys.modules if name.partition(".")[0] in UNAUDITED_NATIVE]:
        del sys.modules[name]
    close_signal_handlers()
    changed = make_check(take_fingerprint(device))
    # PyTorch's own hooks (autograder.torch_hooks): modes and dispatch keys everywhere (on a GPU a mode
    # answers the worker's data_ptr() and stride() of the output, which the judge maps); the operators'
    # kernels on a CPU, where the worker copies the output's bytes with them.
    hooks = torch_hooks.make_check(with_kernels=device == "cpu")

    def check(kernels: bool = False) -> str | None:
        """Before every interpreted launch and reply; ``kernels``: the operators' kernels compared too
        (as the learner's code loads and as each of its calls returns: autograder.worker_calls)."""
        if not refused and (change := changed()) is not None:
            refused.append(change)
        if not refused and hooks is not None and (change := hooks(kernels)) is not None:
            refused.append(change)
        return refused[0] if refused else None

    return check


def close_signal_handlers() -> None:
    """Take ``signal.signal`` away: a handler is handed the frame the main thread was running, the
    worker's own among them, and signal.signal is no audited call. Every name bound to it (or to the
    C function under it) now raises the audit event "signal.signal", which the hook notes as the
    learner's attempt, and refuses; nothing of the worker's or its libraries' sets a handler once the
    learner's code is in, so the stand-in holds no original to fall back to (nor the hook's notes)."""
    import _signal
    import signal

    originals = (signal.signal, _signal.signal)
    audit, broken = sys.audit, SealBroken

    def signal_refused(*args, **kwargs):
        audit("signal.signal")
        raise broken("the grader refuses signal handlers: a handler is handed the frames of the process that runs your code")

    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            for key, value in list(namespace.items()):
                if any(value is original for original in originals):
                    namespace[key] = signal_refused


def install_hook(learner_roots: tuple[str, ...]) -> list[str]:
    """Add the audit hook; returns the list where it notes what it refused (the first refusal first)."""
    running = {ident: _bottom(frame) for ident, frame in sys._current_frames().items()}
    refusal, judge = _make_refusal(learner_roots, REFUSED_EVENTS), _make_judge(learner_roots, running, consumer_codes(), consumers_unchanged())
    busy = threading.local()
    getframe, getattr_, broken, reaching, unaudited = sys._getframe, getattr, SealBroken, REACHING, UNAUDITED_NATIVE
    refused: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "import" and args and isinstance(args[0], str) and args[0].partition(".")[0] in unaudited:
            refused.append(f"it asked for the module {args[0]}")
            raise broken(f"the grader refuses the module {args[0]}: it runs native code no check can see, in the process that runs your code")
        what = refusal(event, args)
        if what is None or getattr_(busy, "on", False):
            return
        busy.on = True
        try:
            frame = getframe(1)
            refusing = judge(frame, event == "import", event in reaching or event == "object.__getattr__", event)
            where = _where(frame) if refusing else ""
        finally:
            busy.on = False
        if refusing:
            refused.append(f"it asked for {what} ({where})")
            raise broken(f"the grader refuses {what} to your code: it would reach the grader's objects in the process that runs your code")

    sys.addaudithook(hook)
    return refused
