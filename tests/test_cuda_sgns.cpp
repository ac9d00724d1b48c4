// The CUDA training kernels against the CPU reference (train_sentence_cpu). Sentences are drawn
// so that no two of them touch the same table row — their kept words and every negative they
// draw are disjoint — so the GPU, which runs sentences in parallel, must give the CPU's result up
// to float rounding. Within a sentence the GPU follows the CPU's order, so repeated words and
// repeated negatives inside one sentence are allowed and covered.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "corpus.hpp"
#include "error.hpp"
#include "gpu/cuda_backend.hpp"
#include "sampler.hpp"
#include "train/backend.hpp"
#include "train/cpu_backend.hpp"
#include "train/params.hpp"
#include "train/sgns_cpu.hpp"

namespace pagedw2v {
namespace {

#define PAGEDW2V_REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device"

struct Shape {
  ModelKind model;
  uint32_t dim, window, negative, seed;
  bool stream = false;
};

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return std::string(s.model == ModelKind::kSkipGram ? "sg" : "cbow") + "_d" +
         std::to_string(s.dim) + "_w" + std::to_string(s.window) + "_n" +
         std::to_string(s.negative) + "_s" + std::to_string(s.seed) + (s.stream ? "_stream" : "");
}

/// A corpus, its samplers and a model: everything a backend is built from.
struct Problem {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  std::vector<float> keep;
  AliasTable noise;
  TrainData data;
  Model model;
  uint32_t epochs = 2;

