#include "backend/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/hs_cpu.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "base/error.hpp"
#include "base/worker_threads.hpp"
#include "model/negative_pool.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {
namespace detail {
namespace {

struct Kept {
  uint32_t id;
  uint32_t shrink;  ///< dynamic-window reduction b: the window is `window − b`
  uint64_t pos;
};

constexpr uint64_t kNoSuperBatch = ~uint64_t{0};

/// Where the rows of a word lie: at its id in the whole tables (one process), or as a rank lays
/// them out (RankRows). Every pass below is a template over this, so the whole-table path
/// compiles as it did before ranks existed. node(row) is the vector of a Huffman tree's inner
/// node (hierarchical softmax): a row of the output table when negative sampling is off, of
/// Model::nodes beside it.
struct IdRows {
  float* in;
  float* out;
  float* nodes;
  uint32_t dim;
  float* input(uint32_t id) const { return in + static_cast<size_t>(id) * dim; }
  float* output(uint32_t id) const { return out + static_cast<size_t>(id) * dim; }
  float* node(uint32_t row) const { return nodes + static_cast<size_t>(row) * dim; }
};
struct SplitRows {
  RankRows r;
  uint32_t dim;
  float* input(uint32_t id) const {
    const uint32_t s = r.slot_of[id];
    return s < r.split ? r.owned_input + static_cast<size_t>(s) * dim
                       : r.copy_input + static_cast<size_t>(s - r.split) * dim;
  }
  float* output(uint32_t id) const {
    const uint32_t s = r.slot_of[id];
    return s < r.split ? r.owned_output + static_cast<size_t>(s) * dim
                       : r.copy_output + static_cast<size_t>(s - r.split) * dim;
  }
  // Ranks train negative sampling only (the CPU backend refuses hierarchical softmax over them):
  // were they to, the inner nodes would be the output rows of the same ids.
  float* node(uint32_t row) const { return output(row); }
};

/// The whole tables of `model`, which a pass only reads when `model` is const.
IdRows id_rows(const Model& model) {
  float* out = const_cast<float*>(model.output.data());
  float* nodes = model.nodes.rows() > 0 ? const_cast<float*>(model.nodes.data()) : out;
  return {const_cast<float*>(model.input.data()), out, nodes, model.input.dim()};
}

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
void use_pool(const TrainData& data, uint32_t epoch, uint64_t super_batch, Scratch& s) {
  const TrainParams& p = data.params;
  if (p.negative_pool == 0 || (s.pool_batch == super_batch && s.pool_epoch == epoch)) return;
  s.pool.resize(p.negative_pool);
  draw_pool(p.seed, epoch, super_batch, data.noise->columns().data(), data.noise->column_count(),
            p.negative_pool, s.pool.data());
  s.pool_batch = super_batch;
  s.pool_epoch = epoch;
}

/// The pool of the super-batch block `block` of `epoch` belongs to.
void use_pool_of_block(const TrainData& data, uint32_t epoch, uint64_t block, Scratch& s) {
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
    const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    if (hi <= lo) continue;
    const uint32_t nt =
        draw_window_targets(c.id, c.pos, epoch, p.seed, p.negative, src, s.targets.data());
    visit(Window{&c, i, lo, hi, s.targets.data(), nt});
  }
}

/// Calls `visit(example)` for every example of the kept tokens in word2vec.c's order (centre
/// after centre, context after context). Both the per-example SGD pass and the batched gradient
/// pass walk sentences through this, so they train exactly the same examples. With a negative
/// pool, the negatives come from s.pool (use_pool first). `h` is read from `rows`.
template <class Rows, class Visit>
void for_each_example(const TrainData& data, uint32_t epoch, const Rows& rows, Scratch& s,
                      Visit&& visit) {
  const TrainParams& p = data.params;
  const NegativeSource src = negative_source(data, s);
  const bool shared = shares_negatives(p);
  const uint32_t dim = p.dim;
  const int64_t n = static_cast<int64_t>(s.kept.size());
  s.targets.resize(p.negative + 1);
  uint32_t* targets = s.targets.data();
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    if (p.model == ModelKind::kSkipGram) {
      uint32_t nt = 0;
      if (shared && hi > lo) {
        nt = draw_window_targets(c.id, c.pos, epoch, p.seed, p.negative, src, targets);
      }
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
        if (!shared) nt = draw_targets(c.id, c.pos, epoch, slot, p.seed, p.negative, src, targets);
        visit(Example{&c, rows.input(s.kept[j].id), targets, nt, j, j, -1, 1});
      }
    } else {
      s.h.setZero();
      int64_t cw = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        s.h += ConstVecMap(rows.input(s.kept[j].id), dim);
        ++cw;
      }
      if (cw == 0) continue;
      s.h /= static_cast<float>(cw);
      const uint32_t nt = draw_targets(c.id, c.pos, epoch, 0, p.seed, p.negative, src, targets);
      visit(Example{&c, s.h.data(), targets, nt, lo, hi, i, cw});
    }
  }
}

