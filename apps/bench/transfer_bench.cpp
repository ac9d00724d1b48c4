#include "bench/transfer_bench.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "bench/gather.hpp"
#include "bench/host_rows.hpp"
#include "bench/unique_ids.hpp"
#include "error.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "host_table.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v {
namespace {

constexpr size_t kFloorBytes = size_t{64} << 20;    // the contiguous copy that measures PCIe
constexpr uint32_t kIdSets = 8;                     // rotated so no rep finds its rows in L2
constexpr size_t kMaxRowBuffers = size_t{4} << 30;  // GPU memory for the dense buffers

/// The table's contents: distinct per row and column, never zero, cheap to recompute.
inline float table_value(uint64_t row, uint32_t col) {
  const uint32_t h = static_cast<uint32_t>(row * 2654435761u) ^ (col * 40503u);
  return static_cast<float>(h % 999983u + 1) * 0.125f;
}

/// Runs body(begin, end) over [0, n) split across `threads` threads.
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

struct Bench {
  const TransferBenchOptions& o;
  cudaStream_t stream;
  Event start, stop;

  /// Median milliseconds of fn(set) between two events, over reps after warmup.
  double time(const std::function<void(uint32_t)>& fn) {
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

  /// The same with the host clock, for methods whose CPU work is part of the transfer: fn(set)
  /// must return only once its transfer is complete.
  double time_host(const std::function<void(uint32_t)>& fn) {
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
};

}  // namespace

TransferBenchResult run_transfer_bench(const TransferBenchOptions& o, std::FILE* out) {
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
  if (!cuda_device_available()) throw Error("bench transfer needs a CUDA device; none was found");

  TransferBenchResult result;
  cudaDeviceProp prop{};
  int device = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  PAGEDW2V_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  result.device = prop.name;

  const uint32_t n = o.rows, dim = o.dim;
  const size_t row_floats = size_t{n} * dim;
  const size_t moved = row_floats * sizeof(float);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = o.host_threads > 0 ? o.host_threads : std::min(cores, 16u);

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

  // kIdSets sets of n distinct uniform ids, in drawn (random) order, and each set sorted.
  std::vector<std::vector<uint32_t>> ids(kIdSets), sorted_ids(kIdSets);
  {
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

  Stream stream_owner;
  const cudaStream_t stream = stream_owner.get();
  DeviceBuffer<uint32_t> d_ids(size_t{kIdSets} * n, "transfer ids");
  for (uint32_t s = 0; s < kIdSets; ++s) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(d_ids.data() + size_t{s} * n, ids[s].data(), n * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice));
  }
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());  // the stream below does not wait for the legacy one
  // One dense buffer per id set, so scatters write back the rows their set gathered (the
  // table keeps its values) and outputs rotate too.
  if (moved > kMaxRowBuffers / kIdSets) {
    throw UsageError("bench transfer: --rows x --dim is too large (at most " +
                     std::to_string(kMaxRowBuffers / kIdSets >> 20) + " MiB per transfer)");
  }
  std::vector<DeviceBuffer<float>> d_rows;
  for (uint32_t s = 0; s < kIdSets; ++s) d_rows.emplace_back(row_floats, "transfer rows");
  DeviceBuffer<uint32_t> d_sorted(n, "sorted ids"), d_unique(n, "unique ids"), d_count(1, "count");
  // Our kernels' claim counter: every launch that uses it runs on `stream`, one after another.
  DeviceBuffer<unsigned long long> d_claim(1, "claim counter");
  unsigned long long* const claim = d_claim.data();
  const size_t temp_bytes = sort_unique_ids_temp_bytes(n);
  DeviceBuffer<unsigned char> d_temp(temp_bytes, "sort temp");
  const uint32_t end_bit = id_bits(o.table_rows);
  PinnedBuffer<float> staging(row_floats, "transfer staging");
  PinnedBuffer<uint32_t> h_unique(n + 1, "unique ids");
  const auto ids_of = [&](uint32_t s) { return d_ids.data() + size_t{s} * n; };
  // Sorts and deduplicates the first `count` ids of set s.
  const auto sort_unique_first = [&](uint32_t s, uint32_t count) {
    launch_sort_unique_ids(ids_of(s), count, end_bit, d_sorted.data(), d_unique.data(),
                           d_count.data(), d_temp.data(), temp_bytes, stream);
  };
  const auto sort_unique = [&](uint32_t s) { sort_unique_first(s, n); };

