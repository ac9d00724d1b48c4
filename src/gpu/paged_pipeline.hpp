#pragma once
/// @file paged_pipeline.hpp
/// Paged training as a pipeline of pieces (whole super-batches, or parts of one when the cache
/// cannot take its rows): collecting piece n + 1 and moving its rows overlap the training of
/// n, n − 1 (with sgd the launches of consecutive pieces overlap too, on two streams). Owns the
/// ring of stages (each piece's buffers and pinned staging), the streams beside the compute
/// stream, the events that order them, the row cache (row_cache.hpp), the moves' claim
/// counters, and the paging part of the report. Pieces are cut in one of two ways (the plan's
/// host_cuts): on the device, a try at a time, each try's rows counted there and sent back to
/// decide whether it fits; or on the host ahead of the device (piece_cuts.hpp), each piece with
/// its cold rows listed, so that it is taken in one launch and nothing waits for the device.
/// paged_pipeline.cpp holds the ring, the span's loop and the report; paged_prepare.cpp the
/// preparation of a piece (staging, finding or taking its cold rows, moving them).
///
/// May not touch: the tables' allocation (device_tables.hpp), the placement and sizes (it
/// takes them from the plan, gpu_plan.hpp), the launch arguments (sgns_launcher.hpp).

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "gpu/cuda_options.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_tables.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/piece_cuts.hpp"
#include "gpu/row_cache.hpp"
#include "gpu/sgns_launcher.hpp"
#include "gpu/stream.hpp"

namespace pagedw2v {

class PagedPipeline {
 public:
  /// Allocates the cache and the stages as `plan` sizes them, and pins the host tables. Runs
  /// its first launches on `compute` and the sgd pieces of odd number on a second stream.
  PagedPipeline(const TrainData& data, const GpuPlan& plan, const CudaBackendOptions& options,
                DeviceTables& tables, SgnsLauncher& launcher, Stream& compute,
                CudaBackendReport& report);

  /// Device bytes of the cache and the stages.
  size_t bytes() const { return bytes_; }

  /// Trains blocks [first_block, last_block) of `epoch`, then writes back every cached row the
  /// span may have changed (the rows stay cached). Returns when the device is idle.
  void train_span(uint32_t epoch, uint64_t first_block, uint64_t last_block);

  /// Copies the hot rows to the host and waits.
  void hot_rows_to_host();
  /// Copies the hot rows from the host, forgets every cached row, and waits.
  void reload_from_host();

  /// Adds the span's times (device time collecting pieces and moving rows, how long at least
  /// one training launch was in flight) and the counters to the report.
  void report_span();
  /// GPU seconds inside the training launches of the last span (report_span reads them).
  double span_kernel_seconds() const { return span_kernel_seconds_; }

 private:
  /// How far behind the newest piece one may still be training: a cache slot is evicted only
  /// once every piece up to kDepth behind the one that evicts it has trained
  /// (kernels/paging.hpp). With two launches sharing the GPU each lasts about two pieces' time,
  /// so a depth of 2 would make every row move wait for the launch just before it. With one
  /// training stream (an optimizer, or serial runs) pieces train one after the other, and a depth
  /// of 2 lets a piece's moves run while the piece before it trains: the cache then holds two
  /// pieces' rows instead of three, which for an optimizer's whole super-batches decides whether
  /// they overlap at all.
  static constexpr uint32_t kDepth = 3;
  static constexpr uint32_t kDepthOneStream = 2;

  /// The streams that launch row moves, each with its own claim counter (MoveArgs::claim):
  /// moves on one stream run one after the other, moves on different streams may overlap.
  enum MoveStream { kMoveOnCompute, kMoveOnGather, kMoveOnPrep, kMoveStreams };

  /// The buffers of one piece in flight; pieces rotate through kPagedStages of them.
  struct Stage : PoolBuffers {
    DeviceBuffer<uint32_t> tokens, rows, list, fresh, evicted, fresh_rows, pool_rows, counts;
    /// Hierarchical softmax: the device row of each inner-node row the piece's paths reach, at
    /// its node row (one entry per vocabulary row; SgnsArgs::hs_node_rows).
    DeviceBuffer<uint32_t> node_rows;
    DeviceBuffer<unsigned long long> next_sentence;  ///< the launch's work counter
    PinnedBuffer<uint32_t> host_tokens;
    PinnedBuffer<uint64_t> host_starts;
    DeviceBuffer<uint64_t> starts;
    /// A piece cut on the host comes in one copy: its sentence starts, tokens, cold rows, pools
    /// and each sentence's pool, one after the other (16-byte aligned), in place of the
    /// buffers above.
    DeviceBuffer<uint64_t> packed;
    PinnedBuffer<uint64_t> host_packed;
    // Where the launches read the piece: the buffers above, or parts of `packed`.
    const uint64_t* d_starts = nullptr;
    const uint32_t* d_tokens = nullptr;
    const uint32_t* d_list = nullptr;
    const uint32_t* d_pool = nullptr;
    const uint32_t* d_sentence_pool = nullptr;
    Event prepped{false}, gathered{false}, trained{false};
    bool trained_recorded = false;
    // The piece it holds.
    uint64_t number = 0;
    uint64_t first_sentence = 0, last_sentence = 0;
    uint64_t super_batch = 0;
    uint64_t token_base = 0, tokens_n = 0;
    uint32_t cold = 0;     ///< distinct cold rows
    uint32_t fresh_n = 0;  ///< of those, rows read from the host
  };