/// Calls `f(row id)` for every context row of an example.
template <class F>
void for_each_context_row(const Example& e, const std::vector<Kept>& kept, F&& f) {
  for (int64_t j = e.first; j <= e.last; ++j) {
    if (j != e.skip) f(kept[j].id);
  }
}

template <class Rows>
void train_sentence(const TrainData& data, const Rows& rows, uint32_t epoch, uint64_t first,
                    uint64_t last, Scratch& s, SpanStats* stats) {
  const TrainParams& p = data.params;
  const LrSchedule schedule = make_schedule(p);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const uint32_t dim = p.dim;
  const auto output_row = [&rows](uint32_t id) { return rows.output(id); };
  const auto node_row = [&rows](uint32_t row) { return rows.node(row); };
  const HuffmanTree* tree = p.hs ? data.tree : nullptr;

  collect_kept(data, epoch, first, last, s.kept, stats);
  if (shares_negatives(p)) {
    s.window_out.resize(static_cast<size_t>(p.negative + 1) * dim);
    s.window_delta.resize(s.window_out.size());
    for_each_window(data, epoch, s, [&](const Window& w) {
      const float lr = schedule.at(epoch_base + w.centre->pos);
      s.contexts.clear();
      for (int64_t j = w.lo; j <= w.hi; ++j) {
        if (j != w.i) s.contexts.push_back(rows.input(s.kept[j].id));
      }
      const uint32_t k = static_cast<uint32_t>(s.contexts.size());
      stats->loss +=
          shared_window_update(s.contexts.data(), k, output_row, w.targets, w.n_targets, dim, lr,
                               s.window_out.data(), s.window_delta.data(), s.err.data());
      stats->loss_terms += k;
    });
    return;
  }
  for_each_example(data, epoch, rows, s, [&](const Example& e) {
    const float lr = schedule.at(epoch_base + e.centre->pos);
    s.err.setZero();
    // Hierarchical softmax first, then negative sampling, into one err (word2vec's order).
    if (tree != nullptr) {
      const uint32_t w = e.centre->id;
      stats->loss += hs_update_rows(e.h, s.err.data(), node_row, tree->path_rows(w),
                                    tree->path_codes(w), tree->length(w), dim, lr, true);
    }
    if (p.negative > 0) {
      stats->loss +=
          sgns_update_rows(e.h, s.err.data(), output_row, e.targets, e.n_targets, dim, lr, true);
    }
    ++stats->loss_terms;
    for_each_context_row(e, s.kept, [&](uint32_t id) { VecMap(rows.input(id), dim) += s.err; });
  });
}

/// The summed gradients of the rows one batch touches, in first-touch order. An open-addressing
/// map (linear probing) from row id to a dense gradient row; clear() costs the rows touched, not
/// the vocabulary, so a thread's map stays small.
class RowGrads {
 public:
  explicit RowGrads(uint32_t dim) : dim_(dim) { rehash(1024); }

