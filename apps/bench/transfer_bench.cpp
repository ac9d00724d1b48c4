#include "bench/transfer_bench.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "bench/transfer_hybrid.hpp"
#include "bench/transfer_methods.hpp"
#include "bench/transfer_rig.hpp"
#include "gpu/cuda_backend.hpp"
#include "kernels/cuda_check.hpp"
#include "model/host_table.hpp"

namespace pagedw2v {
namespace {

using transfer::kIdSets;
using transfer::parallel_for;
using transfer::table_value;

void check_options(const TransferBenchOptions& o) {
  if (o.rows == 0 || o.dim == 0 || o.reps == 0) {
    throw UsageError("bench transfer: --rows, --dim and --reps must be positive");
  }
  if (o.table_rows < o.rows) {
    throw UsageError("bench transfer: --table-rows must be at least --rows (the ids are distinct)");
  }
  if (o.table_rows > (uint64_t{1} << 32)) {
    throw UsageError("bench transfer: --table-rows must be at most 2^32 (ids are 32-bit)");
  }
  for (double f : o.hybrid_fractions) {
    if (!(f >= 0.0 && f <= 1.0)) {
      throw UsageError("bench transfer: every --hybrid share must be in [0, 1]");
    }
  }
  if (o.hybrid_chunks == 0 || o.hybrid_chunks > 4096) {
    throw UsageError("bench transfer: --hybrid-chunks must be in [1, 4096]");
  }
}

/// kIdSets sets of `o.rows` distinct uniform ids, in drawn (random) order, and each set sorted.
void draw_ids(const TransferBenchOptions& o, std::vector<std::vector<uint32_t>>& ids,
              std::vector<std::vector<uint32_t>>& sorted_ids) {
  const uint32_t n = o.rows;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<uint64_t> pick(0, o.table_rows - 1);
  std::vector<uint32_t> stamp(o.table_rows, 0);
  for (uint32_t s = 0; s < kIdSets; ++s) {
    ids[s].reserve(n);
    while (ids[s].size() < n) {
      const uint32_t id = static_cast<uint32_t>(pick(rng));
      if (stamp[id] == s + 1) continue;
      stamp[id] = s + 1;
      ids[s].push_back(id);
    }
    sorted_ids[s] = ids[s];
    std::sort(sorted_ids[s].begin(), sorted_ids[s].end());
  }
}

/// Every scatter wrote back the rows its set gathered: the table must be unchanged.
void check_table(const transfer::Rig& rig) {
  const uint32_t dim = rig.dim;
  const auto& ids = rig.ids;
  const HostTable& table = rig.table;
  for (uint32_t s = 0; s < kIdSets; ++s) {
    for (uint32_t id : ids[s]) {
      for (uint32_t c = 0; c < dim; ++c) {
        if (table.row(id)[c] != table_value(id, c)) {
          throw Error("bench transfer: a scatter wrote wrong data into row " + std::to_string(id));
        }
      }
    }
  }
}

void print_report(std::FILE* out, const transfer::Rig& rig, const TransferBenchResult& result,
                  const std::string& hybrid_failure) {
  const TransferBenchOptions& o = rig.o;
  const uint32_t n = rig.n, dim = rig.dim;
  const size_t moved = rig.moved;
  const HostTable& table = rig.table;
  const PinnedAllocator& allocator = rig.allocator;
  const double gb = static_cast<double>(moved) / 1e9;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::fprintf(out, "date: %s\n", date);
  std::fprintf(out,
               "bench transfer: %u rows x %u fp32 (%.1f MiB) between a %llu-row host table "
               "(%.2f GB) and %s\n",
               n, dim, moved / 1048576.0, static_cast<unsigned long long>(o.table_rows),
               static_cast<double>(table.bytes()) / 1e9, result.device.c_str());
  std::fprintf(out, "table: %s, %.2f s to allocate, pin and zero\n", allocator.name().c_str(),
               result.pin_seconds);
  std::fprintf(out,
               "ids: uniform random, distinct, %u sets rotated; median of %u reps after %u "
               "warm-up, CUDA events (hybrid: host clock); all gathers and scatters checked\n",
               kIdSets, o.reps, o.warmup);
  std::fprintf(out, "%-52s %10s %8s %10s %8s\n", "method", "to GPU ms", "GB/s", "back ms", "GB/s");
  for (const TransferBenchRow& r : result.rows) {
    if (r.to_gpu_ms < 0 || r.to_host_ms < 0) {
      std::fprintf(out, "%-52s %10s %8s %10s %8s  %s\n", r.method.c_str(), "-", "-", "-", "-",
                   r.note.c_str());
      continue;
    }
    std::fprintf(out, "%-52s %10.3f %8.1f %10.3f %8.1f%s%s\n", r.method.c_str(), r.to_gpu_ms,
                 gb / (r.to_gpu_ms / 1e3), r.to_host_ms, gb / (r.to_host_ms / 1e3),
                 r.note.empty() ? "" : "  ", r.note.c_str());
  }
  const bool met = result.ours_to_gpu_ms <= 1.4 && result.ours_to_host_ms <= 1.4;
  std::fprintf(out,
               "RESULT rows=%u dim=%u table_rows=%llu floor_ms=%.3f/%.3f ours_ms=%.3f/%.3f "
               "sort_ms=%.3f goal_1.4ms=%s",
               n, dim, static_cast<unsigned long long>(o.table_rows), result.floor_to_gpu_ms,
               result.floor_to_host_ms, result.ours_to_gpu_ms, result.ours_to_host_ms,
               result.sort_ms, met ? "met" : "missed");
  if (result.hybrid_to_gpu_ms >= 0 && result.hybrid_to_host_ms >= 0) {
    const bool hybrid_met = result.hybrid_to_gpu_ms <= 1.4 && result.hybrid_to_host_ms <= 1.4;
    std::fprintf(out, " hybrid_ms=%.3f/%.3f hybrid_f=%.2f/%.2f hybrid_goal_1.4ms=%s",
                 result.hybrid_to_gpu_ms, result.hybrid_to_host_ms, result.hybrid_fraction_to_gpu,
                 result.hybrid_fraction_to_host, hybrid_met ? "met" : "missed");
  }
  std::fprintf(out, "%s\n", hybrid_failure.empty() ? "" : " hybrid=FAILED");
  std::fflush(out);
}

}  // namespace

TransferBenchResult run_transfer_bench(const TransferBenchOptions& o, std::FILE* out) {
  check_options(o);
  // The one device query of this process.
  const DeviceFacts facts = query_device();
  if (!facts.usable) throw Error("bench transfer needs a CUDA device; none was found");

  TransferBenchResult result;
  int device = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  result.device = facts.name;

  const uint32_t dim = o.dim;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  // The host table, pinned and mapped; filled with values that every check can recompute.
  // The zero-copy methods need the table pinned: stop rather than fall back.
  PinnedAllocatorOptions pin = o.pin;
  pin.on_failure = PinFailure::kStop;
  pin.hint = "lower --table-rows or --dim";
  PinnedAllocator allocator(pin);
  const auto t0 = std::chrono::steady_clock::now();
  HostTable table(o.table_rows, dim, "host table", "lower --table-rows or --dim", allocator);
  result.pin_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float* d_table = static_cast<float*>(allocator.device_pointer(table.data()));
  if (d_table == nullptr) throw Error("bench transfer: the pinned host table has no GPU address");
  parallel_for(o.table_rows, cores, [&](uint64_t b, uint64_t e) {
    for (uint64_t r = b; r < e; ++r) {
      float* row = table.row(r);
      for (uint32_t c = 0; c < dim; ++c) row[c] = table_value(r, c);
    }
  });

  std::vector<std::vector<uint32_t>> ids(kIdSets), sorted_ids(kIdSets);
  draw_ids(o, ids, sorted_ids);
  transfer::Rig rig(o, device, allocator, table, d_table, std::move(ids), std::move(sorted_ids));

  transfer::time_floor(rig, result);
  transfer::time_naive(rig, result);
  transfer::time_zero_copy(rig, result);
  transfer::time_ours(rig, result);
  transfer::time_dma(rig, result);
  transfer::time_swaps(rig, result);
  const std::string hybrid_failure = transfer::time_hybrids(rig, result);
  check_table(rig);
  print_report(out, rig, result, hybrid_failure);
  if (!hybrid_failure.empty()) throw Error(hybrid_failure);
  return result;
}

}  // namespace pagedw2v
