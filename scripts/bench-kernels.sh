#!/usr/bin/env bash
# Skip-gram's two window updates side by side on one GPU: the per-pair kernel (the default) and
# --kernel shared-negatives (docs/design-kernels.md, "Shared negatives"). In one call:
#   speed    `pagedw2v bench train`, dim 128 window 5 negative 5 sample 1e-3: mix5m × 4 resident,
#            Zipf 1.0 and 0.7 synthetic streams (10 M rows, 100 M words) resident, the walks
#            (scripts/make_walks.sh, 2 M nodes) resident, and paged at 10 % and 30 % budgets;
#   quality  mix5m, dim 100, 5 epochs, seeds 1 2 3: `pagedw2v train` then `pagedw2v eval`
#            (analogy over the 30,000 most frequent words, WordSim-353);
#   dram     with ncu on PATH or beside nvcc: DRAM bytes per word of the training kernel
#            (mix5m, dim 128, one epoch), for each kernel.
# Results go to $OUT (default build-gpu/bench-kernels); a summary table is printed last and
# written to $OUT/summary.txt.
#
#   scripts/bench-kernels.sh [speed] [quality] [paged] [dram]      (default: all four)
#
# Environment: BUILD (default build-gpu; the script builds pagedw2v there unless BIN is given),
# BIN (a directory holding a built pagedw2v), DATA (the folder with mix5m.txt.gz,
# questions-words.txt and wordsim353.tsv; default: the first of ../shared/data, shared/data and
# .cache that has mix5m), LIMIT_S (seconds after which steps not yet begun are skipped, and a
# running one is cut off 60 s later; default 420, so a call ends within 8 minutes of the build),
# JOBS (build jobs, default 16). Steps run in order of importance: mix5m × 4 speed, quality, the
# Zipf streams and the walks, paged, DRAM.
#
# Every step runs even when one before it failed; a failed step is recorded with its exit status
# in the summary and the script exits non-zero at the end.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=bench-kernels
LIMIT_S=${LIMIT_S:-420}
STEPS=${*:-speed quality paged dram}
# shellcheck source=scripts/lib/bench-common.sh
source "$ROOT/scripts/lib/bench-common.sh"
bench_init step kernel workload value unit log

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

note "== bench-kernels $(date -u +%Y-%m-%dT%H:%M:%SZ) steps: $STEPS"
bench_machine
bench_build
bench_data
[[ -s $MIX ]] || fail "no mix5m corpus (looked in ../shared/data, shared/data, .cache)"
note "data: ${DATA:-none}"

bench_start

KERNELS="per-pair shared-negatives"
COMMON=(--device cuda --window 5 --negative 5 --sample 1e-3)

# bench STEP KERNEL WORKLOAD LIMIT ARGS...: one `pagedw2v bench train`, its words/s recorded.
bench() {
  local step=$1 kernel=$2 workload=$3 limit=$4
  shift 4
  in_time "$step $workload $kernel" || return 0
  local log="$OUT/${step}_${workload}_${kernel}.log"
  timeout -k 10 "$(cap "$limit")" "$PW" bench train "${COMMON[@]}" --kernel "$kernel" "$@" >"$log" 2>&1
  local rc=$?
  local wps
  wps=$(sed -n 's/^RESULT .*words_per_s=\([0-9.]*\)M.*/\1/p' "$log" | tail -1)
  if [[ $rc -ne 0 || -z $wps ]]; then
    fail "$step $workload $kernel (rc=$rc, $log)"
    record "$step" "$kernel" "$workload" "failed:rc=$rc" "M words/s" "$log"
  else
    record "$step" "$kernel" "$workload" "$wps" "M words/s" "$log"
  fi
}

ZIPF_ROWS=10000000
ZIPF_WORDS=100000000
WALKS="$WORK/walks.txt"

if has_step speed && [[ -s $MIX ]]; then
  for k in $KERNELS; do
    bench speed "$k" mix5m_x4 120 --corpus "$MIX" --repeat 4 --epochs 3 --dim 128
  done
