#pragma once
/// @file sgns_cpu.hpp
/// The CPU training step, word2vec.c's arithmetic: for one example (an input vector `h` — a
/// context word's input row for skip-gram, the mean of the window's input rows for CBOW — and
/// its targets, the centre word with label 1 and the negatives with label 0), for each target t:
///   f = h·out[t];  g = (label − σ(f))·lr  (σ is 0/1 beyond ±6);  err += g·out[t];  out[t] += g·h
/// and the caller adds `err` to the input row(s). This header is also the reference the CUDA
/// kernels are tested against.

#include <Eigen/Core>
#include <cmath>
#include <cstdint>

#include "base/philox.hpp"
#include "model/negative_pool.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {
namespace detail {

using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

/// σ(f) with word2vec's clipping at ±kMaxExp.
inline float clipped_sigmoid(float f) {
  if (f > kMaxExp) return 1.0f;
  if (f < -kMaxExp) return 0.0f;
  return 1.0f / (1.0f + std::exp(-f));
}

/// −log σ(±f), with f clipped to ±kMaxExp so the loss stays finite.
inline double example_loss(float f, bool positive) {
  float x = positive ? f : -f;
  x = x > kMaxExp ? kMaxExp : (x < -kMaxExp ? -kMaxExp : x);
  return std::log1p(std::exp(-static_cast<double>(x)));
}

/// One negative-sampling update of `h` against `targets[0..n)` (targets[0] is the positive),
/// whose output rows `output_row(target)` gives. Accumulates the input-side error into `err` (not
/// zeroed here) and updates the output rows. Returns the loss of the example when `with_loss`,
/// else 0.
template <class OutputRow>
inline double sgns_update_rows(const float* h, float* err, const OutputRow& output_row,
                               const uint32_t* targets, uint32_t n, uint32_t dim, float lr,
                               bool with_loss) {
  ConstVecMap hv(h, dim);
  VecMap ev(err, dim);
  double loss = 0.0;
  for (uint32_t k = 0; k < n; ++k) {
    VecMap out(output_row(targets[k]), dim);
    const float f = hv.dot(out);
    const float label = k == 0 ? 1.0f : 0.0f;
    const float g = (label - clipped_sigmoid(f)) * lr;
    if (with_loss) loss += example_loss(f, k == 0);
    ev.noalias() += g * out;
    out.noalias() += g * hv;
  }
  return loss;
}

/// sgns_update_rows with the output rows of the table `output` (rows × dim, row-major).
inline double sgns_update(const float* h, float* err, float* output, const uint32_t* targets,
                          uint32_t n, uint32_t dim, float lr, bool with_loss) {
  return sgns_update_rows(
      h, err, [output, dim](uint32_t t) { return output + static_cast<size_t>(t) * dim; }, targets,
      n, dim, lr, with_loss);
}

/// Where an example's negatives come from: draws from the noise table (`pool` null, as
/// word2vec), or picks from a super-batch's negative pool (negative_pool.hpp).
struct NegativeSource {
  const NoiseColumn* noise = nullptr;
  uint32_t columns = 0;  ///< of `noise`
  const uint32_t* pool = nullptr;
  uint32_t pool_size = 0;
};

namespace detail {

/// The centre, then `negative` draws of kind `kind` keyed by (seed, pos, epoch) with call
/// `call_base | k / 2` giving negatives k and k + 1, a negative equal to the centre skipped
/// (draw_targets and draw_window_targets). Returns the number of targets.
inline uint32_t draw_keyed_targets(uint32_t centre, uint64_t pos, uint32_t epoch, DrawKind kind,
                                   uint32_t call_base, uint64_t seed, uint32_t negative,
                                   const NegativeSource& src, uint32_t* targets) {
  uint32_t n = 0;
  targets[n++] = centre;
  for (uint32_t k = 0; k < negative; k += 2) {
    const Philox4 r = draw(seed, pos, epoch, kind, call_base | (k >> 1));
    const uint32_t a = src.pool != nullptr ? src.pool[pool_pick(r.v[0], src.pool_size)]
                                           : noise_draw(src.noise, src.columns, r.v[0], r.v[1]);
    if (a != centre) targets[n++] = a;
    if (k + 1 < negative) {
      const uint32_t b = src.pool != nullptr ? src.pool[pool_pick(r.v[2], src.pool_size)]
                                             : noise_draw(src.noise, src.columns, r.v[2], r.v[3]);
      if (b != centre) targets[n++] = b;
    }
  }
  return n;
}

}  // namespace detail

/// Fills `targets` with the centre followed by the negatives of one example; negatives equal to
/// the centre are skipped, as word2vec does. `slot` distinguishes the examples of one centre
/// (the context position for skip-gram, 0 for CBOW). Returns the number of targets.
inline uint32_t draw_targets(uint32_t centre, uint64_t pos, uint32_t epoch, uint32_t slot,
                             uint64_t seed, uint32_t negative, const NegativeSource& src,
                             uint32_t* targets) {
  return detail::draw_keyed_targets(centre, pos, epoch, DrawKind::kNegative, slot << 8, seed,
                                    negative, src, targets);
}

/// draw_targets with draws from the noise table `noise` of `columns` columns (no pool).
inline uint32_t draw_targets(uint32_t centre, uint64_t pos, uint32_t epoch, uint32_t slot,
                             uint64_t seed, uint32_t negative, const NoiseColumn* noise,
                             uint32_t columns, uint32_t* targets) {
  return draw_targets(centre, pos, epoch, slot, seed, negative, NegativeSource{noise, columns},
                      targets);
}

/// The targets of one skip-gram window trained with shared negatives
/// (SgnsKernel::kSharedNegatives): the centre, then `negative` draws keyed by the centre's
/// position alone (DrawKind::kWindowNegative, call k/2 giving negatives k and k+1), a negative
/// equal to the centre skipped as word2vec does. Every context of the window trains against this
/// one list. Returns the number of targets.
inline uint32_t draw_window_targets(uint32_t centre, uint64_t pos, uint32_t epoch, uint64_t seed,
                                    uint32_t negative, const NegativeSource& src,
                                    uint32_t* targets) {
  return detail::draw_keyed_targets(centre, pos, epoch, DrawKind::kWindowNegative, 0, seed,
                                    negative, src, targets);
}

/// One skip-gram window with shared negatives, SGD: the `n` output rows of `targets` (the centre
/// with label 1, then the negatives) are read once into `o` (n × dim scratch), their changes summed
/// in `d` (n × dim scratch). Context after context (`context_rows[0..k)`, input rows), in order:
///   f_m = h·o_m;  g_m = (label_m − σ(f_m))·lr;  err = Σ_m g_m·o_m;  d_m += g_m·h;  h += err
/// (the context's row changes at once, so a word that is the context twice sees its first
/// change), and at the window's end out[targets[m]] += d_m for m in order (a negative drawn twice
/// gets both changes). Returns the summed loss of the k examples.
template <class OutputRow>
inline double shared_window_update(float* const* context_rows, uint32_t k,
                                   const OutputRow& output_row, const uint32_t* targets, uint32_t n,
                                   uint32_t dim, float lr, float* o, float* d, float* err) {
  using Rows = Eigen::Map<Eigen::MatrixXf>;  // column m is row m of the window
  Rows om(o, dim, n), dm(d, dim, n);
  for (uint32_t m = 0; m < n; ++m) om.col(m) = ConstVecMap(output_row(targets[m]), dim);
  dm.setZero();
  VecMap ev(err, dim);
  double loss = 0.0;
  for (uint32_t c = 0; c < k; ++c) {
    VecMap hv(context_rows[c], dim);
    ev.setZero();
    for (uint32_t m = 0; m < n; ++m) {
      const float f = hv.dot(om.col(m));
      const float g = ((m == 0 ? 1.0f : 0.0f) - clipped_sigmoid(f)) * lr;
      loss += example_loss(f, m == 0);
      ev.noalias() += g * om.col(m);
      dm.col(m).noalias() += g * hv;
    }
    hv += ev;
  }
  for (uint32_t m = 0; m < n; ++m) VecMap(output_row(targets[m]), dim) += dm.col(m);
  return loss;
}

}  // namespace detail
}  // namespace pagedw2v
