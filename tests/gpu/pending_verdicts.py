"""The adversarial suite's GPU verdicts under one grader: how many are graded right, which are wrong,
and which cases are still to grade, slowest first.

A whole-suite run spans calls and sessions (one H200 grades about 40 cases in a 10-minute call). Every
run archive records the grader it ran (``device.json``'s ``grader``, autograder.results.grader_digest:
autograder/ and tests/adversarial/), so verdicts from archives of one digest add up to one run of the
suite. The pending list goes to ``run.sh`` as ``ADVERSARIAL_CASES`` (pytest ``--cases``): the slowest
first, so three gradings at a time end together rather than behind one long FlashAttention compile.

    python tests/gpu/pending_verdicts.py [--digest D] [--runs results/runs] [--out pending.txt]
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder.results import grader_digest  # noqa: E402
from tests.adversarial.cases import cases  # noqa: E402

# A case never graded with its time recorded is placed as its kind usually runs (seconds on an H200,
# 2026-11-29): the backward pass compiles several kernels, the speed-graded acts time 128-call windows.
GUESS_S = {"flash_attention_backward": 120.0, "flash_attention": 40.0, "int4_gemv": 40.0, "fp8_matmul": 40.0}
DEFAULT_S = 20.0


def archives(runs: Path, digest: str) -> list[Path]:
    """The archive folders (each holding verdicts/) whose device.json names ``digest``."""
    found = []
    for device in sorted(runs.rglob("device.json")):
        try:
            grader = json.loads(device.read_text()).get("grader")
        except (OSError, ValueError):
            continue
        archive = next((folder for folder in device.parents if (folder / "verdicts").is_dir()), None)
        if grader == digest and archive is not None and archive not in found:
            found.append(archive)
    return found


def read_verdict(path: Path) -> tuple[list[str], str, float | None]:
    """A verdict file's expected verdicts, the verdict it got and its grading's seconds (if recorded)."""
    lines = path.read_text(errors="replace").splitlines()
    expected = lines[0].removeprefix("expected ").split(" or ")
    got = lines[1].split(":")[0] if len(lines) > 1 else ""
    seconds = None
    for line in lines:
        if line.startswith('{"seconds"'):
            try:
                seconds = json.loads(line)["seconds"]
            except (ValueError, KeyError):
                pass
    return expected, got, seconds


def recorded_seconds(runs: Path) -> dict[str, float]:
    """The latest recorded grading time of every case, whichever grader timed it."""
    seconds = {}
    for path in sorted(runs.rglob("verdicts/*.txt")):
        recorded = read_verdict(path)[2]
        if recorded is not None:
            seconds[path.stem] = recorded
    return seconds


def estimate(name: str, seconds: dict[str, float]) -> float:
    key = name.replace("/", "--")
    if key in seconds:
        return seconds[key]
    problem = name.split("/")[0]
    return next((guess for kind, guess in GUESS_S.items() if problem.endswith("." + kind)), DEFAULT_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--digest", default=None, help="the grader (default: this tree's)")
    parser.add_argument("--runs", default=str(ROOT / "results" / "runs"), help="where the run archives are")
    parser.add_argument("--out", help="write the pending cases here, one a line, slowest first")
    args = parser.parse_args()
    digest = args.digest or grader_digest()
    runs = Path(args.runs)
    suite = [case.name for case in cases("cuda", alone=False)]
    graded: dict[str, tuple[bool, str, Path]] = {}
    for archive in archives(runs, digest):
        for path in sorted((archive / "verdicts").glob("*.txt")):
            expected, got, _ = read_verdict(path)
            graded[path.stem] = (got in expected, got, archive)
    in_suite = {name.replace("/", "--"): name for name in suite}
    right = sum(1 for key, (ok, _, _) in graded.items() if ok and key in in_suite)
    done = [key for key in graded if key in in_suite]
    print(f"grader {digest}: {len(done)} of {len(suite)} cases graded, {right} right")
    for key in sorted(done):
        ok, got, archive = graded[key]
        if not ok:
            print(f"  WRONG {in_suite[key]}: {got} ({archive.relative_to(runs)})")
    seconds = recorded_seconds(runs)
    pending = sorted((name for key, name in in_suite.items() if key not in graded), key=lambda name: -estimate(name, seconds))
    total = sum(estimate(name, seconds) for name in pending)
    print(f"{len(pending)} pending, about {total:.0f} s of grading ({total / 3:.0f} s at three at a time)")
    if args.out:
        Path(args.out).write_text("".join(name + "\n" for name in pending))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
