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
socket cannot.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from queue import SimpleQueue

from . import wire


class Channel:
    """``receive()`` and ``send()`` as autograder.wire's, through the two I/O threads."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.fds = (in_fd, out_fd)
        self._inbox: SimpleQueue = SimpleQueue()
        self._outbox: SimpleQueue = SimpleQueue()
        for target in (_reader(in_fd, self._inbox.put), _writer(out_fd, self._outbox.get)):
            threading.Thread(target=target, daemon=True).start()

    def receive(self) -> tuple[dict, bytes]:
        message = self._inbox.get()
        if message is None:
            raise wire.WireError("the judge closed the channel")
        body, payload = message
        return json.loads(body), payload

    def send(self, header: dict, payload: bytes | memoryview = b"") -> None:
        body = json.dumps(header, separators=(",", ":")).encode()
        self._outbox.put(wire.LENGTHS.pack(len(body), len(payload)) + body)
        if len(payload):
            self._outbox.put(memoryview(payload).cast("B"))


def one_way() -> tuple[int, int]:
    """(read end, write end) of a one-way channel between the judge and a worker, as os.pipe's, but
    a socket pair: a pipe's end can be opened again through /proc/self/fd under a number the
    worker's filter does not know (autograder.channel), a socket's cannot."""
    reading, writing = socket.socketpair()
    reading.shutdown(socket.SHUT_WR)
    writing.shutdown(socket.SHUT_RD)
    return reading.detach(), writing.detach()


def _reader(fd: int, put):
    """The reading thread's loop: whole messages (header bytes, payload bytes) into the inbox, None
    at the end. Every function it calls is bound here, before the learner's code loads."""
    read, unpack, length, join, error = os.read, wire.LENGTHS.unpack, len, b"".join, OSError

    def exact(count: int) -> bytes | None:
        parts, got = [], 0
        while got < count:
            chunk = read(fd, min(count - got, 1 << 20))
            if not chunk:
                return None
            parts.append(chunk)
            got += length(chunk)
        return join(parts)

    def loop() -> None:
        try:
            while True:
                lengths = exact(8)
                if lengths is None:
                    break
                body_length, payload_length = unpack(lengths)
                body, payload = exact(body_length), exact(payload_length) if payload_length else b""
                if body is None or payload is None:
                    break
                put((body, payload))
        except error:
            pass
        put(None)

    return loop


def _writer(fd: int, get):
    """The writing thread's loop: each item of the outbox written whole, in order."""
    write, view_of, error = os.write, memoryview, OSError

    def loop() -> None:
        try:
            while True:
                view = view_of(get())
                while view:
                    view = view[write(fd, view) :]
        except error:
            pass

    return loop
