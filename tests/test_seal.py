"""The sealed worker (autograder.seal): what the learner's code is refused, what the fingerprint sees,
and that the libraries' own use of the same calls goes on. Each check runs in a child Python: an
audit hook, once added, stays for the life of its process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, learner_code: str, before: str = "") -> str:
    """Seal a child Python with a folder of ``tmp_path`` as the learner's, run ``learner_code`` as a
    file of that folder, and return what the child printed. The child runs from a file, as the
    worker does (``python -m``): code run by ``python -c`` is code from a string, the learner's."""
    folder = tmp_path / "learner"
    folder.mkdir(exist_ok=True)
    learner = folder / "submission.py"
    learner.write_text(textwrap.dedent(learner_code))
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import runpy
            import torch, triton  # loaded before the seal, as the worker loads them (WorkerSetup.warm)
            {before}
            from autograder import seal
            check = seal.seal(({str(folder)!r},), "cpu")
            try:
                runpy.run_path({str(learner)!r})
                print("ran")
            except seal.SealBroken as exc:
                print("refused:", exc)
            print("check:", check())
            """
        )
    )
    done = subprocess.run([sys.executable, str(driver)], cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_learners_code_is_refused_the_garbage_collectors_objects(tmp_path):
    out = _run(tmp_path, "import gc\ngc.get_objects()\n")
    assert "refused: the grader refuses gc.get_objects" in out and "check: it asked for gc.get_objects" in out


def test_frames_are_refused_directly_and_through_inspect_and_a_traceback(tmp_path):
    for code in ("import sys\nsys._getframe()\n", "import inspect\ninspect.currentframe()\n", "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame\n"):
        out = _run(tmp_path, code)
        assert out.startswith("refused:"), (code, out)


def test_frames_and_objects_are_refused_through_a_librarys_hands(tmp_path):
    # A library function that returns its caller's frame, and a library's wrapper (a decorator that
    # calls the function it was given) making the call: the learner's code is on the stack.
    wrapper = "import contextlib, gc, sys\nclass Wrap(contextlib.ContextDecorator):\n    def __enter__(self): pass\n    def __exit__(self, *exc): pass\n"
    # sympy's dispatch decorator reads its caller's locals: a consumer only as sympy's own modules load.
    dispatch = "from sympy.multipledispatch import dispatch\nclass C:\n    @dispatch(int)\n    def m(self, x): return x\n"
    # sys._getframe wrapped in a C cache for a moment: namedtuple's own call would fill it.
    cached = "import collections, functools, sys\nsys._getframe = functools.lru_cache(sys._getframe)\ncollections.namedtuple('P', 'a')\n"
    for code in ("import logging\nlogging.currentframe().f_back\n", wrapper + "Wrap()(sys._getframe)()\n", wrapper + "Wrap()(Wrap()(gc.get_objects))()\n", dispatch, cached):
        out = _run(tmp_path, code)
        assert out.startswith("refused:") and "check: it asked for" in out, (code, out)


def test_frames_are_refused_in_a_thread_begun_after_the_seal_with_none_of_the_learners_code(tmp_path):
    # sched.scheduler.run (installed, not a pass-through helper) calls list.extend, which draws
    # sys._current_frames() from itertools.starmap in C: no frame of the learner's on that stack.
    code = """
        import itertools, sched, sys, threading
        taken = []
        scheduler = sched.scheduler()
        scheduler.enter(0, 1, taken.extend, (itertools.starmap(sys._current_frames, [()]),))
        thread = threading.Thread(target=scheduler.run)
        thread.start()
        thread.join()
        print("taken:", len(taken))
    """
    out = _run(tmp_path, code)
    assert "taken: 0" in out and "check: it asked for sys._current_frames" in out, out


def test_a_thread_begun_after_the_seal_keeps_the_libraries_own_calls(tmp_path):
    # namedtuple reads its caller's module name from a frame, in whatever thread makes one.
    code = """
        import collections, sched, threading
        made = []
        scheduler = sched.scheduler()
        scheduler.enter(0, 1, collections.namedtuple, ("Pair", "a b"))
        thread = threading.Thread(target=scheduler.run)
        thread.start()
        thread.join()
        print("made")
    """
    out = _run(tmp_path, code)
    assert "made" in out and "check: None" in out, out


def test_code_claiming_a_consumers_file_and_name_is_no_consumer(tmp_path):
    # Compiled under typing.py's name through an installed caller (sched.scheduler.run, whose frame is
    # the nearest when compile runs), a function named _caller would pass a check by name.
    code = """
        import itertools, sched, typing
        source = "import sys\\ndef _caller(depth=1, default='__main__'):\\n    return sys._getframe(depth + 1)\\n"
        box = []
        scheduler = sched.scheduler()
        scheduler.enter(0, 1, box.extend, (itertools.starmap(compile, [(source, typing.__file__, "exec")]),))
        scheduler.run()
        namespace = {}
        exec(box[0], namespace)
        namespace["_caller"](0)
    """
    out = _run(tmp_path, code)
    assert out.startswith("refused:") and "check: it asked for sys._getframe" in out, out


def test_raw_memory_through_ctypes_is_refused(tmp_path):
    out = _run(tmp_path, "import ctypes\nctypes.string_at(id(1), 8)\n")
    assert "refused:" in out


def test_code_named_after_an_installed_file_is_refused(tmp_path):
    out = _run(tmp_path, "import json\nexec(compile('import gc; gc.get_objects()', json.__file__, 'exec'))\n")
    assert "refused: the grader refuses compiling code named" in out


def test_a_patched_grader_or_library_function_is_seen(tmp_path):
    out = _run(tmp_path, "import json\njson.dumps = lambda *a, **k: '{}'\n")
    assert "ran" in out and "check: json.dumps" in out
    out = _run(tmp_path, "import autograder.watch\nautograder.watch.Watch.stop = lambda self: {}\n")
    assert "check: Watch.stop" in out


def test_honest_code_and_the_libraries_own_calls_go_on(tmp_path):
    # typing and logging take frames themselves, on the learner's behalf, and keep them.
    code = """
        import logging, typing, collections, json
        logging.getLogger("x").warning("hello")
        try:
            1 / 0
        except ZeroDivisionError:
            logging.getLogger("x").exception("a traceback, formatted by logging")
        from triton.compiler.compiler import filter_traceback
        try:
            1 / 0
        except ZeroDivisionError as exc:
            filter_traceback(exc)  # Triton's own, on a kernel that fails to compile (a generator reads the frames)
        Pair = collections.namedtuple("Pair", "a b")
        class Named(typing.NamedTuple):
            a: int
        import numpy.fft  # a native module of an installed package, loaded now
        print(json.dumps([Pair(1, 2).a, Named(3).a]))
    """
    out = _run(tmp_path, code)
    assert "ran" in out and "check: None" in out and "[1, 3]" in out


def test_pytorchs_compiler_and_profiler_load_under_the_learners_call(tmp_path):
    # torch._dynamo's modules register operators and fake kernels as they load (torch.library reads its
    # caller's file and line, torch.fx.wrap its module's globals, sympy's dispatch a module's names):
    # a learner's read_trace that profiled CPU activity only was refused sys._getframe on an H100.
    code = """
        import torch
        import torch._dynamo
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            torch.ones(64).sum()
        print(len(prof.key_averages()) > 0)
    """
    out = _run(tmp_path, code)
    assert "ran" in out and "check: None" in out and "True" in out, out


def test_a_plot_made_under_the_learners_call_goes_on(tmp_path):
    # matplotlib's first import loads pyparsing, whose grammar's first parse action takes its caller's
    # line from traceback.extract_stack: Act 8's bubbles solution was refused sys._getframe on an H100.
    # matplotlib's warnings find their stack level from the frames (Python 3.11).
    code = """
        import io
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(10, 1.6))
        ax.broken_barh([(0.0, 2.0), (3.0, 1.5)], (0, 1), color="tab:blue")
        ax.set_xlabel("microseconds from the first kernel ($\\\\mu s$)")
        ax.legend()  # no labelled artists: matplotlib warns at the stack level it finds by walking frames before Python 3.12
        fig.savefig(io.BytesIO(), format="png")
        print("drawn")
    """
    out = _run(tmp_path, code)
    assert "ran" in out and "check: None" in out and "drawn" in out, out


def test_a_consumer_that_calls_what_it_is_given_is_refused_there(tmp_path):
    # pyparsing's parse-action wrapper reads a traceback's lines (an allowed reader) and also calls the
    # action it is given: inspect.currentframe as the action, called by the wrapper, handed back the
    # wrapper's frame in the parse results, and f_back led on to the worker's.
    code = """
        import inspect
        import pyparsing
        found = pyparsing.Word("a").set_parse_action(inspect.currentframe).parse_string("a")
        print("got", type(found[0]).__name__, found[0].f_back is not None)
    """
    out = _run(tmp_path, code)
    assert "refused" in out and "sys._getframe" in out and "got frame" not in out, out


def test_modules_that_run_native_code_unseen_are_refused_whoever_imports_them(tmp_path):
    # cffi calls a function pointer with no audit event; through a library's import it would be handed
    # over all the same (a module of an installed package importing it is refused too).
    out = _run(tmp_path, "import cffi\nffi = cffi.FFI()\nffi.cdef('int getpid(void);')\nprint(ffi.dlopen(None).getpid())\n")
    assert "refused: the grader refuses the module cffi" in out and "check: it asked for the module cffi" in out, out
    out = _run(tmp_path, "import importlib\nimportlib.import_module('_cffi_backend')\n")
    assert "refused: the grader refuses the module _cffi_backend" in out, out
    library = tmp_path / "installed"
    library.mkdir()
    (library / "bindings.py").write_text("import cffi\nffi = cffi.FFI()\n")
    out = _run(tmp_path, f"import sys\nsys.path.insert(0, {str(library)!r})\nimport bindings\n")
    assert "refused: the grader refuses the module cffi" in out, out


def test_a_module_that_runs_native_code_unseen_loaded_before_the_seal_is_forgotten(tmp_path):
    out = _run(tmp_path, "import cffi\n", before="import cffi")
    assert "refused: the grader refuses the module cffi" in out, out
