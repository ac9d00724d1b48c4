#pragma once
/// @file hs_cpu.hpp
/// The CPU step of hierarchical softmax, word2vec.c's arithmetic (its `if (hs)` loops): for one
/// example (an input vector `h` — a context word's input row for skip-gram, the mean of the
/// window's input rows for CBOW — and the centre word's path through the Huffman tree,
/// huffman.hpp), for each inner node d of the path, root first:
///   f = h·node[d];  skipped when |f| ≥ 6 (word2vec's MAX_EXP);
///   g = (1 − code[d] − σ(f))·lr;  err += g·node[d];  node[d] += g·h
/// and the caller adds `err` to the input row(s). Beside negative sampling (sgns_cpu.hpp) the
/// two add into one `err`, hierarchical softmax first, as word2vec does. This header is also
/// the reference a CUDA kernel of hierarchical softmax is to be tested against.
///
/// Where we differ from word2vec: σ is computed exactly (word2vec reads a 1000-entry table of
/// it), as our negative sampling does. Unlike negative sampling — whose σ saturates to 0 or 1
/// beyond ±6 and still updates (word2vec's negative-sampling branch) — a node beyond ±6 is
/// skipped, as word2vec's hierarchical-softmax branch skips it.
///
/// The loss of an example is Σ_d −log σ((1 − 2·code[d])·f_d) over its path (f clipped to ±6 so
/// it stays finite), every node counted, the skipped ones too.

#include <Eigen/Core>
#include <cstdint>

#include "backend/cpu/sgns_cpu.hpp"
#include "model/params.hpp"

namespace pagedw2v {
namespace detail {

/// Whether word2vec's hierarchical softmax trains a node whose dot product is `f`.
inline bool hs_trains(float f) { return f > -kMaxExp && f < kMaxExp; }

/// One hierarchical-softmax update of `h` against the `n` nodes `rows[0..n)` with branches
/// `codes[0..n)`; `node_row(row)` gives a node's vector. Accumulates the input-side error into
/// `err` (not zeroed here) and updates the nodes. Returns the loss of the path when
/// `with_loss`, else 0.
template <class NodeRow>
inline double hs_update_rows(const float* h, float* err, const NodeRow& node_row,
                             const uint32_t* rows, const uint8_t* codes, uint32_t n, uint32_t dim,
                             float lr, bool with_loss) {
  ConstVecMap hv(h, dim);
  VecMap ev(err, dim);
  double loss = 0.0;
  for (uint32_t d = 0; d < n; ++d) {
    VecMap node(node_row(rows[d]), dim);
    const float f = hv.dot(node);
    if (with_loss) loss += example_loss(f, codes[d] == 0);
    if (!hs_trains(f)) continue;
    const float g = (1.0f - static_cast<float>(codes[d]) - clipped_sigmoid(f)) * lr;
    ev.noalias() += g * node;
    node.noalias() += g * hv;
  }
  return loss;
}

/// The loss and gradient of one path against the nodes as they are (read-only), for the
/// batched optimizers: for each node trained (hs_trains), s = σ(f) − (1 − code) = ∂loss/∂f;
/// `node_grad(row)` (a dim-float gradient row) gains s·h and `err` gains s·node.
template <class NodeRow, class NodeGrad>
inline double hs_gradient(const float* h, float* err, const NodeRow& node_row,
                          const NodeGrad& node_grad, const uint32_t* rows, const uint8_t* codes,
                          uint32_t n, uint32_t dim) {
  ConstVecMap hv(h, dim);
  VecMap ev(err, dim);
  double loss = 0.0;
  for (uint32_t d = 0; d < n; ++d) {
    ConstVecMap node(node_row(rows[d]), dim);
    const float f = hv.dot(node);
    loss += example_loss(f, codes[d] == 0);
    if (!hs_trains(f)) continue;
    const float sg = clipped_sigmoid(f) - (1.0f - static_cast<float>(codes[d]));
    ev.noalias() += sg * node;
    VecMap(node_grad(rows[d]), dim).noalias() += sg * hv;
  }
  return loss;
}

}  // namespace detail
}  // namespace pagedw2v
