"""A seccomp filter for a worker whose memory the judge measures (autograder.memory_step): once it is
on, the process can keep data only where its resident set size counts it.

Refused (EPERM): every way to hold bytes outside this process's own pages or to hand them to another
process: memfd_create and memfd_secret, System V shared memory and message queues, POSIX message
queues, kernel keyrings, BPF maps, sockets, pipes, fork, vfork, clone without CLONE_THREAD (a thread shares this process's
pages; a child would not), execve (a new program starts a new memory map with its own peak),
ptrace, process_vm_readv/writev, io_uring, and madvise's MADV_COLD/MADV_PAGEOUT (page live data
out to swap). clone3 answers ENOSYS instead, so that glibc's pthread_create falls back to clone,
where CLONE_THREAD is checked: threads still start (torch's thread pool, the learner's own).
Everything else is allowed. Files are Landlock's (autograder.osguard.confine: no writable folder).

The filter is written for x86-64; elsewhere :func:`forbid_hidden_memory` installs nothing and says
so. System calls of another ABI (i386's int 0x80, x32) are refused whole on x86-64.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 317, 1, 1
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000
MADV_COLD, MADV_PAGEOUT = 20, 21
# x86-64 system call numbers.
REFUSED = {
    "pipe": 22, "shmget": 29, "shmat": 30, "socket": 41, "socketpair": 53, "fork": 57, "vfork": 58, "execve": 59,
    "msgget": 68, "msgsnd": 69, "ptrace": 101, "mq_open": 240, "add_key": 248, "keyctl": 250, "pipe2": 293, "process_vm_readv": 310,
    "process_vm_writev": 311, "memfd_create": 319, "bpf": 321, "execveat": 322, "io_uring_setup": 425, "process_madvise": 440,
    "memfd_secret": 447,
}
SYS_CLONE, SYS_CLONE3, SYS_MADVISE = 56, 435, 28

# Classic BPF over struct seccomp_data {int nr; u32 arch; u64 instruction_pointer; u64 args[6];}.
_LOAD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0, _ARG2 = 0, 4, 16, 32
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program() -> bytes:
    """The filter's instructions, as the kernel reads them."""
    refuse = _op(_RET, RET_ERRNO | errno.EPERM)
    allow = _op(_RET, RET_ALLOW)
    code = [_op(_LOAD, _ARCH), _op(_JEQ, AUDIT_ARCH_X86_64, jt=1), refuse, _op(_LOAD, _NR), _op(_JGE, X32_SYSCALL_BIT, jf=1), refuse]
    for number in sorted(REFUSED.values()):
        code += [_op(_JEQ, number, jf=1), refuse]
    code += [_op(_JEQ, SYS_CLONE3, jf=1), _op(_RET, RET_ERRNO | errno.ENOSYS)]
    # clone: a thread (CLONE_THREAD in the flags, the first argument) or nothing.
    code += [_op(_JEQ, SYS_CLONE, jf=4), _op(_LOAD, _ARG0), _op(_JSET, CLONE_THREAD, jt=1), refuse, allow]
    # madvise: anything but paging live memory out (the advice, the third argument).
    code += [_op(_JEQ, SYS_MADVISE, jf=5), _op(_LOAD, _ARG2), _op(_JEQ, MADV_PAGEOUT, jt=2), _op(_JEQ, MADV_COLD, jt=1), allow, refuse]
    code.append(allow)
    return b"".join(code)


