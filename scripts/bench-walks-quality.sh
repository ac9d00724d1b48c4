#!/usr/bin/env bash
# Quality of skip-gram on graph random walks: word2vec C against pagedw2v's window kernels
# (per-pair and --kernel shared-negatives, docs/design-kernels.md) on the same walk corpus, scored
# by how well the vectors recover the graph the walks ran on (scripts/walks_quality.py: recall@10
# of each node's nearest vectors among its graph neighbours, and link-prediction AUC).
#
# In one call it
#   1. builds word2vec C from the source file $W2V_C (gcc -O3 -march=native -funroll-loops);
#   2. writes the walks and the graph's edge list (scripts/make_walks.cpp --edges): $NODES nodes,
#      $WALKS walks of $LENGTH from each. The defaults, 100,000 × 5 × 40 = 20 M tokens and 3 epochs
#      (60 M words), are sized for word2vec C to train within about 30 s with 16 threads at
#      125 k words/s a thread; one epoch leaves the vectors far from converged (recall@10 well
#      below its 3-epoch value), and at 3 epochs recall@10 is still well short of 1, so a worse
#      update shows;
#   3. for each seed of $SEEDS: trains word2vec C (-cbow 0 -size 128 -window 5 -negative 5
#      -sample 1e-3 -min-count 1 -iter $EPOCHS -binary 1), then pagedw2v train with the same
#      settings for each kernel of $KERNELS, and scores each vectors file. word2vec C has no seed
#      flag; its repeats show its run-to-run spread from thread timing;
#   4. scores random vectors of the same shape (the floor: recall near 0, AUC near 0.5) and prints
#      a table: trainer, kernel, seed, recall@10, auc, train seconds, then the mean over seeds.
#
#   W2V_C=path/to/word2vec.c scripts/bench-walks-quality.sh
#
# Environment: W2V_C (word2vec.c, default .cache/w2vc/word2vec.c when it is there; without it
# word2vec C's rows fail and the rest still runs),
# PW (pagedw2v binary, default build/bin/pagedw2v), DEVICE (cuda), THREADS (16), EPOCHS (3),
# KERNELS ("per-pair shared-negatives"), SEEDS ("1 2"), NODES (100000), WALKS (5), LENGTH (40),
# GRAPH_SEED (1), OUT (logs and results, default build/bench-walks-quality), WORK (corpus, binaries
# and vectors, default ${TMPDIR:-/tmp}/bench-walks-quality-work; a corpus already there with the same
# arguments is reused), LIMIT_S (seconds after the corpus is ready past which steps not yet begun are
# skipped and a running one is cut off 60 s later; default 480), PYTHON (a python3 with numpy;
# default the first of python3 and /usr/bin/python3 that imports it).
#
# Everything logs to $OUT; the table is also in $OUT/summary.txt and $OUT/results.tsv. Every step
# runs even when one before it failed; the script exits 1 when any step failed or was skipped.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PW=${PW:-$ROOT/build/bin/pagedw2v}
W2V_C=${W2V_C:-}
[[ -z $W2V_C && -f $ROOT/.cache/w2vc/word2vec.c ]] && W2V_C=$ROOT/.cache/w2vc/word2vec.c
DEVICE=${DEVICE:-cuda}
THREADS=${THREADS:-16}
EPOCHS=${EPOCHS:-3}
KERNELS=${KERNELS:-per-pair shared-negatives}
SEEDS=${SEEDS:-1 2}
NODES=${NODES:-100000}
WALKS=${WALKS:-5}
LENGTH=${LENGTH:-40}
GRAPH_SEED=${GRAPH_SEED:-1}
OUT=${OUT:-$ROOT/build/bench-walks-quality}
WORK=${WORK:-${TMPDIR:-/tmp}/bench-walks-quality-work}
LIMIT_S=${LIMIT_S:-480}
mkdir -p "$OUT" "$WORK" || exit 1
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
BENCH=bench-walks-quality
# shellcheck source=scripts/lib/bench-common.sh
source "$ROOT/scripts/lib/bench-common.sh"
bench_init trainer kernel seed recall@10 auc train_s log
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