fi

# --- quality: mix5m, dim 100, 5 epochs, 3 seeds ----------------------------------------------
if has_step quality && [[ -s $MIX ]]; then
  if [[ ! -s $QUESTIONS || ! -s $WORDSIM ]]; then
    fail "quality: no questions-words.txt or wordsim353.tsv in ${DATA:-the data folder}"
  else
    for seed in 1 2 3; do
      for k in $KERNELS; do
        in_time "quality $k seed $seed" || continue
        run="$WORK/quality_${k}_s$seed"
        log="$OUT/quality_${k}_s$seed.log"
        if timeout -k 10 "$(cap 120)" "$PW" train --corpus "$MIX" --output "$run" --overwrite --device cuda \
          --kernel "$k" --dim 100 --window 5 --negative 5 --sample 1e-3 --min-count 5 --epochs 5 \
          --seed "$seed" --format npy >"$log" 2>&1 &&
          timeout -k 10 "$(cap 120)" "$PW" eval --vectors "$run" --analogies "$QUESTIONS" \
            --similarity "$WORDSIM" >"$OUT/quality_${k}_s$seed.eval" 2>&1; then
          ev="$OUT/quality_${k}_s$seed.eval"
          acc=$(sed -n 's/.*Total accuracy: \([0-9.]*\)%.*/\1/p' "$ev" | tail -1)
          rho=$(sed -n 's/.*Spearman \([0-9.-]*\).*/\1/p' "$ev" | tail -1)
          record quality "$k" "mix5m_s$seed" "${acc:-?}" "analogy %" "$ev"
          record quality "$k" "mix5m_s$seed" "${rho:-?}" "wordsim353" "$ev"
          rm -rf "$run"
        else
          fail "quality $k seed $seed (see $log)"
          record quality "$k" "mix5m_s$seed" "failed" "analogy %" "$log"
        fi
      done
    done
  fi
fi

if has_step speed; then
  for z in 1.0 0.7; do
    for k in $KERNELS; do
      bench speed "$k" "zipf$z" 150 --synthetic "$ZIPF_ROWS,$ZIPF_WORDS,$z" --epochs 1 --dim 128 \
        --placement resident
    done
  done
fi
if has_step speed || has_step paged; then
  if in_time "walks corpus"; then
    timeout -k 10 "$(cap 120)" "$ROOT/scripts/make_walks.sh" "$WALKS" >"$OUT/make_walks.log" 2>&1 ||
      fail "make_walks (see $OUT/make_walks.log)"
  fi
fi
if has_step speed && [[ -s $WALKS ]]; then
  for k in $KERNELS; do
    bench speed "$k" walks 150 --corpus "$WALKS" --epochs 1 --dim 128 --min-count 1 --threads 16 \
      --placement resident
  done
fi

# --- paged at 10 % and 30 % of the fp32 tables ------------------------------------------------
if has_step paged; then
  # mix5m × 4, dim 128: 33,755 words × 2 tables × 512 B = 34.6 MB.
  if [[ -s $MIX ]]; then
    for pct in 10 30; do
      budget=$((34564096 * pct / 100))
      for k in $KERNELS; do
        bench paged "$k" "mix5m_x4_${pct}pct" 120 --corpus "$MIX" --repeat 4 --epochs 3 --dim 128 \
          --placement paged --gpu-memory "$budget"
      done
    done
  fi
  # Zipf 1.0, 10 M rows × 2 tables × 512 B = 10.24 GB.
  for pct in 10 30; do
    budget=$((10240000000 * pct / 100))
    for k in $KERNELS; do
      bench paged "$k" "zipf1.0_${pct}pct" 180 --synthetic "$ZIPF_ROWS,$ZIPF_WORDS,1.0" --epochs 1 \
        --dim 128 --placement paged --gpu-memory "$budget"
    done
  done
  # The walks, 2 M rows × 2 tables × 512 B = 2.05 GB.
  if [[ -s $WALKS ]]; then
    for pct in 10 30; do
      budget=$((2048000000 * pct / 100))
      for k in $KERNELS; do
        bench paged "$k" "walks_${pct}pct" 150 --corpus "$WALKS" --epochs 1 --dim 128 \
          --min-count 1 --threads 16 --placement paged --gpu-memory "$budget"
      done
    done
  fi
