#pragma once
/// @file cpu_examples.hpp
/// Which examples a sentence holds, in the order the CPU backend trains them: the tokens
/// subsampling keeps (collect_kept), then word2vec.c's walk over them, centre after centre and
/// context after context (for_each_example), or one window a centre at a time when skip-gram's
/// windows share their negatives (for_each_window); with the per-thread buffers (Scratch) and the
/// negative pool of the super-batch they draw from. The per-example SGD pass (cpu_sgd.hpp) and the
/// batched gradient pass (cpu_gradients.hpp) both walk sentences through this, so they train
/// exactly the same examples; the rows a rank needs for a span (dist/needed_rows.hpp) are found
/// by the same walk without reading a row (for_each_example_targets).

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "model/negative_pool.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

struct Kept {
  uint32_t id;
  uint32_t shrink;  ///< dynamic-window reduction b: the window is `window − b`
  uint64_t pos;
};

constexpr uint64_t kNoSuperBatch = ~uint64_t{0};

/// Per-thread buffers, reused across sentences.
struct Scratch {
  std::vector<Kept> kept;
  std::vector<uint32_t> targets;
  Eigen::VectorXf h, err;
  /// Shared negatives (SgnsKernel::kSharedNegatives): a window's context rows, and its output
  /// rows and their changes ((negative + 1) × dim each).
  std::vector<float*> contexts;
  std::vector<float> window_out, window_delta;
  /// The negative pool of super-batch `pool_batch` of epoch `pool_epoch` (negative_pool > 0).
  std::vector<uint32_t> pool;
  uint64_t pool_batch = kNoSuperBatch;
  uint32_t pool_epoch = 0;
};

/// Makes s.pool the pool of `super_batch` in `epoch` (a no-op without a pool); it is drawn again
/// only when the super-batch changes.
inline void use_pool(const TrainData& data, uint32_t epoch, uint64_t super_batch, Scratch& s) {
  const TrainParams& p = data.params;
  if (p.negative_pool == 0 || (s.pool_batch == super_batch && s.pool_epoch == epoch)) return;
  s.pool.resize(p.negative_pool);
  draw_pool(p.seed, epoch, super_batch, data.noise->columns().data(), data.noise->column_count(),
            p.negative_pool, s.pool.data());
  s.pool_batch = super_batch;
  s.pool_epoch = epoch;
}

/// The pool of the super-batch block `block` of `epoch` belongs to.
inline void use_pool_of_block(const TrainData& data, uint32_t epoch, uint64_t block, Scratch& s) {
  use_pool(data, epoch, super_batch_of(block, data.params.pool_blocks), s);
}

/// Where sentence s starts is starts[s], whether the corpus is whole or a window of it.
inline const uint64_t* sentence_starts(const TrainData& data) {
  return data.corpus->sentence_starts.data() - data.corpus->sentence_base;
}

/// The tokens of [first, last) that subsampling keeps, with their window reductions.
inline void collect_kept(const TrainData& data, uint32_t epoch, uint64_t first, uint64_t last,
                         std::vector<Kept>& kept, SpanStats* stats) {
  const TrainParams& p = data.params;
  // The corpus may be a window of it: token pos is tokens[pos - token_base].
  const uint32_t* tokens = data.corpus->tokens.data() - data.corpus->token_base;
  const KeepTable& keep = *data.keep;
  kept.clear();
  for (uint64_t pos = first; pos < last; ++pos) {
    const uint32_t id = tokens[pos];
    const Philox4 r = draw(p.seed, pos, epoch, DrawKind::kSubsample);
    if (keep[id] < 1.0f && to_unit_float(r.v[0]) >= keep[id]) continue;
    kept.push_back({id, p.window > 0 ? r.v[1] % p.window : 0, pos});
  }
  stats->words += last - first;
  stats->trained += kept.size();
}

/// One example of a sentence: the input vector `h` (skip-gram: the context word's input row;
/// CBOW: the mean of the window's input rows, in Scratch::h) against `targets` (the centre, then
/// its negatives).
struct Example {
  const Kept* centre;
  const float* h;
  const uint32_t* targets;
  uint32_t n_targets;
  int64_t first, last, skip;  ///< the context rows are kept[first..last] without kept[skip]
  int64_t count;              ///< how many context rows h stands for (1 for skip-gram)
};

/// Whether skip-gram windows share one set of negatives (SgnsKernel::kSharedNegatives).
inline bool shares_negatives(const TrainParams& p) {
  return p.model == ModelKind::kSkipGram && p.kernel == SgnsKernel::kSharedNegatives;
}

/// The negatives an example draws from: the noise table, or s.pool (use_pool first).
inline NegativeSource negative_source(const TrainData& data, const Scratch& s) {
  NegativeSource src{data.noise->columns().data(), data.noise->column_count()};
  if (data.params.negative_pool > 0) {
    src.pool = s.pool.data();
    src.pool_size = data.params.negative_pool;
  }
  return src;
}