  /// The gradient of row `id`, zero on its first touch. Valid until the next call.
  float* row(uint32_t id) {
    size_t h = home(id);
    for (; keys_[h] != kEmpty; h = (h + 1) & mask_) {
      if (keys_[h] == id) return grads_.data() + static_cast<size_t>(slots_[h]) * dim_;
    }
    if ((ids_.size() + 1) * 2 > keys_.size()) {
      rehash(keys_.size() * 2);
      return row(id);
    }
    keys_[h] = id;
    slots_[h] = static_cast<uint32_t>(ids_.size());
    ids_.push_back(id);
    where_.push_back(h);
    grads_.resize(grads_.size() + dim_, 0.0f);
    return grads_.data() + grads_.size() - dim_;
  }

  const std::vector<uint32_t>& ids() const { return ids_; }
  const float* grads() const { return grads_.data(); }

  void clear() {
    for (const size_t h : where_) keys_[h] = kEmpty;
    ids_.clear();
    where_.clear();
    grads_.clear();
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;  // max-vocab keeps ids below this

  size_t home(uint32_t id) const { return (id * 2654435761u) & mask_; }

  void rehash(size_t capacity) {
    keys_.assign(capacity, kEmpty);
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    for (size_t i = 0; i < ids_.size(); ++i) {
      size_t h = home(ids_[i]);
      while (keys_[h] != kEmpty) h = (h + 1) & mask_;
      keys_[h] = ids_[i];
      slots_[h] = static_cast<uint32_t>(i);
      where_[i] = h;
    }
  }

  uint32_t dim_;
  size_t mask_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> slots_;
  std::vector<uint32_t> ids_;
  std::vector<size_t> where_;  ///< the map position of each id, for clear()
  std::vector<float> grads_;   ///< ids_.size() × dim_
};

/// One batch's gradients: input rows, output rows and inner-node rows apart (the nodes' are
/// kept in `output` when they are output rows: hierarchical softmax without negative sampling).
struct BatchGrads {
  explicit BatchGrads(uint32_t dim) : input(dim), output(dim), nodes(dim) {}
  RowGrads input;
  RowGrads output;
  RowGrads nodes;
};

/// Where the gradients of the inner nodes go: their own rows beside negative sampling, else the
/// output rows they are.
RowGrads& node_grads(const TrainParams& p, BatchGrads& g) {
  return p.negative > 0 ? g.nodes : g.output;
}

/// The loss and gradient of one example against the tables as they are (read-only): for each
/// target t with label y, f = h·out[t], s = σ(f) − y = ∂loss/∂f; out[t]'s gradient gains s·h and
/// `err` (the gradient of h, not zeroed here) gains s·out[t].
template <class Rows>
inline double sgns_gradient(const float* h, float* err, const Rows& rows, const uint32_t* targets,
                            uint32_t n, uint32_t dim, RowGrads& grads) {
  ConstVecMap hv(h, dim);
  VecMap ev(err, dim);
  double loss = 0.0;
  for (uint32_t k = 0; k < n; ++k) {
    ConstVecMap out(rows.output(targets[k]), dim);
    const float f = hv.dot(out);
    const float sg = clipped_sigmoid(f) - (k == 0 ? 1.0f : 0.0f);
    loss += example_loss(f, k == 0);
    ev.noalias() += sg * out;
    VecMap(grads.row(targets[k]), dim).noalias() += sg * hv;
  }
  return loss;
}

/// The gradients of one skip-gram window with shared negatives (shared_window_update's
/// examples) against the tables as they are: for each context row h and target m of label y,
/// s = σ(h·out[t_m]) − y; h's gradient gains s·out[t_m], and target m's window sum d_m gains
/// s·h; the sums are added to the targets' gradients at the window's end, in target order.
template <class Rows>
double shared_window_gradient(const Rows& rows, const Window& w, const std::vector<Kept>& kept,
                              uint32_t dim, float* d, float* err, BatchGrads& g) {
  Eigen::Map<Eigen::MatrixXf> dm(d, dim, w.n_targets);
  dm.setZero();
  VecMap ev(err, dim);
  double loss = 0.0;
  for (int64_t j = w.lo; j <= w.hi; ++j) {
    if (j == w.i) continue;
    ConstVecMap hv(rows.input(kept[j].id), dim);
    ev.setZero();
    for (uint32_t m = 0; m < w.n_targets; ++m) {
      ConstVecMap out(rows.output(w.targets[m]), dim);
      const float f = hv.dot(out);
      const float sg = clipped_sigmoid(f) - (m == 0 ? 1.0f : 0.0f);
      loss += example_loss(f, m == 0);
      ev.noalias() += sg * out;
      dm.col(m).noalias() += sg * hv;
    }
    VecMap(g.input.row(kept[j].id), dim) += ev;
  }
  for (uint32_t m = 0; m < w.n_targets; ++m) {
    VecMap(g.output.row(w.targets[m]), dim) += dm.col(m);
  }
  return loss;
}

/// Adds the gradients of one sentence's examples to `g`, keyed by word id; the rows are only
/// read.
template <class Rows>
void accumulate_sentence(const TrainData& data, const Rows& rows, uint32_t epoch, uint64_t first,
                         uint64_t last, Scratch& s, BatchGrads& g, SpanStats* stats) {
  const TrainParams& p = data.params;
  const uint32_t dim = p.dim;
  const HuffmanTree* tree = p.hs ? data.tree : nullptr;
  RowGrads& nodes = node_grads(p, g);
  const auto node_row = [&rows](uint32_t row) { return rows.node(row); };
  const auto node_grad = [&nodes](uint32_t row) { return nodes.row(row); };

  collect_kept(data, epoch, first, last, s.kept, stats);
  if (shares_negatives(data.params)) {
    s.window_delta.resize(static_cast<size_t>(data.params.negative + 1) * dim);
    for_each_window(data, epoch, s, [&](const Window& w) {
      stats->loss +=
          shared_window_gradient(rows, w, s.kept, dim, s.window_delta.data(), s.err.data(), g);
      stats->loss_terms += static_cast<uint64_t>(w.hi - w.lo);
    });
    return;
  }
  for_each_example(data, epoch, rows, s, [&](const Example& e) {
    s.err.setZero();
    if (tree != nullptr) {
      const uint32_t w = e.centre->id;
      stats->loss += hs_gradient(e.h, s.err.data(), node_row, node_grad, tree->path_rows(w),
                                 tree->path_codes(w), tree->length(w), dim);
    }
    if (p.negative > 0) {
      stats->loss += sgns_gradient(e.h, s.err.data(), rows, e.targets, e.n_targets, dim, g.output);
    }
    ++stats->loss_terms;
    // CBOW's h is the mean of the context rows: each row gets 1/count of h's gradient.
    if (e.count > 1) s.err /= static_cast<float>(e.count);
    for_each_context_row(e, s.kept, [&](uint32_t row) { VecMap(g.input.row(row), dim) += s.err; });
  });
}

/// Trains block `b` of `epoch` as one batch: gradients of all its examples against the tables as
/// they were when it started, then one optimizer step on the rows it touched (optimizer.hpp).
void train_block_batched(const TrainData& data, Model& model, uint32_t epoch, uint64_t b,
                         Scratch& s, BatchGrads& g, SpanStats* stats) {
  const auto& blocks = *data.blocks;
  const uint64_t* starts = sentence_starts(data);
  g.input.clear();
  g.output.clear();
  g.nodes.clear();
  use_pool_of_block(data, epoch, b, s);
  for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
    accumulate_sentence(data, id_rows(model), epoch, starts[sent], starts[sent + 1], s, g, stats);
  }
  const TrainParams& p = data.params;
  const uint64_t blocks_per_epoch = blocks.size() - 1;
  const uint64_t step = static_cast<uint64_t>(epoch) * blocks_per_epoch + b + 1;
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const float lr = make_schedule(p, data.optimizer).at(epoch_base + starts[blocks[b]]);
  float* in_state[2] = {nullptr, nullptr};
  float* out_state[2] = {nullptr, nullptr};
  float* node_state[2] = {nullptr, nullptr};
  for (size_t k = 0; k < model.input_state.size() && k < 2; ++k) {
    in_state[k] = model.input_state[k].data();
    out_state[k] = model.output_state[k].data();
    if (k < model.nodes_state.size()) node_state[k] = model.nodes_state[k].data();
  }
  apply_sparse_step(data.optimizer, step, lr, g.input.ids().data(), g.input.ids().size(),
                    g.input.grads(), p.dim, model.input.data(), in_state);
  apply_sparse_step(data.optimizer, step, lr, g.output.ids().data(), g.output.ids().size(),
                    g.output.grads(), p.dim, model.output.data(), out_state);
  if (model.nodes.rows() > 0) {
    apply_sparse_step(data.optimizer, step, lr, g.nodes.ids().data(), g.nodes.ids().size(),
                      g.nodes.grads(), p.dim, model.nodes.data(), node_state);
  }
}

