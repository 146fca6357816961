"""How the worker meets the learner's code: imports of the grader's modules that compute expected
answers are refused, and an exception the code raises is described for the judge."""

from __future__ import annotations

import glob
import os
import re
import sys
import traceback

# The grader's modules that compute expected answers: the problem definitions (references, judges,
# input generators), the reference solutions, the rule that reads a trace (Act 3's reference) and the
# grader's own timing of measured operations. The learner's code may import the package (its
# notebook's set-up cell does), the tiny transformer it builds on and Act 8's shared inputs and eager
# steps (its notebooks compare with them), not these. tests/test_refused_imports.py makes every module the problems use either one of
# these or named there as computing no answer.
REFUSED_MODULES = {
    "autograder.problems": "problem definitions (its reference answers)",
    "autograder.reference": "reference solutions",
    "autograder.profiles": "rule for reading a trace (the reference of Act 3's trace exercises)",
    "autograder.measured": "own measurements of the operations you time",
}


class GraderImportRefused(ImportError):
    """The learner's code asked for a grader module it has no business with."""


def refused_as(name: str) -> str | None:
    """What the grader module ``name`` holds, where the learner's code may not import it."""
    return next((what for refused, what in REFUSED_MODULES.items() if name == refused or name.startswith(refused + ".")), None)


class _RefuseGraderImports:
    def find_spec(self, name, path=None, target=None):
        what = refused_as(name)
        if what:
            raise GraderImportRefused(f"your code uses the grader's {what}, {name}; write your own")
        return None


def refuse_grader_imports() -> None:
    """From now on, importing those modules fails, and those already imported are forgotten: gone from
    ``sys.modules`` and from their package's attributes, so ``from autograder import problems``
    goes through the import system and is refused too. What the worker built from them before
    (a problem's operations, a harness) keeps working; the registry of problems, which holds every
    problem's reference, is emptied."""
    from .problem import _REGISTRY

    _REGISTRY.clear()
    for name in [n for n in sys.modules if refused_as(n)]:
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and getattr(sys.modules[parent], child, None) is sys.modules[name]:
            delattr(sys.modules[parent], child)
        del sys.modules[name]
    sys.meta_path.insert(0, _RefuseGraderImports())


# nbgrader's default exchanges (older and newer releases): a class's inbound submissions, where a
# course keeps its exchange outside the course folder.
NBGRADER_EXCHANGES = ["/srv/nbgrader/exchange", "/usr/local/share/nbgrader/exchange"]


# Set in the judge's environment by the process that started grading: the folder it runs in.
COURSE_VARIABLE = "GPU_BRRR_COURSE"
# A course folder's folders of other notebooks: the repository's history and the built book hold the
# solutions too; the exchange (this course's nbgrader_config.py keeps it in the course folder) holds
# every student's submitted notebooks.
COURSE_FOLDERS = ("solutions", "source", "submitted", "autograded", "feedback", "gradebook.db", ".git", "_build", "exchange")


# Folders an instructor names for hiding too (os.pathsep between them): an exchange kept elsewhere
# (``--Exchange.root=/srv/gpu-brrr/exchange``, book/teaching/index.md).
HIDE_VARIABLE = "GPU_BRRR_HIDE"


def named_hidden() -> list[str]:
    """The folders of ``HIDE_VARIABLE`` in this process's environment that exist."""
    return [path for path in os.environ.get(HIDE_VARIABLE, "").split(os.pathsep) if path and os.path.exists(path)]


def course_files(folder: str | None) -> list[str]:
    """What of the course folder ``folder`` the learner's process may not read (those that exist):
    the one beside the package, and the one grading was started in (``COURSE_VARIABLE``: nbgrader's
    and the class command's working folder, which need not hold the package). A learner's code found
    another student's submitted notebook in the exchange, ran its kernel under its own file's name,
    and was graded for it."""
    if not folder:
        return []
    return [path for path in (os.path.join(folder, name) for name in COURSE_FOLDERS) if os.path.exists(path)]


