#include "model/optimizer.hpp"

#include <cmath>

#include "base/error.hpp"

namespace pagedw2v {
namespace {

struct NamedKind {
  const char* name;
  OptimizerKind kind;
};

constexpr NamedKind kKinds[] = {
    {"sgd", OptimizerKind::kSgd},           {"adagrad", OptimizerKind::kAdagrad},
    {"adam", OptimizerKind::kAdam},         {"adamw", OptimizerKind::kAdamW},
    {"adamax", OptimizerKind::kAdamax},     {"rmsprop", OptimizerKind::kRmsprop},
    {"adadelta", OptimizerKind::kAdadelta},
};

}  // namespace

std::string to_string(OptimizerKind kind) {
  for (const NamedKind& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

bool parse_optimizer(const std::string& name, OptimizerKind* kind) {
  for (const NamedKind& k : kKinds) {
    if (name == k.name) {
      *kind = k.kind;
      return true;
    }
  }
  return false;
}

OptimizerParams default_optimizer_params(OptimizerKind kind) {
  OptimizerParams p;
  p.kind = kind;
  switch (kind) {
    case OptimizerKind::kSgd:
      p.lr = 0.025f;
      break;
    case OptimizerKind::kAdagrad:
      p.lr = 0.2f;
      p.eps = 1e-10f;
      break;
    case OptimizerKind::kAdam:
      p.lr = 0.03f;
      break;
    case OptimizerKind::kAdamW:
      p.lr = 0.03f;
      p.weight_decay = 0.01f;
      break;
    case OptimizerKind::kAdamax:
      p.lr = 0.1f;
      break;
    case OptimizerKind::kRmsprop:
      p.lr = 0.01f;
      p.rho = 0.99f;
      break;
    case OptimizerKind::kAdadelta:
      p.lr = 10.0f;
      p.eps = 1e-6f;
      p.rho = 0.9f;
      break;
  }
  return p;
}

uint32_t state_tables(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdagrad:
    case OptimizerKind::kRmsprop:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
    case OptimizerKind::kAdamax:
    case OptimizerKind::kAdadelta:
      return 2;
    case OptimizerKind::kSgd:
      break;
  }
  return 0;
}

bool uses_hyperparameter(OptimizerKind kind, const std::string& name) {
  const bool adam_like = kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW ||
                         kind == OptimizerKind::kAdamax;
  if (name == "lr" || name == "weight-decay") return kind != OptimizerKind::kSgd;
  if (name == "eps") return kind != OptimizerKind::kSgd;
  if (name == "beta1" || name == "beta2") return adam_like;
  if (name == "rho") return kind == OptimizerKind::kRmsprop || kind == OptimizerKind::kAdadelta;
  return false;
}

LrSchedule make_schedule(const TrainParams& params, const OptimizerParams& optimizer) {
  if (optimizer.kind == OptimizerKind::kSgd) return make_schedule(params);
  TrainParams p = params;
  p.alpha = optimizer.lr;
  return make_schedule(p);
}

OptimizerStepScalars step_scalars(const OptimizerParams& params, uint64_t step, float lr) {
  OptimizerStepScalars s;
  s.kind = params.kind;
  s.lr = lr;
  s.beta1 = params.beta1;
  s.beta2 = params.beta2;
  s.eps = params.eps;
  s.weight_decay = params.weight_decay;
  s.rho = params.rho;
  s.step_size = lr;
  const double t = static_cast<double>(step == 0 ? 1 : step);
  if (params.kind == OptimizerKind::kAdam || params.kind == OptimizerKind::kAdamW ||
      params.kind == OptimizerKind::kAdamax) {
    const double bias1 = 1.0 - std::pow(static_cast<double>(params.beta1), t);
    s.step_size = static_cast<float>(static_cast<double>(lr) / bias1);
    s.bias2_sqrt =
        static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(params.beta2), t)));
  }
  if (params.kind == OptimizerKind::kAdamW) {
    s.decay_factor = static_cast<float>(1.0 - static_cast<double>(lr) * params.weight_decay);
  }
  return s;
}

namespace {

/// The rows of one step with the optimizer fixed at compile time, so that the loop over a row's
/// elements has no branch and vectorises. A state `K` does not keep points at the row itself: it
/// is never accessed.
template <OptimizerKind K>
void apply_rows(const OptimizerStepScalars& s, const uint32_t* rows, size_t count,
                const float* grads, uint32_t dim, float* table, float* const* state) {
  const uint32_t nstate = state_tables(K);
  for (size_t i = 0; i < count; ++i) {
    const size_t offset = static_cast<size_t>(rows[i]) * dim;
    float* const w = table + offset;
    float* const a = nstate > 0 ? state[0] + offset : w;
    float* const b = nstate > 1 ? state[1] + offset : w;
    const float* const g = grads + i * dim;
    for (uint32_t d = 0; d < dim; ++d) {
      detail::optimizer_update_as<K>(s, g[d], w + d, a + d, b + d);
    }
  }
}

}  // namespace

void apply_sparse_step(const OptimizerParams& params, uint64_t step, float lr, const uint32_t* rows,
                       size_t count, const float* grads, uint32_t dim, float* table,
                       float* const* state) {
  const OptimizerStepScalars s = step_scalars(params, step, lr);
  switch (params.kind) {
    case OptimizerKind::kSgd:
      return apply_rows<OptimizerKind::kSgd>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kAdagrad:
      return apply_rows<OptimizerKind::kAdagrad>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kAdam:
      return apply_rows<OptimizerKind::kAdam>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kAdamW:
      return apply_rows<OptimizerKind::kAdamW>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kAdamax:
      return apply_rows<OptimizerKind::kAdamax>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kRmsprop:
      return apply_rows<OptimizerKind::kRmsprop>(s, rows, count, grads, dim, table, state);
    case OptimizerKind::kAdadelta:
      return apply_rows<OptimizerKind::kAdadelta>(s, rows, count, grads, dim, table, state);
  }
}

void apply_sparse_step(const OptimizerParams& params, uint64_t step, float lr,
                       const std::vector<uint32_t>& rows, const float* grads, HostTable& table,
                       std::vector<HostTable>& state) {
  const uint32_t nstate = state_tables(params.kind);
  if (state.size() != nstate) {
    throw Error("optimizer " + to_string(params.kind) + " needs " + std::to_string(nstate) +
                " state tables, got " + std::to_string(state.size()));
  }
  if (!table.contiguous()) throw Error("optimizer step: the table is not contiguous");
  float* ptrs[2] = {nullptr, nullptr};
  for (uint32_t k = 0; k < nstate; ++k) {
    if (state[k].rows() != table.rows() || state[k].dim() != table.dim() ||
        !state[k].contiguous()) {
      throw Error("optimizer state table " + std::to_string(k) +
                  " differs in shape from its table");
    }
    ptrs[k] = state[k].data();
  }
  for (const uint32_t r : rows) {
    if (r >= table.rows()) {
      throw Error("optimizer step: row " + std::to_string(r) + " is outside the table");
    }
  }
  apply_sparse_step(params, step, lr, rows.data(), rows.size(), grads, table.dim(), table.data(),
                    ptrs);
}

}  // namespace pagedw2v
