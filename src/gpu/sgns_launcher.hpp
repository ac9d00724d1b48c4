#pragma once
/// @file sgns_launcher.hpp
/// The training launches both placements share. Owns the samplers on the device (the
/// subsampling table, the noise table, hierarchical softmax's paths), the training
/// counters, the launches' timing events, the arguments every launch starts from, the
/// negative pools a piece draws, and the optimizer step after each super-batch.
///
/// May not touch: which rows lie where (row_cache.hpp), the tables' allocation and copies
/// (device_tables.hpp), the order of pieces and streams (cuda_backend.cpp,
/// paged_pipeline.hpp: the caller passes the stream of every call).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_tables.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/pinned_region.hpp"
#include "gpu/stream.hpp"
#include "kernels/sgns.hpp"

namespace pagedw2v {

/// The negative pools of one piece and the pinned staging of its pool numbers.
struct PoolBuffers {
  DeviceBuffer<uint32_t> pool;           ///< pools × pool size entries, one pool after the other
  DeviceBuffer<uint32_t> sentence_pool;  ///< each sentence's pool, counted from the first
  uint64_t pools = 0;                    ///< pool periods the piece spans
  // Pinned host staging of what is copied to the device per piece; written again only once
  // the copies that read it have finished (host_copied).
  PinnedBuffer<uint32_t> host_sentence_pool;
  Event host_copied{false};
  bool host_copy_recorded = false;

  /// Waits until the copies from the pinned host staging have finished.
  void wait_host_copies() {
    if (host_copy_recorded) host_copied.synchronize();
    host_copy_recorded = false;
  }
};

/// What every launch of `epoch` in the run `data` reads besides its buffers: the model, the
/// training settings, the schedule and the samplers' sizes (keep_count: the stored keep
/// probabilities). The callers set the device pointers.
SgnsArgs run_args(const TrainData& data, uint32_t epoch, uint64_t keep_count);

class SgnsLauncher {
 public:
  /// Uploads the samplers of `data` on `stream` as `plan` sizes them. `single_warp`: one warp
  /// trains the sentences of a launch in order (SgnsArgs::max_warps = 1). `hs_damp_warps`:
  /// SgnsArgs::hs_damp_warps of Hogwild launches (single-warp launches keep word2vec's steps,
  /// and so their bytes).
  SgnsLauncher(const TrainData& data, const GpuPlan& plan, bool single_warp, uint32_t item_tokens,
               uint32_t hs_damp_warps, DeviceTables& tables, cudaStream_t stream);

  /// Hogwild launches run at most `warps` warps at once (SgnsArgs::max_warps; 0: no cap).
  void cap_warps(uint32_t warps) { max_warps_ = single_warp_ ? 1 : warps; }

  size_t bytes() const {
    return keep_.bytes() + noise_.bytes() + counters_.bytes() + hs_links_.bytes();
  }

  /// Hierarchical softmax's tree on the device (uploaded once; empty without --hs), the words'
  /// links and the inner nodes' (SgnsArgs::hs_word_links): what the paged pipeline reads to
  /// collect and map the inner-node rows of a piece.
  const uint32_t* hs_word_links() const { return hs_links_.data(); }
  const uint32_t* hs_node_links() const { return hs_links_.data() + hs_words_; }

  /// What every launch of `epoch` reads: tables, samplers, schedule, counters.
  SgnsArgs base_args(uint32_t epoch);

  /// Zeroes the training counters before a span.
  void reset_counters(cudaStream_t stream);
  /// Launches `a` on `stream` between two timing events.
  void launch_timed(const SgnsArgs& a, cudaStream_t stream);
  /// Trains one piece of super-batch `super_batch` (its first token `first_token`) and, with an
  /// optimizer, applies its step.
  void train_piece(const SgnsArgs& a, uint32_t epoch, uint64_t super_batch, uint64_t first_token,
                   cudaStream_t stream);
  /// With an optimizer, applies the step of super-batch `super_batch` of `epoch` (its first
  /// token `first_token`) to the gradients of the launches since the last step; nothing with sgd.
  void step(uint32_t epoch, uint64_t super_batch, uint64_t first_token, cudaStream_t stream);
  /// Draws the pools of every period that sentences [first, last) touch into `out.pool`, one
  /// after the other, and gives each sentence its pool's number (out.sentence_pool) on `stream`.
  void draw_pools(uint32_t epoch, uint64_t first, uint64_t last, PoolBuffers& out,
                  cudaStream_t stream);

  /// The counters of the span, read on `stream` (waits for it).
  SgnsCounters read_counters(cudaStream_t stream);
  /// Launches since the last clear_timing(), and the start and end events of launch `k` of them.
  size_t launches() const { return timing_n_; }
  const std::pair<Event, Event>& timing(size_t k) const { return timing_[k]; }
  /// GPU time inside the launches since the last clear_timing(), in seconds.
  double kernel_seconds() const;
  /// Forgets the launches' times; their events are kept for the next ones.
  void clear_timing() { timing_n_ = 0; }

 private:
  /// Uploads TrainData::tree's paths (--hs) on `stream` and waits.
  void upload_tree(cudaStream_t stream);

  const TrainData& data_;
  DeviceTables& tables_;
  bool single_warp_ = false;
  uint32_t item_tokens_ = 0;    ///< SgnsArgs::item_tokens
  uint32_t hs_damp_warps_ = 0;  ///< SgnsArgs::hs_damp_warps
  uint32_t max_warps_ = 0;      ///< SgnsArgs::max_warps (1 for single_warp)
  uint64_t keep_count_ = 0;     ///< words whose keep probability is below 1, and those before
  uint32_t batch_blocks_ = 1, pool_blocks_ = 1;
  uint64_t max_pools_ = 1;
  DeviceBuffer<float> keep_;
  DeviceBuffer<NoiseColumn> noise_;
  DeviceBuffer<SgnsCounters> counters_;
  /// The Huffman tree as huffman_links makes it (TrainData::tree, SgnsArgs::hs_word_links): the
  /// words' links, then from hs_words_ on the inner nodes'.
  DeviceBuffer<uint32_t> hs_links_;
  size_t hs_words_ = 0;
  std::vector<std::pair<Event, Event>> timing_;  ///< the first timing_n_ are this span's
  size_t timing_n_ = 0;
};

}  // namespace pagedw2v
