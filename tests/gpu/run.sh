#!/usr/bin/env bash
# `make test-gpu`: on a GPU machine, with its own python3 (its torch, Triton and CuPy match its CUDA).
# Measures this GPU's ceilings, runs the reference-solution speed benchmark, then every GPU test:
# solution notebooks at full marks, untouched exercises at zero, the adversarial submissions'
# verdicts and the timing protocol. Everything lands in one archive under OUT; the run's own files
# (logs, device.json, date.txt, the benchmark's tables and plots) in its folder results/runs/<name>/,
# to be committed as it is.
set -uo pipefail
OUT="${1:-gpu-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$(dirname "$0")/../.."
WORK="$(mktemp -d)"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export GPU_OUT="$WORK" AUTOGRADER_CACHE_DIR="$WORK/cache" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
unset TRITON_INTERPRET AUTOGRADER_DEVICE
PY="${PYTHON:-python3}"
status=0

# Each step ends by the run's deadline whatever its own limit (a call cut off from outside returns
# nothing of the step it was in), and its results are packed every minute while it runs.
step() {
  local name=$1
  shift
  local left=$((DEADLINE - SECONDS))
  if [ "$left" -le 5 ]; then
    echo "== $name: skipped, the run's deadline has passed"
    status=1
    return
  fi
  echo "== $name: $*"
  local started=$SECONDS
  (while sleep 60; do pack; done) &
  local packer=$!
  # A step that outlives its TERM (pytest's workers in the middle of a grading) is killed 20 s later.
  timeout -k 20 "$left" "$@" > "$RUN/$name.log" 2>&1
  local rc=$?
  kill "$packer" 2>/dev/null
  wait "$packer" 2>/dev/null
  echo "   exit $rc after $((SECONDS - started)) s"
  tail -n "${TAIL_LINES:-40}" "$RUN/$name.log"
  [ "$rc" -eq 0 ] || status=1
  pack
}

# Re-packed after every step, so a step cut off by a time limit still leaves the earlier results.
pack() {
  # grader: autograder.results.grader_digest(), the same for runs graded by the same grader and suite.
  "$PY" -c "import json,sys,torch,triton; from autograder import results; print(json.dumps({'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'triton': triton.__version__, 'python': sys.version.split()[0], 'grader': results.grader_digest()}))" > "$RUN/device.json" 2>/dev/null
  date -u +%Y-%m-%dT%H:%M:%SZ > "$RUN/date.txt"
  # One pack at a time (the step's packer may still be in one as the step ends): each reads the
  # folder as it is when it gets the lock, so the last one written holds the most.
  flock "$WORK.lock" sh -c 'tar -czf "$1.tmp" -C "$2" --exclude=cache . && mv "$1.tmp" "$1"' pack "$OUT/gpu-results.tar.gz" "$WORK"
}

# STEPS picks the steps (a 10-minute call cannot always hold them all): doctor always runs first.
# "notebooks" stands for both "solutions" (the solution notebooks that time kernels and the other
# timing-sensitive GPU tests, one at a time) and "exercises" (the untouched exercises and the
# solution notebooks with only exact answers, eight at a time).
# "adversarial" stands for "isolation" (the cases graded alone and the crash, leak and endless-kernel
# tests) and "verdicts" (the other cases, several at a time), which a call can also take one at a time.
STEPS="${STEPS:-bench book notebooks adversarial}"
STEPS="${STEPS/notebooks/solutions exercises}"
STEPS="${STEPS/adversarial/isolation verdicts}"
has() { [[ " $STEPS " == *" $1 "* ]]; }
# The folder is named the way the book finds runs (autograder/results.py): a run that builds the
# benchmark tables is a benchmark run, the one the book shows once it is the newest.
if has bench; then what=benchmark; else what="${STEPS// /-}"; fi
name=$("$PY" -c 'import sys; from autograder import results; print(results.run_name(sys.argv[1], results.this_gpu()))' "$what")
RUN="$WORK/results/runs/${name:-$(date -u +%F)-$what}"
mkdir -p "$RUN"
# Steps that write more than their log (the tune scripts) put it here, next to the log.
export GPU_RUN_DIR="$RUN"
DEADLINE=$((SECONDS + ${TOTAL_S:-560}))
# tracks.sh gives every track the call's own end (CALL_END, seconds since the epoch), which comes
# first when the set-up before the tracks took part of the call.
# The deadline keeps 30 s of the call for a step killed after its TERM and the last pack.
if [ -n "${CALL_END:-}" ] && [ $((SECONDS + CALL_END - $(date +%s) - 30)) -lt "$DEADLINE" ]; then
  DEADLINE=$((SECONDS + CALL_END - $(date +%s) - 30))
