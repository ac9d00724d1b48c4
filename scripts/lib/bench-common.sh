# shellcheck shell=bash disable=SC2034  # the variables set here are the sourcing script's
# The setup the bench scripts share (scripts/bench-hs.sh, scripts/bench-kernels.sh,
# scripts/bench-walks-quality.sh), sourced
# by them once they have set ROOT (the checkout), BENCH (their name: it names $OUT and $WORK) and
# LIMIT_S (their default): where the results go and the summary/record helpers, the build of
# pagedw2v unless BIN is given, the data folder and the mix5m corpus unpacked from it, and the
# time limit (in_time, cap). Environment as those scripts describe it: BUILD, BIN, OUT, WORK,
# DATA, LIMIT_S, JOBS.

# bench_init COLUMN...: $OUT with an empty summary and a results table of these columns.
bench_init() {
  BUILD=${BUILD:-$ROOT/build-gpu}
  OUT=${OUT:-$BUILD/$BENCH}
  JOBS=${JOBS:-16}
  mkdir -p "$OUT"
  SUMMARY="$OUT/summary.txt"
  RESULTS="$OUT/results.tsv"
  : >"$SUMMARY"
  record "$@"
  FAILURES=()
}

# note TEXT: printed and added to the summary.
note() { echo "$*" | tee -a "$SUMMARY"; }
# fail TEXT: a failed step, listed at the end (the script then exits non-zero).
fail() { FAILURES+=("$1"); note "FAILED: $1"; }
# record FIELD...: one line of the results table.
record() {
  local IFS=$'\t'
  printf '%s\n' "$*" >>"$RESULTS"
}

# bench_machine: the commit and the GPU, in the summary.
bench_machine() {
  note "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
}

# bench_build: builds pagedw2v in $BUILD (not counted in LIMIT_S) unless BIN is given; sets PW.
# Exits the script when it cannot.
bench_build() {
  if [[ -z ${BIN:-} ]]; then
    local t0
    t0=$(date +%s)
    if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DPAGEDW2V_CUDA=ON >"$OUT/configure.log" 2>&1 &&
      cmake --build "$BUILD" -j"$JOBS" --target pagedw2v >"$OUT/build.log" 2>&1; then
      note "build: $(($(date +%s) - t0)) s"
    else
      note "build FAILED (see $OUT/build.log)"
      grep -E "error" "$OUT/build.log" | head -20 | tee -a "$SUMMARY"
      exit 1
    fi
    BIN="$BUILD/bin"
  fi
  PW="$BIN/pagedw2v"
  [[ -x $PW ]] || { note "no pagedw2v at $PW"; exit 1; }
}

# bench_data: DATA (given, or the first of ../shared/data, shared/data and .cache that has
# mix5m), WORK (corpora and trained runs, kept out of $OUT, which keeps only logs and results),
# MIX (mix5m.txt, unpacked into $WORK when only the .gz is there; empty when there is none),
# QUESTIONS and WORDSIM.
bench_data() {
  if [[ -z ${DATA:-} ]]; then
    local d
    for d in "$ROOT/../shared/data" "$ROOT/shared/data" "$ROOT/.cache"; do
      if [[ -f $d/mix5m.txt.gz || -f $d/mix5m.txt ]]; then DATA=$d; break; fi
    done
  fi
  DATA=${DATA:-}
  WORK=${WORK:-${TMPDIR:-/tmp}/$BENCH-work}
  mkdir -p "$WORK"
  MIX="$WORK/mix5m.txt"
  if [[ -n $DATA && -f $DATA/mix5m.txt ]]; then
    MIX="$DATA/mix5m.txt"
  elif [[ -n $DATA && -f $DATA/mix5m.txt.gz ]]; then
    gunzip -c "$DATA/mix5m.txt.gz" >"$MIX"
  fi
  QUESTIONS="$DATA/questions-words.txt"
  WORDSIM="$DATA/wordsim353.tsv"
}

# bench_start: LIMIT_S counts from now.
bench_start() { START=$(date +%s); }
# in_time NAME: whether a step may still begin (LIMIT_S since bench_start).
in_time() {
  if (($(date +%s) - START > LIMIT_S)); then
    note "skipped (past ${LIMIT_S} s): $1"
    FAILURES+=("$1 (skipped, time)")
    return 1
  fi
}
# cap SECONDS: SECONDS, or less so that a step ends by LIMIT_S + 60.
cap() {
  local left=$((LIMIT_S + 60 - ($(date +%s) - START)))
  ((left < 1)) && left=1
  echo $(($1 < left ? $1 : left))
}
