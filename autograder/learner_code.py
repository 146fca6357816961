"""How the worker meets the learner's code: imports of the problem definitions are refused, and an
exception the code raises is described for the judge."""

from __future__ import annotations

import sys
import traceback

# The problem definitions hold the references: the learner's code may import the package (its
# notebook's set-up cell does) but not them.
REFUSED_PACKAGE = "autograder.problems"


class GraderImportRefused(ImportError):
    """The learner's code asked for a grader module it has no business with."""


class _RefuseGraderImports:
    def find_spec(self, name, path=None, target=None):
        if name == REFUSED_PACKAGE or name.startswith(REFUSED_PACKAGE + "."):
            raise GraderImportRefused("your code uses the grader's problem definitions (its reference answers); write your own")
        return None


def refuse_grader_imports() -> None:
    """From now on, importing the problem definitions fails, and those already imported are forgotten."""
    for name in [n for n in sys.modules if n == REFUSED_PACKAGE or n.startswith(REFUSED_PACKAGE + ".")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _RefuseGraderImports())


COMPILE_ERRORS = {"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "CompileException", "UnsupportedLanguageConstruct", "SyntaxError"}


def error(exc: BaseException, module_path: str | None) -> dict:
    """What an exception of the learner's code says, as the judge needs it: its traceback from the
    learner's own file on, and whether it is a compile error, an out-of-bounds access or a refusal."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if module_path and f.filename == module_path), 0)
    text = "".join(traceback.format_list(frames[first:]) + traceback.format_exception_only(type(exc), exc))
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "traceback": text[-6000:],
        "compile": bool(names & COMPILE_ERRORS),
        "out_of_bounds": "OutOfBoundsAccess" in names,
        "refused": "GraderImportRefused" in names,
    }
