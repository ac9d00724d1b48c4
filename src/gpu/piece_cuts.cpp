#include "gpu/piece_cuts.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "base/error.hpp"
#include "model/negative_pool.hpp"

namespace pagedw2v {

namespace {

/// Units a thread may cut ahead of the one next() reads, per thread, where the slots are shared
/// (a small cache: units of many short pieces, each cut in about the time the device trains it).
/// Without (a large cache) a unit is one super-batch, which a thread cuts in about the time the
/// device trains two, and each unit held keeps its pieces' cold rows and pools (megabytes at
/// millions of rows): one a thread and one more are cut ahead.
constexpr uint64_t kAheadPerThread = 2;

/// One unit's cutting (PieceCuts::cut_unit), its steps apart: the piece being cut (its cold rows
/// as a list and as bits), the pieces before it that may still hold slots, and the unit's pools,
/// each drawn once.
class UnitCutter {
 public:
  UnitCutter(const PieceCutInput& in, uint32_t epoch, uint64_t first_block, uint64_t last_block,
             const uint32_t* tokens, const uint64_t* starts, std::vector<uint64_t>& seen,
             std::vector<std::vector<uint64_t>>& held)
      : in_(in),
        blocks_(*in.blocks),
        b0_(first_block),
        b1_(last_block),
        epoch_(epoch),
        hot_(static_cast<uint32_t>(in.hot)),
        tokens_(tokens),
        starts_(starts),
        seen_(seen),
        held_(held),
        first_period_(first_block / in.pool_blocks),
        pools_((last_block - 1) / in.pool_blocks - first_period_ + 1),
        shared_(in.slots > 0),
        // A unit's first pieces do not know all the pieces before them: a depth's share each.
        first_share_(shared_
                         ? std::min<uint64_t>(in.share, std::max<uint64_t>(1, in.slots / in.depth))
                         : in.share) {}

  /// The unit's pieces, in order; the bits are clear again after.
  std::vector<PieceCut> cut() {
    std::vector<PieceCut> cuts;
    uint64_t block = b0_;
    uint64_t t = blocks_[b0_];
    const uint64_t end = blocks_[b1_];
    while (t < end) {
      PieceCut cut;
      cut.first_sentence = t;
      take_sentences(cut, t, block, end, cuts.size());
      cut.last_sentence = t;
      add_pools(cut, t);
      if (shared_ && fits(cuts.size())) {
        cut.fits_with = static_cast<uint32_t>(std::min<size_t>(cuts.size(), held_.size()));
      }
      cut.cold = ascending();
      beyond_ = 0;
      cuts.push_back(std::move(cut));
      remember(cuts);
    }
    clear_held(cuts);
    return cuts;
  }

 private:
  static uint64_t bit_of(const std::vector<uint64_t>& set, uint64_t bit) {
    return (set[bit >> 6] >> (bit & 63)) & 1;
  }

  /// The pool of `period`, drawn on its first use.
  const std::vector<uint32_t>& pool_of(uint64_t period) {
    std::vector<uint32_t>& p = pools_[period - first_period_];
    if (p.size() != in_.pool_size) {
      p.resize(in_.pool_size);
      draw_pool(in_.seed, epoch_, period, in_.noise->columns().data(), in_.noise->column_count(),
                in_.pool_size, p.data());
    }
    return p;
  }

  /// Whether a cold row is held by a piece before this one that may still hold slots.
  bool held_before(uint64_t bit) const {
    for (const auto& h : held_) {
      if (bit_of(h, bit) != 0) return true;
    }
    return false;
  }

  /// Adds the cold rows among `ids` to the piece.
  void add(const uint32_t* ids, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      const uint32_t id = ids[i];
      if (id < hot_) continue;
      const uint64_t bit = id - hot_;
      uint64_t& word = seen_[bit >> 6];
      const uint64_t mask = uint64_t{1} << (bit & 63);
      if ((word & mask) != 0) continue;
      word |= mask;
      list_.push_back(id);
      if (shared_ && !held_before(bit)) ++beyond_;
    }
  }