Scratch make_scratch(uint32_t dim) {
  Scratch s;
  s.h.resize(dim);
  s.err.resize(dim);
  return s;
}

}  // namespace

void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats, uint64_t super_batch) {
  Scratch s = make_scratch(data.params.dim);
  use_pool(data, epoch, super_batch, s);
  train_sentence(data, id_rows(model), epoch, first, last, s, stats);
}

void train_sentence_part_cpu(const TrainData& data, const NoiseTable& part_noise, uint32_t parts,
                             uint32_t input_part, uint32_t output_part, float* input, float* output,
                             uint32_t epoch, uint64_t first, uint64_t last, SpanStats* stats) {
  const TrainParams& p = data.params;
  const uint32_t dim = p.dim;
  const LrSchedule schedule = make_schedule(p);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const auto row = [parts, dim](float* table, uint32_t id) {
    return table + static_cast<size_t>(id / parts) * dim;
  };
  Scratch s = make_scratch(dim);
  SpanStats read;
  collect_kept(data, epoch, first, last, s.kept, &read);
  const bool counts = input_part == output_part;
  const NegativeSource src{part_noise.columns().data(), part_noise.column_count()};
  std::vector<uint32_t> targets(p.negative + 1);
  const int64_t n = static_cast<int64_t>(s.kept.size());
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    if (c.id % parts != output_part) continue;
    if (counts) ++stats->trained;
    const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    const float lr = schedule.at(epoch_base + c.pos);
    for (int64_t j = lo; j <= hi; ++j) {
      if (j == i || s.kept[j].id % parts != input_part) continue;
      const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
      // The part's table draws local rows; a negative is the centre when its id is.
      uint32_t nt = 0;
      targets[nt++] = c.id / parts;
      for (uint32_t k = 0; k < p.negative; k += 2) {
        const Philox4 r = draw(p.seed, c.pos, epoch, DrawKind::kNegative, (slot << 8) | (k >> 1));
        const uint32_t a = noise_draw(src.noise, src.columns, r.v[0], r.v[1]);
        if (output_part + a * parts != c.id) targets[nt++] = a;
        if (k + 1 < p.negative) {
          const uint32_t b = noise_draw(src.noise, src.columns, r.v[2], r.v[3]);
          if (output_part + b * parts != c.id) targets[nt++] = b;
        }
      }
      float* h = row(input, s.kept[j].id);
      s.err.setZero();
      stats->loss += sgns_update(h, s.err.data(), output, targets.data(), nt, dim, lr, true);
      ++stats->loss_terms;
      VecMap(h, dim) += s.err;
    }
  }
}

