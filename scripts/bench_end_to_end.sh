#!/usr/bin/env bash
# Times whole `pagedw2v train` commands, as a user runs them, on a large-vocabulary corpus file
# (random walks over a power-law graph, scripts/make_walks.sh: 2 M distinct words, 80 M tokens)
# and, when given word2vec.c's source, word2vec C on the same file with the same settings.
# Usage: scripts/bench_end_to_end.sh WORKDIR [--device cuda|cpu] [--threads N] [--word2vec-c PATH/word2vec.c]
#        [--nodes N] [--repeat R]
# Prints one `RESULT` line per command: wall seconds (GNU time), peak RSS, and pagedw2v's summary
# and `time:` lines (word2vec C prints no such lines).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/bench_end_to_end.sh WORKDIR [--device D] [--threads N] [--word2vec-c FILE] [--nodes N] [--repeat R]" >&2; exit 2; }
work=$1
shift
device=cuda threads=$(nproc) w2v_src="" nodes=2000000 repeat=2
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2 ;;
    --threads) threads=$2 ;;
    --word2vec-c) w2v_src=$2 ;;
    --nodes) nodes=$2 ;;
    --repeat) repeat=$2 ;;
    *) echo "bench_end_to_end.sh: unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
bin=${BUILD_DIR:-build}/bin/pagedw2v
[ -x "$bin" ] || { echo "bench_end_to_end.sh: build first ($bin missing)" >&2; exit 1; }
mkdir -p "$work"
corpus=$work/walks-$nodes.txt
if [ ! -s "$corpus" ]; then
  scripts/make_walks.sh "$corpus" --nodes "$nodes"
fi
echo "corpus: $corpus ($(stat -c %s "$corpus") bytes)"
cat "$corpus" >/dev/null  # the file in the page cache for every command alike

timed() {  # timed NAME CMD...: runs CMD, prints the end of its output and a RESULT line
  local name=$1
  shift
  local tf=$work/time.$$ wall rss_kb=0 t0 t1
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$tf" "$@" 2>&1 | sed -n -E '/^(vocabulary|backend|time):|trained [0-9]|error/p'
    read -r wall rss_kb <"$tf"
  else  # no GNU time: wall clock only
    t0=$(date +%s.%N)
    "$@" 2>&1 | sed -n -E '/^(vocabulary|backend|time):|trained [0-9]|error/p'
    t1=$(date +%s.%N)
    wall=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
  fi
  echo "RESULT name=$name wall_s=$wall peak_rss_mib=$((rss_kb / 1024))"
  rm -f "$tf"
}

for r in $(seq 1 "$repeat"); do
  rm -rf "$work/out"
  timed "pagedw2v-$device-run$r" "$bin" train --corpus "$corpus" --output "$work/out" --device "$device" \
    --threads "$threads" --dim 128 --window 5 --negative 5 --sample 1e-3 --min-count 1 --epochs 1 \
    --format npy
done
if [ -n "$w2v_src" ]; then
  gcc -O3 -march=native -funroll-loops -Wno-unused-result -o "$work/word2vec" "$w2v_src" -lm -pthread
  timed "word2vec-c-threads$threads" "$work/word2vec" -train "$corpus" -output "$work/w2v.bin" \
    -cbow 0 -size 128 -window 5 -negative 5 -hs 0 -sample 1e-3 -min-count 1 -iter 1 -binary 1 \
    -threads "$threads"
fi
