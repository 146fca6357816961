"""No native code from the learner's folders: a learner's worker sees every folder its process can
write (the gradings' folders, the kernel caches, ``/dev`` with ``/dev/shm``) mounted ``noexec``, in
a mount namespace of its own, so no file written there can be mapped executable.

Why: the seal (autograder.seal) refuses the learner's code a native module of its folder, but an
installed library loads one for whoever asks (``torch.ops.load_library``, a C extension built by
``torch.utils.cpp_extension``, Triton's launcher found in its cache under the key of the launcher it
is about to build), and native code in the worker could rewrite what the worker reports. The kernel
refuses ``mmap(PROT_EXEC)`` of a file on a noexec mount, whoever asks (``/dev`` among them: shared
memory, and a private mapping of ``/dev/zero``).

Not closed here: memory made executable without a file, as a JIT makes it. PyTorch's own CPU kernels
need it (oneDNN generates its matrix products as it meets each shape: refused such memory, every
matmul of bfloat16 on a CPU failed with "could not create a primitive"). The modules that would
make and call such code with no audit event, cffi, llvmlite and numba, are refused by the seal
(autograder.seal.UNAUDITED_NATIVE); raw memory through a library's interfaces stays beyond it, as the
grading page says.

The namespace is made as the worker starts, while its process has one thread (the kernel requires
it): a plain mount namespace where the grader may make one (root, as on the course's GPU hosts), else
inside a user namespace of its own with the grader's user and group mapped to themselves. Where
neither can be made (a container that forbids both), the worker runs without it and says so. The
folders it is given later (its kernel cache, wherever the judge keeps them) are remounted as it learns
them, before its sandbox closes (``cover``).
"""

from __future__ import annotations

import ctypes
import os
import tempfile

from .learner_code import GRADINGS_FOLDER
from .osguard import _libc as _LIBC

VARIABLE = "AUTOGRADER_NOEXEC"
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 32, 4096, 16384, 1 << 18
# Linux's statvfs flags (as numbers: os names only some of them elsewhere, and this module is imported
# everywhere) -> the mount flags a remount must keep (a user namespace may not clear locked ones).
ST_NOEXEC = 8
KEPT = {1: 1, 2: MS_NOSUID, 4: MS_NODEV, 1024: 1024, 2048: 2048, 4096: 1 << 21}


def folders() -> list[str]:
    """The folders beneath which a learner's worker may write, as far as they are known when it starts
    (what ``remount`` takes): the gradings' folder (its own grading's folder and ``TMPDIR`` are in
    it), the kernel caches' folder (made here: a worker starts before its cache is) and ``/dev`` (shared
    memory). Not the whole temporary folder: the course itself may live there (a clone in /tmp, its
    virtual environment with PyTorch's libraries). The rest comes with the grading (``cover``)."""
    cache = os.environ.get("AUTOGRADER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpu-brrr")
    kernels = os.path.join(cache, "kernels")
    os.makedirs(kernels, exist_ok=True)
    return [os.path.join(tempfile.gettempdir(), GRADINGS_FOLDER), kernels, "/dev"]


def remount(paths: list[str]) -> str:
    """Mount each existing folder of ``paths`` again ``noexec,nosuid`` (bind mounts over
    themselves), in a new mount namespace of this process; call while it has one thread. Returns
    what took effect, in words."""
    if _LIBC is None:
        return "files you write may be run (mount namespaces are Linux's)"
    try:
        try:
            _call(_LIBC.unshare(CLONE_NEWNS), "unshare")
        except PermissionError:
            uid, gid = os.getuid(), os.getgid()
            _call(_LIBC.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        # Changes made in this namespace stay in it.
        _call(_LIBC.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making / private")
        done = _each(paths)
    except OSError as error:
        return f"files you write may be run ({error})"
    return f"no file you write can be run (noexec: {', '.join(done)})"


def cover(paths: list[str], said: str) -> str:
    """After ``remount`` (``said``: its words), the folders of ``paths`` not yet noexec remounted too,
    in the same namespace: the folders a worker is given once it knows its grading (its kernel cache,
    wherever the judge keeps them); any thread may. Returns the words, extended."""
    if not said.startswith("no file"):
        return said
    try:
        added = _each([p for p in paths if os.path.isdir(p) and not os.statvfs(p).f_flag & ST_NOEXEC])
    except OSError as error:
        return f"files you write may be run ({error})"
    return said[:-1] + "".join(f", {point}" for point in added) + ")"


def _call(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _each(paths: list[str]) -> list[str]:
    """Bind-mount each existing folder of ``paths`` over itself and remount it and every mount beneath
    it (``/dev/shm`` under ``/dev``: a remount's flags are one mount's) noexec; the mount points done."""
    done = []
    for path in dict.fromkeys(os.path.realpath(p) for p in paths):
        if not os.path.isdir(path):
            continue
        _call(_LIBC.mount(path.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"binding {path}")
        for point in dict.fromkeys([path, *(m for m in _mount_points() if m.startswith(path.rstrip("/") + "/"))]):
            kept = sum(flag for bit, flag in KEPT.items() if os.statvfs(point).f_flag & bit)
            _call(_LIBC.mount(b"none", point.encode(), None, MS_BIND | MS_REMOUNT | MS_NOEXEC | MS_NOSUID | kept, None), f"remounting {point}")
            done.append(point)
    return done


def _mount_points() -> list[str]:
    """This namespace's mount points (octal escapes in /proc/self/mounts undone)."""
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1].encode().decode("unicode_escape") for line in mounts if len(line.split()) > 1]
