"""The Triton interpreter's guard and launch record: a kernel that strays outside its tensors gets one
true sentence, the same on every run, and the process lives on; honest kernels are left alone; the
record tells an output the kernels wrote from one PyTorch wrote. Kernels run in fresh processes
(tests/interpreter_kernels.py), since the interpreter must be switched on before Triton is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.interpreter import install_guard

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "tests" / "interpreter_kernels.py"
ADVICE = "mask the loads and stores at the edges"


def _start(scenario: str, **env: str) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen([sys.executable, str(SCENARIOS), scenario], cwd=ROOT, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=600)
    # The process must end normally: a crash (SIGSEGV, SIGABRT) is exactly what the guard prevents.
    assert process.returncode == 0, f"exit {process.returncode}\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def _run(scenario: str, **env: str) -> dict:
    return _finish(_start(scenario, **env))


# The module's scenarios run once each, on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("interpreter")


@pytest.fixture(scope="module")
def out_of_bounds() -> dict:
    return _run("out_of_bounds")


@pytest.fixture(scope="module")
def record() -> dict:
    return _run("record")


def test_off_by_one_tail_mask_gives_the_same_sentence_ten_times():
    processes = [_start("tail") for _ in range(10)]
    results = [_finish(p) for p in processes]
    expected = ("OutOfBoundsAccess: your kernel add_off_by_one_kernel read past the end of its argument x_ptr "
                f"(element 1000 of 1000; program id (7,)): {ADVICE}")
    assert [r["message"] for r in results] == [expected] * 10
    # The same process then runs an honest kernel and gets the right sum.
    assert all(r["honest_after"] for r in results)


@pytest.mark.parametrize(
    ("case", "sentence"),
    [
        ("store_past_end", "your kernel store_off_by_one_kernel wrote past the end of its argument out_ptr (element 1000 of 1000; program id (7,))"),
        ("read_before_start", "your kernel shift_right_kernel read before the start of its argument x_ptr (element -1 of 1000; program id (0,))"),
        ("device_function", "your kernel nested_copy_kernel read past the end of its argument x_ptr (element 1000 of 1000; program id (7,))"),
        ("atomic_add_past_end", "your kernel atomic_add_kernel updated past the end of its argument out_ptr (element 1000 of 1000; program id (7,))"),
        ("atomic_cas_past_end", "your kernel atomic_cas_kernel updated past the end of its argument lock_ptr (element 1 of 1; program id (0,))"),
        ("descriptor_past_end", "your kernel descriptor_copy_kernel read past the end of its argument in_desc (element 1920 of 1920; program id (2, 0))"),
        ("spread_past_end", "your kernel spread_load_kernel read past the end of its argument x_ptr (element 4096 of 1000; program id (0,))"),
        ("straddles_end", "your kernel straddle_kernel read past the end of its argument x_ptr (element 999 of 1000; program id (0,))"),
        ("far_outside", "your kernel load_at_kernel read memory outside every tensor passed to the kernel (program id (0,))"),
    ],
)
def test_out_of_bounds_access_is_caught(out_of_bounds, case, sentence):
    assert out_of_bounds[case] == f"OutOfBoundsAccess: {sentence}: {ADVICE}"


def test_refused_store_writes_nothing(out_of_bounds):
    # The element just past out (inside a longer buffer) keeps its value, and so does the whole last
    # block: the store that would have crossed the end is refused as a whole.
    assert out_of_bounds["store_left_alone"]
    assert out_of_bounds["last_block_not_stored"]


def test_honest_kernels_give_identical_results_under_the_guard():
    plain, guarded = _start("honest_plain"), _start("honest_guarded")
    plain, guarded = _finish(plain), _finish(guarded)
    # Vector add, a masked 2-D softmax, a bf16 tl.dot matmul, tensor descriptors, atomics, and masked-off
    # lanes that point a million elements away: right without the guard, and bit for bit the same with it.
    assert all(plain["right"].values()), plain["right"]
    assert guarded["right"] == plain["right"]
    assert guarded["digests"] == plain["digests"]
    # install_guard twice: True both times, and the second call wraps nothing again.
    assert guarded["installed"] == [True, True, True]


def test_record_names_the_kernel_and_its_source(record):
    assert record["kernels"] == [["add_kernel", "interpreter_kernels.py", record["add_line"]]]
    assert record["kernels_many"] == ["softmax_kernel", "atomic_add_kernel"]
    assert record["launches_many"] == 2


def test_record_honest_kernels_compile_for_a_gpu(record):
    # A 2D softmax with reductions and an atomic add, through Triton's front end (autograder.triton_frontend).
    assert record["not_compiled"] == {}


def test_record_output_written_by_the_kernel(record):
    assert record["written"] == [True, True]  # allocated inside the learner's function, written whole
    assert record["scratch"] == [True, True]
    assert record["softmax"][0] == [True, True]
    assert record["atomics"][0] == [True, True]


def test_record_output_overwritten_or_made_by_torch(record):
    assert record["overwritten"] == [True, False]  # stored by a kernel, then replaced by out.copy_(x + y)
    assert record["torch_output"] == [False, False]  # never touched by a kernel
    assert record["inputs_written"] == [False, False]
    assert record["half_written"] == [False, True]  # the kernel stored half; what it stored is still there
    assert record["halves_written"] == [[True, True], [False, False]]


def test_record_read_fractions(record):
    assert record["read"] == [1.0, 1.0, 0.0]  # x and y read whole, out never read
    assert record["half_read"] == [0.5, 1.0, 0.0]  # views answer for their own elements
    assert record["softmax"][1:] == [1.0, 1.0]  # the input, and a strided view of every other column
    assert record["atomics"][1] == 1.0  # an atomic add reads what it updates


def test_record_counts_the_loads_of_each_byte(record):
    # x loaded whole, then its first half again; a strided view answers for its own elements (x[0]
    # twice); a load whose lanes all point at y[0] reads it once; out only stored.
    assert record["loads"] == [2, 1, 2, 1, 0, 0]


def test_notebook_setup_on_a_cpu_installs_the_guard():
    result = _run("setup", AUTOGRADER_DEVICE="cpu")
    assert result["device"] == "cpu"
    assert result["message"].startswith("OutOfBoundsAccess: your kernel add_off_by_one_kernel read past the end")


def test_guard_is_off_without_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert install_guard() is False


def test_a_replay_puts_back_whole_the_tensors_the_host_zeroed_where_kernels_had_left_zeros():
    # x holds +0.0 and -0.0 (the accumulator +0.0 after either), so zeroing the accumulator on the
    # host changes none of those bytes: read by the bytes it changed, the replay leaves the new x there.
    seen = _run("replay")
    assert seen["zeroes_between_launches changed"]["wrong"] == 2 * len(range(0, 1000, 7))
    assert seen["zeroes_between_launches whole"] == {"wrong": 0, "tampered": None, "inputs_kept": True}
    # NumPy's answer comes back as it was under both readings.
    assert seen["host_answer changed"]["wrong"] == seen["host_answer whole"]["wrong"] == 1000
