#!/usr/bin/env bash
# Times everything outside training on a many-core GPU machine: `bench ingest` on the
# large-vocabulary walk corpus (2 M distinct words, 80 M tokens) and on mix5m, then the whole
# `train` command through scripts/bench_end_to_end.sh, whose `time:` line says where the time went.
# Logs go to $OUT (default build-gpu/ingest-logs); the RESULT and `time:` lines are printed last.
#
#   scripts/bench_ingest_device.sh [THREADS]      (default: every core)
#
# Data: .cache/mix5m.txt.gz or .cache/mix5m.txt when present; the walk corpus is generated.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD/ingest-logs}
THREADS=${1:-$(nproc)}
JOBS=${JOBS:-16}
WORK=${WORK:-$BUILD/ingest-work}
mkdir -p "$OUT" "$WORK"
cd "$ROOT"

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPAGEDW2V_CUDA=AUTO >"$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j"$JOBS" --target pagedw2v >>"$OUT/build.log" 2>&1 ||
  { echo "build failed: $OUT/build.log" >&2; tail -n 20 "$OUT/build.log" >&2; exit 1; }
BIN=$BUILD/bin/pagedw2v

WALKS=$WORK/walks-2000000.txt
[ -s "$WALKS" ] || BUILD_DIR=$BUILD scripts/make_walks.sh "$WALKS" --nodes 2000000 >"$OUT/walks.log" 2>&1
cat "$WALKS" >/dev/null
{
  echo "== bench ingest, walks, $THREADS threads"
  "$BIN" bench ingest --corpus "$WALKS" --threads "$THREADS" --min-count 1 --repeat 3
  echo "== bench ingest, walks, 1 thread"
  "$BIN" bench ingest --corpus "$WALKS" --threads 1 --min-count 1 --repeat 1
  MIX=""
  [ -s .cache/mix5m.txt ] && MIX=.cache/mix5m.txt
  if [ -z "$MIX" ] && [ -s .cache/mix5m.txt.gz ]; then
    gunzip -c .cache/mix5m.txt.gz >"$WORK/mix5m.txt" && MIX=$WORK/mix5m.txt
  fi
  if [ -n "$MIX" ]; then
    for t in "$THREADS" 2; do
      echo "== bench ingest, mix5m, $t threads"
      "$BIN" bench ingest --corpus "$MIX" --threads "$t" --repeat 5
    done
  fi
} 2>&1 | tee "$OUT/ingest.log"

# The whole command; the output directory is on the work disk, as a user's would be.
BUILD_DIR=$BUILD scripts/bench_end_to_end.sh "$WORK" --device cuda --threads "$THREADS" --repeat 2 \
  2>&1 | tee "$OUT/end_to_end.log"
echo "== summary"
grep -E "^ingest:|^  read|^== bench" "$OUT/ingest.log"
grep -E "^RESULT|^time:" "$OUT/end_to_end.log"
