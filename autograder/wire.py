"""Messages between the judge and the worker: a JSON header and an optional block of raw bytes, over
a pipe. Nothing that crosses is unpickled or executed: a worker can only send data, which the judge
bounds in size and reads with a deadline."""

from __future__ import annotations

import json
import os
import select
import struct
import time

MAX_HEADER_BYTES = 1 << 20
LENGTHS = struct.Struct("<II")


class WireError(Exception):
    """The other side sent something malformed or too large, or closed the pipe."""


class Deadline(WireError):
    """Nothing (or not all of a message) arrived before the deadline."""


def send(fd: int, header: dict, payload: bytes | memoryview = b"") -> None:
    body = json.dumps(header, separators=(",", ":")).encode()
    data = LENGTHS.pack(len(body), len(payload)) + body
    _write_all(fd, data)
    if len(payload):
        _write_all(fd, memoryview(payload).cast("B"))


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def receive(fd: int, timeout: float | None = None, max_payload: int = 1 << 30) -> tuple[dict, bytes]:
    """The next message; ``timeout`` seconds at most for all of it (None: wait for ever)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    header_bytes, payload_bytes = LENGTHS.unpack(_read_exactly(fd, LENGTHS.size, deadline))
    if header_bytes > MAX_HEADER_BYTES or payload_bytes > max_payload:
        raise WireError(f"a message of {header_bytes} + {payload_bytes} bytes is larger than allowed")
    try:
        header = json.loads(_read_exactly(fd, header_bytes, deadline))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"a malformed message: {exc}") from None
    if not isinstance(header, dict):
        raise WireError("a message that is not a JSON object")
    return header, _read_exactly(fd, payload_bytes, deadline) if payload_bytes else b""


def _read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    chunks, left = [], count
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise Deadline("no answer before the deadline")
        chunk = os.read(fd, min(left, 1 << 22))
        if not chunk:
            raise WireError("the other side closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
