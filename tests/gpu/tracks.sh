#!/usr/bin/env bash
# Several `tests/gpu/run.sh` calls at once on one host of several GPUs, each on GPUs of its own, so
# one 10-minute call holds work that would take several on one GPU. Each argument is one track: its
# settings as run.sh reads them (VAR=value words, values without spaces, or quoted for the shell),
# with GPUS=2,3 giving it GPUs 2 and 3 (default: GPU i for the i-th track). Track i's archive lands
# in OUT/t<i>/gpu-results.tar.gz and its printed log in OUT/t<i>.log; once every track has ended
# they are packed into one file, OUT/tracks.tar.gz (a call returns at most eight files: five tracks
# and a probe's two files lost four archives on 2026-11-28).
#
#     bash tests/gpu/tracks.sh OUT "STEPS=ncu" "STEPS=timing TIMING_PROBLEMS=act0.vector_add" \
#         "GPUS=2,3 STEPS=verdicts ADVERSARIAL_N=6"
#
# CALL_S (default 540) is how long the tracks may take from here: every track's steps end by then and
# its archive is packed, inside a 10-minute call whose set-up (the wheels) took the rest.
set -uo pipefail
export CALL_END=$(($(date +%s) + ${CALL_S:-540}))
OUT="${1:?usage: tracks.sh OUT TRACK...}"
shift
mkdir -p "$OUT"
index=0
pids=()
for track in "$@"; do
  mkdir -p "$OUT/t$index"
  (
    GPUS=$index
    eval "export $track"
    CUDA_VISIBLE_DEVICES=$GPUS exec bash "$(dirname "$0")/run.sh" "$OUT/t$index"
  ) > "$OUT/t$index.log" 2>&1 &
  pids+=($!)
  echo "track $index ($track): pid ${pids[-1]}"
  index=$((index + 1))
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  echo "== track $i:"
  tail -n "${TRACK_TAIL:-12}" "$OUT/t$i.log"
done
tracks=()
for i in "${!pids[@]}"; do tracks+=("t$i" "t$i.log"); done
tar -czf "$OUT/tracks.tar.gz" -C "$OUT" "${tracks[@]}" && (cd "$OUT" && rm -rf "${tracks[@]}")
exit "$status"
