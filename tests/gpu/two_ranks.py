"""The launcher the two-rank probes share (probe_nccl_sockets_after_arm.py, probe_ring_record.py):
each configuration runs as two processes of the probe's own script, which append one JSON line each
to the output file; the file's lines are printed at the end."""

from __future__ import annotations

import os
import subprocess
import sys

from autograder.distributed_ranks import free_port


def run_pairs(script: str, out: str, configurations: list[tuple[list[str], dict]], timeout: float) -> None:
    """For each (arguments, environment): ``script --port P --out OUT --rank r ARGUMENTS`` for r = 0, 1,
    on a port of its own, each pair waited for up to ``timeout`` seconds (then killed)."""
    if os.path.exists(out):
        os.remove(out)
    for arguments, environment in configurations:
        command = [sys.executable, script, "--port", str(free_port()), "--out", out, *arguments]
        ranks = [subprocess.Popen([*command, "--rank", str(rank)], env=environment) for rank in range(2)]
        for process in ranks:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
    with open(out, encoding="utf-8") as f:
        print(f.read(), end="")
