#!/usr/bin/env bash
# Builds pagedw2v on a GPU machine, runs the GPU tests and the CUDA benchmarks, and compares the
# quality of GPU and CPU training on mix5m. Logs go to $OUT (default build-gpu/check-logs); a summary
# is printed last.
#
#   scripts/gpu-check.sh [test] [bench] [transfer] [quality] [resume] [paged] [scale] [memcheck]
#                        [profile] [all]
#   (default: test bench transfer quality resume)
#
# Data: .cache/mix5m.txt.gz (or .cache/mix5m.txt), .cache/questions-words.txt and
# .cache/wordsim353.tsv, copied from the shared data folder.
#
# Every step runs even when one before it failed, so that the logs are complete; the script exits
# non-zero when any step failed (the summary names them). The GPU tests are every test the build
# labels "gpu" (its gpu-tests.txt); they run with PAGEDW2V_REQUIRE_GPU=1, and a test that skips
# (no usable GPU, no mpirun) fails the step.
set -uo pipefail
export PAGEDW2V_REQUIRE_GPU=1

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD/check-logs}
JOBS=${JOBS:-16}
mkdir -p "$OUT"
STEPS=${*:-test bench transfer quality resume}
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

note() { echo "$*" | tee -a "$SUMMARY"; }
FAILURES=()
# check NAME RC: records a failed step (RC non-zero) for the exit status and the summary.
check() { if [[ $2 -ne 0 ]]; then FAILURES+=("$1 (rc=$2)"); fi; }
has_step() { [[ " $STEPS " == *" $1 "* || " $STEPS " == *" all "* ]]; }

note "== gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) steps: $STEPS"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader \
  2>&1 | tee -a "$SUMMARY"
check nvidia-smi "${PIPESTATUS[0]}"

# Build: our targets first, so that a half-finished file elsewhere cannot hide their results.
t0=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPAGEDW2V_CUDA=ON >"$OUT/configure.log" 2>&1 || { note "configure FAILED"; tail -30 "$OUT/configure.log"; exit 1; }
# The GPU tests are those the build registers as such (pagedw2v_add_test(... GPU ...) in
# tests/CMakeLists.txt, listed in gpu-tests.txt at configure time): every one of them runs here.
if [[ ! -s "$BUILD/gpu-tests.txt" ]]; then
  note "configure wrote no $BUILD/gpu-tests.txt (no GPU test was configured: is CUDA found?)"
  exit 1
fi
GPU_TESTS=$(tr '\n' ' ' <"$BUILD/gpu-tests.txt")
# FIRST="test_a test_b": those of the build's GPU tests run first (the rest follow in the build's order).
if [[ -n ${FIRST:-} ]]; then
  ordered=""
  for t in $FIRST; do [[ " $GPU_TESTS " == *" $t "* ]] && ordered+="$t "; done
  for t in $GPU_TESTS; do [[ " $ordered " == *" $t "* ]] || ordered+="$t "; done
  GPU_TESTS=$ordered
fi
note "gpu tests: $GPU_TESTS"
cmake --build "$BUILD" -j"$JOBS" --target pagedw2v $GPU_TESTS \
  >"$OUT/build.log" 2>&1 || { note "build FAILED"; grep -E "error" "$OUT/build.log" | head -30; exit 1; }
# FAST=1: only the targets above (no full ctest either), to save device time.
[[ -n ${FAST:-} ]] || cmake --build "$BUILD" -j"$JOBS" -- -k >>"$OUT/build.log" 2>&1 || note "note: some other targets failed to build"
note "build: $(( $(date +%s) - t0 )) s"
BIN="$BUILD/bin"

DATA="$ROOT/.cache"
CORPUS=/tmp/mix5m.txt
if [[ -f "$DATA/mix5m.txt" ]]; then CORPUS="$DATA/mix5m.txt"; elif [[ -f "$DATA/mix5m.txt.gz" ]]; then
  gunzip -c "$DATA/mix5m.txt.gz" >"$CORPUS"; fi
# The steps that train on mix5m cannot pass without it: say so once rather than through each run.
for step in bench quality resume profile; do
  if has_step $step && [[ ! -s $CORPUS ]]; then
    note "$step: no corpus ($DATA/mix5m.txt or .txt.gz)"
    check "$step: no corpus" 1
  fi
done
# A step that was asked for but whose tool is missing fails rather than passing unseen. The CUDA
# tools may be off PATH: look beside nvcc too.
cuda_tool() { command -v "$1" || command -v "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/$1"; }
SANITIZER=$(cuda_tool compute-sanitizer)
NCU=$(cuda_tool ncu)
if has_step memcheck && [[ -z $SANITIZER ]]; then
  note "memcheck: compute-sanitizer not found"
  check "memcheck: no compute-sanitizer" 1
