#pragma once
/// @file host_rows.hpp
/// Moving rows between a row-major host table and a dense row buffer on several CPU threads,
/// chunk by chunk, so that each finished chunk can be handed on (e.g. to a DMA) while the next
/// is still being copied:
///   gather:  dense[i, :] = table[ids[i], :]
///   scatter: table[ids[i], :] = dense[i, :]
/// for every i in the given chunks. Tables and buffers hold `dim` floats a row. The worker
/// threads live as long as the HostRowMover, so a move pays a wake-up, not a thread start.
/// CPU only; `pagedw2v bench transfer` uses it for the host half of its hybrid method.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pagedw2v {

/// Rows [begin, end) of a dense buffer (and of the id list that goes with it).
struct RowRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

/// [0, n) cut into min(parts, n) non-empty ranges, in order, whose sizes differ by at most one
/// (the longer ones first). Empty when n is 0; `parts` 0 counts as 1.
std::vector<RowRange> split_rows(uint64_t n, uint32_t parts);

/// A fixed pool of threads that gathers or scatters rows chunk by chunk. The calling thread
/// works too. Chunks are taken in order, each cut into pieces that all threads share, so the
/// first chunk is done first. One move at a time: gather() and scatter() must not be called
/// concurrently on the same mover.
class HostRowMover {
 public:
  /// Called with a chunk's index into the `chunks` list of a move.
  using ChunkFn = std::function<void(size_t chunk)>;

  /// `threads` in all, the caller included; 0 = std::thread::hardware_concurrency().
  explicit HostRowMover(unsigned threads = 0);
  ~HostRowMover();
  HostRowMover(const HostRowMover&) = delete;
  HostRowMover& operator=(const HostRowMover&) = delete;

  /// Threads that copy rows, the caller included.
  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  /// dense[i, :] = table[ids[i], :] for every i of every chunk. `on_ready(k)` is called once per
  /// chunk as soon as every row of chunks[k] is in `dense`, by the thread that finished it —
  /// possibly while other threads copy later chunks and concurrently with on_ready of other
  /// chunks (an empty chunk is reported at once, by the caller). `meanwhile`, when given, runs
  /// once on the calling thread after the other threads have been started and before it joins
  /// them (e.g. to launch other work that should overlap the move). Returns when every chunk is
  /// done and every callback has returned. If a callback throws, the move stops early and the
  /// first exception is rethrown here.
  void gather(const float* table, uint32_t dim, const uint32_t* ids,
              const std::vector<RowRange>& chunks, float* dense, const ChunkFn& on_ready = {},
              const std::function<void()>& meanwhile = {});

  /// table[ids[i], :] = dense[i, :] for every i of every chunk; ids must be distinct. Before a
  /// thread reads any row of chunks[k] it calls `wait_ready(k)`, which must return only once
  /// those rows are in `dense` (e.g. by waiting on the event of the DMA that fills them). It may
  /// be called by several threads for the same chunk, concurrently; never for an empty chunk.
  /// `meanwhile` and exceptions as for gather().
  void scatter(float* table, uint32_t dim, const uint32_t* ids, const std::vector<RowRange>& chunks,
               const float* dense, const ChunkFn& wait_ready = {},
               const std::function<void()>& meanwhile = {});

 private:
  struct Piece {
    size_t chunk;
    uint64_t begin, end;
  };
  struct Job {
    bool scatter = false;
    const float* src = nullptr;  // table (gather) or dense (scatter)
    float* dst = nullptr;        // dense (gather) or table (scatter)
    uint32_t dim = 0;
    const uint32_t* ids = nullptr;
    const ChunkFn* callback = nullptr;
    const std::function<void()>* meanwhile = nullptr;
    std::vector<Piece> pieces;
    std::unique_ptr<std::atomic<uint32_t>[]> pieces_left;  // per chunk, for on_ready
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex error_mutex;
    std::exception_ptr error;
  };

  void run(const std::vector<RowRange>& chunks, Job& job);
  void work(Job& job);
  static void fail(Job& job);  // records the current exception and stops the move
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;             // guarded by mutex_
  std::atomic<uint64_t> published_{0};  // generation_, readable without the lock
  Job* job_ = nullptr;                  // the open move, guarded by mutex_
  unsigned joined_ = 0;                 // workers on the current move, guarded by mutex_
  bool stop_ = false;
  std::atomic<bool> stopping_{false};
};

}  // namespace pagedw2v