void accumulate_gradients_cpu(const TrainData& data, const Model& model, uint32_t epoch,
                              uint64_t super_batch, uint64_t first_sentence, uint64_t last_sentence,
                              float* input_grad, float* output_grad, uint8_t* touched_input,
                              uint8_t* touched_output, SpanStats* stats) {
  const uint32_t dim = data.params.dim;
  if (needs_node_table(data.params.hs, data.params.negative)) {
    throw Error("accumulate_gradients_cpu gives no inner-node gradients: --hs beside --negative");
  }
  const uint64_t* starts = sentence_starts(data);
  Scratch s = make_scratch(dim);
  use_pool(data, epoch, super_batch, s);
  BatchGrads g(dim);
  for (uint64_t sent = first_sentence; sent < last_sentence; ++sent) {
    accumulate_sentence(data, id_rows(model), epoch, starts[sent], starts[sent + 1], s, g, stats);
  }
  auto scatter = [dim](const RowGrads& rg, float* grad, uint8_t* touched) {
    for (size_t k = 0; k < rg.ids().size(); ++k) {
      const uint32_t row = rg.ids()[k];
      VecMap(grad + static_cast<size_t>(row) * dim, dim) += ConstVecMap(rg.grads() + k * dim, dim);
      touched[row] = 1;
    }
  };
  scatter(g.input, input_grad, touched_input);
  scatter(g.output, output_grad, touched_output);
}

