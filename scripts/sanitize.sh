#!/usr/bin/env bash
# Builds the project with AddressSanitizer and UndefinedBehaviorSanitizer and runs every test with
# ctest, the robustness suite included (it runs the sanitized binary and fails on any sanitizer
# report). A sanitizer finding fails the run. Where nvcc is installed the CUDA backend is built
# too (its host code sanitized, the kernels as they are), so that the tests of host code behind
# CUDA headers — the pinned allocator's fake-driver tests — run sanitized. The GPU-only test
# binaries are left out (-DPAGEDW2V_GPU_TESTS=OFF): here they would only skip.
# Usage: scripts/sanitize.sh [extra cmake args...]     (BUILD_DIR overrides build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
pagedw2v_deps

build=${BUILD_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)
# -O1 (what the sanitizers' authors recommend) runs the training tests fast enough; -g1 keeps line
# numbers in the reports at little cost. The test programs' own sources are compiled at -O0
# (PAGEDW2V_TEST_COMPILE_OPTIONS): with both sanitizers -O1 takes three times as long to compile
# them, and the code they test (src/, apps/) keeps -O1. No GPU runs the kernels here, so they are
# compiled to PTX only (90-virtual), without the machine code for the GPU.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -g1" -DPAGEDW2V_SANITIZE=ON -DPAGEDW2V_TEST_COMPILE_OPTIONS=-O0 \
  $(pagedw2v_cuda_args) -DCMAKE_CUDA_ARCHITECTURES=90-virtual -DPAGEDW2V_GPU_TESTS=OFF "$@" \
  >/dev/null
cmake --build "$build" -j"$jobs"

# allocator_may_return_null: an impossible allocation (`--dim 100000000`) must reach the
# program's own "not enough memory" error, as it does without ASan, instead of an ASan abort.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The planner's shape sweep (tests/test_gpu_plan.cpp, GpuPlanShapes: 432 cases of plain
# arithmetic) runs here over its smaller vocabulary only; the Release run takes all of it.
ctest --test-dir "$build" --output-on-failure -j"$jobs" -E 'GpuPlanShapes.*\(300000,'
