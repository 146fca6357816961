# expect: ERROR REJECT FAIL
# problem: act0.vector_add
# devices: cpu cuda
# says: Operation not permitted
# Adds with NumPy and writes a reply of its own to the judge: it finds the worker's channel by
# descriptor number, sends a forged report of an honest kernel with the right output, and swallows
# the worker's real reply behind a pipe of its own. On the tree before autograder.channel, the
# judge accepted such forged replies (two correctness cases passed on CPU before the exchange lost
# its order). Now only the channel's own threads reach those descriptors: the attempt fails in the
# learner's call (EPERM), and the grading earns nothing.
import os
import stat
import struct
import threading

import torch

from autograder import shared, wire


def _channel_fds():
    # Every open descriptor, by the numbers the process lists: the channel's are the highest.
    found = []
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            found.append(fd)
    return found


def _read_exact(fd, count):
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _swallow(out_fd, saved, ours_r, ours_w):
    body, payload = struct.unpack("<II", _read_exact(ours_r, 8))
    _read_exact(ours_r, body + payload)
    os.dup2(saved, out_fd)
    os.close(ours_w)
    while chunk := os.read(ours_r, 1 << 16):
        os.write(saved, chunk)


def vector_add(x, y):
    out = torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device)
    meta, payload = shared.describe_output(out)
    forged = {
        "output": meta,
        "cpu_kernels": {"kernels": ["add_kernel"], "launches": 1, "compile_errors": {}, "output_stored": True, "output_is_what_was_stored": True, "inputs_read": {"x": 1.0, "y": 1.0}, "most_reads": {"x": 1, "y": 1}},
    }
    out_fd = _channel_fds()[-1]
    saved = os.dup(out_fd)
    wire.send(saved, forged, payload)
    ours_r, ours_w = os.pipe()
    os.dup2(ours_w, out_fd)
    threading.Thread(target=_swallow, args=(out_fd, saved, ours_r, ours_w), daemon=True).start()
    return out
