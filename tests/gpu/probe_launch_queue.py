"""How many launches a stream takes behind a wait on a word nobody has written yet before the host
blocks in the launch: the depth that decides whether a window's calls can all be queued before the
judge starts the window (autograder.windows halves the calls per window when they cannot; on four
H100s the eager decode layer's 32 calls of dozens of kernels each seemed not to fit).

For each count, a fresh process makes one stream wait on a device word, launches that many one-element
additions onto it from a thread, and reports whether the thread finished launching within HOLD_S
while the word was unwritten; then another stream writes the word, and the process checks that every
addition ran. Each count runs in a process of its own with a time limit, so a context that the
experiment leaves stuck cannot stop the next one.

    python tests/gpu/probe_launch_queue.py [OUT.json]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
COUNTS = (128, 256, 512, 1024, 2048, 4096, 8192)
HOLD_S = 2.0
LIMIT_S = 60.0


def one(count: int) -> dict:
    import threading

    import torch

    from autograder import cuda_driver

    flags = cuda_driver.Block(4)
    held = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda")
    # Loaded before the wait: a kernel loaded lazily behind a held stream could wait for the context.
    x.add_(0)
    torch.cuda.synchronize()
    cuda_driver.wait_value(held, flags.ptr, 1)
    launched = threading.Event()
    started = time.perf_counter()
    finished: list[float] = []

    def launch() -> None:
        with torch.cuda.stream(held):
            for _ in range(count):
                x.add_(1)
        finished.append(time.perf_counter() - started)
        launched.set()

    worker = threading.Thread(target=launch, daemon=True)
    worker.start()
    queued = launched.wait(HOLD_S)
    cuda_driver.write_value(torch.cuda.Stream(), flags.ptr, 1)
    launched.wait(LIMIT_S / 2)
    torch.cuda.synchronize()
    return {"count": count, "queued_before_release": queued, "launch_s": finished[0] if finished else None, "all_ran": int(x.item()) == count}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        return
    import torch

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "probe_launch_queue.json"
    rows = []
    for count in COUNTS:
        try:
            done = subprocess.run([sys.executable, __file__, "--one", str(count)], capture_output=True, text=True, timeout=LIMIT_S, cwd=ROOT)
            row = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else {"count": count, "error": done.stderr[-400:]}
        except subprocess.TimeoutExpired:
            row = {"count": count, "error": f"no answer within {LIMIT_S:.0f} s"}
        rows.append(row)
        print(row, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "hold_s": HOLD_S, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