note "== bench-walks-quality $(date -u +%Y-%m-%dT%H:%M:%SZ)"
note "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
note "graph: $NODES nodes, $WALKS walks of $LENGTH, seed $GRAPH_SEED; dim 128 window 5 negative 5" \
  "sample 1e-3 min-count 1, $EPOCHS epochs, $THREADS threads, device $DEVICE"
if [[ $DEVICE == cuda* ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
fi
note "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') × $(nproc)"

if [[ -z ${PYTHON:-} ]]; then
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then PYTHON=$p; break; fi
  done
fi
PYTHON=${PYTHON:-}
[[ -n $PYTHON ]] || fail "no python3 with numpy (set PYTHON)"
[[ -x $PW ]] || fail "no pagedw2v at $PW (set PW)"

# --- word2vec C ---------------------------------------------------------------------------------
W2V="$WORK/word2vec"
if [[ -z $W2V_C || ! -f $W2V_C ]]; then
  fail "word2vec C: no source (set W2V_C to word2vec.c)"
  W2V=
elif ! gcc -O3 -march=native -funroll-loops -pthread -o "$W2V" "$W2V_C" -lm >"$OUT/w2vc_build.log" 2>&1; then
  fail "word2vec C: build failed ($OUT/w2vc_build.log)"
  W2V=
fi

# --- corpus and graph ---------------------------------------------------------------------------
TAG="n${NODES}_w${WALKS}_l${LENGTH}_s${GRAPH_SEED}"
CORPUS="$WORK/walks_$TAG.txt"
EDGES="$WORK/edges_$TAG.txt"
if [[ -s $CORPUS && -s $EDGES && $CORPUS -nt $ROOT/scripts/make_walks.cpp ]]; then
  note "corpus: $CORPUS (reused)"
else
  t0=$(now)
  if g++ -O2 -std=c++17 -o "$WORK/make_walks" "$ROOT/scripts/make_walks.cpp" >"$OUT/make_walks.log" 2>&1 &&
    "$WORK/make_walks" --nodes "$NODES" --walks "$WALKS" --length "$LENGTH" --seed "$GRAPH_SEED" \
      --output "$CORPUS.part" --edges "$EDGES.part" >>"$OUT/make_walks.log" 2>&1 &&
    mv "$EDGES.part" "$EDGES" && mv "$CORPUS.part" "$CORPUS"; then
    note "corpus: $CORPUS, $(wc -l <"$EDGES") edges, written in $(since "$t0") s"
  else
    rm -f "$CORPUS.part" "$EDGES.part"
    fail "corpus: make_walks failed ($OUT/make_walks.log)"
  fi
fi
[[ -s $CORPUS ]] && note "corpus: $(wc -w <"$CORPUS") tokens, $(du -h "$CORPUS" | cut -f1)"

bench_start  # LIMIT_S counts from the corpus being ready (in_time, cap)

SCORED=()
# score TRAINER KERNEL SEED VECTORS TRAIN_S LOG: scores one vectors file and records its row.
score() {
  local trainer=$1 kernel=$2 seed=$3 vectors=$4 secs=$5 log=$6 line recall auc
  local qlog="${log%.log}.quality"
  if timeout -k 10 "$(cap $((LIMIT_S + 60)))" "$PYTHON" "$ROOT/scripts/walks_quality.py" --vectors "$vectors" \
    --edges "$EDGES" ${7:+"$7"} >"$qlog" 2>&1; then
    line=$(grep '^walks_quality ' "$qlog" | tail -1)
    recall=$(sed -n 's/.*recall@10=\([0-9.]*\).*/\1/p' <<<"$line")
    auc=$(sed -n 's/.*auc=\([0-9.]*\).*/\1/p' <<<"$line")
  fi
  if [[ -z ${recall:-} || -z ${auc:-} ]]; then
    fail "$trainer $kernel seed $seed: scoring failed ($qlog)"
    record "$trainer" "$kernel" "$seed" failed failed "$secs" "$qlog"
    return
  fi
  record "$trainer" "$kernel" "$seed" "$recall" "$auc" "$secs" "$log"
  SCORED+=("$vectors")
}

if [[ -s $CORPUS && -s $EDGES && -n $PYTHON ]]; then
  for seed in $SEEDS; do
    if [[ -n $W2V ]] && in_time "word2vec C seed $seed"; then
      vec="$WORK/w2vc_s$seed.bin"
      log="$OUT/w2vc_s$seed.log"
      rm -f "$vec"
      t0=$(now)
      timeout -k 10 "$(cap $((LIMIT_S + 60)))" "$W2V" -train "$CORPUS" -output "$vec" -cbow 0 -size 128 -window 5 \
        -negative 5 -hs 0 -sample 1e-3 -min-count 1 -iter "$EPOCHS" -threads "$THREADS" -binary 1 >"$log" 2>&1
      rc=$?
      secs=$(since "$t0")
      if [[ $rc -ne 0 || ! -s $vec ]]; then
        fail "word2vec C seed $seed: rc=$rc ($log)"
        record word2vec-c - "$seed" failed failed "$secs" "$log"
      else
        score word2vec-c - "$seed" "$vec" "$secs" "$log"
      fi
    fi
    [[ -x $PW ]] || continue
    for k in $KERNELS; do
      in_time "pagedw2v $k seed $seed" || continue
      run="$WORK/pw_${k}_s$seed"
      log="$OUT/pw_${k}_s$seed.log"
      rm -rf "$run"
      t0=$(now)
      timeout -k 10 "$(cap $((LIMIT_S + 60)))" "$PW" train --corpus "$CORPUS" --output "$run" --dim 128 --window 5 \
        --negative 5 --sample 1e-3 --min-count 1 --epochs "$EPOCHS" --threads "$THREADS" \
        --device "$DEVICE" --kernel "$k" --seed "$seed" --format bin >"$log" 2>&1
      rc=$?
      secs=$(since "$t0")
      if [[ $rc -ne 0 || ! -s $run/vectors.bin ]]; then
        fail "pagedw2v $k seed $seed: rc=$rc ($log)"
        record pagedw2v "$k" "$seed" failed failed "$secs" "$log"
      else
        score pagedw2v "$k" "$seed" "$run/vectors.bin" "$secs" "$log"
      fi
    done
  done
  if ((${#SCORED[@]})) && in_time "random baseline"; then
    score random - - "${SCORED[0]}" - "$OUT/random.log" --random
  fi
fi

# --- summary ------------------------------------------------------------------------------------
note ""
{
  printf '%-11s %-17s %-5s %-10s %-7s %s\n' trainer kernel seed recall@10 auc train_s
  awk -F'\t' 'NR > 1 { printf "%-11s %-17s %-5s %-10s %-7s %s\n", $1, $2, $3, $4, $5, $6 }' "$RESULTS"
  echo
  echo "mean over seeds:"
  awk -F'\t' 'NR > 1 && $4 != "failed" {
      key = $1 "\t" $2
      if (!(key in n)) order[++m] = key
      n[key]++; r[key] += $4; a[key] += $5; if ($6 != "-") { t[key] += $6; tn[key]++ }
    }
    END {
      for (i = 1; i <= m; i++) {
        key = order[i]; split(key, f, "\t")
        printf "%-11s %-17s n=%-3d %-10.4f %-7.4f %s\n", f[1], f[2], n[key], r[key] / n[key], a[key] / n[key],
          tn[key] ? sprintf("%.1f", t[key] / tn[key]) : "-"
      }
    }' "$RESULTS"
} | tee -a "$SUMMARY"

if ((${#FAILURES[@]})); then
  note ""
  note "${#FAILURES[@]} step(s) failed or skipped:"
  for f in "${FAILURES[@]}"; do note "  $f"; done
  exit 1
fi
exit 0
