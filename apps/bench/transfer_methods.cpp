/// @file transfer_methods.cpp
/// The one-way and swap methods of `pagedw2v bench transfer` (transfer_methods.hpp).

#include "bench/transfer_methods.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bench/gather.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v::transfer {
namespace {

constexpr size_t kFloorBytes = size_t{64} << 20;  // the contiguous copy that measures PCIe

}  // namespace

// PCIe floor: a contiguous 64 MiB pinned copy each way.
void time_floor(Rig& rig, TransferBenchResult& result) {
  const size_t moved = rig.moved;
  const cudaStream_t stream = rig.stream;
  Bench& bench = rig.bench;
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
void time_naive(Rig& rig, TransferBenchResult& result) {
  const uint32_t n = rig.n;
  const uint32_t dim = rig.dim;
  const size_t moved = rig.moved;
  const unsigned threads = rig.threads;
  HostTable& table = rig.table;
  const std::vector<std::vector<uint32_t>>& ids = rig.ids;
  const cudaStream_t stream = rig.stream;
  std::vector<DeviceBuffer<float>>& d_rows = rig.d_rows;
  PinnedBuffer<float>& staging = rig.staging;
  Bench& bench = rig.bench;
  TransferBenchRow row{"naive: host gather (" + std::to_string(threads) + " threads) + cudaMemcpy",
                       -1, -1, ""};
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
  rig.verify_rows(row.method, ids[0]);
  rig.prepare_rows(false);
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
void time_zero_copy(Rig& rig, TransferBenchResult& result) {
  const uint32_t n = rig.n;
  const uint32_t dim = rig.dim;
  float* const d_table = rig.d_table;
  const std::vector<std::vector<uint32_t>>& ids = rig.ids;
  const cudaStream_t stream = rig.stream;
  std::vector<DeviceBuffer<float>>& d_rows = rig.d_rows;
  Bench& bench = rig.bench;
  const auto zero_copy = [&](const std::string& method, bool coalesced) {
    TransferBenchRow row{method, -1, -1, ""};
    const auto gather = [&](uint32_t s) {
      if (coalesced) {
        launch_gather_rows(d_table, dim, rig.ids_of(s), n, nullptr, d_rows[s].data(), stream);
      } else {
        launch_gather_rows_thread_per_row(d_table, dim, rig.ids_of(s), n, d_rows[s].data(), stream);
      }
    };
    row.to_gpu_ms = bench.time(gather);
    gather(0);
    rig.verify_rows(method, ids[0]);
    rig.prepare_rows(false);
    row.to_host_ms = bench.time([&](uint32_t s) {
      if (coalesced) {
        launch_scatter_rows(d_table, dim, rig.ids_of(s), n, nullptr, d_rows[s].data(), stream);
      } else {
        launch_scatter_rows_thread_per_row(d_table, dim, rig.ids_of(s), n, d_rows[s].data(),
                                           stream);
      }
    });
    result.rows.push_back(row);
  };
  zero_copy("zero-copy, one row per thread", false);
  zero_copy("zero-copy, warp per row, ids unsorted", true);
}

// Ours: sort + dedup on the GPU, then the coalesced kernels over sorted ids, rows claimed in
// order; the same with warps striding over the rows shows what the claim counter is worth.
void time_ours(Rig& rig, TransferBenchResult& result) {
  const TransferBenchOptions& o = rig.o;
  const uint32_t n = rig.n;
  const uint32_t dim = rig.dim;
  float* const d_table = rig.d_table;
  const std::vector<std::vector<uint32_t>>& sorted_ids = rig.sorted_ids;
  const cudaStream_t stream = rig.stream;
  std::vector<DeviceBuffer<float>>& d_rows = rig.d_rows;
  DeviceBuffer<uint32_t>& d_unique = rig.d_unique;
  DeviceBuffer<uint32_t>& d_count = rig.d_count;
  unsigned long long* const claim = rig.claim;
  Bench& bench = rig.bench;
  const auto ours = [&](const std::string& method, const GatherTuning& t, unsigned long long* c) {
    TransferBenchRow row{method, -1, -1, ""};
    const auto gather = [&](uint32_t s) {
      rig.sort_unique(s);
      launch_gather_rows(d_table, dim, d_unique.data(), n, d_count.data(), d_rows[s].data(), stream,
                         t, c);
    };
    row.to_gpu_ms = bench.time(gather);
    gather(0);
    rig.verify_rows(row.method, sorted_ids[0]);
    // The buffers hold sorted rows, so the scatters keep the table as it is.
    rig.prepare_rows(true);
    row.to_host_ms = bench.time([&](uint32_t s) {
      rig.sort_unique(s);
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
  result.sort_ms = bench.time([&](uint32_t s) { rig.sort_unique(s); });
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
void time_dma(Rig& rig, TransferBenchResult& result) {
  const uint32_t n = rig.n;
  const uint32_t dim = rig.dim;
  const int device = rig.device;
  PinnedAllocator& allocator = rig.allocator;
  HostTable& table = rig.table;
  const std::vector<std::vector<uint32_t>>& sorted_ids = rig.sorted_ids;
  const cudaStream_t stream = rig.stream;
  std::vector<DeviceBuffer<float>>& d_rows = rig.d_rows;
  DeviceBuffer<uint32_t>& d_unique = rig.d_unique;
  DeviceBuffer<uint32_t>& d_count = rig.d_count;
  PinnedBuffer<uint32_t>& h_unique = rig.h_unique;
  Bench& bench = rig.bench;
  TransferBenchRow row{"ours DMA: GPU sort+dedup, batched memcpy of runs", -1, -1, ""};
  std::vector<void*> dsts(n);
  std::vector<const void*> srcs(n);
  std::vector<size_t> sizes(n);
  size_t runs_seen = 0;
  const size_t row_bytes = size_t{dim} * sizeof(float);
  const size_t piece = allocator.piece_bytes(table.data());
  char* const table_base = reinterpret_cast<char*>(table.data());
  const auto dma = [&](uint32_t s, bool to_gpu) {
    rig.sort_unique(s);
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
    rig.verify_rows(row.method, sorted_ids[0]);
    rig.prepare_rows(true);
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
void time_swaps(Rig& rig, TransferBenchResult& result) {
  const TransferBenchOptions& o = rig.o;
  const uint32_t n = rig.n;
  const uint32_t dim = rig.dim;
  HostTable& table = rig.table;
  float* const d_table = rig.d_table;
  const cudaStream_t stream = rig.stream;
  std::vector<DeviceBuffer<float>>& d_rows = rig.d_rows;
  unsigned long long* const claim = rig.claim;
  Bench& bench = rig.bench;
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
      rig.verify_rows(row.method, x);
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
}

}  // namespace pagedw2v::transfer
