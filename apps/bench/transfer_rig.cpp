/// @file transfer_rig.cpp
/// The rig of `pagedw2v bench transfer` and its timing (transfer_rig.hpp).

#include "bench/transfer_rig.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "base/error.hpp"
#include "bench/gather.hpp"
#include "bench/unique_ids.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v::transfer {
namespace {

constexpr size_t kMaxRowBuffers = size_t{4} << 30;  // GPU memory for the dense buffers

}  // namespace

void parallel_for(uint64_t n, unsigned threads,
                  const std::function<void(uint64_t, uint64_t)>& body) {
  threads = std::max(1u, threads);
  std::vector<std::thread> pool;
  const uint64_t step = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const uint64_t begin = std::min<uint64_t>(n, t * step),
                   end = std::min<uint64_t>(n, begin + step);
    if (begin < end) pool.emplace_back(body, begin, end);
  }
  for (std::thread& th : pool) th.join();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double Bench::time(const std::function<void(uint32_t)>& fn) {
  std::vector<double> ms;
  for (uint32_t r = 0; r < o.warmup + o.reps; ++r) {
    const uint32_t set = r % kIdSets;
    start.record(stream);
    fn(set);
    stop.record(stream);
    stop.synchronize();
    if (r >= o.warmup) ms.push_back(stop.elapsed_ms_since(start));
  }
  return median(std::move(ms));
}

double Bench::time_host(const std::function<void(uint32_t)>& fn) {
  std::vector<double> ms;
  for (uint32_t r = 0; r < o.warmup + o.reps; ++r) {
    const uint32_t set = r % kIdSets;
    const auto t0 = std::chrono::steady_clock::now();
    fn(set);
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= o.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return median(std::move(ms));
}

Rig::Rig(const TransferBenchOptions& o, int device, PinnedAllocator& allocator, HostTable& table,
         float* d_table, std::vector<std::vector<uint32_t>> ids,
         std::vector<std::vector<uint32_t>> sorted_ids)
    : o(o),
      device(device),
      n(o.rows),
      dim(o.dim),
      row_floats(size_t{o.rows} * o.dim),
      moved(row_floats * sizeof(float)),
      cores(std::max(1u, std::thread::hardware_concurrency())),
      threads(o.host_threads > 0 ? o.host_threads : std::min(cores, 16u)),
      allocator(allocator),
      table(table),
      d_table(d_table),
      ids(std::move(ids)),
      sorted_ids(std::move(sorted_ids)),
      stream(stream_owner.get()),
      bench{o, stream_owner.get(), Event(), Event()} {
  d_ids = DeviceBuffer<uint32_t>(size_t{kIdSets} * n, "transfer ids");
  for (uint32_t s = 0; s < kIdSets; ++s) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(d_ids.data() + size_t{s} * n, this->ids[s].data(),
                                 n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  }
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());  // the stream below does not wait for the legacy one
  if (moved > kMaxRowBuffers / kIdSets) {
    throw UsageError("bench transfer: --rows x --dim is too large (at most " +
                     std::to_string(kMaxRowBuffers / kIdSets >> 20) + " MiB per transfer)");
  }
  for (uint32_t s = 0; s < kIdSets; ++s) d_rows.emplace_back(row_floats, "transfer rows");
  d_sorted = DeviceBuffer<uint32_t>(n, "sorted ids");
  d_unique = DeviceBuffer<uint32_t>(n, "unique ids");
  d_count = DeviceBuffer<uint32_t>(1, "count");
  d_claim = DeviceBuffer<unsigned long long>(1, "claim counter");
  claim = d_claim.data();
  temp_bytes = sort_unique_ids_temp_bytes(n);
  d_temp = DeviceBuffer<unsigned char>(temp_bytes, "sort temp");
  end_bit = id_bits(o.table_rows);
  staging = PinnedBuffer<float>(row_floats, "transfer staging");
  h_unique = PinnedBuffer<uint32_t>(n + 1, "unique ids");
  check.resize(row_floats);
}

void Rig::sort_unique_first(uint32_t s, uint32_t count) {
  launch_sort_unique_ids(ids_of(s), count, end_bit, d_sorted.data(), d_unique.data(),
                         d_count.data(), d_temp.data(), temp_bytes, stream);
}

void Rig::verify_rows(const std::string& method, const std::vector<uint32_t>& order) {
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  PAGEDW2V_CUDA_TRY(cudaMemcpy(check.data(), d_rows[0].data(), moved, cudaMemcpyDeviceToHost));
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < dim; ++c) {
      if (check[size_t{i} * dim + c] != table_value(order[i], c)) {
        throw Error("bench transfer: " + method + " gathered wrong data (row " + std::to_string(i) +
                    ", id " + std::to_string(order[i]) + ")");
      }
    }
  }
  std::fill(check.begin(), check.end(), std::nanf(""));
  PAGEDW2V_CUDA_TRY(
      cudaMemcpyAsync(d_rows[0].data(), check.data(), moved, cudaMemcpyHostToDevice, stream));
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

void Rig::prepare_orders(const std::vector<std::vector<uint32_t>>& orders) {
  for (uint32_t s = 0; s < kIdSets; ++s) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(d_sorted.data(), orders[s].data(), n * sizeof(uint32_t),
                                      cudaMemcpyHostToDevice, stream));
    launch_gather_rows(d_table, dim, d_sorted.data(), n, nullptr, d_rows[s].data(), stream);
  }
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

}  // namespace pagedw2v::transfer
