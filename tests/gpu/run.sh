#!/usr/bin/env bash
# `make test-gpu`: on a GPU machine, with its own python3 (its torch, Triton and CuPy match its CUDA).
# Measures this GPU's ceilings, runs the reference-solution speed benchmark (results/), then every
# GPU test: solution notebooks at full marks, untouched exercises at zero, the adversarial
# submissions' verdicts and the timing protocol. Everything lands in one archive under OUT.
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

step() {
  local name=$1
  shift
  echo "== $name: $*"
  local started=$SECONDS
  "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  echo "   exit $rc after $((SECONDS - started)) s"
  tail -n "${TAIL_LINES:-40}" "$WORK/$name.log"
  [ "$rc" -eq 0 ] || status=1
}

step doctor "$PY" -m autograder doctor --remeasure
[ -z "${TUNE:-}" ] || step tune "$PY" tests/gpu/tune_act0.py
step bench "$PY" -m autograder bench --out "$WORK/results"
step pytest-gpu "$PY" -m pytest -m gpu -q -p no:cacheprovider -o addopts="" -rfE tests
"$PY" -c "import json,sys,torch,triton; print(json.dumps({'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'triton': triton.__version__, 'python': sys.version.split()[0]}))" > "$WORK/device.json"
date -u +%Y-%m-%dT%H:%M:%SZ > "$WORK/date.txt"
tar -czf "$OUT/gpu-results.tar.gz" -C "$WORK" --exclude=cache .
echo "== status $status; archive $OUT/gpu-results.tar.gz"
exit "$status"
