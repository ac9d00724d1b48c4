#pragma once
/// @file optimizer.hpp
/// Dense optimizers applied to sparse rows: the update rules of torch.optim (Adagrad, Adam,
/// AdamW, Adamax, RMSprop, Adadelta) restricted to the rows a batch touched, with their state
/// tables, and the CPU reference of one step. `sgd` here is plain `w −= lr·g`; the trainer's
/// default `--optimizer sgd` is word2vec's per-example update (sgns_cpu.hpp) and never batches.
///
/// Semantics of one step (the same on the CPU and in the fused CUDA kernel,
/// kernels/optimizer_step.hpp):
/// - A batch is one work block of the corpus (train/training_set.hpp). Every example of the batch
///   is computed against the tables as they were at the start of the batch. The gradient of a row
///   is the derivative of the summed SGNS loss (−log σ(h·o) for the positive, −log σ(−h·o) for each
///   negative, σ clipped at ±6 as word2vec does) with respect to that row, summed over every
///   example of the batch that touches it; no learning rate is folded in. For CBOW the hidden
///   vector is the mean of the context rows, so each context row receives 1/count of its gradient.
/// - Only touched rows change: a row, and its state, that no example of the batch touched keep
///   their values exactly (no decay of moments, no weight decay). Touched rows are unique per step.
/// - `step` is global, 1-based, and counts batches, not touches of a row: batch b of epoch e has
///   step = e · blocks_per_epoch + b + 1, whichever thread runs it, so a resumed run continues the
///   same sequence. Adam, AdamW and Adamax correct their bias with this global step, as PyTorch's
///   SparseAdam does (a row first touched at step 1000 gets bias corrections of step 1000).
/// - The learning rate decays linearly from `lr` to lr·1e-4 over the run, as word2vec's alpha does;
///   a batch uses the rate at its first word.
/// - Weight decay: AdamW's is decoupled (w ← w·(1 − lr·wd) before the Adam step); the others add
///   wd·w to the gradient (PyTorch's L2 form). Either way only touched rows decay.
///
/// Per element, with g the gradient, w the weight, t the step, and state tables a and b:
///   sgd       w −= lr·(g + wd·w)
///   adagrad   a += g²;  w −= lr·g / (√a + eps)        (PyTorch's lr_decay 0; a starts at 0)
///   adam      a = β1·a + (1−β1)·g;  b = β2·b + (1−β2)·g²;
///             w −= lr/(1−β1ᵗ) · a / (√b / √(1−β2ᵗ) + eps)          (not amsgrad)
///   adamw     w ·= 1 − lr·wd;  then adam without weight decay
///   adamax    a = β1·a + (1−β1)·g;  b = max(β2·b, |g| + eps);  w −= lr/(1−β1ᵗ) · a / b
///   rmsprop   a = ρ·a + (1−ρ)·g²;  w −= lr·g / (√a + eps)  (ρ is PyTorch's alpha; no momentum,
///             not centred)
///   adadelta  a = ρ·a + (1−ρ)·g²;  d = √(b + eps) / √(a + eps) · g;
///             b = ρ·b + (1−ρ)·d²;  w −= lr·d
/// where adagrad, adam, adamax, rmsprop and adadelta first add wd·w to g. States start at zero.
/// PyTorch's SparseAdam adds eps before the bias correction (√b + eps); we follow torch.optim.Adam.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/philox.hpp"
#include "model/host_table.hpp"
#include "model/params.hpp"

