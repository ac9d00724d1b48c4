#!/usr/bin/env bash
# The acceptance run of tests/robustness/test_h5_mutations.cpp: N one-byte mutations (default
# 10,000) of our own embeddings.h5 and of a checkpoint, each fed to `similar`, `eval` (and for the
# checkpoint `export` and `train --resume`), plus N/10 of copies without the integrity record (the
# checkpoint's fed to `export` and `train --resume`).
# Prints the outcome counts; exits non-zero when any run crashed, hung past 10 s or failed with
# anything but one clear line.
# Usage: tests/fuzz/mutate_h5.sh [N] [BUILD_DIR]     (PAGEDW2V_H5_MUTATION_SEED fixes the seed)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10000}
build=${2:-build}
cmake --build "$build" --target pagedw2v test_h5_mutations >/dev/null
PAGEDW2V_H5_MUTATIONS=$n PAGEDW2V_H5_FOREIGN_MUTATIONS=$((n / 10)) \
  "$build/bin/test_h5_mutations" --gtest_brief=1
