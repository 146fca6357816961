"""No new native code in a learner's worker on a CPU: its writable folders mounted noexec in a mount
namespace of its own (autograder.noexec), and no new executable memory that is not a file's mapping
(autograder.seccomp.forbid_new_code). Each runs in a fresh process: a namespace is made while a
process has one thread, and a filter is for good. The verdicts of whole gradings are the adversarial
suite's (loads_a_library_it_wrote, makes_executable_memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

LINUX_X86 = pytest.mark.skipif(os.uname().sysname != "Linux" or os.uname().machine != "x86_64", reason="written for Linux on x86-64")


def _run(script: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


REMOUNTED = r"""
import ctypes, json, mmap, os, sys
from autograder import noexec
folder = sys.argv[1]
said = noexec.remount([folder, "/dev"])
with open("/proc/self/maps") as maps:
    library = next(line.split()[-1] for line in maps if "/libpython" in line or "/libc.so" in line or "/libc-" in line)
copy = os.path.join(folder, "copy.so")
with open(library, "rb") as source, open(copy, "wb") as target:
    target.write(source.read())
seen = {"said": said}
try:
    ctypes.CDLL(copy)
    seen["copy"] = "loaded"
except OSError as error:
    seen["copy"] = str(error)
with open("/dev/zero", "rb") as zero:
    try:
        mmap.mmap(zero.fileno(), 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
        seen["zero"] = "mapped"
    except OSError as error:
        seen["zero"] = error.strerror
with open("/dev/null", "w") as null:
    seen["null"] = null.write("devices still open")
print(json.dumps(seen))
"""


def test_a_library_written_into_a_remounted_folder_cannot_be_loaded(tmp_path):
    seen = _run(REMOUNTED, str(tmp_path))
    assert seen["said"].startswith("nothing you write can be run"), seen["said"]
    assert "failed to map segment" in seen["copy"], seen
    assert seen["zero"] == "Operation not permitted", seen
    assert seen["null"] == len("devices still open")


NEW_CODE = r"""
import ctypes, json, mmap, os, threading
from autograder import seccomp
# A thread running before the filter takes it too (every thread of the process).
started, done = threading.Event(), threading.Event()
seen = {}
def before():
    started.set()
    done.wait()
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        seen["thread"] = "mapped"
    except OSError as error:
        seen["thread"] = error.strerror
thread = threading.Thread(target=before)
thread.start()
started.wait()
seen["said"] = seccomp.forbid_new_code()
done.set()
thread.join()
def attempt(name, make):
    try:
        make()
        seen[name] = "allowed"
    except OSError as error:
        seen[name] = error.strerror
attempt("anonymous_rwx", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC))
attempt("anonymous_rw", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE))
attempt("memfd", lambda: os.memfd_create("code"))
attempt("library", lambda: ctypes.CDLL("libbz2.so.1.0") if os.path.exists("/lib/x86_64-linux-gnu/libbz2.so.1.0") else ctypes.CDLL("libz.so.1"))
print(json.dumps(seen))
"""


@LINUX_X86
def test_new_executable_memory_is_refused_to_every_thread_and_libraries_still_load():
    seen = _run(NEW_CODE)
    assert seen["said"] == "seccomp: no new executable memory", seen
    assert (seen["anonymous_rwx"], seen["memfd"], seen["thread"]) == ("Operation not permitted",) * 3, seen
    assert (seen["anonymous_rw"], seen["library"]) == ("allowed", "allowed"), seen
