#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "corpus/corpus.hpp"
#include "model/params.hpp"

namespace pagedw2v {
namespace {

std::vector<float> random_vector(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

class SgnsUpdate : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t, uint32_t>> {};

// One example against a hand-computed negative-sampling gradient (in double).
TEST_P(SgnsUpdate, MatchesHandComputedGradient) {
  const auto [dim, negatives, seed] = GetParam();
  std::mt19937 rng(seed);
  const uint32_t rows = negatives + 3;
  std::vector<float> out = random_vector(size_t{rows} * dim, rng, 0.5f);
  const std::vector<float> h = random_vector(dim, rng, 0.5f);
  std::vector<uint32_t> targets(negatives + 1);
  for (uint32_t k = 0; k <= negatives; ++k) targets[k] = (k * 7 + 1) % rows;  // distinct rows
  const float lr = 0.025f;

  std::vector<double> want_out(out.begin(), out.end());
  std::vector<double> want_err(dim, 0.0);
  double want_loss = 0;
  for (uint32_t k = 0; k <= negatives; ++k) {
    double* o = &want_out[size_t{targets[k]} * dim];
    double f = 0;
    for (uint32_t d = 0; d < dim; ++d) f += h[d] * o[d];
    const double label = k == 0 ? 1 : 0;
    const double g = (label - sigmoid(f)) * lr;
    want_loss += -std::log(sigmoid(k == 0 ? f : -f));
    for (uint32_t d = 0; d < dim; ++d) want_err[d] += g * o[d];
    for (uint32_t d = 0; d < dim; ++d) o[d] += g * h[d];
  }

  std::vector<float> err(dim, 0.0f);
  const double loss = detail::sgns_update(h.data(), err.data(), out.data(), targets.data(),
                                          negatives + 1, dim, lr, true);
  EXPECT_NEAR(loss, want_loss, 1e-4 * want_loss);
  for (uint32_t d = 0; d < dim; ++d) EXPECT_NEAR(err[d], want_err[d], 1e-6) << d;
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want_out[i], 1e-6) << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SgnsUpdate,
                         ::testing::Values(std::make_tuple(1u, 1u, 1u), std::make_tuple(7u, 3u, 2u),
                                           std::make_tuple(100u, 5u, 3u),
                                           std::make_tuple(128u, 15u, 4u)));

TEST(SgnsUpdateClipping, SaturatedExamplesDoNotMove) {
  const uint32_t dim = 4;
  std::vector<float> h = {2, 2, 2, 2};
  std::vector<float> out = {1,  1,  1,  1,    // positive, f = 8 > 6: σ = 1, g = 0
                            -1, -1, -1, -1};  // negative, f = −8 < −6: σ = 0, g = 0
  const std::vector<float> before = out;
  std::vector<float> err(dim, 0.0f);
  const uint32_t targets[] = {0, 1};
  detail::sgns_update(h.data(), err.data(), out.data(), targets, 2, dim, 0.1f, false);
  EXPECT_EQ(out, before);
  for (float e : err) EXPECT_EQ(e, 0.0f);
  // Word2vec's clipping updates with full strength on the wrong side: f = −8 for a positive.
  std::vector<float> wrong = {-1, -1, -1, -1};
  std::fill(err.begin(), err.end(), 0.0f);
  detail::sgns_update(h.data(), err.data(), wrong.data(), targets, 1, dim, 0.1f, false);
  EXPECT_FLOAT_EQ(wrong[0], -1 + 0.1f * 2);
  EXPECT_FLOAT_EQ(err[0], -0.1f);
}

TEST(DrawTargets, CentreFirstAndNeverANegative) {
  const std::vector<double> w = {5, 1, 1, 1};
  const NoiseTable noise(w);
  uint32_t targets[16];
  int negatives = 0;
  for (uint64_t pos = 0; pos < 2000; ++pos) {
    const uint32_t n = detail::draw_targets(0, pos, 0, 3, 9, 15, noise.columns().data(),
                                            noise.column_count(), targets);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 16u);
    EXPECT_EQ(targets[0], 0u);
    for (uint32_t k = 1; k < n; ++k) EXPECT_NE(targets[k], 0u);
    negatives += n - 1;
  }
  // Five eighths of the draws hit the centre and are skipped.
  EXPECT_NEAR(negatives / 2000.0, 15 * 3.0 / 8.0, 0.3);
}

TEST(LrSchedule, DecaysLinearlyToTheFloor) {
  LrSchedule s;
  s.alpha = 0.025f;
  s.min_ratio = 1e-4f;
  s.total_words = 1000000;
  EXPECT_FLOAT_EQ(s.at(0), 0.025f);
  EXPECT_NEAR(s.at(500000), 0.0125f, 1e-7);
  EXPECT_NEAR(s.at(750000), 0.00625f, 1e-7);
  EXPECT_FLOAT_EQ(s.at(1000000), 0.025f * 1e-4f);
  EXPECT_FLOAT_EQ(s.at(5000000), 0.025f * 1e-4f);
  TrainParams p;
  p.alpha = 0.05f;
  p.epochs = 3;
  p.words_per_epoch = 100;
  EXPECT_EQ(make_schedule(p).total_words, 300u);
  EXPECT_FLOAT_EQ(make_schedule(p).at(0), 0.05f);
}

TEST(LrSchedule, ADecayBegunAnewRunsFromItsRateToTheSameFloor) {
  TrainParams p;
  p.alpha = 0.025f;
  p.epochs = 4;
  p.words_per_epoch = 1000000;
  const LrSchedule whole = make_schedule(p);
  // restart at the end of epoch 2: the starting rate again, to the floor at the new end.
  p.decay_from = 2000000;
  p.decay_scale = 1.0f;
  const LrSchedule restart = make_schedule(p);
  EXPECT_FLOAT_EQ(restart.at(2000000), 0.025f);
  EXPECT_NEAR(restart.at(3000000), 0.0125f, 1e-7);
  EXPECT_FLOAT_EQ(restart.at(4000000), whole.at(4000000));
  EXPECT_FLOAT_EQ(restart.at(1000), 0.025f);  // words before the start: its first rate
  // continue from a tenth of alpha: a tenth of restart's rate, the floor the same.
  p.decay_scale = 0.1f;
  const LrSchedule cont = make_schedule(p);
  EXPECT_NEAR(cont.at(2000000), 0.0025f, 1e-9);
  EXPECT_NEAR(cont.at(3000000), 0.00125f, 1e-9);
  EXPECT_FLOAT_EQ(cont.at(4000000), 0.025f * 1e-4f);
  // No decay of its own (scale 0): the whole run's schedule, as before.
  p.decay_scale = 0.0f;
  for (const uint64_t w : {uint64_t{0}, uint64_t{1234567}, uint64_t{3999999}}) {
    EXPECT_EQ(make_schedule(p).at(w), whole.at(w));
  }
}

/// A one-sentence setup for train_sentence_cpu: window 1, two negatives, nothing subsampled, and
/// noise that only ever draws word kNoise, so every example's targets are known without
/// draw_targets: the centre, then kNoise twice.
constexpr uint32_t kNoise = 25;

struct Fixture {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  KeepTable keep;
  NoiseTable noise;
  TrainData data;
  Model model;

