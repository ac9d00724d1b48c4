#!/usr/bin/env bash
# Writes a large-vocabulary benchmark corpus: random walks over a random power-law graph
# (scripts/make_walks.cpp says how). Defaults: 2,000,000 nodes, one walk of 40 from each, degree
# exponent 2.5, seed 1: 80 M tokens, 2 M distinct words, ~596 MB. `--edges FILE` also writes the
# graph, one `u v` edge a line (the walks stay the same).
# Usage: scripts/make_walks.sh OUTPUT [make_walks flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/make_walks.sh OUTPUT [--nodes N --walks W --length L --exponent A --seed S --edges FILE]" >&2; exit 2; }
out=$1
shift
bin=${BUILD_DIR:-build}/bin/make_walks
mkdir -p "$(dirname "$bin")"
if [ ! -x "$bin" ] || [ scripts/make_walks.cpp -nt "$bin" ]; then
  g++ -O2 -std=c++17 -o "$bin" scripts/make_walks.cpp
fi
"$bin" --output "$out" "$@"
