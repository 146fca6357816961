"""Is the autotuner's choice inside the grading worker what costs Act 6's paged attention its speed?
`python3 tests/gpu/probe_paged_pinned.py OUTDIR`: grades a copy of the reference solution whose
autotuner has one configuration (64-token tiles, 4 warps, 3 stages: the fastest in
tests/gpu/tune_act6_paged.py on an H100), with `python -m autograder grade`, and prints its report.
The reference as it is (three configurations) was graded at 53% and 50% of copy bandwidth where
do_bench timed its kernels at 87% and 81%."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    nb = json.loads((ROOT / "solutions" / "act6-serving" / "paged_attention.ipynb").read_text())
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if "def paged_attention_configs" in text:
            text = re.sub(r"    return \[\n.*?\n    \]\n", '    return [triton.Config({"TILE": 64}, num_warps=4, num_stages=3)]\n', text, count=1, flags=re.S)
            cell["source"] = text
    # The grader knows an exercise by its notebook's folder and name.
    pinned = out / "act6-serving" / "paged_attention.ipynb"
    pinned.parent.mkdir(parents=True, exist_ok=True)
    pinned.write_text(json.dumps(nb))
    report = subprocess.run([sys.executable, "-m", "autograder", "grade", str(pinned)], capture_output=True, text=True, timeout=400)
    (out / "pinned-grade.log").write_text(report.stdout + report.stderr)
    print(report.stdout[-4000:], report.stderr[-2000:])


if __name__ == "__main__":
    main()