namespace pagedw2v {

enum class OptimizerKind : uint32_t {
  kSgd = 0,
  kAdagrad = 1,
  kAdam = 2,
  kAdamW = 3,
  kAdamax = 4,
  kRmsprop = 5,
  kAdadelta = 6,
};

/// Hyper-parameters of one optimizer; default_optimizer_params(kind) gives each one's defaults
/// (the member initialisers are placeholders). Besides the rates they are PyTorch's.
struct OptimizerParams {
  OptimizerKind kind = OptimizerKind::kSgd;
  /// Starting learning rate (decays linearly, see above). Defaults: adagrad 0.2, adam 0.03, adamw
  /// 0.03, adamax 0.1, rmsprop 0.01, adadelta 10: per batch of 4096 words, the best of the rates
  /// tried on data/sample.txt (skip-gram, dim 100, 5 epochs; lowest loss, then analogies and
  /// WordSim-353), adam's confirmed on mix5m (1 epoch: 3.7 % analogies, sgd 2.6 %). PyTorch's
  /// defaults (1e-2, 1e-3, 1e-3, 2e-3, 1e-2, 1.0) take too small steps for the few hundred batches
  /// of a small corpus: adam at 0.003 ended at loss 2.89, at 0.03 at 2.62.
  float lr = 0.01f;
  float beta1 = 0.9f;    ///< adam, adamw, adamax: first-moment decay (PyTorch 0.9)
  float beta2 = 0.999f;  ///< adam, adamw, adamax: second-moment decay (PyTorch 0.999)
  /// Added for numerical stability. PyTorch's defaults: 1e-8 (adam, adamw, adamax, rmsprop),
  /// 1e-10 (adagrad), 1e-6 (adadelta).
  float eps = 1e-8f;
  /// adamw: decoupled decay (PyTorch 0.01); the others: L2 added to the gradient (PyTorch 0).
  float weight_decay = 0.0f;
  /// Squared-gradient decay: adadelta's rho (PyTorch 0.9), rmsprop's alpha (PyTorch 0.99).
  float rho = 0.9f;
};

/// "sgd", "adagrad", "adam", "adamw", "adamax", "rmsprop", "adadelta".
std::string to_string(OptimizerKind kind);
/// The kind named `name`; returns false when no optimizer has that name.
bool parse_optimizer(const std::string& name, OptimizerKind* kind);
/// The defaults of `kind` (see OptimizerParams).
OptimizerParams default_optimizer_params(OptimizerKind kind);

/// How many state tables (each shaped like the table it belongs to) `kind` keeps per table:
/// sgd 0, adagrad 1 (Σg²), adam/adamw/adamax 2 (first moment; second moment or ∞-norm), rmsprop
/// 1 (mean g²), adadelta 2 (mean g², mean update²). All start at zero.
uint32_t state_tables(OptimizerKind kind);

/// Which hyper-parameters `kind` reads, by option name ("lr", "beta1", "beta2", "eps",
/// "weight-decay", "rho").
bool uses_hyperparameter(OptimizerKind kind, const std::string& name);

/// The schedule of the rate a run starts from: `params.alpha` for sgd, `optimizer.lr` otherwise.
LrSchedule make_schedule(const TrainParams& params, const OptimizerParams& optimizer);

/// The per-step scalars of an update, computed once per step on the host (in double, as PyTorch
/// computes its bias corrections) and shared by every element, on the CPU and on the GPU.
struct OptimizerStepScalars {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = 0.0f;
  float beta1 = 0.0f, beta2 = 0.0f, eps = 0.0f, weight_decay = 0.0f, rho = 0.0f;
  float step_size = 0.0f;     ///< adam, adamw, adamax: lr / (1 − β1ᵗ); the others: lr
  float bias2_sqrt = 1.0f;    ///< adam, adamw: √(1 − β2ᵗ)
  float decay_factor = 1.0f;  ///< adamw: 1 − lr·wd
};

/// The scalars of step `step` (1-based) at learning rate `lr`.
OptimizerStepScalars step_scalars(const OptimizerParams& params, uint64_t step, float lr);

namespace detail {
/// One element of the update of optimizer `K`: weight `w` with gradient `g` and its states `a`,
/// `b` (those `K` does not keep are never read or written).
template <OptimizerKind K>
PAGEDW2V_HD void optimizer_update_as(const OptimizerStepScalars& s, float g, float* w, float* a,
                                     float* b) {
  float x = *w;
  if constexpr (K == OptimizerKind::kSgd) {
    x -= s.lr * (g + s.weight_decay * x);
  } else if constexpr (K == OptimizerKind::kAdagrad) {
    g += s.weight_decay * x;
    const float acc = *a + g * g;
    *a = acc;
    x -= s.lr * g / (sqrtf(acc) + s.eps);
  } else if constexpr (K == OptimizerKind::kAdam || K == OptimizerKind::kAdamW) {
    if constexpr (K == OptimizerKind::kAdamW) {
      x *= s.decay_factor;
    } else {
      g += s.weight_decay * x;
    }
    const float m = s.beta1 * *a + (1.0f - s.beta1) * g;
    const float v = s.beta2 * *b + (1.0f - s.beta2) * (g * g);
    *a = m;
    *b = v;
    x -= s.step_size * m / (sqrtf(v) / s.bias2_sqrt + s.eps);
  } else if constexpr (K == OptimizerKind::kAdamax) {
    g += s.weight_decay * x;
    const float m = s.beta1 * *a + (1.0f - s.beta1) * g;
    const float u = fmaxf(s.beta2 * *b, fabsf(g) + s.eps);
    *a = m;
    *b = u;
    x -= s.step_size * m / u;
  } else if constexpr (K == OptimizerKind::kRmsprop) {
    g += s.weight_decay * x;
    const float sq = s.rho * *a + (1.0f - s.rho) * (g * g);
    *a = sq;
    x -= s.lr * g / (sqrtf(sq) + s.eps);
  } else {
    static_assert(K == OptimizerKind::kAdadelta, "unknown optimizer");
    g += s.weight_decay * x;
    const float sq = s.rho * *a + (1.0f - s.rho) * (g * g);
    const float d = sqrtf(*b + s.eps) / sqrtf(sq + s.eps) * g;
    *a = sq;
    *b = s.rho * *b + (1.0f - s.rho) * (d * d);
    x -= s.lr * d;
  }
  *w = x;
}
}  // namespace detail

/// One element of the update: weight `w` with gradient `g` and its states `a`, `b` (unused ones
/// may point anywhere). Shared by the CPU reference and the CUDA kernel so that both compute the
/// same formula; only the compiler's contraction of a·b+c may differ.
PAGEDW2V_HD void optimizer_update(const OptimizerStepScalars& s, float g, float* w, float* a,
                                  float* b) {
  switch (s.kind) {
    case OptimizerKind::kSgd:
      return detail::optimizer_update_as<OptimizerKind::kSgd>(s, g, w, a, b);
    case OptimizerKind::kAdagrad:
      return detail::optimizer_update_as<OptimizerKind::kAdagrad>(s, g, w, a, b);
    case OptimizerKind::kAdam:
      return detail::optimizer_update_as<OptimizerKind::kAdam>(s, g, w, a, b);
    case OptimizerKind::kAdamW:
      return detail::optimizer_update_as<OptimizerKind::kAdamW>(s, g, w, a, b);
    case OptimizerKind::kAdamax:
      return detail::optimizer_update_as<OptimizerKind::kAdamax>(s, g, w, a, b);
    case OptimizerKind::kRmsprop:
      return detail::optimizer_update_as<OptimizerKind::kRmsprop>(s, g, w, a, b);
    case OptimizerKind::kAdadelta:
      return detail::optimizer_update_as<OptimizerKind::kAdadelta>(s, g, w, a, b);
  }
}

/// The CPU reference of one step: for each i < count, row rows[i] of `table` (rows × dim,
/// row-major) and of each state table takes the update with gradient grads[i·dim .. i·dim+dim).
/// `rows` must be unique. `state` holds state_tables(params.kind) pointers to tables shaped like
/// `table`. Every other row is left untouched.
void apply_sparse_step(const OptimizerParams& params, uint64_t step, float lr, const uint32_t* rows,
                       size_t count, const float* grads, uint32_t dim, float* table,
                       float* const* state);

/// The same on host tables; `state` must hold state_tables(params.kind) tables shaped like
/// `table`. Throws Error when they do not.
void apply_sparse_step(const OptimizerParams& params, uint64_t step, float lr,
                       const std::vector<uint32_t>& rows, const float* grads, HostTable& table,
                       std::vector<HostTable>& state);

}  // namespace pagedw2v
