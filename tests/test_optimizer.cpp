// The optimizers' CPU reference (src/model/optimizer.hpp) against the update rules written out
// again here in double precision, step by step as torch.optim states them; the sparse semantics
// (untouched rows and their state keep their bits; bias correction from the global step); the
// options that select them; and CPU training with each of them on a two-topic corpus.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"
#include "config/config.hpp"
#include "model/optimizer.hpp"
#include "support/topics.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

using testing_util::two_topic_corpus;

using testing_util::TempDir;
using testing_util::write_file;

const OptimizerKind kAll[] = {
    OptimizerKind::kSgd,    OptimizerKind::kAdagrad, OptimizerKind::kAdam,    OptimizerKind::kAdamW,
    OptimizerKind::kAdamax, OptimizerKind::kRmsprop, OptimizerKind::kAdadelta};
const OptimizerKind kBatched[] = {OptimizerKind::kAdagrad, OptimizerKind::kAdam,
                                  OptimizerKind::kAdamW,   OptimizerKind::kAdamax,
                                  OptimizerKind::kRmsprop, OptimizerKind::kAdadelta};

std::string kind_name(const ::testing::TestParamInfo<OptimizerKind>& info) {
  return to_string(info.param);
}

/// One element's weight and state in double, updated by the formulas of the PyTorch docs.
struct Element {
  double w, a = 0, b = 0;
};

void reference_step(const OptimizerParams& p, uint64_t t, double lr, double g, Element& e) {
  const double b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay, rho = p.rho;
  switch (p.kind) {
    case OptimizerKind::kSgd:
      e.w -= lr * (g + wd * e.w);
      break;
    case OptimizerKind::kAdagrad:
      g += wd * e.w;
      e.a += g * g;
      e.w -= lr * g / (std::sqrt(e.a) + eps);
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      if (p.kind == OptimizerKind::kAdamW) {
        e.w *= 1 - lr * wd;
      } else {
        g += wd * e.w;
      }
      e.a = b1 * e.a + (1 - b1) * g;
      e.b = b2 * e.b + (1 - b2) * g * g;
      const double m_hat = e.a / (1 - std::pow(b1, t));
      const double v_hat = e.b / (1 - std::pow(b2, t));
      e.w -= lr * m_hat / (std::sqrt(v_hat) + eps);
      break;
    }
    case OptimizerKind::kAdamax:
      g += wd * e.w;
      e.a = b1 * e.a + (1 - b1) * g;
      e.b = std::max(b2 * e.b, std::abs(g) + eps);
      e.w -= lr / (1 - std::pow(b1, t)) * e.a / e.b;
      break;
    case OptimizerKind::kRmsprop:
      g += wd * e.w;
      e.a = rho * e.a + (1 - rho) * g * g;
      e.w -= lr * g / (std::sqrt(e.a) + eps);
      break;
    case OptimizerKind::kAdadelta: {
      g += wd * e.w;
      e.a = rho * e.a + (1 - rho) * g * g;
      const double delta = std::sqrt(e.b + eps) / std::sqrt(e.a + eps) * g;
      e.b = rho * e.b + (1 - rho) * delta * delta;
      e.w -= lr * delta;
      break;
    }
  }
}

/// A table with its state tables, filled with fresh random values (state non-negative where
/// the optimizer keeps squares or norms, so that it is a state the optimizer could reach).
struct Tables {
  HostTable table;
  std::vector<HostTable> state;

  Tables(OptimizerKind kind, uint64_t rows, uint32_t dim, uint32_t seed)
      : table(rows, dim, "table", "") {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < rows * dim; ++i) table.data()[i] = u(rng);
    for (uint32_t k = 0; k < state_tables(kind); ++k) {
      state.emplace_back(rows, dim, "state", "");
      const bool signed_state =
          k == 0 && (kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW ||
                     kind == OptimizerKind::kAdamax);
      for (size_t i = 0; i < rows * dim; ++i) {
        state[k].data()[i] = signed_state ? 0.1f * u(rng) : 0.01f * std::abs(u(rng));
      }
    }
  }
};