  /// When a piece's collection and its row moves ran on the device.
  struct PieceTimes {
    Event prep0, prep1, move0, move1;
    // As harvest_times read them: the launch's interval (ms since the span began), and its
    // collection's and moves' milliseconds.
    double train0 = 0, train1 = 0, prep_ms = 0, move_ms = 0;
    // For the trace (CudaBackendOptions::paging_trace): host milliseconds since the span began
    // when the piece was asked of the cuts, prepared and launched; its words and fresh rows.
    double host_asked = 0, host_prepared = 0, host_launched = 0;
    uint64_t words = 0, fresh = 0;
  };

  /// Collects the next piece (from sentence cursor_) as piece `number` on the prep stream and
  /// moves its rows on the gather stream. Returns false when the span is done.
  bool prepare(uint32_t epoch, uint64_t number);
  /// prepare() for a piece cut on the host (cuts_).
  bool prepare_cut(uint64_t number);
  /// The timing events of the next piece.
  PieceTimes& next_piece_times();
  /// Copies the tokens and sentence starts of sentences [first, end) to stage `s` on `stream`
  /// (after waiting for the stage's last copies from its staging).
  void stage_tokens(Stage& s, uint64_t first, uint64_t end, cudaStream_t stream);
  /// The row moves of piece `number` (prepared in `s`) on the gather stream, once the pieces up
  /// to `depth` behind it have trained; then the piece's bookkeeping.
  void move_rows(Stage& s, uint64_t number, uint32_t depth, uint64_t piece_end, PieceTimes& times,
                 std::chrono::steady_clock::time_point host_start);
  Stage& stage_of(uint64_t number) { return stages_[number % kPagedStages]; }
  /// The distinct ids of `cold` (piece `number`'s ascending cold rows) and of the cold rows of
  /// the `back` pieces before it (pieces cut on the host), or their sizes' sum when that is at
  /// most the slots.
  uint64_t union_with_recent(const std::vector<uint32_t>& cold, uint64_t number, uint32_t back);
  /// The training stream of piece `number`.
  cudaStream_t compute_of(uint64_t number);
  /// Two training streams when nothing orders the pieces (sgd, not serial); else one.
  bool two_training_streams() const;
  /// A row move over every table on the stream whose claim counter is `claim`.
  MoveArgs moves(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n, uint32_t dev_base,
                 MoveStream claim);

  const TrainData& data_;
  CudaBackendOptions options_;
  DeviceTables& tables_;
  SgnsLauncher& launcher_;
  CudaBackendReport& report_;
  uint64_t rows_ = 0, hot_ = 0, batch_blocks_ = 1;
  uint64_t move_entry_bytes_ = 0;  ///< host bytes of an id's rows in every table
  uint32_t pool_size_ = 0;
  bool optimizer_ = false;
  Stream& compute_;
  Stream compute2_, prep_, gather_;
  RowCache cache_;
  std::unique_ptr<PieceCuts> cuts_;  ///< when pieces are cut on the host
  /// Cold rows of the last pieces (by number modulo the size), for the pieces cut on the host:
  /// those that may still hold slots and a new one need at most every slot together.
  std::array<std::vector<uint32_t>, 4> recent_cold_;
  std::vector<uint32_t> union_scratch_, union_merged_;  ///< union_with_recent's merges
  DeviceBuffer<unsigned long long> move_claims_;        ///< one claim counter per MoveStream
  std::array<Stage, kPagedStages> stages_;
  PinnedBuffer<uint32_t> host_counts_;
  size_t bytes_ = 0;

  /// The first piece_times_n_ are this span's; the events are kept for the next spans.
  std::vector<PieceTimes> piece_times_;
  size_t piece_times_n_ = 0;
  uint64_t max_tokens_ = 0, max_sentences_ = 0, max_list_ = 0, max_pool_entries_ = 0;
  Event span_start_;
  std::chrono::steady_clock::time_point span_host_start_;
  /// Host milliseconds since the span began when its last piece was launched, the device was
  /// idle, the cached rows were written back, and its report began (for the trace).
  double span_host_marks_[4] = {0, 0, 0, 0};
  double host_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                     span_host_start_)
        .count();
  }
  uint64_t spans_ = 0;  ///< spans trained, for the trace
  /// Appends this span's pieces to the trace file (CudaBackendOptions::paging_trace).
  void write_trace();
  /// Reads the times of the span's pieces from the first not yet read on, in order: while the
  /// span trains, those whose launch has ended (spreading the event reads over the span, where
  /// the host waits for the device anyway, instead of a few thousand at its end); `all`: every
  /// one (the device idle).
  void harvest_times(bool all);
  // What harvest_times read of this span: each launch's interval in milliseconds since the
  // span began, and the device seconds of the launches, collections and moves.
  size_t harvested_ = 0;
  std::vector<std::pair<double, double>> busy_;
  double span_kernel_seconds_ = 0, span_prep_seconds_ = 0, span_move_seconds_ = 0;
  double prepare_host_seconds_ = 0, prepare_blocked_seconds_ = 0, prepare_cut_wait_seconds_ = 0;
  uint64_t next_number_ = 0, first_number_ = 0;
  uint64_t cursor_ = 0, span_end_ = 0, span_last_block_ = 0;
  uint64_t refs_ = 0, pcie_corpus_bytes_ = 0;
  uint64_t fit_sentences_ = 0;  ///< sentences a piece took when one last had to be split
  uint64_t span_blocks_ = 0;    ///< the longest span so far, in blocks (the next one expected)
};

}  // namespace pagedw2v
