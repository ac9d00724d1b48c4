#!/usr/bin/env bash
# Two builds of pagedw2v side by side on one machine, for a change that must keep the bits and
# the speed (a refactoring, a build change):
#   bytes  the same `train --deterministic --threads 1` runs (skip-gram and CBOW, sgd, Adam and
#          Adagrad; on CUDA resident and paged, fp32 and bf16) write the same vectors with both
#          builds (every .npy of the output compared with cmp);
#   speed  `bench train` on each workload (mix5m resident; Zipf 1.0 and 0.7 paged at 10 % of
#          their bf16 tables), the two builds timed in turn (base, new, base, new, ...) so that
#          both see the same machine; the new build's median words/s must be within TOLERANCE
#          percent of the base's (below it; faster passes).
# Results go to $OUT (default build-gpu/compare-builds); a summary is printed last.
#
#   BASE=/path/to/base/pagedw2v scripts/compare-builds.sh [bytes] [speed]
#   BASE_SRC=/tmp/base scripts/compare-builds.sh      # a source tree of the base commit, e.g.
#                                                     # `git worktree add /tmp/base 66888f6`
#
# Environment: BASE (the base build's pagedw2v) or BASE_SRC (built in $WORK/base-build, not
# counted in LIMIT_S); BIN (a directory holding the new build's pagedw2v; else it is built in
# BUILD, default build-gpu); DEVICE (cuda, the default, or cpu: CPU runs, no paged tables, no
# speed step unless asked for); REPS (timed runs of each build a workload, default 3);
# TOLERANCE (percent, default 3); SPEED_WORKLOADS (other workloads, "NAME:BENCH FLAGS;..."); WORDS (words of mix5m the byte runs train on, default
# 1000000); LIMIT_S (default 420), DATA, OUT, WORK, JOBS as in scripts/lib/bench-common.sh.
#
# Every step runs even when one before it failed; the script exits non-zero when any run
# differs, fails or is slower than the tolerance.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=compare-builds
LIMIT_S=${LIMIT_S:-420}
DEVICE=${DEVICE:-cuda}
REPS=${REPS:-3}
TOLERANCE=${TOLERANCE:-3}
WORDS=${WORDS:-1000000}
# shellcheck source=scripts/lib/bench-common.sh
source "$ROOT/scripts/lib/bench-common.sh"
bench_init step workload build run value log
STEPS=${*:-bytes speed}
[[ $DEVICE == cpu && -z ${*:-} ]] && STEPS=bytes

note "== compare-builds $(date -u +%Y-%m-%dT%H:%M:%SZ) device $DEVICE steps: $STEPS"
[[ $DEVICE == cuda ]] && bench_machine
bench_build
NEW=$PW
bench_data
if [[ -z ${BASE:-} && -n ${BASE_SRC:-} ]]; then
  cuda=ON; [[ $DEVICE == cpu ]] && cuda=AUTO
  if cmake -S "$BASE_SRC" -B "$WORK/base-build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DPAGEDW2V_CUDA=$cuda >"$OUT/base-configure.log" 2>&1 &&
    cmake --build "$WORK/base-build" -j"$JOBS" --target pagedw2v >"$OUT/base-build.log" 2>&1; then
    BASE="$WORK/base-build/bin/pagedw2v"
  else
    note "the base build FAILED (see $OUT/base-build.log)"
    exit 1
  fi
fi
[[ -x ${BASE:-} ]] || { note "no base build: give BASE (a pagedw2v) or BASE_SRC (a source tree)"; exit 2; }
note "base: $BASE ($("$BASE" --version 2>&1 | head -1))"
note "new:  $NEW ($("$NEW" --version 2>&1 | head -1))"
[[ -s $MIX ]] || { note "no mix5m (DATA)"; exit 1; }
bench_start

