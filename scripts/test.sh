#!/usr/bin/env bash
# Installs what is missing, builds (Release, CUDA code included when nvcc is present) and runs
# every test with ctest. GPU tests skip themselves on machines without a GPU.
# Usage: scripts/test.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
pagedw2v_deps

build=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release $(pagedw2v_cuda_args) "$@" >/dev/null
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs"