OptimizerParams params_with_decay(OptimizerKind kind) {
  OptimizerParams p = default_optimizer_params(kind);
  if (kind != OptimizerKind::kAdamW) p.weight_decay = 0.05f;  // exercise the L2 term too
  return p;
}

class Optimizer : public ::testing::TestWithParam<OptimizerKind> {};

// Two steps on touched rows {0, 3} then {3, 1}: step 2 reads the state step 1 left, and the bias
// corrections of steps 1 and 2 differ.
TEST_P(Optimizer, TwoStepsMatchTheFormulas) {
  const OptimizerKind kind = GetParam();
  for (const OptimizerParams& p : {default_optimizer_params(kind), params_with_decay(kind)}) {
    const uint32_t dim = 3, rows = 4;
    Tables t(kind, rows, dim, 11);
    std::vector<Element> ref(rows * dim);
    for (size_t i = 0; i < ref.size(); ++i) {
      ref[i].w = t.table.data()[i];
      if (!t.state.empty()) ref[i].a = t.state[0].data()[i];
      if (t.state.size() > 1) ref[i].b = t.state[1].data()[i];
    }
    std::mt19937 rng(12);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const std::vector<std::vector<uint32_t>> touched = {{0, 3}, {3, 1}};
    const float lrs[] = {0.3f * p.lr, 0.2f * p.lr};
    for (uint64_t step = 1; step <= 2; ++step) {
      const std::vector<uint32_t>& ids = touched[step - 1];
      std::vector<float> grads(ids.size() * dim);
      for (float& g : grads) g = normal(rng);
      apply_sparse_step(p, step, lrs[step - 1], ids, grads.data(), t.table, t.state);
      for (size_t i = 0; i < ids.size(); ++i) {
        for (uint32_t d = 0; d < dim; ++d) {
          reference_step(p, step, lrs[step - 1], grads[i * dim + d], ref[ids[i] * dim + d]);
        }
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        const double tol = 2e-6 * std::max(1.0, std::abs(ref[i].w));
        EXPECT_NEAR(t.table.data()[i], ref[i].w, tol) << "step " << step << " element " << i;
        if (!t.state.empty()) {
          EXPECT_NEAR(t.state[0].data()[i], ref[i].a, 2e-6 * std::max(1.0, std::abs(ref[i].a)));
        }
        if (t.state.size() > 1) {
          EXPECT_NEAR(t.state[1].data()[i], ref[i].b, 2e-6 * std::max(1.0, std::abs(ref[i].b)));
        }
      }
    }
  }
}

// A row and its state that a step does not touch keep every bit, however many steps run.
TEST_P(Optimizer, UntouchedRowsAndStateKeepTheirBits) {
  const OptimizerKind kind = GetParam();
  const uint32_t dim = 7, rows = 50;
  Tables t(kind, rows, dim, 21);
  const std::vector<float> table0(t.table.data(), t.table.data() + rows * dim);
  std::vector<std::vector<float>> state0;
  for (const HostTable& s : t.state) state0.emplace_back(s.data(), s.data() + rows * dim);
  std::mt19937 rng(22);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<uint32_t> ids = {2, 40, 17, 5};
  for (uint64_t step = 1; step <= 5; ++step) {
    std::vector<float> grads(ids.size() * dim);
    for (float& g : grads) g = normal(rng);
    apply_sparse_step(default_optimizer_params(kind), step, 0.01f, ids, grads.data(), t.table,
                      t.state);
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const bool touched = std::find(ids.begin(), ids.end(), r) != ids.end();
    for (uint32_t d = 0; d < dim; ++d) {
      const size_t i = r * dim + d;
      ASSERT_TRUE(std::isfinite(t.table.data()[i]));
      if (touched) {
        EXPECT_NE(t.table.data()[i], table0[i]) << "row " << r;
      } else {
        EXPECT_EQ(t.table.data()[i], table0[i]) << "row " << r;
        for (size_t k = 0; k < state0.size(); ++k) EXPECT_EQ(t.state[k].data()[i], state0[k][i]);
      }
    }
  }
}