  Fixture(std::vector<uint32_t> tokens, uint32_t vocab, ModelKind kind, uint32_t dim) {
    corpus.tokens = std::move(tokens);
    corpus.sentence_starts = {0, corpus.tokens.size()};
    blocks = {0, 1};
    keep = KeepTable({}, vocab);
    std::vector<double> weights(vocab, 0.0);
    weights[kNoise] = 1.0;
    noise = NoiseTable(weights);
    data.corpus = &corpus;
    data.blocks = &blocks;
    data.keep = &keep;
    data.noise = &noise;
    data.params.model = kind;
    data.params.dim = dim;
    data.params.window = 1;
    data.params.negative = 2;
    data.params.words_per_epoch = corpus.tokens.size();
    data.params.epochs = 1;
    model = Model{HostTable(vocab, dim, "in", ""), HostTable(vocab, dim, "out", "")};
    init_model(model, 5);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    for (uint64_t i = 0; i < model.output.rows() * dim; ++i) model.output.data()[i] = u(rng);
  }
};

/// Tables in double, for a reference written out by hand.
struct Tables {
  uint32_t dim;
  std::vector<double> in, out;
  Tables(const Model& m, uint32_t d)
      : dim(d),
        in(m.input.data(), m.input.data() + m.input.rows() * d),
        out(m.output.data(), m.output.data() + m.output.rows() * d) {}
  double* in_row(uint32_t r) { return &in[size_t{r} * dim]; }
  double* out_row(uint32_t r) { return &out[size_t{r} * dim]; }

