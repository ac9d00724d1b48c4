#!/usr/bin/env bash
# Installs what is missing, builds (Release), trains skip-gram on the sample corpus in data/ and
# prints the nearest neighbours of a few words.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
pagedw2v_deps --no-tests

jobs=$(nproc 2>/dev/null || echo 2)
cuda=$(pagedw2v_demo_cuda_args)
# One line while it builds; the whole output goes to a log, shown when the build fails.
log=build/demo-build.log
mkdir -p build
case $cuda in
  *=OFF) echo "building pagedw2v without the CUDA backend (no GPU found; PAGEDW2V_CUDA=AUTO $0 builds it), log: $log" ;;
  *) echo "building pagedw2v with the CUDA backend (compiling its kernels takes a few minutes), log: $log" ;;
esac
start=$SECONDS
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPAGEDW2V_TESTS=OFF "$cuda" &&
       cmake --build build -j"$jobs" --target pagedw2v; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "demo: the build failed; the whole output is in $log" >&2
  exit 1
fi
echo "built build/bin/pagedw2v in $((SECONDS - start)) s"
out=${DEMO_OUTPUT:-build/demo}
config=()
# A build without toml++ reads no config file; configs/default.toml holds the defaults anyway.
if build/bin/pagedw2v --version | grep -q "TOML configs: yes"; then
  config=(--config configs/default.toml)
fi
# The demo's own directory: a second demo replaces the first one's files (--overwrite).
build/bin/pagedw2v train --corpus data/sample.txt --output "$out" "${config[@]}" --epochs 10 --overwrite
build/bin/pagedw2v similar --vectors "$out/vectors.bin" --top 8 whale ship sea president war