  void finish(uint32_t vocab, const TrainParams& params, uint32_t sentences_per_block,
              uint64_t init_seed) {
    blocks.clear();
    for (uint64_t s = 0; s < corpus.sentences(); s += sentences_per_block) blocks.push_back(s);
    blocks.push_back(corpus.sentences());
    data.corpus = &corpus;
    data.blocks = &blocks;
    data.keep = &keep;
    data.noise = &noise;
    data.params = params;
    data.params.words_per_epoch = corpus.size();
    data.params.epochs = epochs;
    model = Model{HostTable(vocab, params.dim, "in", ""), HostTable(vocab, params.dim, "out", "")};
    init_model(model, init_seed);
    // Non-zero output rows, so every term of the update is exercised from the first step.
    std::mt19937 rng(static_cast<uint32_t>(init_seed));
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (uint64_t i = 0; i < model.output.rows() * params.dim; ++i) model.output.data()[i] = u(rng);
  }
};

/// The rows one sentence at `first` touches in `epoch`, following the CPU's kept/window/negative
/// logic: input rows (kept words) and output rows (kept words and every negative drawn).
void touched_rows(const Problem& p, const TrainParams& params, const std::vector<uint32_t>& sent,
                  uint64_t first, uint32_t epoch, std::set<uint32_t>* in_rows,
                  std::set<uint32_t>* out_rows) {
  struct Kept {
    uint32_t id, shrink;
    uint64_t pos;
  };
  std::vector<Kept> kept;
  for (size_t k = 0; k < sent.size(); ++k) {
    const uint64_t pos = first + k;
    const Philox4 r = draw(params.seed, pos, epoch, DrawKind::kSubsample);
    const float kp = p.keep[sent[k]];
    if (kp < 1.0f && to_unit_float(r.v[0]) >= kp) continue;
    kept.push_back({sent[k], params.window > 0 ? r.v[1] % params.window : 0, pos});
  }
  std::vector<uint32_t> targets(params.negative + 1);
  const int64_t n = static_cast<int64_t>(kept.size());
  for (int64_t i = 0; i < n; ++i) {
    in_rows->insert(kept[i].id);
    out_rows->insert(kept[i].id);
    const int64_t w = static_cast<int64_t>(params.window) - kept[i].shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    for (int64_t j = lo; j <= hi; ++j) {
      if (j == i) continue;
      const uint32_t slot = params.model == ModelKind::kSkipGram
                                ? static_cast<uint32_t>(j - i + static_cast<int64_t>(params.window))
                                : 0;
      const uint32_t nt =
          detail::draw_targets(kept[i].id, kept[i].pos, epoch, slot, params.seed, params.negative,
                               p.noise.entries().data(), p.noise.size(), targets.data());
      for (uint32_t t = 0; t < nt; ++t) out_rows->insert(targets[t]);
    }
  }
}

/// Sentences whose row sets (over all epochs) are pairwise disjoint.
void make_disjoint_problem(Problem* p, const Shape& s) {
  const uint32_t vocab = s.dim >= 500 ? 20000 : 100000;
  std::mt19937 rng(s.seed);
  p->keep.resize(vocab);
  std::uniform_real_distribution<float> keep_u(0.3f, 1.0f);
  for (uint32_t w = 0; w < vocab; ++w) p->keep[w] = w % 2 == 0 ? keep_u(rng) : 1.0f;
  std::vector<double> weights(vocab);
  std::uniform_real_distribution<double> weight_u(1.0, 50.0);
  for (double& x : weights) x = weight_u(rng);
  p->noise = AliasTable(weights);

  TrainParams params;
  params.model = s.model;
  params.dim = s.dim;
  params.window = s.window;
  params.negative = s.negative;
  params.seed = s.seed * 7919u + 1;
  params.alpha = s.model == ModelKind::kCbow ? 0.05f : 0.025f;

  std::vector<char> used_in(vocab, 0), used_out(vocab, 0);
  p->corpus.sentence_starts = {0};
  std::uniform_int_distribution<uint32_t> len_u(1, 24), word_u(0, vocab - 1);
  std::uniform_int_distribution<int> coin(0, 9);
  int failures = 0;
  while (p->corpus.sentences() < 400 && failures < 400) {
    std::vector<uint32_t> sent(len_u(rng));
    for (size_t k = 0; k < sent.size(); ++k) {
      // Now and then a word repeats inside the sentence (the warp handles it in order).
      sent[k] = k > 0 && coin(rng) == 0 ? sent[k - 1 - rng() % k] : word_u(rng);
    }
    std::set<uint32_t> in_rows, out_rows;
    const uint64_t first = p->corpus.tokens.size();
    for (uint32_t e = 0; e < p->epochs; ++e) {
      touched_rows(*p, params, sent, first, e, &in_rows, &out_rows);
    }
    bool clash = false;
    for (uint32_t r : in_rows) clash |= used_in[r] != 0;
    for (uint32_t r : out_rows) clash |= used_out[r] != 0;
    if (clash) {
      ++failures;
      continue;
    }
    for (uint32_t r : in_rows) used_in[r] = 1;
    for (uint32_t r : out_rows) used_out[r] = 1;
    p->corpus.tokens.insert(p->corpus.tokens.end(), sent.begin(), sent.end());
    p->corpus.sentence_starts.push_back(p->corpus.tokens.size());
  }
  p->finish(vocab, params, 3, s.seed + 11);
}

/// Runs the CPU reference sentence by sentence, epoch after epoch.
SpanStats run_cpu(Problem& p, Model& model) {
  SpanStats total;
  const auto& starts = p.corpus.sentence_starts;
  for (uint32_t e = 0; e < p.epochs; ++e) {
    for (uint64_t s = 0; s < p.corpus.sentences(); ++s) {
      detail::train_sentence_cpu(p.data, model, e, starts[s], starts[s + 1], &total);
    }
  }
  return total;
}

/// Runs the CUDA backend, each epoch in two train() calls; the host tables are poisoned before
/// the final copy back so that every element must be written.
SpanStats run_gpu(Problem& p, const CudaBackendOptions& options) {
  auto backend = make_cuda_backend(p.model, p.data, options);
  SpanStats total;
  const uint64_t nb = p.blocks.size() - 1;
  for (uint32_t e = 0; e < p.epochs; ++e) {
    total += backend->train(e, 0, nb / 2);
    total += backend->train(e, nb / 2, nb);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(p.model.input.data(), p.model.input.data() + p.model.input.rows() * p.model.input.dim(),
            nan);
  std::fill(p.model.output.data(),
            p.model.output.data() + p.model.output.rows() * p.model.output.dim(), nan);
  backend->sync_to_host();
  return total;
}

Model copy_model(const Model& m) {
  Model c{HostTable(m.input.rows(), m.input.dim(), "in", ""),
          HostTable(m.output.rows(), m.output.dim(), "out", "")};
  std::copy_n(m.input.data(), m.input.rows() * m.input.dim(), c.input.data());
  std::copy_n(m.output.data(), m.output.rows() * m.output.dim(), c.output.data());
  return c;
}

/// Element-wise comparison with a relative tolerance; NaN or Inf never passes.
void expect_tables_near(const HostTable& got, const HostTable& want, const char* what) {
  ASSERT_EQ(got.rows(), want.rows());
  const size_t n = got.rows() * got.dim();
  size_t bad = 0;
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    const float g = got.data()[i], w = want.data()[i];
    ASSERT_TRUE(std::isfinite(g)) << what << " element " << i << " is " << g;
    const double err = std::fabs(static_cast<double>(g) - w);
    max_err = std::max(max_err, err);
    if (err > 2e-5 + 1e-4 * std::fabs(w)) {
      if (bad++ < 5) ADD_FAILURE() << what << " element " << i << ": gpu " << g << " cpu " << w;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": max abs error " << max_err;
}

class CudaSgnsVsCpu : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaSgnsVsCpu, MatchesReferenceOnDisjointSentences) {
  PAGEDW2V_REQUIRE_GPU();
  const Shape s = GetParam();
  Problem p;
  make_disjoint_problem(&p, s);
  ASSERT_GE(p.corpus.sentences(), 20u) << "too few disjoint sentences for a parallel test";
  Model want = copy_model(p.model);
  const SpanStats cpu = run_cpu(p, want);

  CudaBackendOptions options;
  options.force_stream = s.stream;
  options.chunk_tokens = 40;  // many chunks when streaming
  const SpanStats gpu = run_gpu(p, options);

  EXPECT_EQ(gpu.words, cpu.words);
  EXPECT_EQ(gpu.trained, cpu.trained);
  EXPECT_EQ(gpu.loss_terms, cpu.loss_terms);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4 * cpu.loss + 1e-3);
  expect_tables_near(p.model.input, want.input, "input");
  expect_tables_near(p.model.output, want.output, "output");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaSgnsVsCpu,
    ::testing::Values(
        Shape{ModelKind::kSkipGram, 1, 1, 1, 1}, Shape{ModelKind::kSkipGram, 7, 2, 2, 2},
        Shape{ModelKind::kSkipGram, 33, 3, 5, 3}, Shape{ModelKind::kSkipGram, 100, 5, 5, 4},
        Shape{ModelKind::kSkipGram, 128, 5, 5, 5}, Shape{ModelKind::kSkipGram, 128, 2, 15, 6},
        Shape{ModelKind::kSkipGram, 200, 3, 3, 7}, Shape{ModelKind::kSkipGram, 300, 5, 5, 8},
        Shape{ModelKind::kSkipGram, 500, 2, 4, 9}, Shape{ModelKind::kSkipGram, 1000, 1, 2, 10},
        Shape{ModelKind::kSkipGram, 128, 5, 5, 11, true}, Shape{ModelKind::kCbow, 1, 1, 1, 21},
        Shape{ModelKind::kCbow, 7, 2, 2, 22}, Shape{ModelKind::kCbow, 33, 3, 5, 23},
        Shape{ModelKind::kCbow, 100, 5, 5, 24}, Shape{ModelKind::kCbow, 128, 5, 5, 25},
        Shape{ModelKind::kCbow, 128, 4, 15, 26}, Shape{ModelKind::kCbow, 300, 5, 5, 27},
        Shape{ModelKind::kCbow, 1000, 2, 3, 28}, Shape{ModelKind::kCbow, 100, 5, 5, 29, true}),
    shape_name);

/// One long sentence over a tiny vocabulary with a peaked noise distribution: words and negatives
/// repeat constantly (the kernel's one-target-at-a-time path), and one warp must still follow the
/// CPU exactly.
class CudaSgnsRepeats : public ::testing::TestWithParam<ModelKind> {};

TEST_P(CudaSgnsRepeats, OneSentenceWithRepeatedRowsMatchesReference) {
  PAGEDW2V_REQUIRE_GPU();
  const uint32_t vocab = 40, dim = 36;
  Problem p;
  std::mt19937 rng(77);
  std::vector<double> weights(vocab, 1.0);
  weights[3] = 200;
  weights[8] = 120;
  p.noise = AliasTable(weights);
  p.keep.assign(vocab, 1.0f);
  p.keep[3] = 0.5f;
  std::uniform_int_distribution<uint32_t> word_u(0, vocab - 1);
  for (int k = 0; k < 700; ++k) p.corpus.tokens.push_back(word_u(rng));
  p.corpus.sentence_starts = {0, p.corpus.tokens.size()};
  TrainParams params;
  params.model = GetParam();
  params.dim = dim;
  params.window = 5;
  params.negative = 9;
  params.seed = 5;
  params.alpha = 0.05f;
  p.finish(vocab, params, 1, 3);
  p.blocks = {0, 1, 1};  // an empty block too

  Model want = copy_model(p.model);
  const SpanStats cpu = run_cpu(p, want);
  const SpanStats gpu = run_gpu(p, CudaBackendOptions{});
  EXPECT_EQ(gpu.trained, cpu.trained);
  EXPECT_EQ(gpu.loss_terms, cpu.loss_terms);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4 * cpu.loss);
  expect_tables_near(p.model.input, want.input, "input");
  expect_tables_near(p.model.output, want.output, "output");
}

