"""Triton's native modules for a learner's GPU worker, built outside its sandbox.

Triton 3.6 builds host code as a kernel first runs: its driver's utilities (``cuda_utils``) and a C
launcher per kernel signature, each compiled with the system's C compiler and loaded as a Python
extension, found first in Triton's cache under ``sha256(source + platform)``. Triton 3.7 (what torch
2.13's CUDA wheels pin, so a learner's Colab) launches every kernel through one launcher inside
``cuda_utils`` and builds only that, the same way. In a learner's worker
that cache is a folder its process writes, so a library file planted under the key of the launcher
its kernel is about to need would be loaded as Triton's, native code in the worker; and the worker's
writable folders are mounted noexec (autograder.noexec), so none built there could run anyway.

So the worker starts a builder before its sandbox closes: a process of its own, outside Landlock and
the system call filters, whose working folder, temporary folder and Triton cache are a folder of
the grader's (``folder()``) that the worker may read and not write. The worker sends it what
Triton's launcher is made from (the kernel's signature, its tensor descriptors' metadata), never
source text; the builder makes the source with Triton's own ``make_launcher``, compiles it (or
finds it already built) and answers with the library's path, which the worker loads. Anything the
learner's code writes to the builder's pipe can only ask for another of Triton's launchers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Run isolated (-I: no current folder, no PYTHONPATH, no user site): the builder is outside the
# sandbox, and the worker's folder is the learner's; its import path is the worker's as it starts,
# absolute folders outside the gradings' only, and the package's parent first.
_BOOT = "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); from autograder import launchers; launchers.serve(*sys.argv[2:])"
UTILS, LAUNCHER = "cuda_utils", "__triton_launcher"
# What a signature's entry may be: Triton's type names ("*fp32", "i32", "constexpr", "nvTmaDesc",
# "tensordesc<fp16[64, 64]>"), or a tuple argument's entries.
TYPE_NAME = re.compile(r"[A-Za-z0-9_*<>\[\], ]{1,200}")
# The builder writes outside the sandbox, so what a worker may ask of it is bounded: a request line's
# bytes, and the launchers it compiles anew (a grading needs one per kernel signature, a few dozen at
# most; code looping over made-up signatures would otherwise fill the grader's disk).
MAX_REQUEST_BYTES = 1 << 20
MAX_BUILDS = 128


def folder() -> str:
    """The builder's folder: under the grader's cache, which no worker may write."""
    root = os.environ.get("AUTOGRADER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpu-brrr")
    return os.path.join(root, "launchers")


def triton_builds_here() -> bool:
    """Whether the installed Triton is one whose native modules the builder makes (3.6's and 3.7's way),
    read from its distribution's metadata: asked as a worker starts, before anything is imported."""
    from importlib import metadata

    try:
        return metadata.version("triton").startswith(("3.6.", "3.7."))
    except metadata.PackageNotFoundError:
        return False


def supported() -> str | None:
    """None where this Triton builds its modules as this module expects, else what differs."""
    import inspect

    try:
        from triton.backends.nvidia import driver
    except ImportError as error:
        return f"no Triton CUDA driver ({error})"
    otherwise = f"Triton {getattr(sys.modules.get('triton'), '__version__', '?')} builds its launchers otherwise"
    if not hasattr(driver, "compile_module_from_src") or not hasattr(driver, "CudaUtils"):
        return otherwise
    # 3.6: a launcher per signature, its source from make_launcher; 3.7: none (cuda_utils launches).
    if hasattr(driver, "make_launcher") and list(inspect.signature(driver.make_launcher).parameters) != ["constants", "signature", "tensordesc_meta"]:
        return otherwise
    return None


def _plain(value):
    """A signature entry as JSON carries it (a tuple argument's entries as a list)."""
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def valid(recipe: dict) -> dict:
    """``recipe`` as the builder takes it: a launcher's signature of Triton's type names and its tensor
    descriptors' metadata (numbers, names, lists), or Triton's driver utilities; else ValueError. The
    builder runs outside the sandbox, so nothing else a worker writes to it reaches its compiler."""

    def plain(value, depth=0) -> bool:
        if depth > 8:
            return False
        if isinstance(value, list):
            return all(plain(v, depth + 1) for v in value)
        if isinstance(value, dict):
            return all(isinstance(k, str) and TYPE_NAME.fullmatch(k) and plain(v, depth + 1) for k, v in value.items())
        return value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and TYPE_NAME.fullmatch(value) is not None)

    kind = recipe.get("kind")
    if kind == UTILS:
        return {"kind": UTILS}
    signature, meta = recipe.get("signature"), recipe.get("tensordesc_meta")
    if kind != "launcher" or not isinstance(signature, list) or len(signature) > 512 or not plain(signature) or not plain(meta):
        raise ValueError(f"not a recipe of Triton's: {json.dumps(recipe)[:200]}")
    if any(isinstance(entry, dict) for entry in signature):
        raise ValueError("a signature's entries are type names")
    return {"kind": kind, "signature": signature, "tensordesc_meta": meta}


