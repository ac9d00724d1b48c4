#!/usr/bin/env bash
# Hierarchical softmax on one GPU beside negative sampling, in one call: mix5m with word2vec's
# settings `-size 100 -window 5 -sample 1e-3 -min-count 5 -iter 2`, skip-gram (-cbow 0) and CBOW
# (-cbow 1), each with `-hs 1 -negative 0` and with `-hs 0 -negative 5`, on the CUDA backend
# resident and paged at 30 % of the table bytes (input and output vectors: vocabulary × 2 × 100
# floats, the vocabulary read from the resident run's log). Every run is evaluated with
# `pagedw2v eval` (analogies of questions-words.txt, WordSim-353) and its words/s read from the
# train log's "trained … words/s" line. A paged run the plan refuses at 30 % is recorded with its
# one line, and tried again at 50 %, then 70 % (so the table still has a paged figure, marked as
# such): with hierarchical softmax the tree's paths and a cache that holds two of mix5m's
# 1000-word sentences with every inner node of their paths need more than 30 % of its tables.
# Results go to $OUT (default build-gpu/bench-hs); the summary table is printed last and written
# to $OUT/summary.txt.
#
#   scripts/bench-hs.sh
#
# Environment: BUILD (default build-gpu; the script builds pagedw2v there unless BIN is given),
# BIN (a directory holding a built pagedw2v), DATA (the folder with mix5m.txt.gz,
# questions-words.txt and wordsim353.tsv; default: the first of ../shared/data, shared/data and
# .cache that has mix5m), LIMIT_S (seconds after which steps not yet begun are skipped, and a
# running one is cut off 60 s later; default 300, so a call ends within 6 minutes of the build),
# JOBS (build jobs, default 16).
#
# Every step runs even when one before it failed; a failed step is recorded with its exit status
# in the summary and the script exits non-zero at the end.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=bench-hs
LIMIT_S=${LIMIT_S:-300}
# shellcheck source=scripts/lib/bench-common.sh
source "$ROOT/scripts/lib/bench-common.sh"
bench_init model loss placement budget words_per_s analogy_pct wordsim353 log

note "== bench-hs $(date -u +%Y-%m-%dT%H:%M:%SZ)"
bench_machine
bench_build
bench_data
note "data: ${DATA:-none}"
if [[ ! -s $MIX ]]; then
  fail "no mix5m corpus (looked in ../shared/data, shared/data, .cache)"
  exit 1
fi
[[ -s $QUESTIONS && -s $WORDSIM ]] ||
  fail "no questions-words.txt or wordsim353.tsv in ${DATA:-the data folder}: no quality figures"

bench_start

# word2vec's flags, as the command reads them (foreign flags), then ours.
W2V=(-size 100 -window 5 -sample 1e-3 -min-count 5 -iter 2)
ROWS_FLOATS=100  # floats a row of dim 100 takes on the device (a multiple of 4)

# One run: train, then eval. Arguments: model (sg|cbow), loss (hs|ns), placement label, budget
# (bytes, or "" for resident), then extra flags. Sets RUN_RC and RUN_LOG.
run_one() {
  local model=$1 loss=$2 label=$3 budget=$4
  shift 4
  local name="${model}_${loss}_${label}"
  local run="$WORK/$name" log="$OUT/$name.log" ev="$OUT/$name.eval"
  RUN_LOG=$log
  RUN_RC=1
  in_time "$name" || return 0
  local cbow=0 lossflags=(-hs 1 -negative 0)
  [[ $model == cbow ]] && cbow=1
  [[ $loss == ns ]] && lossflags=(-hs 0 -negative 5)
  local place=(--placement resident)
  [[ -n $budget ]] && place=(--placement paged --gpu-memory "$budget")
  timeout -k 10 "$(cap 150)" "$PW" train -train "$MIX" -output "$run" "${W2V[@]}" -cbow "$cbow" \
    "${lossflags[@]}" --device cuda "${place[@]}" --format npy --keep-checkpoints 0 --overwrite "$@" >"$log" 2>&1
  RUN_RC=$?
  local wps acc="-" rho="-"
  wps=$(sed -n 's/^trained .*: \([0-9]*\) words\/s .*/\1/p' "$log" | tail -1)
  if [[ $RUN_RC -ne 0 || -z $wps ]]; then
    fail "$name train (rc=$RUN_RC): $(grep -v '^ ' "$log" | tail -1)"
    record "$model" "$loss" "$label" "${budget:-all}" "failed:rc=$RUN_RC" "-" "-" "$log"
    rm -rf "$run"
    return 0
  fi
  if [[ -s $QUESTIONS && -s $WORDSIM ]]; then
    if timeout -k 10 "$(cap 120)" "$PW" eval --vectors "$run" --analogies "$QUESTIONS" \
      --similarity "$WORDSIM" >"$ev" 2>&1; then
      acc=$(sed -n 's/.*Total accuracy: \([0-9.]*\)%.*/\1/p' "$ev" | tail -1)
      rho=$(sed -n 's/.*Spearman \([0-9.-]*\).*/\1/p' "$ev" | tail -1)
    else
      fail "$name eval (see $ev)"
    fi
  fi
  record "$model" "$loss" "$label" "${budget:-all}" "$wps" "${acc:--}" "${rho:--}" "$log"
  rm -rf "$run"
}

# The vocabulary of a run's log: "vocabulary: N words (min-count …".
vocab_of() { sed -n 's/^vocabulary: \([0-9]*\) words.*/\1/p' "$1" | head -1; }

for model in sg cbow; do
  for loss in hs ns; do
    run_one "$model" "$loss" resident ""
  done
  # 30 % of the table bytes: vocabulary × 2 tables × 100 floats × 4 bytes.
  vocab=$(vocab_of "$OUT/${model}_hs_resident.log")
  [[ -z $vocab ]] && vocab=$(vocab_of "$OUT/${model}_ns_resident.log")
  if [[ -z $vocab ]]; then
    fail "$model paged: no vocabulary size in the resident logs"
    continue
  fi
  tables=$((vocab * 2 * ROWS_FLOATS * 4))
  budget=$((tables * 30 / 100))
  note "$model: vocabulary $vocab words, tables $tables bytes, paged budget $budget bytes (30 %)"
  for loss in hs ns; do
    run_one "$model" "$loss" paged30 "$budget"
    for pct in 50 70; do
      [[ $RUN_RC -ne 0 ]] && grep -q "gpu-memory" "$RUN_LOG" || break
      # The plan refused the budget (its line is in the summary): a figure at a larger one.
      run_one "$model" "$loss" "paged$pct" "$((tables * pct / 100))"
    done
    grep -hE "tables paged" "$OUT/${model}_${loss}_paged"*.log 2>/dev/null | head -2 |
      sed "s/^/  ${model} ${loss}: /" | tee -a "$SUMMARY"
  done
done

note ""
note "mix5m, -size 100 -window 5 -sample 1e-3 -min-count 5 -iter 2, CUDA backend:"
column -t -s $'\t' <(cut -f1-7 "$RESULTS") | tee -a "$SUMMARY"
note ""
if ((${#FAILURES[@]} > 0)); then
  note "${#FAILURES[@]} failed or skipped:"
  for f in "${FAILURES[@]}"; do note "  $f"; done
  exit 1
fi
note "all steps passed"
