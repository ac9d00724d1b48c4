#!/usr/bin/env bash
# Shows that the whole-run GPU tests (tests/test_cuda_whole_run.cpp) fail when a kernel is wrong.
# Each of three faults is planted in a copy of the source in the build tree's reach, the test
# binary is rebuilt, the tests that should catch it run, and the fault is removed again:
#   grad09    every example's gradient scaled by 0.9 (kernels/sgns_targets.cuh, train_targets,
#             and the shared-negatives window, kernels/sgns_shared_window.cuh)
#   dropneg   the last negative of every example dropped (kernels/sgns.cu, skip-gram and CBOW,
#             and the shared-negatives window)
#   wrongslot a row read from the host lands in its neighbour's slot (kernels/paging.cu, fp32 moves)
# The script exits 0 only when every fault fails at least one test and the unbroken tree passes
# them all. It needs a GPU. Results go to $OUT (default: BUILD/broken-kernels).
#
#   BUILD=build-gpu scripts/broken-kernels.sh      (REBUILD=0: no rebuild of the intact binary at the end)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD/broken-kernels}
JOBS=${JOBS:-16}
mkdir -p "$OUT"
export PAGEDW2V_REQUIRE_GPU=1
export PAGEDW2V_TEST_SEED=${PAGEDW2V_TEST_SEED:-20261207}

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} -DPAGEDW2V_CUDA=ON >/dev/null || exit 1

# plant FAULT: edits the source in place (the originals are kept in $OUT/orig).
plant() {
  python3 - "$ROOT" "$1" <<'EOF'
import sys
root, fault = sys.argv[1], sys.argv[2]
edits = {
    "grad09": [(f, "const float g_mine = ((positive ? 1.0f : 0.0f) - clipped_sigmoid(mine)) * lr;",
                "const float g_mine = ((positive ? 1.0f : 0.0f) - clipped_sigmoid(mine)) * lr * 0.9f;")
               for f in ("kernels/sgns_targets.cuh", "kernels/sgns_shared_window.cuh")],
    "dropneg": [("kernels/sgns.cu", "const int nn = static_cast<int>(a.negative);",
                 "const int nn = static_cast<int>(a.negative) - 1;"),
                ("kernels/sgns_shared_window.cuh", "const int m_count = 1 + static_cast<int>(a.negative);",
                 "const int m_count = static_cast<int>(a.negative);")],
    "wrongslot": [("kernels/paging.cu",
                   "      host_in[b] = uint64_t{h} * host_v + c;\n      host_out[b] = uint64_t{to_host ? h : o} * host_v + c;\n      const uint64_t d = a.dev_rows != nullptr ? a.dev_rows[k] : uint64_t{a.dev_base} + k;\n      dev[b] = d * dev_v + c;\n    }\n    V v[kBatch];",
                   "      const uint32_t k2 = (k ^ 1u) < a.n ? (k ^ 1u) : k;\n      const uint32_t h2 = a.host_rows != nullptr ? a.host_rows[k2] : k2;\n      host_in[b] = uint64_t{h2 == kNoRow ? h : h2} * host_v + c;\n      host_out[b] = uint64_t{to_host ? h : o} * host_v + c;\n      const uint64_t d = a.dev_rows != nullptr ? a.dev_rows[k] : uint64_t{a.dev_base} + k;\n      dev[b] = d * dev_v + c;\n    }\n    V v[kBatch];")],
}[fault]
for path, old, new in edits:
    p = f"{root}/{path}"
    s = open(p).read()
    n = s.count(old)
    if n == 0:
        sys.exit(f"{fault}: the text to break is not in {path}")
    open(p, "w").write(s.replace(old, new))
    print(f"{fault}: {n} place(s) in {path}")
EOF
}

PLANTED="sgns.cu sgns_targets.cuh sgns_shared_window.cuh paging.cu"  # the files faults edit
mkdir -p "$OUT/orig"
for f in $PLANTED; do cp "$ROOT/kernels/$f" "$OUT/orig/"; done
restore() { for f in $PLANTED; do cp "$OUT/orig/$f" "$ROOT/kernels/"; done; }
trap restore EXIT

status=0
KINDS="GpuFollowsCpu PagedEqualsResident Hogwild"
run_tests() {  # NAME: builds and runs every whole-run test; prints the failures of each kind
  cmake --build "$BUILD" -j"$JOBS" --target test_cuda_whole_run >"$OUT/$1.build.log" 2>&1 ||
    { echo "$1: build failed"; tail -20 "$OUT/$1.build.log"; return 99; }
  timeout 900 "$BUILD/bin/test_cuda_whole_run" >"$OUT/$1.log" 2>&1
  local rc=$?
  local line="$1: exit $rc;"
  for kind in $KINDS; do
    line+=" $kind $(grep '^\[  FAILED  \]' "$OUT/$1.log" | grep -v ' tests, listed below' |
      sed "s/^\[  FAILED  \] \([^ ,]*\).*/\1/" | sort -u | grep -c "$kind\.")/$(grep -c "^\[ RUN      \] .*$kind\." "$OUT/$1.log") failed;"
  done
  echo "$line"
  return $rc
}

# Every fault must fail at least one test of every kind (the run's bytes against resident where
# the fault touches paging; the GPU against the CPU; Hogwild loss and quality).
run_tests intact || { echo "the intact tree fails"; status=1; }
for fault in grad09 dropneg wrongslot; do
  restore
  plant "$fault" || { status=1; continue; }
  if run_tests "$fault"; then
    echo "$fault: NOT caught"
    status=1
  else
    echo "$fault: caught"
  fi
done
restore
# REBUILD=0 leaves the binary of the last fault in BUILD (the restored sources rebuild it at the
# next build), to save a device call the compile.
[[ ${REBUILD:-1} == 0 ]] || cmake --build "$BUILD" -j"$JOBS" --target test_cuda_whole_run >/dev/null 2>&1
exit $status
