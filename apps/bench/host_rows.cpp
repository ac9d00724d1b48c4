#include "bench/host_rows.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

namespace pagedw2v {
namespace {

// A piece is at least this many rows (unless its chunk is smaller), so the atomic counter is
// not touched per row.
constexpr uint64_t kMinPieceRows = 8;
// Rows prefetched ahead of the copy: random rows of a large table miss every cache, and the
// hardware prefetchers cannot guess the next id.
constexpr uint64_t kPrefetchRows = 4;
// After a move, workers poll for the next one this long before they sleep: moves issued back to
// back (a benchmark's repetitions, a trainer's batches) then start without a wake-up.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void prefetch_row(const float* row, size_t bytes, bool write) {
#if defined(__GNUC__) || defined(__clang__)
  const char* p = reinterpret_cast<const char*>(row);
  for (size_t at = 0; at < bytes; at += 64) {
    if (write) {
      __builtin_prefetch(p + at, 1);
    } else {
      __builtin_prefetch(p + at, 0);
    }
  }
#else
  (void)row;
  (void)bytes;
  (void)write;
#endif
}

}  // namespace

std::vector<RowRange> split_rows(uint64_t n, uint32_t parts) {
  const uint64_t p = std::min<uint64_t>(std::max<uint32_t>(parts, 1), n);
  std::vector<RowRange> out;
  out.reserve(p);
  uint64_t at = 0;
  for (uint64_t k = 0; k < p; ++k) {
    const uint64_t len = n / p + (k < n % p ? 1 : 0);
    out.push_back({at, at + len});
    at += len;
  }
  return out;
}

HostRowMover::HostRowMover(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) workers_.emplace_back([this] { worker_loop(); });
}

HostRowMover::~HostRowMover() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    stopping_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void HostRowMover::gather(const float* table, uint32_t dim, const uint32_t* ids,
                          const std::vector<RowRange>& chunks, float* dense,
                          const ChunkFn& on_ready, const std::function<void()>& meanwhile) {
  Job job;
  job.scatter = false;
  job.src = table;
  job.dst = dense;
  job.dim = dim;
  job.ids = ids;
  job.callback = on_ready ? &on_ready : nullptr;
  job.meanwhile = meanwhile ? &meanwhile : nullptr;
  run(chunks, job);
}

void HostRowMover::scatter(float* table, uint32_t dim, const uint32_t* ids,
                           const std::vector<RowRange>& chunks, const float* dense,
                           const ChunkFn& wait_ready, const std::function<void()>& meanwhile) {
  Job job;
  job.scatter = true;
  job.src = dense;
  job.dst = table;
  job.dim = dim;
  job.ids = ids;
  job.callback = wait_ready ? &wait_ready : nullptr;
  job.meanwhile = meanwhile ? &meanwhile : nullptr;
  run(chunks, job);
}

void HostRowMover::run(const std::vector<RowRange>& chunks, Job& job) {
  // Each chunk in up to threads() pieces of nearly equal size, chunk after chunk: threads take
  // pieces in this order, so all of them work on the first unfinished chunk.
  job.pieces_left = std::make_unique<std::atomic<uint32_t>[]>(chunks.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    const RowRange& c = chunks[k];
    const uint64_t rows = c.end > c.begin ? c.size() : 0;
    const uint64_t by_size = (rows + kMinPieceRows - 1) / kMinPieceRows;
    const uint32_t parts = static_cast<uint32_t>(std::min<uint64_t>(threads(), by_size));
    for (const RowRange& r : split_rows(rows, parts)) {
      job.pieces.push_back({k, c.begin + r.begin, c.begin + r.end});
    }
    job.pieces_left[k].store(parts, std::memory_order_relaxed);
  }
  if (!job.scatter && job.callback != nullptr) {
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (job.pieces_left[k].load(std::memory_order_relaxed) == 0) (*job.callback)(k);
    }
  }
  if (job.pieces.empty()) {
    if (job.meanwhile != nullptr) (*job.meanwhile)();
    return;
  }

  const bool helpers = !workers_.empty() && job.pieces.size() > 1;
  if (helpers) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    start_cv_.notify_all();
  }
  if (job.meanwhile != nullptr) {
    try {
      (*job.meanwhile)();
    } catch (...) {
      fail(job);
    }
  }
  work(job);
  if (helpers) {
    // Every piece is taken: close the job to workers not yet awake (so a slow wake-up does not
    // delay the move) and wait for those that joined to finish their pieces.
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;
    done_cv_.wait(lock, [this] { return joined_ == 0; });
  }
  if (job.error) std::rethrow_exception(job.error);
}

void HostRowMover::work(Job& job) {
  const uint32_t dim = job.dim;
  const size_t row_bytes = size_t{dim} * sizeof(float);
  size_t waited = std::numeric_limits<size_t>::max();
  while (!job.failed.load(std::memory_order_relaxed)) {
    const size_t p = job.next.fetch_add(1, std::memory_order_relaxed);
    if (p >= job.pieces.size()) break;
    const Piece& piece = job.pieces[p];
    try {
      if (job.scatter) {
        // A thread's pieces come in increasing order, so one wait per chunk it touches.
        if (piece.chunk != waited && job.callback != nullptr) (*job.callback)(piece.chunk);
        waited = piece.chunk;
        for (uint64_t i = piece.begin; i < piece.end; ++i) {
          if (i + kPrefetchRows < piece.end) {
            prefetch_row(job.dst + size_t{job.ids[i + kPrefetchRows]} * dim, row_bytes, true);
          }
          std::memcpy(job.dst + size_t{job.ids[i]} * dim, job.src + i * dim, row_bytes);
        }
      } else {
        for (uint64_t i = piece.begin; i < piece.end; ++i) {
          if (i + kPrefetchRows < piece.end) {
            prefetch_row(job.src + size_t{job.ids[i + kPrefetchRows]} * dim, row_bytes, false);
          }
          std::memcpy(job.dst + i * dim, job.src + size_t{job.ids[i]} * dim, row_bytes);
        }
        // The thread that finishes a chunk's last piece reports it; acq_rel makes the other
        // pieces' rows visible to it (and to what on_ready starts).
        if (job.pieces_left[piece.chunk].fetch_sub(1, std::memory_order_acq_rel) == 1 &&
            job.callback != nullptr) {
          (*job.callback)(piece.chunk);
        }
      }
    } catch (...) {
      fail(job);
      break;
    }
  }
}

void HostRowMover::fail(Job& job) {
  std::lock_guard<std::mutex> lock(job.error_mutex);
  if (!job.error) job.error = std::current_exception();
  job.failed.store(true, std::memory_order_relaxed);
}

void HostRowMover::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (published_.load(std::memory_order_acquire) == seen &&
           !stopping_.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    }
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      if (job == nullptr) continue;  // the move ended before this thread woke
      ++joined_;
    }
    work(*job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--joined_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace pagedw2v
