#!/usr/bin/env bash
# Times `pagedw2v train` over MPI ranks, as a user runs it: the same corpus file on 1, 2, …
# ranks (`mpirun -np N`, one GPU a rank with --device cuda), and for each run its training
# words/s, the speed-up over the first run, and every rank's peak host memory (GNU time, else
# run.json) and, with a GPU, peak GPU memory (nvidia-smi, sampled every 200 ms).
#
# Usage: scripts/bench_ranks.sh WORKDIR (--corpus FILE [--repeat R] | --synthetic VOCAB,WORDS,ZIPF)
#                               [--ranks "1 2"] [-- train flags...]
#   --corpus FILE   a text corpus; --repeat R trains on it written R times one after the other
#                   (mix5m × 4: --repeat 4)
#   --synthetic     the stream of `bench train --synthetic` written as files by `bench synthetic`
#                   (its vocabulary is read back whole: --min-count 1)
#   train flags     default: --device cuda --dim 128 --epochs 1 --format npy
# Prints one `RESULT` line per run. Needs a build with MPI (build/ or $BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/bench_ranks.sh WORKDIR (--corpus FILE [--repeat R] | --synthetic V,W,S) [--ranks \"1 2\"] [-- train flags...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
work=$1
shift
corpus="" repeat=1 synthetic="" ranks="1 2"
while [ $# -gt 0 ]; do
  case $1 in
    --corpus) corpus=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --synthetic) synthetic=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "bench_ranks.sh: unknown flag $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--device cuda --dim 128 --epochs 1 --format npy)
if { [ -n "$corpus" ] && [ -n "$synthetic" ]; } || { [ -z "$corpus" ] && [ -z "$synthetic" ]; }; then
  echo "bench_ranks.sh: give --corpus or --synthetic (one of them)" >&2
  exit 2
fi
bin=${BUILD_DIR:-build}/bin/pagedw2v
[ -x "$bin" ] || { echo "bench_ranks.sh: build first ($bin missing)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "bench_ranks.sh: mpirun not found" >&2; exit 1; }
mkdir -p "$work"

input=()
if [ -n "$synthetic" ]; then
  dir=$work/synthetic-${synthetic//,/-}
  [ -s "$dir/vocab.tsv" ] || "$bin" bench synthetic --synthetic "$synthetic" --output "$dir" >/dev/null
  input=(--corpus "$dir/corpus.txt" --vocab "$dir/vocab.tsv" --min-count 1)
else
  [ -s "$corpus" ] || { echo "bench_ranks.sh: no corpus $corpus" >&2; exit 1; }
  file=$corpus
  if [ "$repeat" -gt 1 ]; then
    file=$work/$(basename "$corpus")-x$repeat
    if [ ! -s "$file" ]; then
      for _ in $(seq "$repeat"); do cat "$corpus"; done >"$file.tmp"
      mv "$file.tmp" "$file"
    fi
  fi
  input=(--corpus "$file")
fi

mpi=(--bind-to none --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
first=""
for n in $ranks; do
  out=$work/run-$n
  rm -rf "$out"
  gpu_log=$work/gpu-$n.csv
  : >"$gpu_log"
  sampler=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 \
      >"$gpu_log" 2>/dev/null &
    sampler=$!
  fi
  log=$work/run-$n.log
  rc=0
  # Each rank's peak resident memory: GNU time's, one file a rank (run.json holds it only for
  # two ranks or more).
  rm -f "$work/rss-$n".*
  wrap=()
  if [ -x /usr/bin/time ]; then
    wrap=(bash -c 'exec /usr/bin/time -f %M -o "$0.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}" "$@"' "$work/rss-$n")
  fi
  mpirun -np "$n" "${mpi[@]}" "${wrap[@]}" "$bin" train "${input[@]}" --output "$out" "${flags[@]}" >"$log" 2>&1 || rc=$?
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "RESULT ranks=$n failed (exit $rc): $(tail -1 "$log")"
    continue
  fi
  # "trained W words in T s on …: R words/s (…)"
  wps=$(grep -oE 'trained [0-9]+ words in [0-9.]+ s on [^:]*: [0-9]+ words/s' "$log" | tail -1 |
    grep -oE '[0-9]+ words/s' | grep -oE '^[0-9]+')
  [ -n "$first" ] || first=$wps
  host=$(python3 - "$out/run.json" "$work/rss-$n" <<'PY'
import glob, json, sys
kib = sorted(glob.glob(sys.argv[2] + ".*"), key=lambda f: int(f.rsplit(".", 1)[1]))
if kib:
    print(",".join(f"{int(open(f).read().split()[-1]) / 2**20:.3f}" for f in kib))
else:
    d = json.load(open(sys.argv[1]))
    print(",".join(f"{r['peak_rss_bytes'] / 2**30:.3f}" for r in d.get("ranks", [])) or "-")
PY
)
  gpu=$(awk -F', *' '$2 ~ /^[0-9]+$/ { if ($2 > m[$1]) m[$1] = $2 } END { s = ""; for (p in m) s = s (s == "" ? "" : ",") m[p]; print (s == "" ? "-" : s) }' "$gpu_log")
  speedup=$(awk -v a="$wps" -v b="$first" 'BEGIN { printf "%.2f", a / b }')
  echo "RESULT ranks=$n words_per_s=$wps speedup=$speedup host_peak_gib=$host gpu_peak_mib=$gpu log=$log"
done