def hidden_files() -> list[str]:
    """What the learner's process may not read (autograder.osguard.confine): the sources and compiled
    copies of the refused modules, the reference solutions (the repository's solutions/ beside the
    package, its git history and built book, the copy a wheel carries), an nbgrader course's
    folders of other notebooks beside it, and Jupyter's secrets (``JUPYTER_SECRETS``).
    Refusing an import is not enough where the file can be read and run."""
    package = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(package, "solutions"), *course_files(os.path.dirname(package)), *NBGRADER_EXCHANGES]
    for name in REFUSED_MODULES:
        leaf = name.split(".", 1)[1]
        paths += [os.path.join(package, leaf), os.path.join(package, leaf + ".py")]
        paths += glob.glob(os.path.join(package, "__pycache__", f"{leaf}.*.pyc"))
    return [path for path in [*paths, *jupyter_secrets()] if os.path.exists(path)]


# The folder every judge's folder is made in (autograder.sandbox.gradings_root).
GRADINGS_FOLDER = "gpu-brrr-gradings"


def other_gradings(paths) -> list[str]:
    """The folder of every grading's files, where one of ``paths`` (the worker's own module and
    folders) lies in it: hidden as a whole, the worker's own folders readable by rules of their own.
    Another grading's submission and judge log were readable to a learner's code graded beside it."""
    for path in paths:
        parent = os.path.dirname(os.path.abspath(path))
        while parent != os.path.dirname(parent):
            if os.path.basename(parent) == GRADINGS_FOLDER:
                return [parent]
            parent = os.path.dirname(parent)
    return []


# In Jupyter's runtime folder: its servers' tokens (whoever holds one opens a terminal as the grader's
# user) and its kernels' connection keys (whoever holds one runs code in that kernel). Act 5's ranks
# keep the network, on which those servers and kernels listen.
JUPYTER_SECRETS = ("jpserver-*.json", "jpserver-*-open.html", "nbserver-*.json", "kernel-*.json", "jupyter_cookie_secret")


def jupyter_secrets() -> list[str]:
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        data = os.environ.get("JUPYTER_DATA_DIR") or os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "jupyter")
        runtime = os.environ.get("JUPYTER_RUNTIME_DIR") or os.path.join(data, "runtime")
    else:
        runtime = jupyter_runtime_dir()
    return [path for pattern in JUPYTER_SECRETS for path in glob.glob(os.path.join(runtime, pattern))]


COMPILE_ERRORS = {"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "CompileException", "UnsupportedLanguageConstruct", "SyntaxError"}


def error(exc: BaseException, module_path: str | None) -> dict:
    """What an exception of the learner's code says, as the judge needs it: its traceback from the
    learner's own file on, and whether it is a compile error, an out-of-bounds access or a refusal."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if module_path and f.filename == module_path), 0)
    text = "".join(traceback.format_list(frames[first:]) + traceback.format_exception_only(type(exc), exc))
    fault = gpu_fault(str(exc))
    return {
        "type": type(exc).__name__,
        # A GPU fault's own text runs to several lines of CUDA's advice: its first line, and ours.
        "message": f"{fault}: {FAULT_HINT}" if fault else str(exc)[:2000],
        "traceback": text[-6000:],
        "compile": bool(names & COMPILE_ERRORS),
        "out_of_bounds": "OutOfBoundsAccess" in names,
        # Imports of the grader, Triton kernels of the learner's name made from other code (own_compile),
        # and the library's collectives on the grader's relay (autograder.relay).
        "refused": bool(names & {"GraderImportRefused", "NotYourKernel", "LibraryCollectiveRefused"}),
    }


# What a learner can do about a fault of the GPU context (bounds.out_of_bounds says it for the CPU).
FAULT_HINT = ("a load or store of your kernel outside its tensors is the usual cause; graded on the CPU "
              "(AUTOGRADER_DEVICE=cpu), a Triton kernel's first such access is named, with its program id")
# How a fault of a GPU context reads in a traceback, in PyTorch's words and in CuPy's.
_GPU_FAULT = re.compile(r"(CUDA error: [^\n]+|cudaError\w+: [^\n]+)")


def gpu_fault(traceback_text: str) -> str | None:
    """The words of a worker's traceback that say its GPU context faulted (an illegal or misaligned
    address, a trap), if they do: a fault of kernels launched in the process that runs the
    learner's code, found by whatever waits for them next, not a failure of the grader's step that
    happened to wait."""
    found = _GPU_FAULT.search(traceback_text)
    return found.group(1).strip() if found else None