# The system calls that name a file descriptor, by the arguments that do (seccomp_data offsets):
# what autograder.channel's descriptors are kept from. Those that could hand a descriptor over or
# act on one unnamed (io_uring, close_range, pidfd_getfd) are refused whole.
FD_ARGUMENTS = {
    0: (_ARG0,), 1: (_ARG0,), 3: (_ARG0,), 16: (_ARG0,), 17: (_ARG0,), 18: (_ARG0,), 19: (_ARG0,), 20: (_ARG0,),  # read write close ioctl pread pwrite readv writev
    32: (_ARG0,), 33: (_ARG0, _ARG0 + 8), 40: (_ARG0, _ARG0 + 8), 44: (_ARG0,), 45: (_ARG0,), 47: (_ARG0,),  # dup dup2 sendfile sendto recvfrom recvmsg
    48: (_ARG0,), 54: (_ARG0,), 72: (_ARG0,), 275: (_ARG0, _ARG2), 276: (_ARG0, _ARG0 + 8), 278: (_ARG0,),  # shutdown setsockopt fcntl splice tee vmsplice
    292: (_ARG0, _ARG0 + 8), 295: (_ARG0,), 296: (_ARG0,), 299: (_ARG0,), 326: (_ARG0, _ARG2), 327: (_ARG0,), 328: (_ARG0,),  # dup3 preadv pwritev recvmmsg copy_file_range preadv2 pwritev2
}
# Refused whole to the thread that runs the learner's code (the channel's filter): what could reach
# the channel's descriptors unnamed or hand them on.
CHANNEL_WHOLE = {"close_range": 436, "pidfd_getfd": 438}
# Refused whole to every thread of the worker (the reach filter): the clocks (root may slew the
# monotonic clock the judge times the host by, up to a tenth, or set the wall clock; reads of their
# tuning too: no honest kernel asks); tkill, which signals a thread by its id alone, of any process
# (glibc's raise and pthread_kill use tgkill); ptrace and process_vm_readv/writev, which read and
# write another process's memory (the helper is dumpable: where neither Landlock nor Yama stands in
# the way, a process of the same user could rewrite how it times the library); and setsid and
# setpgid, which take a process out of the worker's process group: the judge ends that group with
# one signal, which reaches every member however fast it forks (a chain of forks, each parent
# leaving at once, outran the sweep of /proc that finds the judge's descendants one by one).
REACH_WHOLE = {
    "adjtimex": 159, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "tkill": 200,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "setpgid": 109, "setsid": 112,
    # A pidfd names any process: a directory of /proc opened as one, not only what pidfd_open gives.
    "pidfd_send_signal": 424,
    # io_uring's operations run in the kernel's own workers, where no filter applies: a socket, a
    # connection, a read of the channel's descriptors.
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
}
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
# sendmsg can pass any descriptor to a socket of the learner's own (SCM_RIGHTS), under a new number.
PASSING = {"sendmsg": 46, "sendmmsg": 307}
# The host's services act with more authority than the worker: a Jupyter server's terminals (its
# token in a readable runtime file), Docker's socket, a GPU host engine that sets clocks would carry
# out what the sandbox refuses. A new socket (socketpair's pairs reach nothing) or a connection is
# refused, but for NCCL's ranks, which meet over the loopback network.
NETWORK = {"socket": 41, "connect": 42}
# AF_INET, AF_INET6 and AF_PACKET: the families a socket reaches another machine or process by address with.
INTERNET_FAMILIES = (2, 10, 17)


# The system calls that change how another process or thread is scheduled (its priority, policy,
# CPUs, I/O priority, limits, memory placement), by the argument naming it: allowed for the caller
# itself (0) only. Another process of the user (the judge, the trusted helper, another grading)
# would keep the change after the worker is gone (autograder.pinning).
SELF_ONLY = {
    141: _ARG0 + 8, 142: _ARG0, 144: _ARG0, 203: _ARG0, 251: _ARG0 + 8, 256: _ARG0, 279: _ARG0, 302: _ARG0, 314: _ARG0,
}  # setpriority sched_setparam sched_setscheduler sched_setaffinity ioprio_set migrate_pages move_pages prlimit64 sched_setattr


