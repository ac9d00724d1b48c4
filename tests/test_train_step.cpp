#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend.hpp"
#include "corpus.hpp"
#include "params.hpp"
#include "train/cpu_backend.hpp"
#include "train/sgns_cpu.hpp"

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
  const AliasTable noise(w);
  uint32_t targets[16];
  int negatives = 0;
  for (uint64_t pos = 0; pos < 2000; ++pos) {
    const uint32_t n =
        detail::draw_targets(0, pos, 0, 3, 9, 15, noise.entries().data(), 4, targets);
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

/// A two-row setup for train_sentence_cpu.
struct Fixture {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  std::vector<float> keep;
  AliasTable noise;
  TrainData data;
  Model model;

  Fixture(std::vector<uint32_t> tokens, uint32_t vocab, ModelKind kind, uint32_t dim) {
    corpus.tokens = std::move(tokens);
    corpus.sentence_starts = {0, corpus.tokens.size()};
    blocks = {0, 1};
    keep.assign(vocab, 1.0f);
    noise = AliasTable(std::vector<double>(vocab, 1.0));
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

// Skip-gram pairs: the context word's input row against the centre's output row (word2vec.c).
TEST(TrainSentence, SkipGramUpdatesContextInputAgainstCentreOutput) {
  const uint32_t dim = 8, vocab = 40;
  Fixture f({3, 17}, vocab, ModelKind::kSkipGram, dim);
  Model want{HostTable(vocab, dim, "in", ""), HostTable(vocab, dim, "out", "")};
  std::copy_n(f.model.input.data(), vocab * dim, want.input.data());
  std::copy_n(f.model.output.data(), vocab * dim, want.output.data());

  const LrSchedule sched = make_schedule(f.data.params);
  const uint32_t ids[2] = {3, 17};
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t j = 1 - i;
    const uint32_t slot = j + 1 - i;  // j − i + window
    uint32_t targets[3];
    const uint32_t n = detail::draw_targets(ids[i], i, 0, slot, f.data.params.seed, 2,
                                            f.noise.entries().data(), vocab, targets);
    std::vector<float> err(dim, 0.0f);
    float* h = want.input.row(ids[j]);
    detail::sgns_update(h, err.data(), want.output.data(), targets, n, dim, sched.at(i), false);
    for (uint32_t d = 0; d < dim; ++d) h[d] += err[d];
  }

  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, 2, &stats);
  EXPECT_EQ(stats.words, 2u);
  EXPECT_EQ(stats.trained, 2u);
  EXPECT_EQ(stats.loss_terms, 2u);
  for (uint32_t i = 0; i < vocab * dim; ++i) {
    ASSERT_FLOAT_EQ(f.model.input.data()[i], want.input.data()[i]) << i;
    ASSERT_FLOAT_EQ(f.model.output.data()[i], want.output.data()[i]) << i;
  }
}

// CBOW: the mean of the window's input rows predicts the centre; the error goes to every row.
TEST(TrainSentence, CbowUsesTheMeanOfTheWindow) {
  const uint32_t dim = 5, vocab = 30;
  Fixture f({4, 9, 21}, vocab, ModelKind::kCbow, dim);
  std::vector<float> in0(f.model.input.data(), f.model.input.data() + vocab * dim);
  std::vector<float> out0(f.model.output.data(), f.model.output.data() + vocab * dim);

  // Only the middle word has two context words; check its example by hand, after the first.
  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, 3, &stats);
  EXPECT_EQ(stats.loss_terms, 3u);
  // Rows outside the sentence and its negatives keep their input values.
  for (uint32_t r = 0; r < vocab; ++r) {
    if (r == 4 || r == 9 || r == 21) continue;
    for (uint32_t d = 0; d < dim; ++d) ASSERT_EQ(f.model.input.row(r)[d], in0[r * dim + d]);
  }
  // The centre rows of all three examples moved in the output table.
  for (uint32_t r : {4u, 9u, 21u}) {
    float moved = 0;
    for (uint32_t d = 0; d < dim; ++d)
      moved += std::fabs(f.model.output.row(r)[d] - out0[r * dim + d]);
    EXPECT_GT(moved, 0.0f) << r;
  }
}

}  // namespace
}  // namespace pagedw2v
