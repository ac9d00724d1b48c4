#pragma once
/// @file piece_cuts.hpp
/// Where the pieces of paged sgd end, decided on the host ahead of the device. A piece is cut so
/// that its distinct cold rows (the ids at or above the hot rows among its tokens and its pool
/// entries) are at most a share of the row cache: `share` is the cache's slots over the pieces
/// that may hold slots at once (the pipeline's depth), and a piece takes more only when its first
/// sentence alone does. A cut depends on the corpus and the pools only, never on what the cache
/// holds, so threads cut later super-batches while the device trains earlier ones, and a piece
/// needs no round trip to the device to learn whether it fits: the pieces that may hold slots
/// together need at most every slot (the pipeline drains first for one that would need more,
/// such as a piece after an oversized first sentence). Each cut carries its cold rows, ascending,
/// for the device to take in one step (kernels/paging.hpp, launch_take_listed_rows) instead of
/// marking and selecting them among all rows.
///
/// Owns: the cutting threads, their bit per cold row, the cuts not yet taken. Plain C++ (tests
/// run it without a GPU). May not touch: the device, the cache, the corpus (only read).

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "sampler.hpp"

namespace pagedw2v {

/// One piece: sentences [first_sentence, last_sentence), its cold rows and its pools.
struct PieceCut {
  uint64_t first_sentence = 0, last_sentence = 0;
  std::vector<uint32_t> cold;  ///< distinct ids ≥ hot of its tokens and pool entries, ascending
  /// The pools of the pool periods it spans, from `first_period` on, one after the other
  /// (draw_pool's entries: those the device would draw).
  uint64_t first_period = 0;
  std::vector<uint32_t> pools;
};

/// What the cuts are made of. Pointers are borrowed for the object's life.
struct PieceCutInput {
  const std::vector<uint64_t>* blocks = nullptr;  ///< work block boundaries (sentences)
  uint32_t batch_blocks = 1;  ///< blocks per super-batch: a piece never spans two
  uint32_t pool_blocks = 1;   ///< blocks per pool period (negative_pool.hpp)
  uint32_t pool_size = 0;     ///< entries of a pool
  uint64_t seed = 0;
  const NoiseTable* noise = nullptr;  ///< the noise table the pools draw from
  uint64_t rows = 0;                  ///< ids are below
  uint64_t hot = 0;                   ///< ids below are hot: no slot, not listed
  uint64_t share = 1;                 ///< the most cold rows of a piece beyond its first sentence
};

class PieceCuts {
 public:
  /// `threads` cutting threads (at least one), each a bit per cold row.
  PieceCuts(const PieceCutInput& in, uint32_t threads);
  ~PieceCuts();
  PieceCuts(const PieceCuts&) = delete;
  PieceCuts& operator=(const PieceCuts&) = delete;

  /// Starts cutting blocks [first_block, last_block) of `epoch`: token p at tokens[p], sentence
  /// s from sentence_starts[s] (the corpus's absolute positions; the span's must be readable
  /// until end()). Ends any previous span.
  void start(uint32_t epoch, uint64_t first_block, uint64_t last_block, const uint32_t* tokens,
             const uint64_t* sentence_starts);
  /// The span's next piece, waiting for it; false when the span has no more. Throws what a
  /// cutting thread threw.
  bool next(PieceCut& out);
  /// Ends the span: drops its cuts and returns once no thread reads its corpus.
  void end();

 private:
  struct Unit {
    bool done = false;
    std::vector<PieceCut> cuts;
    size_t taken = 0;
  };
  /// The cuts of unit `u` (a super-batch of the span, or the part of one in it).
  std::vector<PieceCut> cut_unit(uint64_t u, std::vector<uint64_t>& seen) const;
  void work();

  PieceCutInput in_;
  uint64_t ahead_ = 1;  ///< units the threads may cut ahead of the one next() reads
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  uint64_t generation_ = 0;  ///< counts spans; a unit cut for an older span is dropped
  // The span.
  uint32_t epoch_ = 0;
  uint64_t first_block_ = 0, last_block_ = 0;
  const uint32_t* tokens_ = nullptr;
  const uint64_t* starts_ = nullptr;
  std::vector<Unit> units_;
  uint64_t next_unit_ = 0;  ///< the next unit a thread takes
  uint64_t current_ = 0;    ///< the unit next() reads
  uint32_t busy_ = 0;       ///< threads cutting a unit
  std::exception_ptr failure_;
};

}  // namespace pagedw2v