  /// word2vec.c's example: `h` against the centre (label 1) and kNoise twice (label 0), one
  /// target after the other; returns the error that goes to the context rows.
  std::vector<double> example(const std::vector<double>& h, uint32_t centre, double lr) {
    std::vector<double> err(dim, 0.0);
    const uint32_t targets[3] = {centre, kNoise, kNoise};
    for (int k = 0; k < 3; ++k) {
      double* o = out_row(targets[k]);
      double f = 0;
      for (uint32_t d = 0; d < dim; ++d) f += h[d] * o[d];
      const double g = ((k == 0 ? 1.0 : 0.0) - sigmoid(f)) * lr;
      for (uint32_t d = 0; d < dim; ++d) err[d] += g * o[d];
      for (uint32_t d = 0; d < dim; ++d) o[d] += g * h[d];
    }
    return err;
  }
};

void expect_tables_near(const Model& got, Tables& want, uint32_t vocab) {
  for (uint32_t i = 0; i < vocab * want.dim; ++i) {
    ASSERT_NEAR(got.input.data()[i], want.in[i], 1e-6) << "input " << i;
    ASSERT_NEAR(got.output.data()[i], want.out[i], 1e-6) << "output " << i;
  }
}

// Skip-gram pairs: the context word's input row against the centre's output row (word2vec.c),
// the learning rate of the centre's position.
TEST(TrainSentence, SkipGramUpdatesContextInputAgainstCentreOutput) {
  const uint32_t dim = 8, vocab = 40;
  Fixture f({3, 17}, vocab, ModelKind::kSkipGram, dim);
  Tables want(f.model, dim);
  const double alpha = f.data.params.alpha;
  const uint32_t ids[2] = {3, 17};
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t j = 1 - i;  // the only context word in a window of 1
    double* h = want.in_row(ids[j]);
    // word2vec.c's schedule over the run's 2 words: α · (1 − position / (2 + 1)).
    const double lr = alpha * (1.0 - i / 3.0);
    const std::vector<double> err = want.example(std::vector<double>(h, h + dim), ids[i], lr);
    for (uint32_t d = 0; d < dim; ++d) h[d] += err[d];
  }

  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, 2, &stats);
  EXPECT_EQ(stats.words, 2u);
  EXPECT_EQ(stats.trained, 2u);
  EXPECT_EQ(stats.loss_terms, 2u);
  expect_tables_near(f.model, want, vocab);
}

// CBOW: the mean of the window's input rows predicts the centre; the whole error goes to every
// row of the window (word2vec.c). The middle word has two context words, so a sum instead of the
// mean, or a share of the error per row, would show.
TEST(TrainSentence, CbowUsesTheMeanOfTheWindow) {
  const uint32_t dim = 5, vocab = 30;
  const std::vector<uint32_t> ids = {4, 9, 21};
  Fixture f(ids, vocab, ModelKind::kCbow, dim);
  Tables want(f.model, dim);
  const double alpha = f.data.params.alpha;
  for (uint32_t i = 0; i < 3; ++i) {
    std::vector<uint32_t> context;
    if (i > 0) context.push_back(ids[i - 1]);
    if (i < 2) context.push_back(ids[i + 1]);
    std::vector<double> h(dim, 0.0);
    for (uint32_t r : context)
      for (uint32_t d = 0; d < dim; ++d) h[d] += want.in_row(r)[d] / context.size();
    const std::vector<double> err = want.example(h, ids[i], alpha * (1.0 - i / 4.0));
    for (uint32_t r : context)
      for (uint32_t d = 0; d < dim; ++d) want.in_row(r)[d] += err[d];
  }

  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, 3, &stats);
  EXPECT_EQ(stats.trained, 3u);
  EXPECT_EQ(stats.loss_terms, 3u);
  expect_tables_near(f.model, want, vocab);
}

}  // namespace
}  // namespace pagedw2v
