"""What the operating system enforces around a grading: no process outlives it, the learner's process
cannot read or signal the judge, and (where the kernel has Landlock) it writes only to its own folder.

All of it is Linux-specific and best effort elsewhere: each function says whether it took effect.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

_LINUX = sys.platform.startswith("linux")
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_CAPSET = 126
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_libc = ctypes.CDLL(None, use_errno=True) if _LINUX else None


def _prctl(option: int, value: int) -> bool:
    return bool(_libc) and _libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Get ``sig`` when the parent dies; exit at once if it already has (the race before prctl)."""
    _prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent_pid:
        os._exit(1)


def become_subreaper() -> bool:
    """Orphans among this process's descendants (a learner's double fork) become its children, so
    :func:`kill_descendants` still finds them."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def hide_memory() -> bool:
    """Not dumpable: processes of the same user without CAP_SYS_PTRACE cannot read /proc/PID/mem
    or attach a debugger, so the judge's references stay out of the learner's reach."""
    return _prctl(PR_SET_DUMPABLE, 0)


def make_dumpable() -> bool:
    """Dumpable again, as a process started with its own Python is: a worker forked from the
    non-dumpable judge (autograder.template) owns its /proc files like any process."""
    return _prctl(PR_SET_DUMPABLE, 1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> str:
    """Give up every capability (root in Colab holds them all), from the bounding set too, so nothing
    this process starts (a setuid program, ``nvidia-smi``) gets one back. The learner's code needs
    none, and each reaches past its process into what the judge times or holds: CAP_SYS_ADMIN is the
    NVIDIA driver's test for its privileged controls (locked clocks, power limit, application clocks,
    compute mode: settings that outlive the process, into the library's timing), CAP_SYS_PTRACE reads
    a non-dumpable judge's memory, CAP_MKNOD makes a device node (``/dev/mem``) in a writable folder,
    CAP_SYS_NICE raises a thread above the judge's, CAP_SYS_RAWIO reaches the hardware's ports.
    Returns what was done, for the grading's report."""
    if not _libc:
        return "capabilities kept (not Linux)"
    if not any(mask for name, mask in capabilities("self").items() if name in HELD):
        # An ordinary user's bounding set stays full, and only CAP_SETPCAP empties it; with no
        # capability held and no new privileges (the sandbox sets that), none can be gained.
        return "no capabilities held"
    # Dropping from the bounding set takes CAP_SETPCAP, which the capset below gives up.
    for cap in range(_last_capability() + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    _libc.syscall(SYS_CAPSET, ctypes.byref(header), (_CapData * 2)())
    now = capabilities("self")
    left = [name for name in HELD if now.get(name)]
    if left:
        return f"capabilities still held: {', '.join(left)}"
    return "every capability dropped" + (" (the bounding set kept)" if now.get("CapBnd") else "")


# The sets a process uses or can pass on; the bounding set only limits what a program it runs could gain.
HELD = ("CapInh", "CapPrm", "CapEff", "CapAmb")


def capabilities(pid: int | str) -> dict[str, int]:
    """The capability sets of a process (or "self"), as its status file in /proc gives them: read by
    the judge too, out of the process's reach."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
                    name, mask = line.split(":")
                    found[name] = int(mask, 16)
    except OSError:
        pass
    return found


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


# Landlock filesystem rights (ABI 1-3): everything that creates, changes or removes a file.
_FS_WRITE = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_FS_READ_FILE, _FS_WRITE_FILE = 1 << 2, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def confine(writable: list[str], abstract_sockets: bool = False, hidden: list[str] = (), readable: list[str] = ()) -> str:
    """Landlock this process and its future children: files may be created or changed only beneath
    ``writable``, and no file beneath ``hidden`` may be read (every other file can, and those beneath
    ``writable`` and ``readable`` even where they lie in a hidden folder); processes
    outside the sandbox cannot be traced (Landlock forbids it) nor, from ABI 6, signalled, nor
    reached through their abstract UNIX sockets unless ``abstract_sockets``. Returns what took
    effect, in words."""
    if not _libc:
        return "no filesystem sandbox (not Linux)"
    abi = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "no filesystem sandbox (this kernel has no Landlock)"
    handled = _FS_WRITE | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0) | (_FS_READ_FILE if hidden else 0)
    scoped = (_SCOPE_SIGNAL | (0 if abstract_sockets else _SCOPE_ABSTRACT_UNIX_SOCKET)) if abi >= 6 else 0
    attr = _RulesetAttr(handled, 0, scoped)
    size = ctypes.sizeof(attr) if abi >= 6 else ctypes.sizeof(ctypes.c_uint64)
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"no filesystem sandbox (landlock_create_ruleset: {os.strerror(ctypes.get_errno())})"
    try:
        rules = [(path, handled if os.path.isdir(path) else handled & (_FS_WRITE_FILE | _FS_TRUNCATE | _FS_READ_FILE)) for path in writable]
        rules += [(path, _FS_READ_FILE) for path in ([*readable_around(hidden), *readable] if hidden else ())]
        for path, rights in rules:
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(rights, fd)
                _libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            return f"no filesystem sandbox (landlock_restrict_self: {os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return (
        f"Landlock ABI {abi}: writes only beneath the grading's own folders"
        + (f", {len(hidden)} of the grader's paths unreadable" if hidden else "")
        + (", no signals out" if scoped else "")
        + (", no abstract sockets out" if scoped & _SCOPE_ABSTRACT_UNIX_SOCKET else "")
    )


def readable_around(hidden: list[str]) -> list[str]:
    """Where reading may stay allowed when nothing beneath ``hidden`` may be read: Landlock grants
    whole hierarchies, so every entry of every folder above a hidden path but the way down to it
    (an entry that is a link counts by its target, and one leading into or above a hidden path is
    left out). Folders stay listable: only the files' contents are kept back."""
    hidden_real = {os.path.realpath(p) for p in hidden}
    above = {"/"}
    for path in hidden_real:
        folder = os.path.dirname(path)
        while folder not in above:
            above.add(folder)
            folder = os.path.dirname(folder)
    readable = []
    for folder in sorted(above):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            target = os.path.realpath(os.path.join(folder, name))
            if target in above or any(target == h or target.startswith(h + os.sep) for h in hidden_real):
                continue
            readable.append(target)
    return readable


def stat_fields(path: str) -> list[bytes]:
    """The fields of a /proc stat line after the command name (the state first, the parent's id
    second), which may hold spaces and parentheses: they follow the last ')'. Raises OSError."""
    with open(path, "rb") as f:
        stat = f.read()
    return stat[stat.rfind(b")") + 2 :].split()


def parent_of(pid: int) -> int:
    """The parent's id of ``pid``, from /proc (0 where it cannot be read)."""
    try:
        return int(stat_fields(f"/proc/{pid}/stat")[1])
    except (OSError, ValueError, IndexError):
        return 0


def _children(live_only: bool = True) -> dict[int, list[int]]:
    """Parent id -> child ids, from /proc; zombies (dead, waiting to be collected) left out unless
    ``live_only`` is false."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = stat_fields(f"/proc/{entry}/stat")
        except OSError:
            continue
        if live_only and fields[0] in (b"Z", b"X"):
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def descendants(root: int, spare: tuple[int, ...] = ()) -> list[int]:
    """Every process below ``root``, leaving out the subtrees of the ``spare`` processes."""
    if not _LINUX:
        return []
    tree = _children()
    found, stack = [], [pid for pid in tree.get(root, []) if pid not in spare]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


# The judge's own children that outlive its workers (autograder.netns's holder): spared by every sweep.
KEPT: set[int] = set()


def kill_descendants(root: int, rounds: int = 50, spare: tuple[int, ...] = ()) -> int:
    """Stop, then kill, every descendant of ``root`` (but the ``spare`` subtrees and ``KEPT``) until
    none is left; returns how many were killed. Stopping first freezes a process that forks in a loop,
    so the sweep converges. Dead children of ``root`` are collected when ``root`` is this process."""
    spare = (*spare, *KEPT)
    killed = 0
    for _ in range(rounds):
        pids = descendants(root, spare)
        if not pids:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        killed += len(pids)
        if root == os.getpid():
            _reap(spare)
        time.sleep(0.01)
    return killed


def _reap(spare: tuple[int, ...]) -> None:
    """Collect the exit status of this process's dead children (adopted orphans included), one
    by one, so that a spared child's status is left for its owner."""
    tree = _children(live_only=False)
    for pid in tree.get(os.getpid(), []):
        if pid in spare:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
