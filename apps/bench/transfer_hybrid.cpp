/// @file transfer_hybrid.cpp
/// The hybrid rows of `pagedw2v bench transfer` (transfer_hybrid.hpp).

#include "bench/transfer_hybrid.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "bench/gather.hpp"
#include "bench/host_rows.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v::transfer {
namespace {

/// When the parts of a repetition to the GPU finished, from its start: the GPU half (from an
/// event recorded at the start), the host threads and the last DMA.
struct Timeline {
  std::vector<double> gpu_done, host_done, dma_done;
};

/// The hybrid's host threads, its DMA stream and the events that order its chunks, for every
/// share.
class Hybrid {
 public:
  explicit Hybrid(Rig& rig);
  /// The row of share `f`, its best figures noted in `result`; the first failure goes to
  /// `failure` (the row then says FAILED and has no figures).
  TransferBenchRow run(double f, TransferBenchResult& result, std::string& failure);

 private:
  int64_t first_wrong_row();
  void restore_table();
  void launch_gpu_half(uint32_t k, uint32_t s, bool gather);
  void to_gpu(uint32_t k, const std::vector<RowRange>& chunks, uint32_t s, Timeline& t);
  void to_host(uint32_t k, const std::vector<RowRange>& chunks, uint32_t s);

  Rig& rig_;
  HostRowMover mover;
  Stream dma_owner;
  const cudaStream_t dma;
  std::vector<Event> chunk_copied;
  const std::unique_ptr<std::atomic<bool>[]> enqueued;
  Event phase[3];  // start (on `stream`), GPU half done, every DMA done
  std::atomic<bool> enqueue_failed{false};
  const size_t row_bytes;
};

Hybrid::Hybrid(Rig& rig)
    : rig_(rig),
      mover(rig.threads),
      dma(dma_owner.get()),
      enqueued(std::make_unique<std::atomic<bool>[]>(rig.o.hybrid_chunks)),
      row_bytes(size_t{rig.dim} * sizeof(float)) {
  for (uint32_t c = 0; c < rig.o.hybrid_chunks; ++c) chunk_copied.emplace_back(false);
}

/// The first bad row of any set in the table (its id), or -1 when every row is right.
int64_t Hybrid::first_wrong_row() {
  const uint32_t n = rig_.n, dim = rig_.dim;
  const auto& ids = rig_.ids;
  HostTable& table = rig_.table;
  const unsigned cores = rig_.cores;
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
}

/// Rewrites the whole table: sets share ids, so rewriting their rows in parallel would race.
void Hybrid::restore_table() {
  const uint32_t dim = rig_.dim;
  HostTable& table = rig_.table;
  const TransferBenchOptions& o = rig_.o;
  const unsigned cores = rig_.cores;
  parallel_for(o.table_rows, cores, [&](uint64_t b, uint64_t e) {
    for (uint64_t r = b; r < e; ++r) {
      for (uint32_t c = 0; c < dim; ++c) table.row(r)[c] = table_value(r, c);
    }
  });
}

/// The GPU half: the first k ids of set s sorted and deduplicated, then moved by the kernel.
void Hybrid::launch_gpu_half(uint32_t k, uint32_t s, bool gather) {
  const uint32_t dim = rig_.dim;
  float* const d_table = rig_.d_table;
  const cudaStream_t stream = rig_.stream;
  unsigned long long* const claim = rig_.claim;
  auto& d_rows = rig_.d_rows;
  auto& d_unique = rig_.d_unique;
  auto& d_count = rig_.d_count;
  if (k == 0) return;
  rig_.sort_unique_first(s, k);
  if (gather) {
    launch_gather_rows(d_table, dim, d_unique.data(), k, d_count.data(), d_rows[s].data(), stream,
                       GatherTuning{}, claim);
  } else {
    launch_scatter_rows(d_table, dim, d_unique.data(), k, d_count.data(), d_rows[s].data(), stream,
                        GatherTuning{}, claim);
  }
}

/// To the GPU: the host threads gather and copy their chunks while the calling thread launches
/// the GPU half (`meanwhile`: the launches take tens of microseconds).
void Hybrid::to_gpu(uint32_t k, const std::vector<RowRange>& chunks, uint32_t s, Timeline& t) {
  const uint32_t dim = rig_.dim;
  const cudaStream_t stream = rig_.stream;
  const auto& ids = rig_.ids;
  HostTable& table = rig_.table;
  auto& staging = rig_.staging;
  auto& d_rows = rig_.d_rows;
  std::vector<double>& gpu_done = t.gpu_done;
  std::vector<double>& host_done = t.host_done;
  std::vector<double>& dma_done = t.dma_done;
  // The callbacks run on the mover's threads, which have no current device of their own.
  const auto on_device = [&] { PAGEDW2V_CUDA_TRY(cudaSetDevice(rig_.device)); };
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
        launch_gpu_half(k, s, true);
        phase[1].record(stream);
      });
  host_done.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  phase[2].record(dma);
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(dma));
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  gpu_done.push_back(phase[1].elapsed_ms_since(phase[0]));
  dma_done.push_back(phase[2].elapsed_ms_since(phase[0]));
}