TEST_P(Optimizer, StateTablesAndHyperparameters) {
  const OptimizerKind kind = GetParam();
  const uint32_t expected[] = {0, 1, 2, 2, 2, 1, 2};
  EXPECT_EQ(state_tables(kind), expected[static_cast<uint32_t>(kind)]);
  OptimizerKind parsed{};
  ASSERT_TRUE(parse_optimizer(to_string(kind), &parsed));
  EXPECT_EQ(parsed, kind);
  const OptimizerParams p = default_optimizer_params(kind);
  EXPECT_EQ(p.kind, kind);
  EXPECT_GT(p.lr, 0.0f);
  EXPECT_EQ(uses_hyperparameter(kind, "lr"), kind != OptimizerKind::kSgd);
}

INSTANTIATE_TEST_SUITE_P(All, Optimizer, ::testing::ValuesIn(kAll), kind_name);

TEST(OptimizerDefaults, FollowPyTorchWhereTheyAreNotRates) {
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdagrad).eps, 1e-10f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdam).eps, 1e-8f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdam).beta1, 0.9f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdam).beta2, 0.999f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdam).weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdamW).weight_decay, 0.01f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kRmsprop).rho, 0.99f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdadelta).rho, 0.9f);
  EXPECT_FLOAT_EQ(default_optimizer_params(OptimizerKind::kAdadelta).eps, 1e-6f);
}

// Adam's first step moves each touched coordinate by lr·sign(g) (m̂ = g, v̂ = g²) — at step 1.
// A row first touched at a later global step is corrected with that step, as SparseAdam does:
// m = 0.1·g and v = 0.001·g², so the move is lr · (0.1 / (1 − 0.9ᵗ)) / √(0.001 / (1 − 0.999ᵗ)),
// 2.5·lr at step 1000.
TEST(OptimizerAdam, BiasCorrectionUsesTheGlobalStep) {
  const OptimizerParams p = default_optimizer_params(OptimizerKind::kAdam);
  for (const uint64_t step : {uint64_t{1}, uint64_t{1000}}) {
    HostTable table(1, 2, "t", "");
    std::vector<HostTable> state;
    state.emplace_back(1, 2, "m", "");
    state.emplace_back(1, 2, "v", "");
    const float grads[] = {0.5f, -3.0f};
    apply_sparse_step(p, step, 0.01f, {0}, grads, table, state);
    const double t = static_cast<double>(step);
    const double b1 = p.beta1, b2 = p.beta2, lr = 0.01f;
    for (int i = 0; i < 2; ++i) {
      const double g = grads[i];
      const double m_hat = (1 - b1) * g / (1 - std::pow(b1, t));
      const double v_hat = (1 - b2) * g * g / (1 - std::pow(b2, t));
      const double move = lr * m_hat / (std::sqrt(v_hat) + p.eps);
      if (step == 1) {
        EXPECT_NEAR(std::abs(move), 0.01, 1e-8);
      } else {
        EXPECT_NEAR(std::abs(move), 0.0251457, 1e-6);
      }
      EXPECT_NEAR(table.data()[i], -move, 1e-6 * std::abs(move)) << "step " << step;
    }
  }
}

TEST(OptimizerAdamW, DecayIsDecoupledAndOnlyOnTouchedRows) {
  OptimizerParams p = default_optimizer_params(OptimizerKind::kAdamW);
  p.weight_decay = 0.5f;
  HostTable table(2, 1, "t", "");
  table.data()[0] = 2.0f;
  table.data()[1] = 2.0f;
  std::vector<HostTable> state;
  state.emplace_back(2, 1, "m", "");
  state.emplace_back(2, 1, "v", "");
  const float grad = 0.0f;  // no gradient: only the decay moves the weight
  apply_sparse_step(p, 1, 0.1f, {0}, &grad, table, state);
  EXPECT_FLOAT_EQ(table.data()[0], 2.0f * (1 - 0.1f * 0.5f));
  EXPECT_EQ(table.data()[1], 2.0f);
}

TEST(OptimizerApply, RejectsStateOfTheWrongShape) {
  HostTable table(3, 2, "t", "");
  std::vector<HostTable> state;
  state.emplace_back(3, 2, "m", "");
  const float grads[] = {1, 1};
  EXPECT_THROW(apply_sparse_step(default_optimizer_params(OptimizerKind::kAdam), 1, 0.1f, {0},
                                 grads, table, state),
               Error);
  EXPECT_THROW(apply_sparse_step(default_optimizer_params(OptimizerKind::kAdagrad), 1, 0.1f, {3},
                                 grads, table, state),
               Error);
}

