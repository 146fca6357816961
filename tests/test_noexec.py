"""No native code from a learner's folders in its worker on a CPU: its writable folders mounted
noexec in a mount namespace of its own (autograder.noexec). Run in a fresh process: a namespace is
made while a process has one thread. The verdict of a whole grading is the adversarial suite's
(loads_a_library_it_wrote)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap


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
    assert seen["said"].startswith("no file you write can be run"), seen["said"]
    assert "failed to map segment" in seen["copy"], seen
    assert seen["zero"] == "Operation not permitted", seen
    assert seen["null"] == len("devices still open")
