"""tests/gpu/profile_ncu.py on a CPU: its parser of Nsight Compute's CSV, its diagnosis of ncu's
failures, its table, and the ncu commands its dry run prints (one per profiled process, every
kernel the book explains among them).

The CSV samples below are HAND-WRITTEN, not recorded from a GPU: they follow the layout ncu documents
for `--csv --page details` (one row per metric, columns "ID", "Process ID", "Process Name", "Host
Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name",
"Metric Name", "Metric Unit", "Metric Value", numbers with thousands separators) and for `--page raw`
(one row per launch, the units in the row under the header), with ncu's own ==PROF== lines and the
program's output mixed in. The values are made up to be easy to check, not measurements.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gpu import profile_ncu

ROOT = Path(__file__).resolve().parent.parent

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def _row(launch: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return f'"{launch}","4242","python3","gpu-host","{kernel}","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","{metric}","{unit}","{value}"'


DETAILS = "\n".join(
    [
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        "strided_read: Act 1 coalescing demo",  # the program's own print, not CSV
        "==PROF== Profiling \"strided_read_kernel\" - 0: 0%....50%....100% - 9 passes",
        "==PROF== Profiling \"strided_read_kernel\" - 1: 0%....50%....100% - 9 passes",
        HEADER,
        _row(0, "strided_read_kernel", "dram__bytes_read.sum", "byte", "16,908,288"),
        _row(0, "strided_read_kernel", "gpu__time_duration.sum", "nsecond", "9,472"),
        _row(0, "strided_read_kernel", "lts__t_sectors_srcunit_tex_op_read.sum", "sector", "524,288"),
        _row(0, "strided_read_kernel", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "87.53"),
        _row(0, "strided_read_kernel", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "", "0"),
        _row(0, "strided_read_kernel", "launch__registers_per_thread", "register/thread", "16"),
        _row(1, "strided_read_kernel", "dram__bytes_read.sum", "byte", "134,217,728"),
        _row(1, "strided_read_kernel", "gpu__time_duration.sum", "nsecond", "61,024"),
        _row(1, "strided_read_kernel", "lts__t_sectors_srcunit_tex_op_read.sum", "sector", "4,194,304"),
        _row(1, "strided_read_kernel", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "n/a"),
        "==PROF== Disconnected from process 4242",
    ]
)

RAW = "\n".join(
    [
        "==PROF== Connected to process 77",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum"',
        '"","","","","","","","","","","","byte","nsecond"',
        '"0","77","python3","h","sgemm_naive_kernel","1","7","(32, 32, 1)","(128, 128, 1)","0","9.0","12,345,678","312,000.5"',
    ]
)


def test_details_csv_parses_to_launches_in_order_with_values_and_units():
    launches = profile_ncu.parse_ncu_csv(DETAILS)
    assert [entry["id"] for entry in launches] == [0, 1]
    first, second = launches
    assert first["kernel"] == "strided_read_kernel"
    assert first["block"] == "(256, 1, 1)" and first["grid"] == "(16384, 1, 1)"
    assert first["metrics"]["dram__bytes_read.sum"] == {"value": 16908288, "unit": "byte"}
    assert first["metrics"]["gpu__time_duration.sum"] == {"value": 9472, "unit": "nsecond"}
    assert first["metrics"]["sm__warps_active.avg.pct_of_peak_sustained_active"] == {"value": 87.53, "unit": "%"}
    assert first["metrics"]["launch__registers_per_thread"]["value"] == 16
    assert second["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"]["value"] == 4194304
    # "n/a" is no value, not a crash or a string in a numeric column.
    assert second["metrics"]["sm__warps_active.avg.pct_of_peak_sustained_active"]["value"] is None


def test_raw_csv_with_its_units_row_parses_too():
    (launch,) = profile_ncu.parse_ncu_csv(RAW)
    assert launch["kernel"] == "sgemm_naive_kernel"
    assert launch["metrics"]["dram__bytes_read.sum"] == {"value": 12345678, "unit": "byte"}
    assert launch["metrics"]["gpu__time_duration.sum"] == {"value": 312000.5, "unit": "nsecond"}


def test_output_without_csv_gives_no_launches():
    assert profile_ncu.parse_ncu_csv("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    assert profile_ncu.parse_ncu_csv("") == []


def test_numbers_as_ncu_prints_them():
    assert profile_ncu.number("1,234,567") == 1234567
    assert profile_ncu.number("12.50") == 12.5
    assert profile_ncu.number("n/a") is None
    assert profile_ncu.number("") is None
    assert profile_ncu.number("(1, 2, 1)") == "(1, 2, 1)"


def test_diagnosis_names_permissions_unknown_metrics_and_replay():
    metrics = profile_ncu.METRICS
    denied = profile_ncu.diagnose("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters", metrics)
    assert denied["permission"]
    unknown = profile_ncu.diagnose("==ERROR== Failed to find metric sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", metrics)
    assert unknown["bad_metrics"] == ["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"]
    assert not unknown["permission"]
    replay = profile_ncu.diagnose("==ERROR== Kernel replay failed: use --replay-mode application", metrics)
    assert replay["replay"] and not replay["bad_metrics"]
    fine = profile_ncu.diagnose(DETAILS, metrics)
    assert fine == {"permission": False, "bad_metrics": [], "replay": False, "errors": [], "nothing_profiled": False}


def test_table_is_in_physical_units_and_names_what_failed():
    launches = profile_ncu.parse_ncu_csv(DETAILS)
    counters = {"strided_read_1": launches[0]["metrics"], "strided_read_32": launches[1]["metrics"]}
    table = profile_ncu.summary_table(counters, {"sgemm_naive": "ncu ran past 90 s and was stopped"})
    lines = {line.split()[0]: line for line in table.splitlines()}
    # 9472 ns -> 9.5 us; 16,908,288 bytes -> 16.9 MB; 524,288 sectors x 32 bytes -> 16.8 MB.
    assert lines["strided_read_1"].split()[1:5] == ["9.5", "16.9", "-", "16.8"]
    assert "134.2" in lines["strided_read_32"] and "134.2" in lines["strided_read_32"].split()[4]
    assert "not profiled: ncu ran past 90 s" in lines["sgemm_naive"]
    assert "strided_read_2" not in lines  # neither profiled nor failed: not in the table


def test_every_kernel_the_book_explains_is_a_target():
    assert profile_ncu.LABELS == (
        *(f"strided_read_{s}" for s in (1, 2, 4, 8, 16, 32)),
        "transpose_naive",
        "transpose",
        "reduction",
        *(f"sgemm_{s}" for s in ("naive", "coalesced", "smem", "1d_tiling", "2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling", "tf32")),
    )
    # The ten SGEMM steps are the ten solution notebooks.
    notebooks = {p.stem for p in (ROOT / "solutions" / "act4-kernels").glob("sgemm_*.ipynb")}
    assert notebooks == {f"sgemm_{s}" for s in profile_ncu.SGEMM_STEPS}
    # The strided-read kernel is the book's own.
    assert "void strided_read_kernel(" in profile_ncu._book_kernels_source()


def test_dry_run_lists_one_ncu_command_per_process_and_every_kernel(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "gpu" / "profile_ncu.py"), "--dry-run", "--ncu", "/opt/ncu"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, env={"PATH": "/usr/bin:/bin", "GPU_OUT": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    commands = [line for line in lines if line.startswith("/opt/ncu ")]
    assert len(commands) == len(profile_ncu.TARGETS) == 14
    listed = " ".join(line for line in lines if line.startswith("# "))
    for label in profile_ncu.LABELS:
        assert label in listed
    for target, command in zip(profile_ncu.TARGETS, commands, strict=True):
        assert f"--kernel-name 'regex:^{target.kernel}$'" in command
        assert "--launch-skip 1" in command and f"--launch-count {len(target.labels)}" in command
        assert "--profile-from-start off" in command and "--target-processes all" in command
        assert "--metrics " + ",".join(profile_ncu.METRICS) in command
        assert command.endswith(f"profile_ncu.py --kernel {target.name}")
    assert "--launch-count 6" in commands[0]  # the six strides in one process
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_the_sgemm_steps_compile_to_the_kernel_names_ncu_filters_on():
    for step in profile_ncu.SGEMM_STEPS:
        cells = json.loads((ROOT / "solutions" / "act4-kernels" / f"sgemm_{step}.ipynb").read_text())["cells"]
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        kernel = profile_ncu.BY_NAME[f"sgemm_{step}"].kernel
        assert f"{kernel}(" in code, step


# A stand-in for ncu (no GPU here): it writes a hand-written details CSV with one launch per
# --launch-count into --log-file, without running the driver; MODE picks a failure to imitate.
FAKE_NCU = r'''#!{python}
import os, re, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (fake)")
    sys.exit(0)
log = args[args.index("--log-file") + 1]
count = int(args[args.index("--launch-count") + 1])
kernel = re.fullmatch(r"regex:\^(\w+)\$", args[args.index("--kernel-name") + 1]).group(1)
metrics = args[args.index("--metrics") + 1].split(",")
mode = os.environ.get("FAKE_NCU_MODE", "")
if mode == "perm":
    open(log, "w").write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n")
    sys.exit(1)
if mode == "metric" and "smsp__issue_active.avg.pct_of_peak_sustained_active" in metrics:
    open(log, "w").write("==ERROR== Failed to find metric smsp__issue_active.avg.pct_of_peak_sustained_active\n")
    sys.exit(1)
rows = [{header!r}]
for launch in range(count):
    for metric in metrics:
        rows.append('"%d","1","python3","h","%s","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","%s","byte","%d"' % (launch, kernel, metric, 1000 * (launch + 1)))
open(log, "w").write("==PROF== Connected to process 1\n" + "\n".join(rows) + "\n")
'''


def _fake_run(tmp_path, mode: str, only: str):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, header=HEADER))
    fake.chmod(0o755)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "gpu" / "profile_ncu.py"), "--ncu", str(fake), "--only", only],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "GPU_OUT": str(out), "FAKE_NCU_MODE": mode},
    )  # fmt: skip
    return done, out


def test_a_run_writes_json_csv_table_and_one_archive(tmp_path):
    import tarfile

    done, out = _fake_run(tmp_path, "", "strided_read,sgemm_naive")
    assert done.returncode == 0, done.stdout + done.stderr
    counters = json.loads((out / "ncu" / "counters.json").read_text())
    assert list(counters) == [*(f"strided_read_{s}" for s in (1, 2, 4, 8, 16, 32)), "sgemm_naive"]
    assert counters["strided_read_8"]["dram__bytes_read.sum"] == {"value": 4000, "unit": "byte"}  # the 4th launch
    assert set(counters["sgemm_naive"]) == set(profile_ncu.METRICS)
    run = json.loads((out / "ncu" / "run.json").read_text())
    assert run["failed"] == {} and run["ncu"].endswith("(fake)")
    assert "--kernel sgemm_naive" in run["targets"]["sgemm_naive"]["command"]
    assert "sgemm_naive " in (out / "ncu" / "summary.txt").read_text()
    assert (out / "ncu" / "counters.csv").read_text().startswith("kernel,metric,value,unit")
    with tarfile.open(out / "ncu.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"ncu/counters.json", "ncu/counters.csv", "ncu/summary.txt", "ncu/run.json", "ncu/raw/sgemm_naive.csv"} <= names
    assert sorted(p.name for p in out.iterdir()) == ["ncu", "ncu.tar.gz"]
    assert sorted(p.name for p in (out / "ncu").iterdir()) == ["counters.csv", "counters.json", "run.json", "summary.txt"]


def test_refused_counters_stop_the_run_with_the_fix_named(tmp_path):
    done, out = _fake_run(tmp_path, "perm", "strided_read,sgemm_naive")
    assert done.returncode == 1
    assert "ERR_NVGPUCTRPERM" in done.stdout and "NVreg_RestrictProfilingToAdminUsers=0" in done.stdout
    run = json.loads((out / "ncu" / "run.json").read_text())
    assert set(run["failed"]) == {*(f"strided_read_{s}" for s in (1, 2, 4, 8, 16, 32)), "sgemm_naive"}
    assert "sgemm_naive" not in run["targets"]  # not even started


def test_a_metric_this_ncu_rejects_is_dropped_named_and_the_kernel_retried(tmp_path):
    done, out = _fake_run(tmp_path, "metric", "transpose,reduction")
    assert done.returncode == 0, done.stdout
    assert "rejects smsp__issue_active.avg.pct_of_peak_sustained_active" in done.stdout
    run = json.loads((out / "ncu" / "run.json").read_text())
    assert run["dropped_metrics"] == ["smsp__issue_active.avg.pct_of_peak_sustained_active"]
    counters = json.loads((out / "ncu" / "counters.json").read_text())
    assert list(counters) == ["transpose", "reduction"]
    assert "smsp__issue_active.avg.pct_of_peak_sustained_active" not in counters["reduction"]