def _search_path() -> list[str]:
    """This process's import path for the builder: absolute folders outside the gradings', the
    package's parent first."""
    import tempfile

    from .learner_code import GRADINGS_FOLDER

    gradings = os.path.join(os.path.realpath(tempfile.gettempdir()), GRADINGS_FOLDER, "")
    kept = [p for p in sys.path if os.path.isabs(p) and not os.path.join(os.path.realpath(p), "").startswith(gradings)]
    return [PACKAGE_PARENT, *kept]


def _tupled(value):
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


class _Request(str):
    """What ``make_launcher`` answers in the worker: the launcher's recipe, in place of its source."""

    recipe: dict


class Builder:
    """The worker's end: starts the builder, then stands in for Triton's ``make_launcher`` and
    ``compile_module_from_src`` (``install``)."""

    def __init__(self) -> None:
        self.folder = os.path.realpath(folder())
        os.makedirs(os.path.join(self.folder, "tmp"), exist_ok=True)
        requests_r, self._requests = os.pipe()
        answers_r, answers_w = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, json.dumps(_search_path()), str(requests_r), str(answers_w), self.folder],
            pass_fds=(requests_r, answers_w), stdin=subprocess.DEVNULL, cwd=self.folder,
        )
        os.close(requests_r)
        os.close(answers_w)
        self._answers = os.fdopen(answers_r, "rb")
        self._lock = threading.Lock()

    def build(self, recipe: dict) -> str:
        """The path of the library ``recipe`` makes, built by the builder."""
        key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
        with self._lock:
            os.write(self._requests, json.dumps({"key": key, **recipe}).encode() + b"\n")
            answer = json.loads(self._answers.readline() or b"{}")
        path = os.path.realpath(answer.get("path") or "")
        if answer.get("key") != key or not path.startswith(self.folder + os.sep):
            raise RuntimeError(f"Triton's {recipe['kind']} was not built: {answer.get('error') or 'no answer from the builder'}")
        return path

    def install(self) -> None:
        """From now on Triton's driver asks the builder for its modules."""
        from triton.backends.nvidia import driver
        from triton.runtime import build

        def make_launcher(constants, signature, tensordesc_meta):
            request = _Request(LAUNCHER)
            request.recipe = {"kind": "launcher", "signature": [_plain(v) for v in signature.values()], "tensordesc_meta": tensordesc_meta}
            return request

        def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None, ccflags=None):
            recipe = src.recipe if isinstance(src, _Request) else {"kind": name}
            if recipe["kind"] not in ("launcher", UTILS):
                raise RuntimeError(f"Triton asked for a native module {name!r} the grader does not build")
            return build._load_module_from_path(name, self.build(recipe))

        if hasattr(driver, "make_launcher"):
            driver.make_launcher = make_launcher
        driver.compile_module_from_src = compile_module_from_src


def serve(requests_fd: str, answers_fd: str, where: str) -> None:
    """The builder: answers each request line with the path of the module it asks for."""
    import sysconfig
    import tempfile
    from pathlib import Path

    os.environ.update(TRITON_CACHE_DIR=os.path.join(where, "cache"), TMPDIR=os.path.join(where, "tmp"))
    tempfile.tempdir = None
    from triton.backends.nvidia import driver
    from triton.runtime import build
    from triton.runtime.cache import get_cache_manager

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    builds = 0
    with os.fdopen(int(requests_fd), "rb") as requests:
        while line := requests.readline(MAX_REQUEST_BYTES + 1):
            answer: dict = {}
            if len(line) > MAX_REQUEST_BYTES:
                # The rest of the line would be read as requests of their own: the builder stops here.
                os.write(int(answers_fd), json.dumps({"error": f"a request of more than {MAX_REQUEST_BYTES} bytes"}).encode() + b"\n")
                return
            try:
                request = json.loads(line)
                answer["key"] = request.get("key")
                request = valid(request)
                if request["kind"] == "launcher":
                    signature = {i: _tupled(v) for i, v in enumerate(request["signature"])}
                    source, name = driver.make_launcher({}, signature, request.get("tensordesc_meta")), LAUNCHER
                else:
                    source, name = Path(driver.dirname, "driver.c").read_text(), UTILS
                cache = get_cache_manager(hashlib.sha256((source + build.platform_key()).encode()).hexdigest())
                path = cache.get_file(f"{name}{suffix}")
                if path is None:
                    builds += 1
                    if builds > MAX_BUILDS:
                        raise ValueError(f"more than {MAX_BUILDS} new launchers for one worker")
                    with tempfile.TemporaryDirectory() as scratch:
                        source_path = os.path.join(scratch, f"{name}.c")
                        Path(source_path).write_text(source)
                        built = build._build(name, source_path, scratch, driver.library_dirs(), driver.include_dirs, driver.libraries, [])
                        path = cache.put(Path(built).read_bytes(), f"{name}{suffix}", binary=True)
                answer["path"] = path
            except Exception as error:  # noqa: BLE001 -- said to the worker, whose Triton compile fails with it
                answer["error"] = f"{type(error).__name__}: {error}"[:500]
            os.write(int(answers_fd), json.dumps(answer).encode() + b"\n")
