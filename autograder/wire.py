"""Messages between the judge and the worker: a JSON header and an optional block of raw bytes, over
a pipe. Nothing that crosses is unpickled or executed: a worker can only send data, which the judge
bounds in size and reads with a deadline."""

from __future__ import annotations

import hmac
import json
import os
import select
import struct
import time

MAX_HEADER_BYTES = 1 << 20
LENGTHS = struct.Struct("<II")
# HMAC-SHA256 of a signed reply (autograder.channel).
SIGNATURE_BYTES = 32


class WireError(Exception):
    """The other side sent something malformed or too large, or closed the pipe."""


class Deadline(WireError):
    """Nothing (or not all of a message) arrived before the deadline."""


class WorkerGone(Exception):
    """The worker died, hung past its deadline or broke the protocol (or gave the judge an output it
    cannot read); ``status`` says which. Here, where nothing imports back, so that the modules the
    worker shares with the judge can raise it; autograder.session is where callers find it."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def heading(header: dict, payload_bytes: int) -> bytes:
    """A message's first bytes: the two lengths, then the header as JSON."""
    body = json.dumps(header, separators=(",", ":")).encode()
    return LENGTHS.pack(len(body), payload_bytes) + body


def send(fd: int, header: dict, payload: bytes | memoryview = b"") -> None:
    _write_all(fd, heading(header, len(payload)))
    if len(payload):
        _write_all(fd, memoryview(payload).cast("B"))


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Forged(WireError):
    """A message whose signature is not the worker's: written by other code of its process."""


class Signatures:
    """The judge's side of a worker's signed replies (autograder.channel): the key it gave the
    worker, and how many replies it has checked (each signature covers its number, so none can be
    sent twice)."""

    def __init__(self, key: bytes) -> None:
        self.key, self.count = key, 0

    def check(self, message: bytes, signature: bytes) -> None:
        expected = hmac.digest(self.key, self.count.to_bytes(8, "little") + message, "sha256")
        self.count += 1
        if not hmac.compare_digest(expected, signature):
            raise Forged("a reply the worker did not sign reached the judge")


def receive(fd: int, timeout: float | None = None, max_payload: int = 1 << 30, signatures: Signatures | None = None) -> tuple[dict, bytes]:
    """The next message; ``timeout`` seconds at most for all of it (None: wait for ever). With
    ``signatures``, the message must be followed by the worker's signature of it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    lengths = _read_exactly(fd, LENGTHS.size, deadline)
    header_bytes, payload_bytes = LENGTHS.unpack(lengths)
    if header_bytes > MAX_HEADER_BYTES or payload_bytes > max_payload:
        raise WireError(f"a message of {header_bytes} + {payload_bytes} bytes is larger than allowed")
    body = _read_exactly(fd, header_bytes, deadline)
    payload = _read_exactly(fd, payload_bytes, deadline) if payload_bytes else b""
    if signatures is not None:
        signatures.check(lengths + body + payload, _read_exactly(fd, SIGNATURE_BYTES, deadline))
    try:
        header = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"a malformed message: {exc}") from None
    if not isinstance(header, dict):
        raise WireError("a message that is not a JSON object")
    return header, payload


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
