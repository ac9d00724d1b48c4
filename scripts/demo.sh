#!/usr/bin/env bash
# Installs what is missing, builds (Release), trains skip-gram on the sample corpus in data/ and
# prints the nearest neighbours of a few words.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
pagedw2v_deps --no-tests

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPAGEDW2V_TESTS=OFF $(pagedw2v_cuda_args) >/dev/null
cmake --build build -j"$jobs" --target pagedw2v
out=${DEMO_OUTPUT:-build/demo}
config=()
# A build without toml++ reads no config file; configs/default.toml holds the defaults anyway.
if build/bin/pagedw2v --version | grep -q "TOML configs: yes"; then
  config=(--config configs/default.toml)
fi
# The demo's own directory: a second demo replaces the first one's files (--overwrite).
build/bin/pagedw2v train --corpus data/sample.txt --output "$out" "${config[@]}" --epochs 10 --overwrite
build/bin/pagedw2v similar --vectors "$out/vectors.bin" --top 8 whale ship sea president war