INSTANTIATE_TEST_SUITE_P(Models, CudaSgnsRepeats,
                         ::testing::Values(ModelKind::kSkipGram, ModelKind::kCbow));

/// Many overlapping sentences trained concurrently (Hogwild): no exact reference, but every value
/// stays finite, the statistics count every word, and the loss falls from epoch to epoch.
TEST(CudaSgnsHogwild, OverlappingSentencesStayFiniteAndLearn) {
  PAGEDW2V_REQUIRE_GPU();
  for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    Problem p;
    const uint32_t vocab = 3000;
    std::mt19937 rng(9);
    std::vector<double> weights(vocab);
    for (uint32_t w = 0; w < vocab; ++w) weights[w] = std::pow(1.0 / (w + 1), 0.75);
    p.noise = AliasTable(weights);
    p.keep.assign(vocab, 1.0f);
    for (uint32_t w = 0; w < 20; ++w) p.keep[w] = 0.3f;
    // Zipf-like tokens with a topic per sentence, so there is something to learn.
    p.corpus.sentence_starts = {0};
    std::uniform_int_distribution<uint32_t> topic_u(0, 99), len_u(5, 60), coin(0, 3);
    std::geometric_distribution<uint32_t> zipf(0.01);
    for (int s = 0; s < 3000; ++s) {
      const uint32_t topic = topic_u(rng);
      const uint32_t len = len_u(rng);
      for (uint32_t k = 0; k < len; ++k) {
        const uint32_t w =
            coin(rng) == 0 ? 100 + topic * 29 + coin(rng) : std::min(zipf(rng), vocab - 1);
        p.corpus.tokens.push_back(w);
      }
      p.corpus.sentence_starts.push_back(p.corpus.tokens.size());
    }
    TrainParams params;
    params.model = kind;
    params.dim = 64;
    params.alpha = kind == ModelKind::kCbow ? 0.05f : 0.025f;
    p.epochs = 4;
    p.finish(vocab, params, 16, 1);
    p.model.output = HostTable(vocab, params.dim, "out", "");  // word2vec's zero start

    auto backend = make_cuda_backend(p.model, p.data);
    std::vector<double> mean_loss;
    for (uint32_t e = 0; e < p.epochs; ++e) {
      const SpanStats st = backend->train(e, 0, p.blocks.size() - 1);
      EXPECT_EQ(st.words, p.corpus.size());
      EXPECT_GT(st.trained, 0u);
      EXPECT_LE(st.trained, st.words);
      ASSERT_GT(st.loss_terms, 0u);
      ASSERT_TRUE(std::isfinite(st.loss));
      mean_loss.push_back(st.loss / st.loss_terms);
    }
    backend->sync_to_host();
    for (const HostTable* t : {&p.model.input, &p.model.output}) {
      for (size_t i = 0; i < t->rows() * t->dim(); ++i) {
        ASSERT_TRUE(std::isfinite(t->data()[i])) << i;
      }
    }
    EXPECT_LT(mean_loss.back(), mean_loss.front()) << static_cast<int>(kind);
  }
}