fi
step doctor "$PY" -m autograder doctor --remeasure
if has tune; then
  # TUNE_SCRIPTS narrows them: space-separated paths, each with its arguments after colons
  # (tests/gpu/tune_act4_warptile.py:--tf32-only, tests/gpu/tune_act7_int4_windows.py:--designs=a,b:--deadline=300).
  for spec in ${TUNE_SCRIPTS:-tests/gpu/tune_*.py}; do
    script=${spec%%:*}
    arguments=()
    [[ "$spec" == *:* ]] && IFS=: read -r -a arguments <<< "${spec#*:}"
    step "tune-$(basename "$script" .py)" timeout -k 10 "${TUNE_S:-150}" "$PY" "$script" "${arguments[@]}"
  done
fi
# Without the notebooks step, the benchmark grades every solution itself.
has bench && ! has solutions && step bench "$PY" -m autograder bench --out "$RUN"
# The book's demo notebooks, executed here; their executed copies are committed over book/.
# BOOK_NOTEBOOKS (paths, space-separated) runs only those, where one call cannot hold them all.
# shellcheck disable=SC2086
has book && step book-demos timeout -k 10 "${BOOK_S:-300}" "$PY" tests/gpu/execute_book.py "$WORK/book" ${BOOK_NOTEBOOKS:-}
# pytest-timeout (in the GPU image) names the test and the line where anything hangs. Timing-sensitive
# tests run one at a time; the adversarial verdicts, which only need the right verdict, run six at a
# time (pytest-xdist); the stability runs (STEPS=stability) come last and get whatever time is left.
PYTEST=("$PY" -m pytest -p no:cacheprovider -o addopts="" -rfE --timeout=150)
# On a host with several GPUs, each pytest-xdist worker is pinned to one GPU (tests/conftest.py), so
# the timing-sensitive steps run one test per GPU at a time and the others scale with the GPUs.
# Identical GPUs share the ceilings doctor measured on the first (cached per model).
NGPU=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 1)
[ "${NGPU:-0}" -ge 1 ] 2>/dev/null || NGPU=1
SPREAD=()
if [ "$NGPU" -gt 1 ]; then
  export GPU_RUN_DEVICES="${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((NGPU - 1)))}"
  SPREAD=(-n "$NGPU")
  echo "== $NGPU GPUs ($GPU_RUN_DEVICES): one timed test per GPU at a time"
fi
# SOLUTIONS_K narrows this step (a pytest -k expression) where one call cannot hold it: on an H100
# the solutions take about 8 minutes, so they run in two calls and the benchmark tables are built
# from both calls' graded results (`python -m autograder bench --from DIR` needs no GPU).
has solutions && step pytest-gpu timeout -k 10 "${NOTEBOOKS_S:-480}" "${PYTEST[@]}" "${SPREAD[@]}" -m "gpu and not multigpu" -v --durations=12 -k "not stability and not busy_host and not test_untouched_exercise and not test_exact_solution and (${SOLUTIONS_K:-not nothing})" tests/gpu
# How long a learner waits for a graded cell, a judge started ahead as after a notebook's set-up
# cell (tests/gpu/grading_time.py; TIMING_PROBLEMS names the solutions, each graded three times).
# shellcheck disable=SC2086
has timing && step grading-time timeout -k 10 "${TIMING_S:-300}" "$PY" tests/gpu/grading_time.py --ahead "$RUN/grading-time.json" ${TIMING_PROBLEMS:-act0.vector_add act4.flash_attention}
# Act 5's speed needs several GPUs visible at once: its tests run without pinning, only where there
# are 2 or more GPUs (STEPS="multigpu" alone: `make test-gpu-multi`, issue 22's measurement).
# MULTIGPU_K narrows it (a pytest -k expression), e.g. to the ring once NCCL's tables are measured;
# MULTIGPU_K=none leaves it out (the second call of a `make test-gpu` split over two calls).
if (has solutions || has multigpu) && [ "$NGPU" -ge 2 ] && [ "${MULTIGPU_K:-}" != none ]; then
  step pytest-multi-gpu timeout -k 10 "${MULTIGPU_S:-420}" "${PYTEST[@]}" --timeout=400 -m "gpu and multigpu" -v -k "${MULTIGPU_K:-not nothing}" tests/gpu/test_act5_gpu.py