  Bench bench{o, stream, Event(), Event()};
  std::vector<float> check(row_floats);
  // The gathered rows of set 0 must be table rows `order`, in that order.
  const auto verify_rows = [&](const std::string& method, const std::vector<uint32_t>& order) {
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
    PAGEDW2V_CUDA_TRY(cudaMemcpy(check.data(), d_rows[0].data(), moved, cudaMemcpyDeviceToHost));
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t c = 0; c < dim; ++c) {
        if (check[size_t{i} * dim + c] != table_value(order[i], c)) {
          throw Error("bench transfer: " + method + " gathered wrong data (row " +
                      std::to_string(i) + ", id " + std::to_string(order[i]) + ")");
        }
      }
    }
    std::fill(check.begin(), check.end(), std::nanf(""));
    PAGEDW2V_CUDA_TRY(
        cudaMemcpyAsync(d_rows[0].data(), check.data(), moved, cudaMemcpyHostToDevice, stream));
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  };
  // Fills every set's buffer with table rows orders[s], in that order, for the scatters.
  const auto prepare_orders = [&](const std::vector<std::vector<uint32_t>>& orders) {
    for (uint32_t s = 0; s < kIdSets; ++s) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(d_sorted.data(), orders[s].data(), n * sizeof(uint32_t),
                                        cudaMemcpyHostToDevice, stream));
      launch_gather_rows(d_table, dim, d_sorted.data(), n, nullptr, d_rows[s].data(), stream);
    }
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  };
  // Fills every set's buffer with its rows in `sorted` or drawn order.
  const auto prepare_rows = [&](bool sorted) { prepare_orders(sorted ? sorted_ids : ids); };

  // PCIe floor: a contiguous 64 MiB pinned copy each way.
  {
    PinnedBuffer<unsigned char> host(kFloorBytes, "PCIe probe");
    DeviceBuffer<unsigned char> dev(kFloorBytes, "PCIe probe");
    std::memset(host.data(), 1, kFloorBytes);
    const double h2d = bench.time([&](uint32_t) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(dev.data(), host.data(), kFloorBytes, cudaMemcpyHostToDevice, stream));
    });
    const double d2h = bench.time([&](uint32_t) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(host.data(), dev.data(), kFloorBytes, cudaMemcpyDeviceToHost, stream));
    });
    result.floor_to_gpu_ms = h2d * static_cast<double>(moved) / kFloorBytes;
    result.floor_to_host_ms = d2h * static_cast<double>(moved) / kFloorBytes;
    result.rows.push_back({"PCIe floor (64 MiB contiguous cudaMemcpy)", result.floor_to_gpu_ms,
                           result.floor_to_host_ms, ""});
  }

  // Naive: host gather into pinned staging + one copy; back: one copy + host scatter.
  {
    TransferBenchRow row{
        "naive: host gather (" + std::to_string(threads) + " threads) + cudaMemcpy", -1, -1, ""};
    row.to_gpu_ms = bench.time([&](uint32_t s) {
      parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) {
          std::memcpy(staging.data() + i * dim, table.row(ids[s][i]), dim * sizeof(float));
        }
      });
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(d_rows[s].data(), staging.data(), moved, cudaMemcpyHostToDevice, stream));
    });
    parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) {
        std::memcpy(staging.data() + i * dim, table.row(ids[0][i]), dim * sizeof(float));
      }
    });
    PAGEDW2V_CUDA_TRY(
        cudaMemcpyAsync(d_rows[0].data(), staging.data(), moved, cudaMemcpyHostToDevice, stream));
    verify_rows(row.method, ids[0]);
    prepare_rows(false);
    row.to_host_ms = bench.time([&](uint32_t s) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(staging.data(), d_rows[s].data(), moved, cudaMemcpyDeviceToHost, stream));
      PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
      parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) {
          std::memcpy(table.row(ids[s][i]), staging.data() + i * dim, dim * sizeof(float));
        }
      });
    });
    result.rows.push_back(row);
  }

  // Zero-copy kernels over the ids as drawn.
  const auto zero_copy = [&](const std::string& method, bool coalesced) {
    TransferBenchRow row{method, -1, -1, ""};
    const auto gather = [&](uint32_t s) {
      if (coalesced) {
        launch_gather_rows(d_table, dim, ids_of(s), n, nullptr, d_rows[s].data(), stream);
      } else {
        launch_gather_rows_thread_per_row(d_table, dim, ids_of(s), n, d_rows[s].data(), stream);
      }
    };
    row.to_gpu_ms = bench.time(gather);
    gather(0);
    verify_rows(method, ids[0]);
    prepare_rows(false);
    row.to_host_ms = bench.time([&](uint32_t s) {
      if (coalesced) {
        launch_scatter_rows(d_table, dim, ids_of(s), n, nullptr, d_rows[s].data(), stream);
      } else {
        launch_scatter_rows_thread_per_row(d_table, dim, ids_of(s), n, d_rows[s].data(), stream);
      }
    });
    result.rows.push_back(row);
  };
  zero_copy("zero-copy, one row per thread", false);
  zero_copy("zero-copy, warp per row, ids unsorted", true);

  // Ours: sort + dedup on the GPU, then the coalesced kernels over sorted ids, rows claimed in
  // order; the same with warps striding over the rows shows what the claim counter is worth.
  {
    const auto ours = [&](const std::string& method, const GatherTuning& t, unsigned long long* c) {
      TransferBenchRow row{method, -1, -1, ""};
      const auto gather = [&](uint32_t s) {
        sort_unique(s);
        launch_gather_rows(d_table, dim, d_unique.data(), n, d_count.data(), d_rows[s].data(),
                           stream, t, c);
      };
      row.to_gpu_ms = bench.time(gather);
      gather(0);
      verify_rows(row.method, sorted_ids[0]);
      // The buffers hold sorted rows, so the scatters keep the table as it is.
      prepare_rows(true);
      row.to_host_ms = bench.time([&](uint32_t s) {
        sort_unique(s);
        launch_scatter_rows(d_table, dim, d_unique.data(), n, d_count.data(), d_rows[s].data(),
                            stream, t, c);
      });
      result.rows.push_back(row);
      return row;
    };
    const TransferBenchRow row =
        ours("ours: GPU sort+dedup, warp per row, sorted, claimed", GatherTuning{}, claim);
    result.ours_to_gpu_ms = row.to_gpu_ms;
    result.ours_to_host_ms = row.to_host_ms;
    ours("  same, warps striding (no claim counter)", GatherTuning{}, nullptr);
    result.sort_ms = bench.time(sort_unique);
    if (o.tuning) {
      const GatherTuning shapes[] = {{4, 0}, {2, 0}, {8, 0}, {2, 1}, {8, 1}, {4, 2}, {1, 2}};
      for (const GatherTuning& t : shapes) {
        for (unsigned long long* c : {claim, static_cast<unsigned long long*>(nullptr)}) {
          ours("  tuning: unroll " + std::to_string(t.unroll) + ", blocks/SM " +
                   (t.blocks_per_sm ? std::to_string(t.blocks_per_sm) : "max") +
                   (c != nullptr ? ", claimed" : ", striding"),
               t, c);
        }
      }
    }
    result.rows.push_back({"  of which GPU sort+dedup alone", result.sort_ms, result.sort_ms, ""});
  }

  // Ours, DMA: sort + dedup, the run list on the host, one batched copy of all runs.
  {
    TransferBenchRow row{"ours DMA: GPU sort+dedup, batched memcpy of runs", -1, -1, ""};
    std::vector<void*> dsts(n);
    std::vector<const void*> srcs(n);
    std::vector<size_t> sizes(n);
    size_t runs_seen = 0;
    const size_t row_bytes = size_t{dim} * sizeof(float);
    const size_t piece = allocator.piece_bytes(table.data());
    char* const table_base = reinterpret_cast<char*>(table.data());
    const auto dma = [&](uint32_t s, bool to_gpu) {
      sort_unique(s);
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(h_unique.data(), d_unique.data(), n * sizeof(uint32_t),
                                        cudaMemcpyDeviceToHost, stream));
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(h_unique.data() + n, d_count.data(), sizeof(uint32_t),
                                        cudaMemcpyDeviceToHost, stream));
      PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
      const uint32_t count = h_unique.data()[n];
      const uint32_t* u = h_unique.data();
      size_t runs = 0;
      const auto add = [&](char* host, char* dev, size_t len) {
        if (runs == dsts.size()) {
          dsts.resize(2 * runs);
          srcs.resize(2 * runs);
          sizes.resize(2 * runs);
        }
        dsts[runs] = to_gpu ? dev : host;
        srcs[runs] = to_gpu ? host : dev;
        sizes[runs] = len;
        ++runs;
      };
      for (uint32_t i = 0; i < count;) {
        uint32_t j = i + 1;
        while (j < count && u[j] == u[j - 1] + 1) ++j;
        // One copy per run, split where it crosses a pinned piece (see pinned_allocator.hpp).
        size_t at = size_t{u[i]} * row_bytes, left = (j - i) * row_bytes;
        char* dev = reinterpret_cast<char*>(d_rows[s].data() + size_t{i} * dim);
        while (left > 0) {
          const size_t len = std::min(left, piece - at % piece);
          add(table_base + at, dev, len);
          at += len;
          dev += len;
          left -= len;
        }
        i = j;
      }
      runs_seen = runs;
      cudaMemcpyAttributes attr{};
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attr.srcLocHint.type = to_gpu ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
      attr.srcLocHint.id = to_gpu ? 0 : device;
      attr.dstLocHint.type = to_gpu ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
      attr.dstLocHint.id = to_gpu ? device : 0;
      size_t attr_index = 0;
      PAGEDW2V_CUDA_TRY(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), runs, &attr,
                                             &attr_index, 1, stream));
    };
    try {
      row.to_gpu_ms = bench.time([&](uint32_t s) { dma(s, true); });
      dma(0, true);
      verify_rows(row.method, sorted_ids[0]);
      prepare_rows(true);
      row.to_host_ms = bench.time([&](uint32_t s) { dma(s, false); });
      row.note = std::to_string(runs_seen) + " runs";
    } catch (const Error& e) {
      PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
      row.note = e.what();
    }
    result.rows.push_back(row);
  }

  // Both ways at once, as paging moves rows: one swap kernel writes n rows of the device buffer
  // back to the host table while it reads n other rows into their places. The rows read in
  // ascend; the rows written back ascend too, or come in a random order, as they would if each
  // new row took the slot a first-in-first-out cache hands it. Two disjoint sorted id lists X
  // and Y alternate: a repetition writes back the list the buffer holds and reads the other.
  // In random order the forward swaps address the buffer through a random permutation P and the
  // backward ones in order, so both write back in a random order and read in order.
  if (2 * uint64_t{n} <= o.table_rows) {
    std::vector<uint32_t> both;
    {
      std::mt19937_64 rng(o.seed + 7);
      std::uniform_int_distribution<uint64_t> pick(0, o.table_rows - 1);
      std::vector<uint8_t> seen(o.table_rows, 0);
      while (both.size() < 2 * uint64_t{n}) {
        const uint32_t id = static_cast<uint32_t>(pick(rng));
        if (!seen[id]) {
          seen[id] = 1;
          both.push_back(id);
        }
      }
    }
    std::vector<uint32_t> x(both.begin(), both.begin() + n), y(both.begin() + n, both.end());
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    std::vector<uint32_t> perm(n), x_perm(n), y_inv(n);
    for (uint32_t k = 0; k < n; ++k) perm[k] = k;
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(o.seed + 11));
    for (uint32_t k = 0; k < n; ++k) {
      x_perm[k] = x[perm[k]];  // forward: slot perm[k] holds x[perm[k]]
      y_inv[perm[k]] = y[k];   // after it, slot perm[k] holds y[k]
    }
    DeviceBuffer<uint32_t> d_x = DeviceBuffer<uint32_t>(n, "swap ids"),
                           d_y = DeviceBuffer<uint32_t>(n, "swap ids"),
                           d_x_perm = DeviceBuffer<uint32_t>(n, "swap ids"),
                           d_y_inv = DeviceBuffer<uint32_t>(n, "swap ids"),
                           d_perm = DeviceBuffer<uint32_t>(n, "swap ids");
    const auto put = [&](DeviceBuffer<uint32_t>& d, const std::vector<uint32_t>& v) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpy(d.data(), v.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    };
    put(d_x, x);
    put(d_y, y);
    put(d_x_perm, x_perm);
    put(d_y_inv, y_inv);
    put(d_perm, perm);
    float* const buffer = d_rows[0].data();
    bool claimed = true;
    const auto swap = [&](const uint32_t* in, const uint32_t* out, const uint32_t* slots) {
      MoveArgs m;
      m.tables[0] = PagedTable{d_table, buffer};
      m.table_count = 1;
      m.dim = dim;
      m.stride = dim;
      m.host_rows = in;
      m.out_rows = out;
      m.dev_rows = slots;
      m.n = n;
      m.claim = claimed ? claim : nullptr;
      launch_move_rows(MoveKind::kSwap, m, stream);
    };
    for (const int variant : {0, 1, 2}) {
      const bool in_order = variant > 0;
      claimed = variant < 2;
      TransferBenchRow row{variant == 0   ? "ours, both ways at once, written back at random"
                           : variant == 1 ? "ours, both ways at once, written back in order"
                                          : "  same, warps striding (no claim counter)",
                           -1, -1, ""};
      // The buffer holds x in order.
      launch_gather_rows(d_table, dim, d_x.data(), n, nullptr, buffer, stream);
      uint64_t swaps = 0;
      const double ms = bench.time([&](uint32_t) {
        const bool forward = swaps++ % 2 == 0;
        if (in_order) {
          swap(forward ? d_y.data() : d_x.data(), forward ? d_x.data() : d_y.data(), nullptr);
        } else if (forward) {
          swap(d_y.data(), d_x_perm.data(), d_perm.data());
        } else {
          swap(d_x.data(), d_y_inv.data(), nullptr);
        }
      });
      if (swaps % 2 == 1) {  // end with the buffer holding x in order, as it started
        if (in_order) {
          swap(d_x.data(), d_y.data(), nullptr);
        } else {
          swap(d_x.data(), d_y_inv.data(), nullptr);
        }
      }
      verify_rows(row.method, x);
      for (const std::vector<uint32_t>* list : {&x, &y}) {
        for (const uint32_t id : *list) {
          for (uint32_t c = 0; c < dim; ++c) {
            if (table.row(id)[c] != table_value(id, c)) {
              throw Error("bench transfer: " + row.method + " wrote wrong data into row " +
                          std::to_string(id));
            }
          }
        }
      }
      row.to_gpu_ms = row.to_host_ms = ms;
      row.note = "one kernel: " + std::to_string(n) + " rows each way";
      result.rows.push_back(row);
    }
  }

  // Hybrid: for a share f, the first k = f·n ids of a set go by ours (GPU sort + dedup, then
  // the zero-copy kernel into slots [0, k)) while host threads move ids [k, n) as drawn through
  // the pinned staging buffer, chunk by chunk; each chunk is one cudaMemcpyAsync on a second
  // stream, straight between its staging rows and slots [k + begin, k + end). Back: the kernel
  // scatters slots [0, k) while the chunks' copies to staging run, and host threads scatter
  // each chunk into the table once its copy's event has fired.
  std::string hybrid_failure;  // the first hybrid row that moved wrong data or failed
  if (!o.hybrid_fractions.empty()) {
    HostRowMover mover(threads);
    Stream dma_owner;
    const cudaStream_t dma = dma_owner.get();
    std::vector<Event> chunk_copied;
    for (uint32_t c = 0; c < o.hybrid_chunks; ++c) chunk_copied.emplace_back(false);
    const auto enqueued = std::make_unique<std::atomic<bool>[]>(o.hybrid_chunks);
    Event phase[3];  // start (on `stream`), GPU half done, every DMA done
    std::atomic<bool> enqueue_failed{false};
    const size_t row_bytes = size_t{dim} * sizeof(float);
    // The first bad row of any set in the table (its id), or -1 when every row is right.
    const auto first_wrong_row = [&]() -> int64_t {
      std::atomic<int64_t> bad{-1};
      parallel_for(size_t{kIdSets} * n, cores, [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e && bad.load(std::memory_order_relaxed) < 0; ++i) {
          const uint32_t id = ids[i / n][i % n];
          const float* row = table.row(id);
          for (uint32_t c = 0; c < dim; ++c) {
            if (row[c] != table_value(id, c)) {
              bad.store(id);
              break;
            }
          }
        }
      });
      return bad.load();
    };
    // Rewrites the whole table: sets share ids, so rewriting their rows in parallel would race.
    const auto restore_table = [&]() {
      parallel_for(o.table_rows, cores, [&](uint64_t b, uint64_t e) {
        for (uint64_t r = b; r < e; ++r) {
          for (uint32_t c = 0; c < dim; ++c) table.row(r)[c] = table_value(r, c);
        }
      });
    };
    for (const double f : o.hybrid_fractions) {
      const uint32_t k =
          static_cast<uint32_t>(std::min<double>(n, std::llround(f * static_cast<double>(n))));
      const std::vector<RowRange> chunks = split_rows(n - k, o.hybrid_chunks);
      char name[96];
      std::snprintf(name, sizeof name, "hybrid: %.0f%% zero-copy kernel + %.0f%% host/DMA",
                    100.0 * k / n, 100.0 * (n - k) / n);
      TransferBenchRow row{name, -1, -1, ""};
      // The callbacks run on the mover's threads, which have no current device of their own.
      const auto on_device = [&] { PAGEDW2V_CUDA_TRY(cudaSetDevice(device)); };
      // The GPU half is launched by the calling thread while the other threads already gather
      // (`meanwhile`): the launches take tens of microseconds.
      const auto launch_gpu_half = [&](uint32_t s, bool gather) {
        if (k == 0) return;
        sort_unique_first(s, k);
        if (gather) {
          launch_gather_rows(d_table, dim, d_unique.data(), k, d_count.data(), d_rows[s].data(),
                             stream, GatherTuning{}, claim);
        } else {
          launch_scatter_rows(d_table, dim, d_unique.data(), k, d_count.data(), d_rows[s].data(),
                              stream, GatherTuning{}, claim);
        }
      };
      // Where the time goes, per repetition: when the GPU half, the host threads and the last
      // DMA finished, from the start (GPU times from an event recorded at the start).
      std::vector<double> gpu_done, host_done, dma_done;
      const auto to_gpu = [&](uint32_t s) {
        float* const dst = d_rows[s].data() + size_t{k} * dim;
        const auto t0 = std::chrono::steady_clock::now();
        phase[0].record(stream);
        mover.gather(
            table.data(), dim, ids[s].data() + k, chunks, staging.data(),
            [&](size_t c) {
              on_device();
              const RowRange& r = chunks[c];
              PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(dst + r.begin * dim, staging.data() + r.begin * dim,
                                                r.size() * row_bytes, cudaMemcpyHostToDevice, dma));
            },
            [&] {
              launch_gpu_half(s, true);
              phase[1].record(stream);
            });
        host_done.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        phase[2].record(dma);
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(dma));
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
        gpu_done.push_back(phase[1].elapsed_ms_since(phase[0]));
        dma_done.push_back(phase[2].elapsed_ms_since(phase[0]));
      };
      // Back: the first chunk's copy, the GPU half, then the other copies, all issued by the
      // calling thread while the others wait for their chunk's event; `enqueued` keeps them from
      // waiting on an event before this repetition has recorded it.
      const auto to_host = [&](uint32_t s) {
        const float* const src = d_rows[s].data() + size_t{k} * dim;
        for (size_t c = 0; c < chunks.size(); ++c) enqueued[c].store(false);
        enqueue_failed.store(false);
        const auto copy_chunk = [&](size_t c) {
          const RowRange& r = chunks[c];
          PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(staging.data() + r.begin * dim, src + r.begin * dim,
                                            r.size() * row_bytes, cudaMemcpyDeviceToHost, dma));
          chunk_copied[c].record(dma);
          enqueued[c].store(true, std::memory_order_release);
        };
        mover.scatter(
            table.data(), dim, ids[s].data() + k, chunks, staging.data(),
            [&](size_t c) {
              while (!enqueued[c].load(std::memory_order_acquire)) {
                if (enqueue_failed.load()) throw Error("bench transfer: a chunk copy failed");
                std::this_thread::yield();
              }
              on_device();
              chunk_copied[c].synchronize();
            },
            [&] {
              try {
                if (!chunks.empty()) copy_chunk(0);
                launch_gpu_half(s, false);
                for (size_t c = 1; c < chunks.size(); ++c) copy_chunk(c);
              } catch (...) {
                enqueue_failed.store(true);
                throw;
              }
            });
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(dma));
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
      };
      // Slot order of a set: its first k ids sorted (the kernel's slots), then the rest as drawn.
      std::vector<std::vector<uint32_t>> orders(kIdSets);
      for (uint32_t s = 0; s < kIdSets; ++s) {
        orders[s] = ids[s];
        std::sort(orders[s].begin(), orders[s].begin() + k);
      }
      try {
        // Checked before and after timing, so a wrong result is never just timed.
        to_gpu(0);
        verify_rows(row.method, orders[0]);
        row.to_gpu_ms = bench.time_host(to_gpu);
        to_gpu(0);
        verify_rows(row.method, orders[0]);
        prepare_orders(orders);
        // Set 0's rows poisoned in the table: the scatter must write every one of them back.
        for (const uint32_t id : ids[0]) {
          std::fill(table.row(id), table.row(id) + dim, std::nanf(""));
        }
        to_host(0);
        int64_t bad = first_wrong_row();
        if (bad >= 0) {
          throw Error("bench transfer: " + row.method + " scattered wrong data into row " +
                      std::to_string(bad));
        }
        row.to_host_ms = bench.time_host(to_host);
        bad = first_wrong_row();
        if (bad >= 0) {
          throw Error("bench transfer: " + row.method + " scattered wrong data into row " +
                      std::to_string(bad) + " (in the timed repetitions)");
        }
        char when[96];
        std::snprintf(when, sizeof when, "; to GPU, done at: kernel %.3f, host rows %.3f, DMA %.3f",
                      median(gpu_done), median(host_done), median(dma_done));
        row.note = std::to_string(mover.threads()) + " threads, " + std::to_string(chunks.size()) +
                   " chunks, host clock" + when;
      } catch (const Error& e) {
        // Wrong data or a failed call: reported in the table (and by the exit status), with no
        // figures, and the table repaired, so the other methods still print and are checked.
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(dma));
        PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
        restore_table();
        row.to_gpu_ms = row.to_host_ms = -1;
        row.note = std::string("FAILED: ") + e.what();
        if (hybrid_failure.empty()) hybrid_failure = e.what();
      }
      if (row.to_gpu_ms >= 0 &&
          (result.hybrid_to_gpu_ms < 0 || row.to_gpu_ms < result.hybrid_to_gpu_ms)) {
        result.hybrid_to_gpu_ms = row.to_gpu_ms;
        result.hybrid_fraction_to_gpu = static_cast<double>(k) / n;
      }
      if (row.to_host_ms >= 0 &&
          (result.hybrid_to_host_ms < 0 || row.to_host_ms < result.hybrid_to_host_ms)) {
        result.hybrid_to_host_ms = row.to_host_ms;
        result.hybrid_fraction_to_host = static_cast<double>(k) / n;
      }
      result.rows.push_back(row);
    }
  }

  // Every scatter wrote back the rows its set gathered: the table must be unchanged.
  for (uint32_t s = 0; s < kIdSets; ++s) {
    for (uint32_t id : ids[s]) {
      for (uint32_t c = 0; c < dim; ++c) {
        if (table.row(id)[c] != table_value(id, c)) {
          throw Error("bench transfer: a scatter wrote wrong data into row " + std::to_string(id));
        }
      }
    }
  }

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
  if (!hybrid_failure.empty()) throw Error(hybrid_failure);
  return result;
}

}  // namespace pagedw2v