# The system calls that signal a process by the pid they are given (their first argument): kill
# rt_sigqueueinfo tgkill rt_tgsigqueueinfo pidfd_open. Refused for a process group or every process
# of the user at once (0 or below) and for the grader's processes (``protected``: the judge, every
# process above it, the trusted helper), which a learner's process could stop while they time the
# library, or kill; where Landlock scopes signals (ABI 6) every process outside the grading is.
SIGNALLING = (62, 129, 234, 297, 434)
NEGATIVE, PROTECTED_MAX = 0x80000000, 120
# A stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU: 19 to 22) is refused to every process, by the argument
# holding the signal (kill and rt_sigqueueinfo: the second, tgkill and rt_tgsigqueueinfo: the third).
# Stopping is the signal that gains: a process paused while it times the library slows the library
# down, and a pid is a guess away (a thread the judge starts after the set-up, another grading's
# helper); any other signal ends what it reaches, which scores nothing.
STOP_ARGUMENT = {62: _ARG0 + 8, 129: _ARG0 + 8, 234: _ARG2, 297: _ARG2}
FIRST_STOP, AFTER_STOPS = 19, 23


def _header() -> list[bytes]:
    refuse = _op(_RET, RET_ERRNO | errno.EPERM)
    return [_op(_LOAD, _ARCH), _op(_JEQ, AUDIT_ARCH_X86_64, jt=1), refuse, _op(_LOAD, _NR), _op(_JGE, X32_SYSCALL_BIT, jf=1), refuse]


def _whole(numbers) -> list[bytes]:
    """Instructions refusing each system call of ``numbers`` whatever its arguments."""
    refuse = _op(_RET, RET_ERRNO | errno.EPERM)
    return [x for number in sorted(numbers) for x in (_op(_JEQ, number, jf=1), refuse)]


def reach_program(passing: bool, protected: tuple[int, ...] = ()) -> bytes:
    """A filter refusing what reaches beyond the worker: REACH_WHOLE, unless ``passing`` the
    network, changes to the scheduling of any process or thread but the caller, signals to process
    groups and to ``protected``, and stops to anyone."""
    refuse, allow = _op(_RET, RET_ERRNO | errno.EPERM), _op(_RET, RET_ALLOW)
    code = _header() + _whole({**REACH_WHOLE, **({} if passing else NETWORK)}.values())
    for number, offset in sorted(SELF_ONLY.items()):
        code += [_op(_JEQ, number, jf=4), _op(_LOAD, offset), _op(_JEQ, 0, jt=1), refuse, allow]
    # A pid is an int: the low word of the argument, 0 or negative when it names a group or everyone.
    # At most PROTECTED_MAX of them, the first given first (processes before their other threads):
    # a jump spans at most 255 instructions.
    pids = [x for pid in (0, *list(dict.fromkeys(protected))[:PROTECTED_MAX]) for x in (_op(_JEQ, pid, jf=1), refuse)]
    for number in SIGNALLING:
        stops = [_op(_LOAD, STOP_ARGUMENT[number]), _op(_JGE, AFTER_STOPS, jt=2), _op(_JGE, FIRST_STOP, jf=1), refuse] if number in STOP_ARGUMENT else []
        block = [*stops, _op(_LOAD, _ARG0), _op(_JGE, NEGATIVE, jf=1), refuse, *pids]
        code += [_op(_JEQ, number, jf=len(block) + 1), *block, allow]
    code.append(allow)
    return b"".join(code)


def channel_program(fds: tuple[int, ...], passing: bool) -> bytes:
    """A filter refusing ``fds`` to every system call, CHANNEL_WHOLE, and, unless ``passing``,
    descriptor passing."""
    refuse, allow = _op(_RET, RET_ERRNO | errno.EPERM), _op(_RET, RET_ALLOW)
    code = _header() + _whole({**CHANNEL_WHOLE, **({} if passing else PASSING)}.values())
    for number, offsets in sorted(FD_ARGUMENTS.items()):
        block = [op for offset in offsets for op in [_op(_LOAD, offset), *(x for fd in fds for x in (_op(_JEQ, fd, jf=1), refuse))]]
        code += [_op(_JEQ, number, jf=len(block) + 1), *block, allow]
    code.append(allow)
    return b"".join(code)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _unsupported() -> str | None:
    if not sys.platform.startswith("linux"):
        return "no system call filter (not Linux)"
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"no system call filter (written for x86-64, this is {platform.machine()})"
    return None