fi
# With it, the benchmark tables are built from the gradings the solution notebooks just received.
has bench && has solutions && step bench "$PY" -m autograder bench --from "$WORK/graded" --out "$RUN"
# Untouched exercises only need the right verdict (zero, no crash), and the solution notebooks with
# only exact answers time nothing, so they share the GPU.
# EXERCISES_K narrows it as SOLUTIONS_K does the solutions (e.g. to the acts whose solutions changed).
has exercises && step pytest-exercises-gpu timeout -k 10 "${EXERCISES_S:-240}" "${PYTEST[@]}" -m gpu -n $((${EXERCISES_N:-8} * NGPU)) -v -k "(test_untouched_exercise or test_exact_solution) and (${EXERCISES_K:-not nothing})" tests/gpu/test_notebooks_gpu.py
# The isolation tests (a crash, a leak, an endless kernel, then an honest grading) read the GPU's
# free memory and time, so they run alone, before the verdicts; so do the cases that load the GPU
# beyond their calls and those that must PASS (tests/adversarial/cases.py: three gradings on one
# H200 rejected two honest vector adds whose windows held the others' GPU work). -v prints each verdict as it
# finishes, so a step cut off by its limit still names its failures. ISOLATION_SHARD ("I/N") splits them
# over tracks as ADVERSARIAL_SHARD splits the verdicts: one track took 420 s and more for all of them.
has isolation && step pytest-isolation-gpu timeout -k 10 "${ISOLATION_S:-420}" "${PYTEST[@]}" ${ISOLATION_SHARD:+--shard "$ISOLATION_SHARD"} "${SPREAD[@]}" -m gpu -v -k "not test_verdict_on_gpu and (${ISOLATION_K:-not nothing})" tests/adversarial
# A verdict's test waits as long as the grader itself would (its time limit and the judge's grace):
# at 150 s, a FlashAttention backward case compiling beside eleven other gradings on two H100s was cut
# off before its verdict. Each GPU grades ADVERSARIAL_N cases at a time: 3 on cards of 100 GiB or
# more, 2 below. A grading may take a fifth of the card for its timed windows (autograder/windows.py)
# and more around them (about 20 GiB a vector-add grading on an 80 GiB H100): four at a time on
# each of three H100s ran three of 190 out of memory, three at a time six of Act 0's 53 vector adds
# (five out of memory, one failing to map the judge's memory; results/runs/2026-11-26-2xh100-
# seventh-session/), and two at a time those six and 25 more ran with none. Four at a time on each of
# four H200s ran four of 196 out of memory (two of them failing to map a worker's output; results/runs/
# 2026-11-27-h100-h200-sixteenth-session/).
GRADING_S=$("$PY" -c "from autograder import sandbox; print(int(sandbox.timeout_s() + sandbox.JUDGE_GRACE_S) + 30)" 2>/dev/null || echo 400)
PER_GPU=$("$PY" -c "import torch; print(3 if torch.cuda.get_device_properties(0).total_memory >= 100 << 30 else 2)" 2>/dev/null || echo 2)
# ADVERSARIAL_K narrows the verdicts (a -k expression: 156 of them took more than 350 s on two H100s),
# ADVERSARIAL_SHARD takes every N-th of them from the I-th ("I/N", tests/conftest.py): eight shards
# of about 25 cases spread the whole suite over two calls of four GPUs; each verdict and its
# explanation is kept in verdicts/ of the archive as soon as it is known.
# ADVERSARIAL_PENDING=1 grades only the cases that no archive in results/runs graded under this tree's
# grader, the slowest first (tests/gpu/pending_verdicts.py): a whole-suite run spread over calls and
# sessions, each call's archive committed before the next. ADVERSARIAL_CASES names such a list itself.
if has verdicts && [ -n "${ADVERSARIAL_PENDING:-}" ]; then
  "$PY" tests/gpu/pending_verdicts.py --out "$WORK/pending-verdicts.txt" | tee "$RUN/pending-verdicts.log"
  ADVERSARIAL_CASES="$WORK/pending-verdicts.txt"
