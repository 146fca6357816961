"""The worker's end of its channel to the judge, out of reach of the thread that runs the learner's code.

Which kernels ran is reported from the process that runs the learner's code, and that code can
reach a file descriptor by its number: had it written a reply of its own to the judge (a forged
report, then the real one swallowed), the seal's checks on the worker's objects would never have
been asked. So the worker's two sockets are read and written only by two threads started before
the learner's code loads, which run nothing the learner's code can replace (the C functions they
need are bound when they start; the replies reach them as bytes, serialised by the worker), and the
thread that runs the learner's code, with every thread and process it starts, is refused every
system call on those two descriptors (autograder.seccomp.forbid_channel). The judge's side makes
them sockets, not pipes: a pipe can be opened again through /proc/self/fd under a new number, a
socket cannot. And every reply is signed (HMAC-SHA256 of its number and bytes, under a key the judge
sends in its first message, which only the writing thread keeps): threads that were running before
the filter (CUDA's, PyTorch's) are not covered by it, and a callback of the learner's run by one of
them could write to the descriptor, but not sign; the judge rejects such a grading.
"""

from __future__ import annotations

import _thread
import json
import os
import resource
import socket
from queue import SimpleQueue

from . import wire


class Channel:
    """``receive()`` and ``send()`` as autograder.wire's, through the two I/O threads."""

    def __init__(self, in_fd: int, out_fd: int, signing_key: bytes) -> None:
        self.fds = (in_fd, out_fd)
        self._inbox: SimpleQueue = SimpleQueue()
        self._outbox: SimpleQueue = SimpleQueue()
        # Started through _thread, not threading: no Thread object lists them, and so none holds
        # the writer's loop, its key among its closure's cells.
        for target in (_reader(in_fd, self._inbox.put), _writer(out_fd, self._outbox.get, signing_key)):
            _thread.start_new_thread(target, ())

    def receive(self) -> tuple[dict, bytes]:
        message = self._inbox.get()
        if message is None:
            raise wire.WireError("the judge closed the channel")
        body_length, _ = wire.LENGTHS.unpack_from(message)
        return json.loads(message[8 : 8 + body_length]), bytes(message[8 + body_length :])

    def send(self, header: dict, payload: bytes | memoryview = b"") -> None:
        data = bytes(payload) if not isinstance(payload, bytes) else payload
        self._outbox.put(wire.heading(header, len(data)) + data)


def one_way() -> tuple[int, int]:
    """(read end, write end) of a one-way channel between the judge and a worker, as os.pipe's, but
    a socket pair: a pipe's end can be opened again through /proc/self/fd under a number the
    worker's filter does not know (autograder.channel), a socket's cannot."""
    reading, writing = socket.socketpair()
    reading.shutdown(socket.SHUT_WR)
    writing.shutdown(socket.SHUT_RD)
    return reading.detach(), writing.detach()


def out_of_the_way(fds: tuple[int, ...]) -> tuple[int, ...]:
    """The descriptors ``fds`` moved to numbers no other file of this process or of a program it
    runs will take (the originals closed; the new ones closed on exec). The filter refuses system
    calls by descriptor number, and every process a grading starts inherits it: had the channel
    kept a low number, the compiler Triton runs (gcc, ptxas) would have opened its own files under
    it and been refused. The new numbers are at or above the soft limit on open files, which is
    put back afterwards, so no process under it is handed them; with no room above it, they are the
    highest numbers below it, reached only by a process holding all the others open."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = 1 << 16
    room = soft < cap and (hard == resource.RLIM_INFINITY or hard >= soft + len(fds))
    first = soft if room else min(soft, cap) - len(fds)
    if room:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft + len(fds), hard))
    try:
        moved = tuple(os.dup2(fd, first + index, inheritable=False) for index, fd in enumerate(fds))
    finally:
        if room:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    for fd in set(fds) - set(moved):
        os.close(fd)
    return moved


# The two loops allocate no object the garbage collector tracks (bytes and bytearrays only): a
# collection runs the finalizers of whatever garbage it finds in the thread that set it off, and a
# finalizer of the learner's running here would run where the channel can be used.
def _reader(fd: int, put):
    """The reading thread's loop: each whole message (its lengths, header and payload, as one
    bytearray) into the inbox, None at the end. Every function it calls is bound here, before the
    learner's code loads."""
    receive, number, length, smaller, new, error = socket.socket(fileno=fd).recv, int.from_bytes, len, min, bytearray, OSError

    def fill(message: bytearray, count: int) -> bool:
        while length(message) < count:
            chunk = receive(smaller(count - length(message), 1 << 20))
            if not chunk:
                return False
            message += chunk
        return True

    def loop() -> None:
        try:
            while True:
                message = new()
                if not fill(message, 8):
                    break
                if not fill(message, 8 + number(message[0:4], "little") + number(message[4:8], "little")):
                    break
                put(message)
        except error:
            pass
        put(None)

    return loop


def _writer(fd: int, get, key: bytes):
    """The writing thread's loop: each message of the outbox written whole, in order, then its
    signature: HMAC-SHA256 under the judge's key of the message's number and bytes (wire.Signatures).
    A thread this filter does not cover (one CUDA or PyTorch started before it, running a callback
    of the learner's) could still write to the descriptor; it cannot sign."""
    send_all, sign, error = socket.socket(fileno=fd).sendall, _digest(), OSError

    def loop() -> None:
        count = 0
        try:
            while True:
                message = get()
                send_all(message)
                send_all(sign(key, count.to_bytes(8, "little") + message, "sha256"))
                count += 1
        except error:
            pass

    return loop


def _digest():
    """OpenSSL's HMAC in C (hmac.digest is Python, which the learner's code could rebind)."""
    try:
        from _hashlib import hmac_digest
    except ImportError:  # a Python without OpenSSL: the module's own, bound now
        from hmac import digest as hmac_digest
    return hmac_digest