def _install(code: bytes, every_thread: bool = False) -> str | None:
    """Install ``code`` on the calling thread (and every thread and child it starts from now on), or
    with ``every_thread`` on every thread of the process at once (SECCOMP_FILTER_FLAG_TSYNC); None
    if it took effect, else why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0)
    if every_thread:
        done = libc.syscall(SYS_SECCOMP, ctypes.c_uint(SECCOMP_SET_MODE_FILTER), ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog))
        # A positive answer names a thread that could not take the filter.
        return None if done == 0 else f"no system call filter (seccomp: {'thread ' + str(done) if done > 0 else os.strerror(ctypes.get_errno())})"
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), 0, 0) != 0:
        return f"no system call filter (prctl: {os.strerror(ctypes.get_errno())})"
    return None


def forbid_hidden_memory() -> str:
    """Install the filter on this process and every thread and child it starts from now on;
    returns what took effect, in words."""
    failed = _unsupported()
    if failed:
        return f"{failed}: memory outside the measured pages is not refused"
    return _install(program()) or "seccomp: no shared memory, pipes, sockets, child processes or paging out"


def forbid_new_connections(every_thread: bool = False) -> str:
    """Refuse a new network socket (INTERNET_FAMILIES) to the calling thread and every thread and child
    it starts from now on, or with ``every_thread`` to every thread of the process (its filters must
    all be the same then): a timed rank's, once its process group is connected, before the channel's
    filter (autograder.ranks.Bench.connect). NCCL's bootstrap, which every new communicator needs,
    meets over TCP; UNIX sockets stay, since NCCL's proxy passes its cuMem buffers' descriptors over
    abstract ones. Returns what took effect, in words."""
    failed = _unsupported()
    if failed:
        return f"{failed}: new connections are not refused"
    refuse, allow = _op(_RET, RET_ERRNO | errno.EPERM), _op(_RET, RET_ALLOW)
    families = [x for family in INTERNET_FAMILIES for x in (_op(_JEQ, family, jf=1), refuse)]
    code = [*_header(), _op(_JEQ, NETWORK["socket"], jf=len(families) + 2), _op(_LOAD, _ARG0), *families, allow, allow]
    return _install(b"".join(code), every_thread) or "seccomp: no new network socket" + (" in any thread" if every_thread else "")


def forbid_io_uring() -> str | None:
    """Refuse io_uring (REACH_WHOLE's three calls) to every thread of the process from now on, before
    anything makes a ring: libuv, under torch.distributed's store, makes one as its loop starts and
    polls without it when refused, but aborts its process when the reach filter later refuses it a
    ring it already has. None if it took effect, else why not."""
    return _unsupported() or _install(b"".join([*_header(), *_whole(REACH_WHOLE[name] for name in IO_URING), _op(_RET, RET_ALLOW)]), every_thread=True)


def forbid_channel(fds: tuple[int, ...], passing: bool = False, protected: tuple[int, ...] = ()) -> str:
    """Keep what reaches beyond the worker (reach_program) from every thread of it, and its channel to
    the judge (``fds``) from the calling thread and everything it starts (autograder.channel);
    ``passing`` leaves descriptor passing and the network to NCCL's ranks; ``protected``: the
    grader's processes, which no signal may reach. Returns what took effect, in words."""
    failed = _unsupported()
    if failed:
        return f"{failed}: your code could reach the channel to the judge"
    reach = reach_program(passing, protected)
    # A thread that cannot take it then (one exiting): the calling thread and what it starts, at least.
    everywhere = _install(reach, every_thread=True) is None
    failed = (None if everywhere else _install(reach)) or _install(channel_program(fds, passing))
    if failed:
        return f"{failed}: your code could reach the channel to the judge"
    return ("seccomp: the channel to the judge, signals to the grader, other processes' scheduling and memory, the clocks and leaving the process group out of reach"
            + ("" if everywhere else " (not in the threads running before it)") + ("" if passing else ", no network"))