if [[ " $STEPS " == *" bytes "* ]]; then
  # The first WORDS words of mix5m, as whole lines where it can.
  SMALL="$WORK/mix-small.txt"
  awk -v n="$WORDS" '{ c += NF; print; if (c >= n) exit }' "$MIX" >"$SMALL"
  COMMON=(--corpus "$SMALL" --device "$DEVICE" --deterministic --threads 1 --dim 64 --epochs 1
    --min-count 5 --window 5 --negative 5 --sample 1e-3 --seed 7 --format npy --save-context
    --overwrite)
  CASES=("sg-sgd:--model skipgram --optimizer sgd" "cbow-sgd:--model cbow --optimizer sgd"
    "sg-adam:--model skipgram --optimizer adam" "cbow-adagrad:--model cbow --optimizer adagrad")
  if [[ $DEVICE == cuda ]]; then
    CASES+=("sg-sgd-paged:--model skipgram --optimizer sgd --placement paged --gpu-memory 30%"
      "cbow-sgd-paged-bf16:--model cbow --optimizer sgd --placement paged --gpu-memory 30% --storage bf16"
      "sg-adam-paged:--model skipgram --optimizer adam --placement paged --gpu-memory 50%"
      "sg-adagrad-paged-bf16:--model skipgram --optimizer adagrad --placement paged --gpu-memory 50% --storage bf16")
  fi
  ROWS=""
  for c in "${CASES[@]}"; do
    name=${c%%:*}
    read -r -a flags <<<"${c#*:}"
    in_time "bytes $name" || continue
    # A paged budget as a share of the tables and their optimizer state (floats, input and
    # output), the rows counted from the first run's vocabulary.
    for i in "${!flags[@]}"; do
      if [[ ${flags[$i]} == *% ]]; then
        [[ -n $ROWS ]] || { fail "bytes $name: no vocabulary from a run before it"; continue 2; }
        per=2
        [[ " ${flags[*]} " == *" adam "* ]] && per=6
        [[ " ${flags[*]} " == *" adagrad "* ]] && per=4
        flags[i]=$((ROWS * 64 * 4 * per * ${flags[$i]%\%} / 100))
      fi
    done
    same=1
    for build in base new; do
      bin=$BASE; [[ $build == new ]] && bin=$NEW
      log="$OUT/bytes-$name-$build.log"
      for try in 1 2 3 4; do
        timeout "$(cap 300)" "$bin" train "${COMMON[@]}" "${flags[@]}" --output "$WORK/$name-$build" \
          >"$log" 2>&1
        rc=$?
        # A budget one build's plan refuses as too small (plans differ in the least they take):
        # half as much again for both builds, up to three times.
        if ((rc != 0)) && [[ $build == base && $try -lt 4 ]] && grep -q "is too small" "$log"; then
          for i in "${!flags[@]}"; do
            [[ ${flags[$i]} == --gpu-memory ]] && flags[i + 1]=$((flags[i + 1] * 3 / 2))
          done
          continue
        fi
        break
      done
      if ((rc != 0)); then
        fail "bytes $name: the $build build exited $rc ($log)"
        record bytes "$name" "$build" 1 "failed:rc=$rc" "$log"
        same=0
        continue 2
      fi
    done
    [[ -n $ROWS ]] || ROWS=$(wc -l <"$WORK/$name-new/vocab.tsv")
    files=$(cd "$WORK/$name-new" && ls ./*.npy 2>/dev/null)
    [[ -n $files ]] || { fail "bytes $name: no .npy written"; continue; }
    for f in $files; do
      cmp -s "$WORK/$name-base/$f" "$WORK/$name-new/$f" || same=0
    done
    if ((same)); then note "bytes $name: the same ($(echo "$files" | tr '\n' ' '))"; else
      fail "bytes $name: the vectors differ"
    fi
    record bytes "$name" both 1 "$([[ $same == 1 ]] && echo same || echo differ)" "$OUT/bytes-$name-new.log"
  done
fi

if [[ " $STEPS " == *" speed "* ]]; then
  ZIPF_BUDGET=$((2000000 * 128 * 2 * 2 / 10))  # 10 % of 2 M rows × 128 in bf16, both tables
  WORKLOADS=("mix5m-resident:--corpus $MIX --dim 100 --epochs 3 --min-count 5 --placement resident"
    "zipf1.0-paged10-bf16:--synthetic 2000000,50000000,1.0 --dim 128 --epochs 1 --placement paged --gpu-memory $ZIPF_BUDGET --storage bf16"
    "zipf0.7-paged10-bf16:--synthetic 2000000,50000000,0.7 --dim 128 --epochs 1 --placement paged --gpu-memory $ZIPF_BUDGET --storage bf16")
  [[ -n ${SPEED_WORKLOADS:-} ]] && IFS=';' read -r -a WORKLOADS <<<"$SPEED_WORKLOADS"
  for w in "${WORKLOADS[@]}"; do
    name=${w%%:*}
    read -r -a flags <<<"${w#*:}"
    declare -a got_base=() got_new=()
    for ((r = 1; r <= REPS; ++r)); do
      for build in base new; do
        in_time "speed $name $build $r" || continue 3
        bin=$BASE; [[ $build == new ]] && bin=$NEW
        log="$OUT/speed-$name-$build-$r.log"
        timeout "$(cap 240)" "$bin" bench train --device "$DEVICE" --window 5 --negative 5 \
          --sample 1e-3 "${flags[@]}" >"$log" 2>&1
        rc=$?
        wps=$(sed -n 's/^RESULT .*words_per_s=\([0-9.]*\)M.*/\1/p' "$log" | tail -1)
        if ((rc != 0)) || [[ -z $wps ]]; then
          fail "speed $name: the $build build, run $r, exited $rc ($log)"
          record speed "$name" "$build" "$r" "failed:rc=$rc" "$log"
          continue
        fi
        record speed "$name" "$build" "$r" "$wps" "$log"
        if [[ $build == base ]]; then got_base+=("$wps"); else got_new+=("$wps"); fi
      done
    done
    ((${#got_base[@]} && ${#got_new[@]})) || { fail "speed $name: no pair of runs"; continue; }
    median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    mb=$(median "${got_base[@]}")
    mn=$(median "${got_new[@]}")
    line="speed $name: base ${got_base[*]}, new ${got_new[*]} M words/s; medians $mb and $mn"
    if awk -v b="$mb" -v n="$mn" -v t="$TOLERANCE" 'BEGIN { exit !(n >= b * (1 - t / 100)) }'; then
      note "$line: within $TOLERANCE % ($(awk -v b="$mb" -v n="$mn" 'BEGIN { printf "%+.1f %%", 100 * (n / b - 1) }'))"
    else
      fail "$line: the new build is more than $TOLERANCE % slower"
    fi
  done
fi

note "results: $RESULTS"
if ((${#FAILURES[@]})); then
  note "FAILED: ${#FAILURES[@]} step(s): ${FAILURES[*]}"
  exit 1
fi
note "every comparison passed"