fi

# --- DRAM bytes per word (ncu) ----------------------------------------------------------------
if has_step dram && [[ -s $MIX ]]; then
  NCU=$(command -v ncu || command -v "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/ncu" || true)
  if [[ -z $NCU ]]; then
    note "dram: ncu not found; skipped"
  else
    for k in $KERNELS; do
      in_time "dram $k" || continue
      log="$OUT/dram_${k}.log"
      timeout -k 10 "$(cap 150)" "$NCU" --kernel-name regex:sgns_kernel --metrics \
        dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum --csv --print-units base \
        "$PW" bench train "${COMMON[@]}" --kernel "$k" --corpus "$MIX" --epochs 1 --dim 128 \
        >"$log" 2>&1
      rc=$?
      words=$(sed -n 's/^RESULT .* words=\([0-9]*\) .*/\1/p' "$log" | tail -1)
      # Sum each metric over every launch of the training kernel.
      read -r dram l2 < <(awk -F'","' '
        /dram__bytes_(read|write)\.sum/ { v = $NF; gsub(/[",]/, "", v); d += v }
        /lts__t_bytes\.sum/ { v = $NF; gsub(/[",]/, "", v); l += v }
        END { printf "%.0f %.0f\n", d, l }' "$log")
      if [[ $rc -ne 0 || -z $words || ${dram:-0} == 0 ]]; then
        fail "dram $k (rc=$rc, $log)"
        record dram "$k" mix5m "failed:rc=$rc" "DRAM bytes/word" "$log"
      else
        record dram "$k" mix5m "$(awk -v b="$dram" -v w="$words" 'BEGIN { printf "%.0f", b / w }')" \
          "DRAM bytes/word" "$log"
        record dram "$k" mix5m "$(awk -v b="$l2" -v w="$words" 'BEGIN { printf "%.0f", b / w }')" \
          "L2 bytes/word" "$log"
      fi
    done
  fi
fi

# --- summary ---------------------------------------------------------------------------------
note ""
note "== summary (${RESULTS}; elapsed $(($(date +%s) - START)) s after the build)"
awk -F'\t' '
  NR == 1 { next }
  {
    key = $1 "\t" $3 "\t" $5
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    val[key, $2] = $4
  }
  END {
    printf "%-8s %-20s %-16s %14s %18s %8s\n", "step", "workload", "unit", "per-pair", "shared-negatives", "ratio"
    for (i = 1; i <= n; ++i) {
      split(order[i], f, "\t")
      a = val[order[i], "per-pair"]; b = val[order[i], "shared-negatives"]
      r = (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", b / a) : "-"
      printf "%-8s %-20s %-16s %14s %18s %8s\n", f[1], f[2], f[3], a == "" ? "-" : a, b == "" ? "-" : b, r
    }
  }' "$RESULTS" | tee -a "$SUMMARY"
# Quality: the mean over seeds of each kernel.
awk -F'\t' '$1 == "quality" && $4 + 0 == $4 { s[$2 "\t" $5] += $4; c[$2 "\t" $5]++ }
  END { for (k in s) { split(k, f, "\t"); printf "quality mean %-18s %-12s %.4f over %d seeds\n", f[1], f[2], s[k] / c[k], c[k] } }' \
  "$RESULTS" | sort | tee -a "$SUMMARY"
if ((${#FAILURES[@]} > 0)); then
  note "failed or skipped steps: ${#FAILURES[@]}"
  for f in "${FAILURES[@]}"; do note "  $f"; done
  exit 1
fi
note "all steps passed"