TEST(CudaBackend, SyncFromHostRoundTrips) {
  PAGEDW2V_REQUIRE_GPU();
  Problem p;
  p.corpus.tokens = {1, 2, 3};
  p.corpus.sentence_starts = {0, 3};
  p.keep.assign(10, 1.0f);
  p.noise = AliasTable(std::vector<double>(10, 1.0));
  TrainParams params;
  params.dim = 13;
  p.finish(10, params, 1, 4);
  auto backend = make_cuda_backend(p.model, p.data);
  std::vector<float> in(p.model.input.data(), p.model.input.data() + 10 * 13);
  for (size_t i = 0; i < in.size(); ++i) p.model.input.data()[i] = static_cast<float>(i) * 0.5f;
  backend->sync_from_host();
  std::fill(p.model.input.data(), p.model.input.data() + 130, -1.0f);
  backend->sync_to_host();
  for (size_t i = 0; i < 130; ++i) ASSERT_EQ(p.model.input.data()[i], static_cast<float>(i) * 0.5f);
}

TEST(CudaBackend, UnsupportedShapeIsAUsageError) {
  PAGEDW2V_REQUIRE_GPU();
  Problem p;
  p.corpus.tokens = {1};
  p.corpus.sentence_starts = {0, 1};
  p.keep.assign(4, 1.0f);
  p.noise = AliasTable(std::vector<double>(4, 1.0));
  TrainParams params;
  params.dim = 2000;
  p.finish(4, params, 1, 4);
  EXPECT_THROW(make_cuda_backend(p.model, p.data), UsageError);
}

TEST(CudaBackend, AvailabilityNeverThrows) { EXPECT_NO_THROW(cuda_device_available()); }

}  // namespace
}  // namespace pagedw2v