/// The window of centre kept[i]: its contexts are kept[lo..hi] without kept[i], none when
/// hi == lo. The window is `window − shrink` wide on each side, cut at the sentence's ends.
struct CentreWindow {
  int64_t lo, hi;
};

inline CentreWindow window_of(const TrainParams& p, const std::vector<Kept>& kept, int64_t i) {
  const int64_t n = static_cast<int64_t>(kept.size());
  const int64_t w = static_cast<int64_t>(p.window) - kept[i].shrink;
  return {std::max<int64_t>(0, i - w), std::min<int64_t>(n - 1, i + w)};
}

/// One skip-gram window with shared negatives: centre kept[i], its contexts kept[lo..hi]
/// without kept[i], and the targets (centre, then negatives) they all train against.
struct Window {
  const Kept* centre;
  int64_t i, lo, hi;
  const uint32_t* targets;
  uint32_t n_targets;
};

/// Calls `visit(window)` for every centre of the kept tokens that has a context, in order, with
/// the negatives it shares with its window (draw_window_targets).
template <class Visit>
void for_each_window(const TrainData& data, uint32_t epoch, Scratch& s, Visit&& visit) {
  const TrainParams& p = data.params;
  const NegativeSource src = negative_source(data, s);
  const int64_t n = static_cast<int64_t>(s.kept.size());
  s.targets.resize(p.negative + 1);
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    const auto [lo, hi] = window_of(p, s.kept, i);
    if (hi <= lo) continue;
    const uint32_t nt =
        draw_window_targets(c.id, c.pos, epoch, p.seed, p.negative, src, s.targets.data());
    visit(Window{&c, i, lo, hi, s.targets.data(), nt});
  }
}

/// Calls `visit(example)` for every example of the kept tokens in word2vec.c's order (centre
/// after centre, context after context), with its centre, context rows and targets but no
/// input vector (Example::h is null): which rows each example reads and writes, without reading
/// one. for_each_example adds the input vector; the rows a rank needs for a span
/// (dist/needed_rows.hpp) are found through this. With a negative pool, the negatives come from
/// s.pool (use_pool first).
template <class Visit>
void for_each_example_targets(const TrainData& data, uint32_t epoch, Scratch& s, Visit&& visit) {
  const TrainParams& p = data.params;
  const NegativeSource src = negative_source(data, s);
  const bool shared = shares_negatives(p);
  const int64_t n = static_cast<int64_t>(s.kept.size());
  s.targets.resize(p.negative + 1);
  uint32_t* targets = s.targets.data();
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    const auto [lo, hi] = window_of(p, s.kept, i);
    if (p.model == ModelKind::kSkipGram) {
      uint32_t nt = 0;
      if (shared && hi > lo) {
        nt = draw_window_targets(c.id, c.pos, epoch, p.seed, p.negative, src, targets);
      }
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
        if (!shared) nt = draw_targets(c.id, c.pos, epoch, slot, p.seed, p.negative, src, targets);
        visit(Example{&c, nullptr, targets, nt, j, j, -1, 1});
      }
    } else {
      if (hi <= lo) continue;  // no context: no example
      const uint32_t nt = draw_targets(c.id, c.pos, epoch, 0, p.seed, p.negative, src, targets);
      visit(Example{&c, nullptr, targets, nt, lo, hi, i, hi - lo});
    }
  }
}

/// Calls `visit(example)` for every example of the kept tokens in word2vec.c's order, as
/// for_each_example_targets walks them, with the input vector read from `rows`. Both the
/// per-example SGD pass and the batched gradient pass walk sentences through this, so they
/// train exactly the same examples.
template <class Rows, class Visit>
void for_each_example(const TrainData& data, uint32_t epoch, const Rows& rows, Scratch& s,
                      Visit&& visit) {
  const uint32_t dim = data.params.dim;
  const bool skip_gram = data.params.model == ModelKind::kSkipGram;
  for_each_example_targets(data, epoch, s, [&](Example e) {
    if (skip_gram) {
      e.h = rows.input(s.kept[e.first].id);  // skip-gram: the context word's input row
    } else {
      s.h.setZero();
      for (int64_t j = e.first; j <= e.last; ++j) {
        if (j != e.skip) s.h += ConstVecMap(rows.input(s.kept[j].id), dim);
      }
      s.h /= static_cast<float>(e.count);
      e.h = s.h.data();
    }
    visit(static_cast<const Example&>(e));
  });
}

/// Calls `f(row id)` for every context row of an example.
template <class F>
void for_each_context_row(const Example& e, const std::vector<Kept>& kept, F&& f) {
  for (int64_t j = e.first; j <= e.last; ++j) {
    if (j != e.skip) f(kept[j].id);
  }
}

inline Scratch make_scratch(uint32_t dim) {
  Scratch s;
  s.h.resize(dim);
  s.err.resize(dim);
  return s;
}

}  // namespace cpu
}  // namespace detail
}  // namespace pagedw2v