fi
if has_step profile && [[ -z $NCU ]]; then
  note "profile: ncu not found"
  check "profile: no ncu" 1
fi

# Seconds each GPU test binary may run as a whole (H100/H200): far above what each takes, to end
# a hang; a binary not listed gets 300.
declare -A TEST_LIMIT=([test_cuda_sgns]=600 [test_cuda_paged]=600 [test_cuda_resume]=600 [test_cuda_hs]=600
  [test_distributed]=900 [test_cuda_stream_corpus]=600)

# run_gpu_test T: one GPU test binary under its limit, its log in $OUT/T.log; returns its status.
# -k: a binary stuck in a driver call that outlives SIGTERM is killed 10 s later.
run_gpu_test() { timeout -k 10 "${TEST_LIMIT[$1]:-300}" "$BIN/$1" >"$OUT/$1.log" 2>&1; }
# report_gpu_test T RC [WORDS]: the summary's line for a binary that ran.
report_gpu_test() {
  note "$1: rc=$2 (limit ${TEST_LIMIT[$1]:-300} s)${3:+ $3} $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$1.log" | tr '\n' ' ')"
  grep -E '^\[  (FAILED|SKIPPED) ' "$OUT/$1.log" | head -20 | tee -a "$SUMMARY"
}
if has_step test; then
  # LANES=N: N binaries at once on the one GPU, to save time on a lent machine: each lane takes
  # the next binary of the order that no lane has taken (put the longest first with FIRST). A
  # binary that fails beside the others runs again alone and counts as what it does alone; the
  # summary says so. Default: one at a time. TEST_DEADLINE_S=S: no binary starts S seconds or
  # more after the first did; one left unstarted fails the step ("not run").
  LANES=${LANES:-1}
  declare -A RC=()
  CLAIMS="$OUT/.claims"
  rm -rf "$CLAIMS"
  mkdir -p "$CLAIMS"
  for t in $GPU_TESTS; do rm -f "$OUT/$t.rc" "$OUT/$t.beside-others.log" "$OUT/$t.log"; done
  TESTS_T0=$(date +%s)
  in_deadline() { [[ -z ${TEST_DEADLINE_S:-} ]] || (( $(date +%s) - TESTS_T0 < TEST_DEADLINE_S )); }
  if (( LANES > 1 )); then
    for ((lane = 0; lane < LANES; ++lane)); do
      (
        for t in $GPU_TESTS; do
          in_deadline || break
          # mkdir is atomic: the lane that makes the directory runs the binary.
          if [[ -x "$BIN/$t" ]] && mkdir "$CLAIMS/$t" 2>/dev/null; then
            run_gpu_test "$t"
            echo $? >"$OUT/$t.rc"
            echo "$t: rc=$(cat "$OUT/$t.rc") (lane $lane, at $(( $(date +%s) - TESTS_T0 )) s)" >>"$SUMMARY"
          fi
        done
      ) &
    done
    wait
    for t in $GPU_TESTS; do
      [[ -s "$OUT/$t.rc" ]] || continue
      RC[$t]=$(cat "$OUT/$t.rc")
      if [[ ${RC[$t]} -ne 0 ]] && in_deadline; then
        mv "$OUT/$t.log" "$OUT/$t.beside-others.log"
        run_gpu_test "$t"
        RC[$t]="$?"
        report_gpu_test "$t" "${RC[$t]}" "(failed beside the other lanes; this is its run alone)"
      fi
    done
  fi
  for t in $GPU_TESTS; do
    if [[ ! -x "$BIN/$t" ]]; then
      note "$t: not built"
      check "$t not built" 1
      continue
    fi
    if [[ -z ${RC[$t]:-} ]] && ! in_deadline; then
      note "$t: not run (TEST_DEADLINE_S=$TEST_DEADLINE_S passed)"
      check "$t not run" 1
      continue
    elif [[ -z ${RC[$t]:-} ]]; then
      run_gpu_test "$t"
      RC[$t]=$?
      report_gpu_test "$t" "${RC[$t]}"
    elif [[ ! -f "$OUT/$t.beside-others.log" ]]; then
      report_gpu_test "$t" "${RC[$t]}"
    fi
    check "$t" "${RC[$t]}"
    # A skipped GPU test is a failure here: every one of them must run on this machine.
    if grep -qE '^\[  SKIPPED \] [1-9]' "$OUT/$t.log"; then check "$t skipped tests" 1; fi
  done
  if [[ -z ${FAST:-} ]]; then
    # Every test, each with the timeout it was registered with (the GPU tests above have run
    # already).
    (cd "$BUILD" && ctest --output-on-failure -LE gpu -j8 >"$OUT/ctest.log" 2>&1)
    rc=$?
    check "ctest" $rc
    note "ctest (all tests): rc=$rc $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)' "$OUT/ctest.log" | head -20 | tee -a "$SUMMARY"
  fi