fi
has verdicts && step pytest-adversarial-gpu timeout -k 10 "${ADVERSARIAL_S:-300}" "${PYTEST[@]}" --timeout="$GRADING_S" ${ADVERSARIAL_SHARD:+--shard "$ADVERSARIAL_SHARD"} ${ADVERSARIAL_CASES:+--cases "$ADVERSARIAL_CASES"} -m gpu -n $((${ADVERSARIAL_N:-$PER_GPU} * NGPU)) -v -k "test_verdict_on_gpu and (${ADVERSARIAL_K:-not nothing})" tests/adversarial
# How many launches a stream takes behind an unwritten wait word before the host blocks
# (tests/gpu/probe_launch_queue.py): the depth behind autograder.windows' halving of the library's calls.
has probe && step probe-launch-queue timeout -k 10 "${PROBE_S:-240}" "$PY" tests/gpu/probe_launch_queue.py "$RUN/launch-queue.json"
# Whether the ring's timed ranks, armed without a collective, keep their sends and receives and lose
# every collective once they may open no socket (tests/gpu/probe_nccl_sockets_after_arm.py; 2 GPUs).
has nccl-sockets && [ "$NGPU" -ge 2 ] && step probe-nccl-sockets timeout -k 10 "${PROBE_S:-240}" "$PY" tests/gpu/probe_nccl_sockets_after_arm.py "$RUN/nccl-sockets-after-arm.json"
# Where the ring's timed run spends its time (2 GPUs): the grader's record against none, NCCL's flight
# record (tests/gpu/probe_ring_record.py), and the grader's protocol for the ring and NCCL's all-reduce
# in learner and trusted ranks at 10 and 40 calls a round (tests/gpu/probe_ring_protocol.py).
if has ring-probes && [ "$NGPU" -ge 2 ]; then
  step probe-ring-record timeout -k 10 "${PROBE_S:-240}" "$PY" tests/gpu/probe_ring_record.py "$RUN/ring-record.json"
  step probe-ring-protocol timeout -k 10 "${PROBE_S:-240}" "$PY" tests/gpu/probe_ring_protocol.py "$RUN/ring-protocol.json"
fi
# The tests that time beside processes spinning on every core of the host (busy_host in their names:
# the CUDA-graph exercise's two loops on one core): they load the CPUs every track shares, so a call
# runs them with no other track timing anything.
has busy && step pytest-busy-host timeout -k 10 "${BUSY_S:-420}" "${PYTEST[@]}" -m gpu -v -k busy_host tests/gpu
# Nsight Compute's counters of the kernels the book explains (the SGEMM steps, Act 1's transpose and
# reduction, the strided read), into ncu/ of the archive (tests/gpu/profile_ncu.py; about 2 minutes).
has ncu && step ncu timeout -k 10 "${NCU_S:-300}" "$PY" tests/gpu/profile_ncu.py
# A small class and two students who hand in every act, graded by `python -m autograder class` with
# one worker per GPU: its CSVs and each student's seconds per act (book/teaching/index.md).
has class && step class timeout -k 10 "${CLASS_S:-540}" "$PY" tests/gpu/grade_class.py "$RUN/class"
if has stability; then
  left=$((DEADLINE - SECONDS))
  # STABILITY_K picks problems (-k), STABILITY_RUNS the gradings of each: all 15 ten times do not
  # fit one call.
  select=()
  [ -n "${STABILITY_K:-}" ] && select=(-k "$STABILITY_K")
  step pytest-stability-gpu timeout -k 10 "$left" "${PYTEST[@]}" --timeout="$left" "${SPREAD[@]}" -m gpu -v "${select[@]}" tests/gpu/test_stability_gpu.py
fi
echo "== status $status after $SECONDS s; archive $OUT/gpu-results.tar.gz, the run in ${RUN#"$WORK"/}/"
exit "$status"
