#!/usr/bin/env bash
# A quick look at the grader on a GPU: grade a few solution notebooks with every report printed, time
# each grading (the time a learner waits for a graded cell), and print the judge's own account of
# it (seconds per stage, the median segments of the timed calls). Writes $OUT/smoke-*.json if OUT is set.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 AUTOGRADER_CACHE_DIR="${AUTOGRADER_CACHE_DIR:-/tmp/agc}"
PY="${PYTHON:-python3}"
DEST="${OUT:-/tmp}"
i=0
for notebook in $*; do
  i=$((i + 1))
  started=$(date +%s%N)
  timeout 300 "$PY" -m autograder grade "$notebook" --json "$DEST/smoke-$i.json" -v
  echo "GRADING TIME $notebook: $(( ($(date +%s%N) - started) / 1000000 )) ms"
done
"$PY" - "$DEST" <<'PYEOF'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/smoke-*.json")):
    for r in json.load(open(path))["results"]:
        print(r["problem"], r["status"], "stages:", r.get("stage_seconds"), "calibration:", r.get("calibration"), r.get("calibration_note", ""))
        for row in r.get("speed", []):
            print("  ", row["size"], "charged more:", row.get("charged_more"), "segments:", json.dumps(row.get("segments_us")))
PYEOF