TEST(OptimizerOptions, FlagsSetTheParametersAndRefuseWhatDoesNotApply) {
  Config c;
  c.corpus = "c.txt";
  c.output = "out";
  apply_option(c, "optimizer", "adam");
  apply_option(c, "lr", "0.005");
  apply_option(c, "beta2", "0.99");
  apply_option(c, "weight_decay", "0.1");
  EXPECT_NO_THROW(validate(c));
  const OptimizerParams p = c.optimizer_params();
  EXPECT_EQ(p.kind, OptimizerKind::kAdam);
  EXPECT_FLOAT_EQ(p.lr, 0.005f);
  EXPECT_FLOAT_EQ(p.beta1, 0.9f);
  EXPECT_FLOAT_EQ(p.beta2, 0.99f);
  EXPECT_FLOAT_EQ(p.weight_decay, 0.1f);
  EXPECT_EQ(option_value(c, "beta1"), "auto");

  EXPECT_THROW(apply_option(c, "optimizer", "lbfgs"), UsageError);
  EXPECT_THROW(apply_option(c, "beta1", "1"), UsageError);
  EXPECT_THROW(apply_option(c, "eps", "0"), UsageError);
  EXPECT_THROW(apply_option(c, "lr", "-1"), UsageError);
  EXPECT_THROW(apply_option(c, "weight-decay", "-0.1"), UsageError);

  Config bad = c;
  apply_option(bad, "rho", "0.5");  // adam has no rho
  EXPECT_THROW(validate(bad), UsageError);
  bad = c;
  apply_option(bad, "alpha", "0.1");  // sgd's rate
  EXPECT_THROW(validate(bad), UsageError);
  bad = c;
  apply_option(bad, "optimizer", "sgd");  // --lr is for the others
  EXPECT_THROW(validate(bad), UsageError);
  Config rms;
  rms.corpus = "c.txt";
  rms.output = "out";
  apply_option(rms, "optimizer", "rmsprop");
  apply_option(rms, "rho", "0.9");
  EXPECT_NO_THROW(validate(rms));
  EXPECT_FLOAT_EQ(rms.optimizer_params().rho, 0.9f);
  EXPECT_FLOAT_EQ(rms.optimizer_params().lr, default_optimizer_params(OptimizerKind::kRmsprop).lr);
}

/// Mean cosine of input vectors within topics minus across topics.
double topic_separation(const Vocab& vocab, const HostTable& table) {
  double same = 0, cross = 0;
  int ns = 0, nc = 0;
  const uint32_t dim = table.dim();
  auto cosine = [&](uint32_t a, uint32_t b) {
    double dot = 0, na = 0, nb = 0;
    for (uint32_t d = 0; d < dim; ++d) {
      dot += table.row(a)[d] * table.row(b)[d];
      na += table.row(a)[d] * table.row(a)[d];
      nb += table.row(b)[d] * table.row(b)[d];
    }
    return dot / std::sqrt(na * nb);
  };
  for (uint32_t a = 0; a < vocab.size(); ++a) {
    for (uint32_t b = a + 1; b < vocab.size(); ++b) {
      if (vocab.words()[a][0] == vocab.words()[b][0]) {
        same += cosine(a, b);
        ++ns;
      } else {
        cross += cosine(a, b);
        ++nc;
      }
    }
  }
  return same / ns - cross / nc;
}

class BatchedTraining
    : public ::testing::TestWithParam<std::tuple<OptimizerKind, ModelKind, uint32_t>> {};

