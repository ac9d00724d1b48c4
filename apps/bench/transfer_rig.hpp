#pragma once
/// @file transfer_rig.hpp
/// What every method of `pagedw2v bench transfer` (transfer_bench.hpp) shares: the table's
/// values, the timing of a repetition (CUDA events or the host clock, the median over the
/// repetitions), and the rig — the pinned host table and its id sets, the stream, the device
/// buffers each method moves rows into, and the checks of what a method moved. The methods are
/// in transfer_methods.hpp and transfer_hybrid.hpp.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/pinned_allocator.hpp"
#include "bench/transfer_bench.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "model/host_table.hpp"

namespace pagedw2v::transfer {

constexpr uint32_t kIdSets = 8;  // rotated so no rep finds its rows in L2

/// The table's contents: distinct per row and column, never zero, cheap to recompute.
inline float table_value(uint64_t row, uint32_t col) {
  const uint32_t h = static_cast<uint32_t>(row * 2654435761u) ^ (col * 40503u);
  return static_cast<float>(h % 999983u + 1) * 0.125f;
}

/// Runs body(begin, end) over [0, n) split across `threads` threads.
void parallel_for(uint64_t n, unsigned threads,
                  const std::function<void(uint64_t, uint64_t)>& body);

double median(std::vector<double> v);

struct Bench {
  const TransferBenchOptions& o;
  cudaStream_t stream;
  Event start, stop;

  /// Median milliseconds of fn(set) between two events, over reps after warmup.
  double time(const std::function<void(uint32_t)>& fn);

  /// The same with the host clock, for methods whose CPU work is part of the transfer: fn(set)
  /// must return only once its transfer is complete.
  double time_host(const std::function<void(uint32_t)>& fn);
};

/// The rig every method runs on: made once the table is pinned and filled and the id sets are
/// drawn (transfer_bench.cpp), it uploads the ids and allocates the device buffers.
struct Rig {
  /// kIdSets sets of `o.rows` distinct ids of `table`, in drawn order, and each set sorted.
  Rig(const TransferBenchOptions& o, int device, PinnedAllocator& allocator, HostTable& table,
      float* d_table, std::vector<std::vector<uint32_t>> ids,
      std::vector<std::vector<uint32_t>> sorted_ids);

  uint32_t* ids_of(uint32_t s) { return d_ids.data() + size_t{s} * n; }
  /// Sorts and deduplicates the first `count` ids of set s.
  void sort_unique_first(uint32_t s, uint32_t count);
  void sort_unique(uint32_t s) { sort_unique_first(s, n); }
  /// The gathered rows of set 0 must be table rows `order`, in that order.
  void verify_rows(const std::string& method, const std::vector<uint32_t>& order);
  /// Fills every set's buffer with table rows orders[s], in that order, for the scatters.
  void prepare_orders(const std::vector<std::vector<uint32_t>>& orders);
  /// Fills every set's buffer with its rows in `sorted` or drawn order.
  void prepare_rows(bool sorted) { prepare_orders(sorted ? sorted_ids : ids); }

  const TransferBenchOptions& o;
  const int device;
  const uint32_t n, dim;
  const size_t row_floats;
  const size_t moved;  ///< bytes of one transfer
  const unsigned cores;
  const unsigned threads;  ///< of the host gathers and scatters
  PinnedAllocator& allocator;
  HostTable& table;
  float* const d_table;  ///< the table's address on the GPU
  const std::vector<std::vector<uint32_t>> ids, sorted_ids;

  Stream stream_owner;
  const cudaStream_t stream;
  DeviceBuffer<uint32_t> d_ids;
  /// One dense buffer per id set, so scatters write back the rows their set gathered (the
  /// table keeps its values) and outputs rotate too.
  std::vector<DeviceBuffer<float>> d_rows;
  DeviceBuffer<uint32_t> d_sorted, d_unique, d_count;
  /// Our kernels' claim counter: every launch that uses it runs on `stream`, one after another.
  DeviceBuffer<unsigned long long> d_claim;
  unsigned long long* claim = nullptr;
  size_t temp_bytes = 0;
  DeviceBuffer<unsigned char> d_temp;
  uint32_t end_bit = 0;
  PinnedBuffer<float> staging;
  PinnedBuffer<uint32_t> h_unique;
  Bench bench;
  std::vector<float> check;
};

}  // namespace pagedw2v::transfer