  /// Takes the rows added from list_[from] on out of the piece again.
  void forget(size_t from) {
    for (size_t k = from; k < list_.size(); ++k) {
      const uint64_t bit = list_[k] - hot_;
      seen_[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
      if (shared_ && !held_before(bit)) --beyond_;
    }
    list_.resize(from);
  }

  /// The piece's cold rows in ascending order, their bits cleared: a sort of the list, or, when
  /// the list is long beside the stretch of bits it spans (the large pieces of a large cache), a
  /// scan of those bits, which gives them in order without comparing (a sort of 48 k ids took
  /// most of a cut of the 2 M-word walks).
  std::vector<uint32_t> ascending() {
    std::vector<uint32_t>& ids = list_;
    std::vector<uint32_t> out;
    if (ids.empty()) return out;
    const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
    const uint64_t first_word = (*lo - hot_) >> 6, last_word = (*hi - hot_) >> 6;
    if (last_word - first_word + 1 > ids.size() * 2) {
      out = ids;
      std::sort(out.begin(), out.end());
      for (const uint32_t id : ids) {
        const uint64_t bit = id - hot_;
        seen_[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
      }
      ids.clear();
      return out;
    }
    out.reserve(ids.size());
    for (uint64_t w = first_word; w <= last_word; ++w) {
      for (uint64_t bits_left = seen_[w]; bits_left != 0; bits_left &= bits_left - 1) {
        out.push_back(static_cast<uint32_t>(hot_ + (w << 6) +
                                            static_cast<uint64_t>(__builtin_ctzll(bits_left))));
      }
      seen_[w] = 0;
    }
    ids.clear();
    return out;
  }

  /// The block of the unit that holds `sentence`.
  uint64_t block_of(uint64_t sentence) const {
    return static_cast<uint64_t>(
        std::upper_bound(blocks_.begin() + b0_, blocks_.begin() + b1_ + 1, sentence) -
        blocks_.begin() - 1);
  }

  /// The pieces before the next one that may still hold slots: held[k] holds the cold rows of
  /// cuts[cuts.size() − 1 − k]; the oldest set is cleared by its piece's list.
  void remember(const std::vector<PieceCut>& cuts) {
    if (!shared_ || held_.empty()) return;
    std::vector<uint64_t> oldest = std::move(held_.back());
    if (cuts.size() > held_.size()) {
      for (const uint32_t id : cuts[cuts.size() - 1 - held_.size()].cold) {
        const uint64_t bit = id - hot_;
        oldest[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
      }
    }
    held_.pop_back();
    for (const uint32_t id : cuts.back().cold) {
      const uint64_t bit = id - hot_;
      oldest[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
    held_.insert(held_.begin(), std::move(oldest));
    // Their union, counted on the piece's bits (clear between pieces).
    before_ = 0;
    const size_t known = std::min(cuts.size(), held_.size());
    for (size_t k = 0; k < known; ++k) {
      for (const uint32_t id : cuts[cuts.size() - 1 - k].cold) {
        const uint64_t bit = id - hot_;
        uint64_t& word = seen_[bit >> 6];
        const uint64_t mask = uint64_t{1} << (bit & 63);
        before_ += (word & mask) == 0;
        word |= mask;
      }
    }
    for (size_t k = 0; k < known; ++k) {
      for (const uint32_t id : cuts[cuts.size() - 1 - k].cold) {
        const uint64_t bit = id - hot_;
        seen_[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
      }
    }
  }

  /// Whether the piece, with `pieces_before` pieces of the unit before it, fits.
  bool fits(size_t pieces_before) const {
    if (!shared_) return list_.size() <= in_.share;
    // A piece whose predecessors are known brings at most a depth's share of rows they do not
    // hold (as many rows to move as a share-cut piece), and with them needs at most the slots.
    if (pieces_before < held_.size()) return list_.size() <= first_share_;
    return list_.size() <= in_.share && beyond_ <= first_share_ && before_ + beyond_ <= in_.slots;
  }

  /// Adds sentences from `t` on to the piece while it fits and the stage buffers' bounds hold
  /// (its first sentence always); `t` ends as its end, `block` as the block of its last one.
  void take_sentences(PieceCut& cut, uint64_t& t, uint64_t& block, uint64_t end,
                      size_t pieces_before) {
    uint64_t last_period = UINT64_MAX, periods = 0;
    for (; t < end; ++t) {
      while (blocks_[block + 1] <= t) ++block;
      const uint64_t period = block / in_.pool_blocks;
      const uint64_t more_periods = periods + (period != last_period ? 1 : 0);
      if (t > cut.first_sentence &&
          ((in_.max_tokens > 0 && starts_[t + 1] - starts_[cut.first_sentence] > in_.max_tokens) ||
           (in_.max_sentences > 0 && t + 1 - cut.first_sentence > in_.max_sentences) ||
           (in_.max_periods > 0 && more_periods > in_.max_periods))) {
        break;
      }
      const size_t at = list_.size();
      if (period != last_period && in_.pool_size > 0) {
        const std::vector<uint32_t>& pool = pool_of(period);
        add(pool.data(), pool.size());
      }
      add(tokens_ + starts_[t], starts_[t + 1] - starts_[t]);
      if (t > cut.first_sentence && !fits(pieces_before)) {
        forget(at);
        break;
      }
      last_period = period;
      periods = more_periods;
    }
  }

  /// The piece's pools: those of the periods from its first sentence's to its last's (`end`
  /// its end).
  void add_pools(PieceCut& cut, uint64_t end) {
    cut.first_period = block_of(cut.first_sentence) / in_.pool_blocks;
    const uint64_t last = block_of(end - 1) / in_.pool_blocks;
    if (in_.pool_size > 0) {
      cut.pools.reserve((last - cut.first_period + 1) * in_.pool_size);
      for (uint64_t p = cut.first_period; p <= last; ++p) {
        const std::vector<uint32_t>& pool = pool_of(p);
        cut.pools.insert(cut.pools.end(), pool.begin(), pool.end());
      }
    }
  }

  /// The bits of the pieces still remembered, cleared for the thread's next unit.
  void clear_held(const std::vector<PieceCut>& cuts) {
    for (size_t k = 0; k < std::min(cuts.size(), held_.size()); ++k) {
      for (const uint32_t id : cuts[cuts.size() - 1 - k].cold) {
        const uint64_t bit = id - hot_;
        for (auto& h : held_) h[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
      }
    }
  }

  const PieceCutInput& in_;
  const std::vector<uint64_t>& blocks_;
  const uint64_t b0_, b1_;  ///< the unit: blocks [b0_, b1_)
  const uint32_t epoch_;
  const uint32_t hot_;
  const uint32_t* tokens_;
  const uint64_t* starts_;
  std::vector<uint64_t>& seen_;               ///< a bit per cold row of the piece being cut
  std::vector<std::vector<uint64_t>>& held_;  ///< the rows of the pieces before it (a ring)
  std::vector<uint32_t> list_;                ///< the piece's cold rows, in first-seen order
  const uint64_t first_period_;
  std::vector<std::vector<uint32_t>> pools_;  ///< the unit's periods' pools, from first_period_
  const bool shared_;
  const uint64_t first_share_;
  /// The cold rows of the piece not held before it: with before_ (the union of those held) the
  /// slots it needs with the pieces before it.
  uint64_t beyond_ = 0, before_ = 0;
};

}  // namespace

PieceCuts::PieceCuts(const PieceCutInput& in, uint32_t threads) : in_(in) {
  if (in_.blocks == nullptr || in_.noise == nullptr || in_.hot > in_.rows) {
    throw Error("piece cuts: the corpus's blocks, the noise table and hot ≤ rows are needed");
  }
  in_.batch_blocks = std::max<uint32_t>(in_.batch_blocks, 1);
  in_.unit_blocks = std::max<uint32_t>(in_.unit_blocks, in_.batch_blocks);
  in_.depth = std::max<uint32_t>(in_.depth, 1);
  in_.pool_blocks = std::max<uint32_t>(in_.pool_blocks, 1);
  in_.share = std::max<uint64_t>(in_.share, 1);
  threads = std::max<uint32_t>(threads, 1);
  // Set before any thread starts: a thread reads it while the others are still being started.
  ahead_ = in_.slots > 0 ? kAheadPerThread * threads : uint64_t{threads} + 1;
  try {
    for (uint32_t t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw Error(std::string("piece cuts: cannot start a thread: ") + e.what());
  }
}

PieceCuts::~PieceCuts() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void PieceCuts::add_units(uint32_t epoch, uint64_t first_block, uint64_t last_block) {
  last_block = std::max(first_block, last_block);
  if (last_block == first_block) return;
  // The first unit ends at the next super-batch boundary; each next one is twice as long, up to
  // unit_blocks.
  const uint64_t bb = in_.batch_blocks;
  uint64_t at = first_block, size = bb;
  while (at < last_block) {
    Unit u;
    u.serial = next_serial_++;
    u.epoch = epoch;
    u.first_block = at;
    at = at == first_block ? std::min(last_block, (at / bb + 1) * bb)
                           : std::min(last_block, at + size);
    if (u.first_block != first_block) size = std::min<uint64_t>(size * 2, in_.unit_blocks);
    u.last_block = at;
    units_.push_back(std::move(u));
  }
}

void PieceCuts::drop_span(std::unique_lock<std::mutex>& lock) {
  if (!expecting_) {
    ++generation_;
    units_.clear();
    base_ = span_end_ = next_unit_ = current_ = 0;
    changed_.wait(lock, [&] { return busy_ == 0; });
    return;
  }
  // The expected span's units stay; a thread still cutting one of the dropped ones stores
  // nothing (its number is below base_).
  while (base_ < span_end_ && !units_.empty()) {
    units_.pop_front();
    ++base_;
  }
  base_ = span_end_;
  current_ = span_end_;
  next_unit_ = std::max(next_unit_, span_end_);
  changed_.notify_all();
}

void PieceCuts::start(uint32_t epoch, uint64_t first_block, uint64_t last_block,
                      const uint32_t* tokens, const uint64_t* sentence_starts) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool expected = expecting_ && epoch == expected_epoch_ && first_block == expected_first_ &&
                        last_block == expected_last_ && tokens == tokens_ &&
                        sentence_starts == starts_;
  if (!expected) expecting_ = false;
  drop_span(lock);
  expecting_ = false;
  if (!expected) {
    tokens_ = tokens;
    starts_ = sentence_starts;
    add_units(epoch, first_block, last_block);
  }
  span_end_ = base_ + units_.size();
  changed_.notify_all();
}

void PieceCuts::expect(uint32_t epoch, uint64_t first_block, uint64_t last_block) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Another expected span's units, if any, go first.
  while (base_ + units_.size() > span_end_) units_.pop_back();
  next_unit_ = std::min(next_unit_, span_end_);
  expecting_ = true;
  expected_epoch_ = epoch;
  expected_first_ = first_block;
  expected_last_ = std::max(first_block, last_block);
  add_units(epoch, first_block, last_block);
  changed_.notify_all();
}

void PieceCuts::end() {
  std::unique_lock<std::mutex> lock(mutex_);
  drop_span(lock);
}

bool PieceCuts::next(PieceCut& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (current_ >= span_end_) return false;
    Unit& u = units_[current_ - base_];
    if (u.done && u.failure) std::rethrow_exception(u.failure);
    if (u.done && u.taken < u.cuts.size()) {
      out = std::move(u.cuts[u.taken++]);
      return true;
    }
    if (u.done) {
      u.cuts = {};
      ++current_;
      changed_.notify_all();  // a thread may cut one unit further ahead now
      continue;
    }
    changed_.wait(lock);
  }
}

void PieceCuts::work() {
  const uint64_t words = (in_.rows - in_.hot + 63) / 64;
  Bits bits;
  bits.seen.assign(words, 0);
  if (in_.slots > 0) bits.held.assign(in_.depth - 1, std::vector<uint64_t>(words, 0));
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return stop_ || (next_unit_ < base_ + units_.size() && next_unit_ < current_ + ahead_);
    });
    if (stop_) return;
    const uint64_t u = next_unit_++, generation = generation_;
    Unit unit;
    unit.serial = units_[u - base_].serial;
    unit.epoch = units_[u - base_].epoch;
    unit.first_block = units_[u - base_].first_block;
    unit.last_block = units_[u - base_].last_block;
    ++busy_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      unit.cuts = cut_unit(unit, bits);
    } catch (...) {
      failure = std::current_exception();
      std::fill(bits.seen.begin(), bits.seen.end(), 0);
      for (auto& h : bits.held) std::fill(h.begin(), h.end(), 0);
    }
    lock.lock();
    --busy_;
    // Dropped meanwhile: a reset, its span ended, or another expected span took its number.
    if (generation == generation_ && u >= base_ && u < base_ + units_.size() &&
        units_[u - base_].serial == unit.serial) {
      Unit& slot = units_[u - base_];
      slot.cuts = std::move(unit.cuts);
      slot.failure = failure;
      slot.done = true;
    }
    changed_.notify_all();
  }
}

std::vector<PieceCut> PieceCuts::cut_unit(const Unit& unit, Bits& bits) const {
  // The corpus's pointers are read without the lock: start() changes them only once no thread
  // is busy (a reset).
  UnitCutter cutter(in_, unit.epoch, unit.first_block, unit.last_block, tokens_, starts_, bits.seen,
                    bits.held);
  return cutter.cut();
}

}  // namespace pagedw2v
