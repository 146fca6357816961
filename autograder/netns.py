"""A network of their own for a distributed exercise's ranks (Act 5).

The ranks meet over the loopback network (torch.distributed's store, NCCL's and gloo's sockets), so
their system call filter leaves sockets to them (autograder.seccomp). The host's loopback network
holds services that act for whoever reaches them: a Jupyter server, a GPU host engine that sets
clocks, another grading's store. So the judge starts a holder process in a network namespace of its
own, with only its loopback device, up, and every rank of the grading starts inside it: a fresh
worker process joins the namespace before its interpreter starts (``launch``: a namespace is a
property of each thread, so it is joined while the process has one), and every thread it starts
after inherits it. Where the grader is root the namespace is a plain one; otherwise it sits in a user
namespace of the grader's own (the grader's user and group mapped to themselves), where the kernel
allows one. Where neither can be made, the ranks keep the host's network and the grading says so.
A rank cannot join the host's namespace again: the worker drops every capability before the
learner's code loads. A service on a socket file (Docker's) is reached through the file system, not
the network: a namespace does not hide it.
"""

from __future__ import annotations

import subprocess
import sys

from . import osguard

VARIABLE = "AUTOGRADER_NETWORK"
# The ranks' sockets bind and connect on the only interface there is.
INTERFACES = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}

# Run by the holder: a network namespace (in a user namespace of its own where it must), its
# loopback device brought up (SIOCGIFFLAGS, SIOCSIFFLAGS on a 40-byte ifreq), then it waits for its
# input to close. Its first line says what it made: "net", "user" or "none <why>".
_HOLDER = r"""
import ctypes, fcntl, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if libc.unshare(flags) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
try:
    try:
        unshare(0x40000000)
        kind = "net"
    except PermissionError:
        uid, gid = os.getuid(), os.getgid()
        unshare(0x10000000 | 0x40000000)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        kind = "user"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh22x", fcntl.ioctl(s, 0x8913, struct.pack("16sh22x", b"lo", 0)))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sh22x", b"lo", flags | 1))
except OSError as error:
    print("none", error, flush=True)
    sys.exit(0)
print(kind, flush=True)
sys.stdin.read()
"""

# Run before the worker's interpreter: join each namespace named (the user namespace first), then
# become the worker. Nothing here starts a thread.
_LAUNCHER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for path in sys.argv[1].split(","):
    fd = os.open(path, os.O_RDONLY)
    if libc.setns(fd, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"joining {path}: {os.strerror(number)}")
    os.close(fd)
os.execv(sys.argv[2], sys.argv[2:])
"""


class PrivateNetwork:
    """The judge's holder of one grading's network namespace: ``env()`` for each rank's worker,
    ``fact`` for the grading's report, ``close()`` once the ranks are gone."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-I", "-c", _HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        first = (self.process.stdout.readline() or "none the holder ended").split(maxsplit=1)
        self.kind = first[0]
        # Workers ended meanwhile take every other process the judge started with them: not this one.
        osguard.KEPT.add(self.process.pid)
        if self.kind == "none":
            self.close()
            self.fact = f"the ranks keep the host's network (no namespace of their own: {first[1].strip() if len(first) > 1 else 'no reason given'})"
        else:
            self.fact = "the ranks in a network of their own (its loopback device only)"

    def env(self) -> dict:
        if self.kind == "none":
            return {}
        spaces = (["user"] if self.kind == "user" else []) + ["net"]
        return {VARIABLE: ",".join(f"/proc/{self.process.pid}/ns/{space}" for space in spaces), **INTERFACES}

    def close(self) -> None:
        osguard.KEPT.discard(self.process.pid)
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def launch(command: list[str], env: dict) -> list[str]:
    """``command`` (a worker's), started inside the namespaces ``env`` names, if any."""
    paths = env.get(VARIABLE)
    # Isolated (-I): no module of the worker's folder, where an earlier rank's code could write, is
    # imported by this process, which runs before any sandbox.
    return [sys.executable, "-I", "-c", _LAUNCHER, paths, *command] if paths else command
