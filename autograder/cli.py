"""``python -m autograder doctor | grade PATH | validate PATH | bench | stability``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import class_csv, classroom, grading, metrics, nbgrader_gradebook, notebooks, registry, report, student_records, versions
from . import problem as problem_mod

REPO_ROOT = Path(__file__).resolve().parent.parent


def _versions() -> dict:
    return {name: version or "not installed" for name, version in versions.installed(("torch", "triton", "cupy", "nbgrader")).items()}


def doctor(args) -> int:
    import torch

    device = grading.pick_device()
    print("GPU Brrr doctor")
    for name, version in _versions().items():
        print(f"  {name:<9} {version}")
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        print(f"  GPU       {props.name}, compute capability {props.major}.{props.minor}, {props.multi_processor_count} SMs, "
              f"{getattr(props, 'L2_cache_size', 0) / 2**20:.0f} MiB L2, {props.total_memory / 2**30:.1f} GiB memory")
        print("  Triton    compiles for this GPU")
        from . import ceilings

        entry = ceilings.load(remeasure=args.remeasure)
        print(f"  ceilings  measured {entry['measured_at']} (cached in {ceilings.cache_dir()}; --remeasure to redo)")
        print(f"    copy bandwidth   {entry['copy']['bytes_per_s'] / 1e9:,.0f} GB/s (read + write, {entry['copy']['buffer_bytes'] / 2**20:,.0f} MiB buffer)")
        for name, stream in entry.get("streams", {}).items():
            print(f"    {name + ' only':<16} {stream['bytes_per_s'] / 1e9:,.0f} GB/s ({stream['bytes_per_s'] / entry['copy']['bytes_per_s']:.0%} of copy; not a grading ceiling)")
        for dtype, m in entry["matmul"].items():
            print(f"    {dtype + ' matmul':<16} {m['flop_per_s'] / 1e12:,.1f} TFLOP/s at n = {m['n']}")
    else:
        print("  GPU       none found: Triton exercises run under the Triton interpreter (TRITON_INTERPRET=1)")
    print("Exercises and how they are graded here:")
    problems = registry.all_problems()
    width = max(len(p.name) for p in problems)
    for p in problems:
        if problem_mod.is_exact(p):
            how = f"exact answers, fully graded here ({p.max_points:g} point{'' if p.max_points == 1 else 's'})"
        elif problem_mod.is_distributed(p):
            ranks = ", ".join(map(str, p.world_sizes))
            how = f"{ranks} {'ranks, messages through the grader' if p.relay else 'gloo ranks'} ({p.correctness_points:g} points)"
            if p.speed is not None:
                from .ranks import visible_gpus

                gpus = visible_gpus() if device == "cuda" else 0
                how += f"; speed on {p.speed.world_size} GPUs with NCCL" + ("" if gpus >= p.speed.world_size else f" (needs {p.speed.world_size} GPUs, this machine has {gpus})")
        elif problem_mod.is_trace(p) or problem_mod.is_interactive(p):
            how = f"your class driven by the grader, fully graded here ({p.max_points:g} points)"
        elif problem_mod.is_measured(p):
            how = "your timings against the grader's own" if device == "cuda" else "needs a GPU (measures this GPU)"
        elif p.kind == "graphed":
            how = "your CUDA-graph wrapper against the eager step, timed here" if device == "cuda" else "needs a GPU (CUDA graphs)"
        elif p.kind == "memory":
            how = f"your step's peak memory against the plain step's, measured on the CPU, fully graded here ({p.max_points:g} points)"
        elif p.kind == "compiled":
            how = f"graph breaks, compiles and padding under torch.compile, fully graded here ({p.max_points:g} points)"
        elif device == "cuda":
            how = f"correctness + speed ({p.speed_scale.describe()})"
        elif p.needs_gpu:
            how = "needs a GPU (CuPy)"
        else:
            how = f"correctness only ({p.correctness_points:g} of {p.max_points:g} points); speed needs a GPU"
        print(f"  {p.name:<{width}}  {p.language:<7} {how}")
    return 0


def _notebook_paths(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return [path]


def grade(args) -> int:
    device = grading.pick_device()
    results = []
    for nb in _notebook_paths(Path(args.path)):
        for result in notebooks.grade_notebook(nb, device, not args.no_speed):
            results.append(result)
            if result.get("problem") and args.verbose:
                print(report.text(result))
                print()
    width = max([len("notebook"), *(len(r["notebook"]) for r in results)])
    named = max([24, *(len(str(r.get("problem"))) for r in results)])  # act4.flash_attention_causal is 27
    # The maximum is what this machine can award: on a CPU, CuPy exercises and speed need a GPU.
    print(f"{'notebook':<{width}}  {'exercise':<{named}} {'status':<10} {'points':>9}  {'worth':>5}  speed")
    for r in results:
        metric = r.get("speed_metric")
        speed = ""
        if metric:
            speed = metrics.named(metric["name"]).shown(metric["value"])
        elif r.get("speed_note"):
            speed = r["speed_note"]
        print(f"{r['notebook']:<{width}}  {str(r.get('problem')):<{named}} {r['status']:<10} {r.get('points', 0):>5.2f} / {r.get('max_points_here', 0):<3g} {r.get('max_points', 0):>5g}  {speed}")
        if r["status"] not in ("PASS",) and r.get("message"):
            print(f"{'':<{width}}  {r['message']}")
    earned, here, worth = (sum(r.get(k, 0) for r in results) for k in ("points", "max_points_here", "max_points"))
    print(f"{'total':<{width}}  {'':<{named}} {'':<10} {earned:>5.2f} / {here:<3g} {worth:>5g}" + (f"  ({worth - here:g} points need a GPU)" if worth > here else ""))
    payload = {"device": device, "graded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "versions": _versions(), "results": results}
    Path(args.json).write_text(json.dumps(payload, indent=2, default=str))
    print(f"wrote {args.json}")
    if args.csv:
        class_csv.write_rows_csv(Path(args.csv), [class_csv.exercise_rows(r, "", "", Path(r["notebook"]).stem, []) | {"notebook": r["notebook"]} for r in results])
        print(f"wrote {args.csv}")
    return 0


def passes(result: dict) -> bool:
    """Every point this machine can award was earned: what `nbgrader validate` calls passing."""
    return result["status"] == "PASS" and result.get("points", 0) >= result.get("max_points_here", 0) - 1e-9


def validate(args) -> int:
    """Grade every exercise from the notebook's source in fresh processes (nothing the notebook's
    kernel did counts) and say Success only when each one earns every point gradable here."""
    device = grading.pick_device()
    results = [r for nb in _notebook_paths(Path(args.path)) for r in notebooks.grade_notebook(nb, device, speed=True)]
    if not results:
        print(f"VALIDATION FAILED: no notebook found at {args.path}")
        return 1
    for r in results:
        if r.get("problem"):
            print(report.text(r))
            print()
    short = [r for r in results if not passes(r)]
    if short:
        print(f"VALIDATION FAILED on {len(short)} of {len(results)} exercises (each graded from the notebook's source in a fresh process):")
        for r in short:
            reason = f": {r['message']}" if r.get("message") else ""
            print(f"  {r.get('problem') or r['notebook']}: {r['status']}, {r.get('points', 0):.2f} of the {r.get('max_points_here', 0):g} points gradable here{reason}")
        return 1
    print(f"Success! Every exercise earns all the points gradable on this machine ({len(results)} graded from the notebook's source, each in a fresh process).")
    for note in sorted({r["speed_note"] for r in results if r.get("speed_note")}):
        print(f"  Speed: {note}.")
    return 0


def grade_class(args) -> int:
    planned = classroom.plan(args)
    if isinstance(planned, int):
        return planned
    if args.ray is None:
        return classroom.run(args, *planned)
    from . import ray_engine

    return ray_engine.run(args, *planned)


def gradebook(args) -> int:
    out = Path(args.grades)
    for assignment in args.assignment or student_records.assignments_graded(out):
        written = nbgrader_gradebook.write_gradebook(out, args.db, assignment)
        print(f"{assignment}: wrote {written} graded cells' scores into {args.db}")
    return 0


def points(args) -> int:
    from . import teaching

    print(teaching.cpu_points_table())
    return 0


def bench(args) -> int:
    from . import benchmark, results

    out = Path(args.out) if args.out else results.RUNS_DIR / results.run_name(results.BENCHMARK, results.this_gpu())
    return benchmark.run(Path(args.solutions), out, Path(args.recorded) if args.recorded else None)


def stability(args) -> int:
    from . import stability as stability_mod

    record = stability_mod.write([Path(p) for p in args.records], Path(args.out), args.heading)
    print(stability_mod.markdown(record, args.heading))
    return 0 if all(s["false_rejections"] == 0 for s in record["summary"].values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description="GPU Brrr's grader")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("doctor", help="this machine's GPU, versions, ceilings and how each exercise is graded here")
    d.add_argument("--remeasure", action="store_true", help="measure the ceilings again instead of using the cache")
    d.set_defaults(func=doctor)
    g = sub.add_parser("grade", help="grade a notebook or a folder of notebooks")
    g.add_argument("path")
    g.add_argument("--json", default="grades.json", help="where to write the results (default: grades.json)")
    g.add_argument("--csv", help="also write one row per exercise (notebook, points, maximum here and in all, status, note) to this CSV file")
    g.add_argument("--no-speed", action="store_true", help="check correctness only")
    g.add_argument("-v", "--verbose", action="store_true", help="print every exercise's full report")
    g.set_defaults(func=grade)
    v = sub.add_parser("validate", help="grade a notebook (or folder) afresh from its source; print Success only if every exercise earns all the points gradable here")
    v.add_argument("path")
    v.set_defaults(func=validate)
    k = sub.add_parser("class", help="grade a class: SUBMITTED/<student>/<assignment>/*.ipynb (nbgrader's layout) into one CSV per assignment")
    k.add_argument("submitted", help="nbgrader's submitted/ (or autograded/) folder")
    k.add_argument("--assignment", action="append", help="an assignment (act) to grade; repeat for several (default: every one found)")
    k.add_argument("--student", action="append", help="grade only this student; repeat for several")
    k.add_argument("--release", default="exercises" if Path("exercises").is_dir() else None,
                   help="nbgrader's release folder, to find deleted or edited graded cells (default: exercises/ if there is one here)")
    k.add_argument("--out", default="grades", help="where the students' records and the CSVs go (default: grades/)")
    k.add_argument("--gpus", default="all", help="GPUs to spread the class over, one worker each (default: every visible GPU)")
    k.add_argument("--workers", type=int, default=1, help="worker processes without a GPU (correctness only; default 1)")
    k.add_argument("--shard", help="K/N: grade only every N-th student from the K-th (0 <= K < N), e.g. one task of a Slurm job array")
    k.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="grade on a Ray cluster, one task per student and assignment with one GPU each (one CPU without GPUs): "
                        "ADDRESS 'auto' joins the cluster this host belongs to; without ADDRESS, the one Ray finds here or a local one")
    k.add_argument("--regrade", action="store_true", help="grade again students already graded with the same notebooks, device and grader")
    k.add_argument("--merge-only", action="store_true", help="grade nothing; write the CSVs from the students' records in OUT")
    k.add_argument("--no-merge", action="store_true", help="do not write the CSVs (a shard of a job array; merge once all are done)")
    k.add_argument("--no-speed", action="store_true", help="check correctness only")
    k.set_defaults(func=grade_class)
    n = sub.add_parser("gradebook", help="write a class grading's scores (python -m autograder class) into nbgrader's gradebook")
    n.add_argument("grades", nargs="?", default="grades", help="the class grading's folder (default: grades/)")
    n.add_argument("--db", default="sqlite:///gradebook.db", help="nbgrader's gradebook (default: sqlite:///gradebook.db, in this folder)")
    n.add_argument("--assignment", action="append", help="an assignment to write (default: every one graded)")
    n.set_defaults(func=gradebook)
    t = sub.add_parser("points", help="the points a machine without a GPU can award, per act and exercise (a Markdown table)")
    t.set_defaults(func=points)
    b = sub.add_parser("bench", help="time the reference solutions and write a benchmark run's folder in results/runs/")
    b.add_argument("--solutions", default=str(REPO_ROOT / "solutions"))
    b.add_argument("--out", help="the run's folder (default: results/runs/<date>-<this GPU>-benchmark/, the run the book shows once it is the newest)")
    b.add_argument("--from", dest="recorded", help="build the tables from the results the solution notebooks recorded (AUTOGRADER_RESULTS_DIR) instead of grading again")
    b.set_defaults(func=bench)
    s = sub.add_parser("stability", help="merge the GPU run's repeated-grading records into one JSON file and a Markdown table")
    s.add_argument("records", nargs="+", help="record files written by tests/gpu/test_stability_gpu.py")
    s.add_argument("--out", default=str(REPO_ROOT / "results" / "stability"), help="writes OUT.json and OUT.md")
    s.add_argument("--heading", default="Repeated gradings of the reference solutions.")
    s.set_defaults(func=stability)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