void accumulate_row_gradients_cpu(const TrainData& data, const RankRows& rows, uint32_t epoch,
                                  uint64_t super_batch, uint64_t first_sentence,
                                  uint64_t last_sentence, RowGradients* out, SpanStats* stats) {
  const uint32_t dim = data.params.dim;
  const uint64_t* starts = sentence_starts(data);
  Scratch s = make_scratch(dim);
  use_pool(data, epoch, super_batch, s);
  BatchGrads g(dim);
  const SplitRows split{rows, dim};
  for (uint64_t sent = first_sentence; sent < last_sentence; ++sent) {
    accumulate_sentence(data, split, epoch, starts[sent], starts[sent + 1], s, g, stats);
  }
  out->input_ids = g.input.ids();
  out->output_ids = g.output.ids();
  out->input.assign(g.input.grads(), g.input.grads() + g.input.ids().size() * dim);
  out->output.assign(g.output.grads(), g.output.grads() + g.output.ids().size() * dim);
}

std::vector<std::vector<uint32_t>> block_example_targets(const TrainData& data, const Model& model,
                                                         uint32_t epoch, uint64_t block) {
  const auto& blocks = *data.blocks;
  const uint64_t* starts = sentence_starts(data);
  Scratch s = make_scratch(data.params.dim);
  use_pool_of_block(data, epoch, block, s);
  SpanStats stats;
  std::vector<std::vector<uint32_t>> out;
  for (uint64_t sent = blocks[block]; sent < blocks[block + 1]; ++sent) {
    collect_kept(data, epoch, starts[sent], starts[sent + 1], s.kept, &stats);
    for_each_example(data, epoch, id_rows(model), s, [&](const Example& e) {
      out.emplace_back(e.targets, e.targets + e.n_targets);
    });
  }
  return out;
}

}  // namespace detail

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(Model& model, const TrainData& data, uint32_t threads, const RankRows* rank_rows)
      : model_(model),
        data_(data),
        threads_(std::max<uint32_t>(1, threads)),
        rank_rows_(rank_rows) {
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_needs_cuda(model.input.storage()));
    }
    bool contiguous =
        model.input.contiguous() && model.output.contiguous() && model.nodes.contiguous();
    for (const HostTable& t : model.input_state) contiguous = contiguous && t.contiguous();
    for (const HostTable& t : model.output_state) contiguous = contiguous && t.contiguous();
    for (const HostTable& t : model.nodes_state) contiguous = contiguous && t.contiguous();
    if (!contiguous) throw Error("the CPU backend needs tables allocated apart, not interleaved");
    if (rank_rows != nullptr && data.optimizer.kind != OptimizerKind::kSgd) {
      throw Error("the CPU backend trains a rank's rows with sgd only");
    }
    if (data.params.hs) {
      if (rank_rows != nullptr) throw Error("the CPU backend trains a rank's rows without --hs");
      if (data.tree == nullptr || data.tree->words() != model.input.rows()) {
        throw Error("hierarchical softmax needs the Huffman tree of the model's " +
                    std::to_string(model.input.rows()) + " words");
      }
      const bool nodes = needs_node_table(true, data.params.negative);
      if ((model.nodes.rows() > 0) != nodes ||
          (nodes && model.nodes.rows() != model.input.rows())) {
        throw Error(nodes ? "--hs beside --negative needs the model's inner-node table"
                          : "--hs with --negative 0 keeps the inner nodes in the output table");
      }
    } else if (data.params.negative == 0) {
      throw Error("--negative 0 trains nothing without --hs");
    }
    const uint32_t n = state_tables(data.optimizer.kind);
    if (model.input_state.size() != n || model.output_state.size() != n ||
        model.nodes_state.size() != (model.nodes.rows() > 0 ? n : 0)) {
      throw Error("the model holds " + std::to_string(model.input_state.size()) +
                  " state tables; optimizer " + to_string(data.optimizer.kind) + " needs " +
                  std::to_string(n));
    }
  }

  std::string name() const override { return "cpu"; }
  uint64_t span_words() const override { return uint64_t{1} << 17 << (threads_ > 1 ? 2 : 0); }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    std::atomic<uint64_t> next{first_block};
    const uint32_t nthreads =
        static_cast<uint32_t>(std::min<uint64_t>(threads_, last_block - first_block));
    std::vector<SpanStats> stats(std::max<uint32_t>(1, nthreads));
    auto work = [&](uint32_t t) {
      detail::Scratch s = detail::make_scratch(data_.params.dim);
      if (data_.optimizer.kind != OptimizerKind::kSgd) {
        detail::BatchGrads g(data_.params.dim);
        for (uint64_t b = next++; b < last_block; b = next++) {
          detail::train_block_batched(data_, model_, epoch, b, s, g, &stats[t]);
        }
        return;
      }
      const auto& blocks = *data_.blocks;
      const uint64_t* starts = detail::sentence_starts(data_);
      for (uint64_t b = next++; b < last_block; b = next++) {
        detail::use_pool_of_block(data_, epoch, b, s);
        for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
          if (rank_rows_ != nullptr) {
            detail::train_sentence(data_, detail::SplitRows{*rank_rows_, data_.params.dim}, epoch,
                                   starts[sent], starts[sent + 1], s, &stats[t]);
          } else {
            detail::train_sentence(data_, detail::id_rows(model_), epoch, starts[sent],
                                   starts[sent + 1], s, &stats[t]);
          }
        }
      }
    };
    if (nthreads <= 1) {
      work(0);
    } else {
      // A worker that fails (out of memory) ends the others at their next block.
      run_workers(nthreads, [&](uint32_t t) {
        try {
          work(t);
        } catch (...) {
          next = last_block;
          throw;
        }
      });
    }
    SpanStats total;
    for (const auto& s : stats) total += s;
    return total;
  }

  void sync_to_host() override {}
  void sync_from_host() override {}

 private:
  Model& model_;
  const TrainData& data_;
  uint32_t threads_;
  const RankRows* rank_rows_;  ///< null: the rows of `model_`, at their ids
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads,
                                          const RankRows* rank_rows) {
  return std::make_unique<CpuBackend>(model, data, threads, rank_rows);
}

}  // namespace pagedw2v