fi

if has_step memcheck && [[ -n $SANITIZER ]]; then
  {
    timeout 150 "$SANITIZER" --tool memcheck --error-exitcode 9 "$BIN/test_cuda_sgns" \
      --gtest_filter='*sg_d33*:*sg_d300*:*cbow_d100_w5_n5_s24:*Repeats*:*stream*' \
      >"$OUT/memcheck.log" 2>&1
    rc=$?
    check memcheck $rc
    note "memcheck (5 shapes + repeats + streaming): rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  }
fi

if has_step transfer; then
  timeout 180 "$BIN/pagedw2v" bench transfer ${TRANSFER_FLAGS:-} >"$OUT/bench-transfer.log" 2>&1
  rc=$?
  check "bench transfer" $rc
  note "bench transfer: rc=$rc"
  sed 's/^/    /' "$OUT/bench-transfer.log" | tee -a "$SUMMARY"
fi

if has_step bench; then
  SG="--dim 128 --window 5 --negative 5 --sample 1e-3 --min-count 5"
  run_bench() {  # name, then bench flags
    local name=$1; shift
    timeout 120 "$BIN/pagedw2v" bench train --corpus "$CORPUS" "$@" >"$OUT/bench-$name.log" 2>&1
    local rc=$?
    check "bench $name" $rc
    note "bench $name: rc=$rc $(grep -E '^RESULT' "$OUT/bench-$name.log")"
    grep -E '^(per word|epochs|split|gpu memory|kernel words)' "$OUT/bench-$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
  }
  run_bench sg-x4 --repeat 4 --device cuda --epochs 3 $SG
  run_bench cbow-x4 --repeat 4 --device cuda --epochs 3 --model cbow $SG
  run_bench sg-x4-again --repeat 4 --device cuda --epochs 3 $SG
  run_bench sg-x4-stream --repeat 4 --device cuda --epochs 2 --stream --chunk-tokens 4194304 $SG
  run_bench sg-x1-d100 --repeat 1 --device cuda --epochs 5 --dim 100
fi

Q="$DATA/questions-words.txt"; W="$DATA/wordsim353.tsv"
quality() {  # name, then train flags: mix5m at the quality settings, then the evaluation
  local name=$1; shift
  timeout 200 "$BIN/pagedw2v" train --corpus "$CORPUS" --output "/tmp/q-$name" --format npy \
    --dim 100 --window 5 --negative 5 --sample 1e-3 --min-count 5 --epochs 5 "$@" \
    >"$OUT/train-$name.log" 2>&1
  local rc=$?
  check "train $name" $rc
  timeout 120 "$BIN/pagedw2v" eval --vectors "/tmp/q-$name" --analogies "$Q" --similarity "$W" \
    >"$OUT/eval-$name.log" 2>&1
  check "eval $name" $?
  note "quality $name: train rc=$rc $(grep -E '^(trained|backend)' "$OUT/train-$name.log" | tr '\n' ' ')"
  grep -E 'Total accuracy|Spearman' "$OUT/eval-$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
}

if has_step quality; then
  quality sg-cuda --device cuda
  quality sg-cpu --device cpu
  quality cbow-cuda --device cuda --model cbow
  quality cbow-cpu --device cpu --model cbow
fi

if has_step resume; then
  # A checkpoint written by one backend continues on the other, with no word lost.
  R="--dim 64 --epochs 2 --format npy"
  for pair in "cuda cpu" "cpu cuda"; do
    set -- $pair
    timeout 120 "$BIN/pagedw2v" train --corpus "$CORPUS" --output "/tmp/r-$1" --device "$1" $R \
      >"$OUT/resume-$1.log" 2>&1
    check "resume: train on $1" $?
    timeout 200 "$BIN/pagedw2v" train --resume "/tmp/r-$1/checkpoints/epoch-1.h5" \
      --output "/tmp/r-$1-$2" --device "$2" --format npy >>"$OUT/resume-$1.log" 2>&1
    rc=$?
    check "resume $1 -> $2" $rc
    note "resume $1 -> $2: rc=$rc $(grep -E '^trained .* on |in all' "$OUT/resume-$1.log" | tr '\n' ' ')"
  done
fi

if has_step paged; then
  # Resident against paged tables on the same synthetic Zipf stream (10 M rows × 128, SGD, a
  # budget of 10 % of the tables' 10.24 GB), then mix5m quality with under half the rows on the GPU.
  SYN=${SYN:-10000000,100000000,1.0}
  POOL=${POOL:-1024}
  syn() {  # name, then bench flags
    local name=$1; shift
    timeout 300 "$BIN/pagedw2v" bench train --synthetic "$SYN" --device cuda --epochs 1 --dim 128 \
      --window 5 --negative 5 --sample 1e-3 --negative-pool "$POOL" "$@" >"$OUT/bench-$name.log" 2>&1
    local rc=$?
    check "bench $name" $rc
    note "bench $name: rc=$rc $(grep -E '^RESULT' "$OUT/bench-$name.log")"
    grep -vE '^RESULT' "$OUT/bench-$name.log" | tail -14 | sed 's/^/    /' | tee -a "$SUMMARY"
  }
  P="--placement paged --gpu-memory 1024000000"
  syn syn-resident --placement resident
  syn syn-paged $P
  syn syn-paged-pool8k $P --pool-words 8192
  syn syn-resident-pool64k --placement resident --pool-words 65536
  syn syn-paged-pool64k $P --pool-words 65536
  QP="--negative-pool ${QPOOL:-1024} --pool-words ${QPOOLWORDS:-4096}"
  quality sg-pool-resident --device cuda $QP --placement resident --seed 1
  quality sg-pool-paged --device cuda $QP --placement paged --gpu-memory ${MIXMEM:-41000000} --seed 1
  quality sg-pool-paged-seed2 --device cuda $QP --placement paged --gpu-memory ${MIXMEM:-41000000} --seed 2
  quality cbow-pool-paged --device cuda --model cbow $QP --placement paged --gpu-memory ${MIXMEM:-41000000} --seed 1
  # The pool period against quality (docs/notebook.md): pool entries per word set the bytes per word.
  for pw in ${POOLSWEEP:-1024/4096 1024/8192 2048/16384 4096/65536}; do
    for seed in 1 2; do
      quality "sg-pool-${pw/\//-}-seed$seed" --device cuda --negative-pool "${pw%/*}" \
        --pool-words "${pw#*/}" --batch-words 262144 --placement paged \
        --gpu-memory ${MIXMEM:-41000000} --seed "$seed"
    done
  done
fi

if has_step scale; then
  # Adam on 25 M rows × 128 (six host tables, 76.8 GB) within an 8 GiB GPU budget.
  timeout ${BIGTIME:-240} "$BIN/pagedw2v" bench train --synthetic "${BIG:-25000000,100000000,1.0}" --device cuda \
    --epochs 1 --dim 128 --window 5 --negative 5 --sample 1e-3 --negative-pool 1024 \
    --optimizer adam --placement paged --gpu-memory 8GiB >"$OUT/bench-adam-25m.log" 2>&1
  rc=$?
  check "bench adam-25m" $rc
  note "bench adam-25m: rc=$rc $(grep -E '^RESULT' "$OUT/bench-adam-25m.log")"
  grep -vE '^RESULT' "$OUT/bench-adam-25m.log" | tail -16 | sed 's/^/    /' | tee -a "$SUMMARY"
fi

if has_step profile && [[ -n $NCU ]]; then
  timeout 150 "$NCU" --clock-control none --kernel-name regex:sgns_kernel --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
    --section LaunchStats --section WarpStateStats \
    "$BIN/pagedw2v" bench train --corpus "$CORPUS" --repeat 4 --device cuda --epochs 2 \
    --dim 128 --window 5 --negative 5 --sample 1e-3 >"$OUT/ncu.log" 2>&1
  rc=$?
  check ncu $rc
  note "ncu: rc=$rc (ncu.log)"
  grep -E "Duration|Throughput|Achieved Occupancy|Registers Per|L2 Hit|Warp Cycles Per Issued|No Eligible|stalled" \
    "$OUT/ncu.log" | head -30 | tee -a "$SUMMARY"
fi

# Everything in one archive: only a few files come back from the device machine.
tar -C "$OUT" -czf /tmp/gpu-check-logs.tgz . 2>/dev/null && mv /tmp/gpu-check-logs.tgz "$OUT/logs.tgz"
find "$OUT" -maxdepth 1 -type f ! -name logs.tgz ! -name summary.txt -delete

if [[ ${#FAILURES[@]} -gt 0 ]]; then
  note "FAILED steps: ${FAILURES[*]}"
else
  note "all steps passed"
fi
echo
echo "===== summary ====="
cat "$SUMMARY"
[[ ${#FAILURES[@]} -eq 0 ]]