// Back: the first chunk's copy, the GPU half, then the other copies, all issued by the
// calling thread while the others wait for their chunk's event; `enqueued` keeps them from
// waiting on an event before this repetition has recorded it.
void Hybrid::to_host(uint32_t k, const std::vector<RowRange>& chunks, uint32_t s) {
  const uint32_t dim = rig_.dim;
  const cudaStream_t stream = rig_.stream;
  const auto& ids = rig_.ids;
  HostTable& table = rig_.table;
  auto& staging = rig_.staging;
  auto& d_rows = rig_.d_rows;
  const auto on_device = [&] { PAGEDW2V_CUDA_TRY(cudaSetDevice(rig_.device)); };
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
          launch_gpu_half(k, s, false);
          for (size_t c = 1; c < chunks.size(); ++c) copy_chunk(c);
        } catch (...) {
          enqueue_failed.store(true);
          throw;
        }
      });
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(dma));
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

TransferBenchRow Hybrid::run(double f, TransferBenchResult& result, std::string& hybrid_failure) {
  const uint32_t n = rig_.n;
  const TransferBenchOptions& o = rig_.o;
  const auto& ids = rig_.ids;
  HostTable& table = rig_.table;
  const cudaStream_t stream = rig_.stream;
  const uint32_t dim = rig_.dim;
  const uint32_t k =
      static_cast<uint32_t>(std::min<double>(n, std::llround(f * static_cast<double>(n))));
  const std::vector<RowRange> chunks = split_rows(n - k, o.hybrid_chunks);
  char name[96];
  std::snprintf(name, sizeof name, "hybrid: %.0f%% zero-copy kernel + %.0f%% host/DMA",
                100.0 * k / n, 100.0 * (n - k) / n);
  TransferBenchRow row{name, -1, -1, ""};
  Timeline timeline;
  const auto to_gpu = [&](uint32_t s) { this->to_gpu(k, chunks, s, timeline); };
  const auto to_host = [&](uint32_t s) { this->to_host(k, chunks, s); };
  const std::vector<double>& gpu_done = timeline.gpu_done;
  const std::vector<double>& host_done = timeline.host_done;
  const std::vector<double>& dma_done = timeline.dma_done;
  // Slot order of a set: its first k ids sorted (the kernel's slots), then the rest as drawn.
  std::vector<std::vector<uint32_t>> orders(kIdSets);
  for (uint32_t s = 0; s < kIdSets; ++s) {
    orders[s] = ids[s];
    std::sort(orders[s].begin(), orders[s].begin() + k);
  }
  try {
    // Checked before and after timing, so a wrong result is never just timed.
    to_gpu(0);
    rig_.verify_rows(row.method, orders[0]);
    row.to_gpu_ms = rig_.bench.time_host(to_gpu);
    to_gpu(0);
    rig_.verify_rows(row.method, orders[0]);
    rig_.prepare_orders(orders);
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
    row.to_host_ms = rig_.bench.time_host(to_host);
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
  return row;
}

}  // namespace

std::string time_hybrids(Rig& rig, TransferBenchResult& result) {
  std::string hybrid_failure;  // the first hybrid row that moved wrong data or failed
  if (!rig.o.hybrid_fractions.empty()) {
    Hybrid hybrid(rig);
    for (const double f : rig.o.hybrid_fractions) {
      result.rows.push_back(hybrid.run(f, result, hybrid_failure));
    }
  }
  return hybrid_failure;
}

}  // namespace pagedw2v::transfer
