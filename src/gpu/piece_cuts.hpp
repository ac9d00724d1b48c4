#pragma once
/// @file piece_cuts.hpp
/// Where the pieces of paged sgd end, decided on the host ahead of the device. A piece is cut so
/// that its distinct cold rows (the ids at or above the hot rows among its tokens and its pool
/// entries) fit the row cache beside the pieces that may still hold slots when it takes its own:
/// the `depth − 1` pieces before it (the pipeline's depth). Rows that consecutive pieces share
/// (a pool period's entries, the rarer words of a stretch of text) hold one slot between them,
/// so the rule counts the union of those pieces' cold rows against the `slots`, and bounds by a
/// depth's share of the slots only the rows a piece brings that the pieces before it do not
/// hold; a piece also lists at most `share` rows, and only its first sentence may take more. A cut
/// depends on the corpus and the pools only, never on what the cache holds, so threads cut later
/// units (runs of blocks) while the device trains earlier ones, and a piece needs no round trip to
/// the device to learn whether it fits. A unit's first pieces do not know the last pieces of the
/// unit before (another thread cuts it): they take at most a depth's share of the slots each, and
/// the pipeline, which knows every piece in flight, lets one whose union with them would not fit
/// take its slots only once the piece two back has trained (gpu/paged_pipeline.hpp). Units grow
/// from one super-batch to `unit_blocks` blocks, so that a span's first piece comes soon and the
/// unit boundaries are few. Since a cut depends on nothing the device does, the threads also cut
/// the first units of the span expected next (expect()) while a span trains, so that the next
/// span's first piece is ready when it starts; a span that comes otherwise is cut from its start.
/// Each cut carries its cold rows, ascending, for the device to take in one step
/// (kernels/paging.hpp, launch_take_listed_rows) instead of marking and selecting them among all
/// rows.
///
/// Owns: the cutting threads, their bit per cold row, the cuts not yet taken (the current span's
/// and the expected span's units, numbered in one sequence). Plain C++ (tests
/// run it without a GPU). May not touch: the device, the cache, the corpus (only read).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "model/sampler.hpp"

namespace pagedw2v {

/// One piece: sentences [first_sentence, last_sentence), its cold rows and its pools.
struct PieceCut {
  uint64_t first_sentence = 0, last_sentence = 0;
  std::vector<uint32_t> cold;  ///< distinct ids ≥ hot of its tokens and pool entries, ascending
  /// The pools of the pool periods it spans, from `first_period` on, one after the other
  /// (draw_pool's entries: those the device would draw).
  uint64_t first_period = 0;
  std::vector<uint32_t> pools;
  /// The pieces just before it whose cold rows with its own number at most the slots
  /// (PieceCutInput::slots), as the cut counted them: the pieces before it in its unit, up to
  /// depth − 1; 0 when the slots are not shared, or its first sentence alone passed them.
  uint32_t fits_with = 0;
};

/// What the cuts are made of. Pointers are borrowed for the object's life.
struct PieceCutInput {
  const std::vector<uint64_t>* blocks = nullptr;  ///< work block boundaries (sentences)
  /// Blocks per super-batch: the span's units start at multiples of it, the first of them one
  /// super-batch long (or the part of one in the span).
  uint32_t batch_blocks = 1;
  /// The most blocks of a unit (0: batch_blocks): units double from one super-batch up to it. A
  /// piece never spans two units.
  uint32_t unit_blocks = 0;
  uint32_t pool_blocks = 1;  ///< blocks per pool period (negative_pool.hpp)
  uint32_t pool_size = 0;    ///< entries of a pool
  uint64_t seed = 0;
  const NoiseTable* noise = nullptr;  ///< the noise table the pools draw from
  uint64_t rows = 0;                  ///< ids are below
  uint64_t hot = 0;                   ///< ids below are hot: no slot, not listed
  uint64_t share = 1;                 ///< the most cold rows of a piece beyond its first sentence
  /// The row cache's slots, shared by `depth` pieces at once (0: only `share` bounds a piece):
  /// a piece's cold rows and those of the depth − 1 pieces cut before it in its unit number at
  /// most `slots` together (their union), and those of its rows they do not hold at most
  /// slots / depth (what it brings to the cache); a piece with fewer such pieces before it in
  /// its unit (the unit's first) lists at most slots / depth.
  uint64_t slots = 0;
  uint32_t depth = 1;
  /// The most tokens, sentences and pool periods of a piece beyond its first sentence (0: no
  /// bound beyond its unit): what the pipeline's stage buffers hold.
  uint64_t max_tokens = 0, max_sentences = 0, max_periods = 0;
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
  /// until end()). Ends any previous span; the span expect() named, with the same corpus, starts
  /// with the cuts already made of it.
  void start(uint32_t epoch, uint64_t first_block, uint64_t last_block, const uint32_t* tokens,
             const uint64_t* sentence_starts);
  /// Names the span likely to follow the current one (same corpus): the threads cut its first
  /// units once they are ahead of the current span's end, so that its first pieces are ready
  /// when it starts. The corpus must then stay readable until the next start(), or the object's
  /// end, even past end().
  void expect(uint32_t epoch, uint64_t first_block, uint64_t last_block);
  /// The span's next piece, waiting for it; false when the span has no more. Throws what a
  /// cutting thread threw.
  bool next(PieceCut& out);
  /// Ends the span: drops its cuts. Without an expected span, returns once no thread reads the
  /// corpus; with one, the threads go on cutting it.
  void end();

 private:
  struct Unit {
    uint64_t serial = 0;  ///< unique over the object's life: a dropped unit's cut is not stored
    uint32_t epoch = 0;
    uint64_t first_block = 0, last_block = 0;  ///< blocks [first_block, last_block)
    bool done = false;
    std::vector<PieceCut> cuts;
    std::exception_ptr failure;
    size_t taken = 0;
  };
  /// A thread's bits: one per cold row for the piece being cut, and one set per piece before it
  /// that may still hold slots (PieceCutInput::depth − 1 of them, a ring).
  struct Bits {
    std::vector<uint64_t> seen;
    std::vector<std::vector<uint64_t>> held;
  };
  /// The cuts of `unit`.
  std::vector<PieceCut> cut_unit(const Unit& unit, Bits& bits) const;
  void work();
  /// Appends the units of a span (under the lock).
  void add_units(uint32_t epoch, uint64_t first_block, uint64_t last_block);
  /// Drops the current span's units; every unit and thread too without an expected span, once
  /// no thread cuts (under `lock`).
  void drop_span(std::unique_lock<std::mutex>& lock);

  PieceCutInput in_;
  uint64_t ahead_ = 1;  ///< units the threads may cut ahead of the one next() reads
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  uint64_t generation_ = 0;  ///< counts resets; a unit cut before one is dropped
  const uint32_t* tokens_ = nullptr;
  const uint64_t* starts_ = nullptr;
  /// Units by number: units_[k] is unit base_ + k. Those below span_end_ are the current span's,
  /// those from it on the expected span's.
  std::deque<Unit> units_;
  uint64_t base_ = 0, span_end_ = 0;
  bool expecting_ = false;
  uint32_t expected_epoch_ = 0;
  uint64_t expected_first_ = 0, expected_last_ = 0;
  uint64_t next_serial_ = 1;
  uint64_t next_unit_ = 0;  ///< the next unit a thread takes
  uint64_t current_ = 0;    ///< the unit next() reads
  uint32_t busy_ = 0;       ///< threads cutting a unit
};

}  // namespace pagedw2v