// Per epoch the mean loss falls, and the two topics separate.
TEST_P(BatchedTraining, LossFallsAndTopicsSeparate) {
  const auto [kind, model, threads] = GetParam();
  Config c;
  c.corpus = "topics";
  c.model = model;
  c.dim = 16;
  c.epochs = 4;
  c.min_count = 1;
  c.sample = 0;
  c.optimizer = kind;
  const std::string text =
      two_topic_corpus<std::mt19937>(8000, 2);  // 96 k words: 24 steps per epoch
  const TrainingSet set = make_training_set(text, c);
  TrainData data = set.train_data(c);
  data.optimizer = c.optimizer_params();
  Model m{HostTable(set.vocab.size(), c.dim, "in", ""),
          HostTable(set.vocab.size(), c.dim, "out", "")};
  init_model(m, c.seed);
  init_optimizer_state(m, kind);
  auto backend = make_cpu_backend(m, data, threads);
  std::vector<double> losses;
  for (uint32_t e = 0; e < c.epochs; ++e) {
    const SpanStats s = backend->train(e, 0, set.block_count());
    EXPECT_EQ(s.words, 96000u);
    ASSERT_GT(s.loss_terms, 0u);
    losses.push_back(s.loss / static_cast<double>(s.loss_terms));
    ASSERT_TRUE(std::isfinite(losses.back()));
  }
  EXPECT_LT(losses.back(), 0.9 * losses.front()) << to_string(kind);
  for (size_t i = 0; i < set.vocab.size() * c.dim; ++i)
    ASSERT_TRUE(std::isfinite(m.input.data()[i]));
  EXPECT_GT(topic_separation(set.vocab, m.input), 0.3) << to_string(kind);
}

INSTANTIATE_TEST_SUITE_P(All, BatchedTraining,
                         ::testing::Combine(::testing::ValuesIn(kBatched),
                                            ::testing::Values(ModelKind::kSkipGram,
                                                              ModelKind::kCbow),
                                            ::testing::Values(1u, 2u)),
                         [](const auto& info) {
                           return to_string(std::get<0>(info.param)) + "_" +
                                  to_string(std::get<1>(info.param)) + "_t" +
                                  std::to_string(std::get<2>(info.param));
                         });

// With one thread a batched run is bit-identical run to run, state tables included, and Adam's
// state tables (zero at the start) have moved: the first moments both ways, the second moments
// up and never below zero.
TEST(BatchedTraining, OneThreadIsBitIdenticalRunToRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(2000, 3));
  auto run = [&](const std::string& out) {
    Config c = testing_util::small_cpu_config(dir, out, 8, 2);
    c.optimizer = OptimizerKind::kAdam;
    run_training(c);
    return testing_util::read_file(dir.file(out + "/vectors.npy"));
  };
  const std::string a = run("a");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, run("b"));
  const Checkpoint ca = load_checkpoint(dir.file("a/checkpoints/latest.h5"));
  const Checkpoint cb = load_checkpoint(dir.file("b/checkpoints/latest.h5"));
  ASSERT_EQ(ca.model.input_state.size(), 2u);  // Adam: first and second moments
  ASSERT_EQ(ca.model.output_state.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    for (size_t k = 0; k < 2; ++k) {
      const HostTable& sa = t == 0 ? ca.model.input_state[k] : ca.model.output_state[k];
      const HostTable& sb = t == 0 ? cb.model.input_state[k] : cb.model.output_state[k];
      const std::string what =
          std::string(t == 0 ? "input" : "output") + " state " + std::to_string(k);
      const size_t n = sa.rows() * sa.dim();
      ASSERT_EQ(sb.rows() * sb.dim(), n) << what;
      size_t positive = 0, negative = 0;
      for (size_t i = 0; i < n; ++i) {
        const float x = sa.data()[i];
        ASSERT_TRUE(std::isfinite(x)) << what;
        positive += x > 0;
        negative += x < 0;
      }
      EXPECT_GT(positive + negative, n / 2) << what << ": most entries should have moved";
      if (k == 0) {
        EXPECT_GT(positive, 0u) << what << ": a first moment goes both ways";
        EXPECT_GT(negative, 0u) << what << ": a first moment goes both ways";
      } else {
        EXPECT_EQ(negative, 0u) << what << ": a second moment is a sum of squares";
      }
      EXPECT_EQ(testing_util::bytes_of(sa.data(), n), testing_util::bytes_of(sb.data(), n))
          << what << " differs between the runs";
    }
  }
}

}  // namespace
}  // namespace pagedw2v
