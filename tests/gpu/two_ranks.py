"""The launcher the two-rank probes share (probe_nccl_sockets_after_arm.py, probe_ring_record.py):
each configuration runs as two processes of the probe's own script, which append one JSON line each
to the output file; the file's lines are printed at the end."""

from __future__ import annotations

import os
import subprocess
import sys

from autograder.distributed_ranks import free_port


def run_pairs(script: str, out: str, configurations: list[tuple[list[str], dict]], timeout: float, stderr_tail: bool = False) -> list[dict]:
    """For each (arguments, environment): ``script --port P --out OUT --rank r ARGUMENTS`` for r = 0, 1,
    on a port of its own, each pair waited for up to ``timeout`` seconds (then killed). Returns each
    rank's arguments, number and exit status (negative: the signal that ended it), with the end of its
    stderr if ``stderr_tail`` (which then no longer reaches this process's own)."""
    if os.path.exists(out):
        os.remove(out)
    ended = []
    for arguments, environment in configurations:
        command = [sys.executable, script, "--port", str(free_port()), "--out", out, *arguments]
        ranks = [subprocess.Popen([*command, "--rank", str(rank)], env=environment, stderr=subprocess.PIPE if stderr_tail else None, text=True) for rank in range(2)]
        for rank, process in enumerate(ranks):
            try:
                _, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                _, stderr = process.communicate()
            ended.append({"arguments": arguments, "rank": rank, "status": process.returncode, **({"stderr": (stderr or "")[-3000:]} if stderr_tail else {})})
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            print(f.read(), end="")
    return ended
