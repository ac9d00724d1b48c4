/// @file cpu_gradients.cpp
/// The batched pass of the CPU backend (cpu_gradients.hpp), and the references of the CUDA
/// kernels' gradient mode built on it: accumulate_gradients_cpu and, over a rank's rows,
/// accumulate_row_gradients_cpu (cpu_backend.hpp).

#include "backend/cpu/cpu_gradients.hpp"

#include <vector>

#include "backend/cpu/cpu_rows.hpp"
#include "backend/cpu/hs_cpu.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "base/error.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {
namespace {

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

}  // namespace

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

}  // namespace cpu

using cpu::accumulate_sentence;
using cpu::BatchGrads;
using cpu::id_rows;
using cpu::make_scratch;
using cpu::RowGrads;
using cpu::Scratch;
using cpu::sentence_starts;
using cpu::SplitRows;
using cpu::use_pool;

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

}  // namespace detail
}  // namespace pagedw2v
