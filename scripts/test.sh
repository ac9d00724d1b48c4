#!/usr/bin/env bash
# Installs what is missing, builds (Release, CUDA code included when nvcc is present) and runs
# every test with ctest. GPU tests skip themselves on machines without a GPU. The interop tests'
# Python packages are installed too; with CI set, those tests fail instead of skipping without them.
# One line says which optional parts (MPI, toml++, zstd) the build has and so tests; in CI (CI
# set) a missing one fails the run instead. Every test has a timeout (tests/CMakeLists.txt).
# Usage: scripts/test.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
source scripts/python_deps.sh
pagedw2v_deps
pagedw2v_python_deps

build=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release $(pagedw2v_cuda_args) "$@" >/dev/null
cmake --build "$build" -j"$jobs"
pagedw2v_optional_parts "$build"
ctest --test-dir "$build" --output-on-failure -j"$jobs"
