// The CUDA training kernels against the CPU reference (train_sentence_cpu). Sentences are drawn
// so that no two of them touch the same table row — their kept words and every negative they
// draw are disjoint — so the GPU, which runs sentences in parallel, must give the CPU's result up
// to float rounding. Within a sentence the GPU follows the CPU's order, so repeated words and
// repeated negatives inside one sentence are allowed and covered.
// The kernel is also driven directly (KernelHarness): negative pools (launch_draw_pool and the
// kernel's picks), tables addressed through row maps (token_rows / pool_rows) against the same
// run by id, gradient mode against the CPU's batched gradients, and single-warp launches, which
// must be deterministic and follow the CPU on sentences that share rows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "kernels/device_limits.hpp"
#include "kernels/pool_draw.hpp"
#include "kernels/sgns.hpp"
#include "model/negative_pool.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"
#include "support/compare.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::expect_values_near;
using testing_util::same_bits;
using testing_util::upload;

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
  std::vector<float> keep;  ///< every word's keep probability
  KeepTable keep_table;     ///< the same, as TrainData holds it (made by finish())
  NoiseTable noise;
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
    keep_table = KeepTable(keep, vocab);
    data.keep = &keep_table;
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
/// logic: input rows (kept words) and output rows (kept words and every negative drawn, from
/// `pool` when it is not empty).
void touched_rows(const Problem& p, const TrainParams& params, const std::vector<uint32_t>& sent,
                  uint64_t first, uint32_t epoch, std::set<uint32_t>* in_rows,
                  std::set<uint32_t>* out_rows, const std::vector<uint32_t>& pool = {}) {
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
      const detail::NegativeSource src{p.noise.columns().data(), p.noise.column_count(),
                                       pool.empty() ? nullptr : pool.data(),
                                       static_cast<uint32_t>(pool.size())};
      const uint32_t nt = detail::draw_targets(kept[i].id, kept[i].pos, epoch, slot, params.seed,
                                               params.negative, src, targets.data());
      for (uint32_t t = 0; t < nt; ++t) out_rows->insert(targets[t]);
    }
  }
}

/// Sentences per super-batch in the pool tests: sentence s trains with the pool of super-batch
/// s / kPoolBatchSentences.
constexpr uint64_t kPoolBatchSentences = 16;

/// Sentences whose row sets (over all epochs) are pairwise disjoint; with `pool` > 0 negatives
/// come from the pool of each sentence's super-batch (kPoolBatchSentences).
void make_disjoint_problem(Problem* p, const Shape& s, uint32_t pool = 0) {
  const uint32_t vocab = s.dim >= 500 ? 20000 : 100000;
  std::mt19937 rng(s.seed);
  p->keep.resize(vocab);
  std::uniform_real_distribution<float> keep_u(0.3f, 1.0f);
  for (uint32_t w = 0; w < vocab; ++w) p->keep[w] = w % 2 == 0 ? keep_u(rng) : 1.0f;
  std::vector<double> weights(vocab);
  std::uniform_real_distribution<double> weight_u(1.0, 50.0);
  for (double& x : weights) x = weight_u(rng);
  p->noise = NoiseTable(weights);

  TrainParams params;
  params.model = s.model;
  params.dim = s.dim;
  params.window = s.window;
  params.negative = s.negative;
  params.seed = s.seed * 7919u + 1;
  params.alpha = s.model == ModelKind::kCbow ? 0.05f : 0.025f;
  params.negative_pool = pool;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>> pools;
  auto pool_of = [&](uint32_t epoch, uint64_t sb) -> const std::vector<uint32_t>& {
    auto& entries = pools[{epoch, sb}];
    if (pool > 0 && entries.empty()) entries = draw_pool(params.seed, epoch, sb, p->noise, pool);
    return entries;
  };

  std::vector<char> used_in(vocab, 0), used_out(vocab, 0);
  p->corpus.sentence_starts = {0};
  std::uniform_int_distribution<uint32_t> len_u(1, 24), word_u(0, vocab - 1);
  std::uniform_int_distribution<int> coin(0, 9);
  int failures = 0;
  const int max_failures = pool > 0 ? 4000 : 400;  // pooled negatives collide more often
  while (p->corpus.sentences() < 400 && failures < max_failures) {
    std::vector<uint32_t> sent(len_u(rng));
    for (size_t k = 0; k < sent.size(); ++k) {
      // Now and then a word repeats inside the sentence (the warp handles it in order).
      sent[k] = k > 0 && coin(rng) == 0 ? sent[k - 1 - rng() % k] : word_u(rng);
    }
    std::set<uint32_t> in_rows, out_rows;
    const uint64_t first = p->corpus.tokens.size();
    const uint64_t sb = p->corpus.sentences() / kPoolBatchSentences;
    for (uint32_t e = 0; e < p->epochs; ++e) {
      touched_rows(*p, params, sent, first, e, &in_rows, &out_rows, pool_of(e, sb));
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

/// Runs the CPU reference sentence by sentence, epoch after epoch; with a negative pool,
/// sentence s uses the pool of super-batch s / batch_sentences.
SpanStats run_cpu(Problem& p, Model& model, uint64_t batch_sentences = kPoolBatchSentences) {
  SpanStats total;
  const auto& starts = p.corpus.sentence_starts;
  for (uint32_t e = 0; e < p.epochs; ++e) {
    for (uint64_t s = 0; s < p.corpus.sentences(); ++s) {
      detail::train_sentence_cpu(p.data, model, e, starts[s], starts[s + 1], &total,
                                 s / batch_sentences);
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

void expect_tables_near(const HostTable& got, const HostTable& want, const char* what) {
  ASSERT_EQ(got.rows(), want.rows());
  expect_values_near(got.data(), want.data(), got.rows() * got.dim(), what);
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
  // Each sentence on one warp: disjoint sentences then never race.
  options.item_tokens = kSentenceItems;
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
  p.noise = NoiseTable(weights);
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
  CudaBackendOptions options;
  options.item_tokens = kSentenceItems;  // the sentence on one warp, in order
  const SpanStats gpu = run_gpu(p, options);
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
    p.noise = NoiseTable(weights);
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
  p.noise = NoiseTable(std::vector<double>(10, 1.0));
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
  p.noise = NoiseTable(std::vector<double>(4, 1.0));
  TrainParams params;
  params.dim = 2000;
  p.finish(4, params, 1, 4);
  EXPECT_THROW(make_cuda_backend(p.model, p.data), UsageError);
}

TEST(CudaBackend, AvailabilityNeverThrows) { EXPECT_NO_THROW(query_device()); }

// ---------------------------------------------------------------------------------------------
// The kernel driven directly.

/// How one launch runs.
struct LaunchMode {
  bool serial = false;       ///< SgnsArgs::max_warps = 1
  bool grad = false;         ///< gradient mode
  uint32_t item_tokens = 0;  ///< SgnsArgs::item_tokens (0: a sentence per work item)
};

/// Marks an id that has no row on the device.
constexpr uint32_t kNoRow = 0xFFFFFFFFu;

/// launch_sgns on a Problem's corpus and samplers, with its own device tables. Row `row_of[id]`
/// of the device tables holds id (`row_of` empty: row = id), like a paged super-batch's slots;
/// the device has `device_rows` rows, and rows that hold no id are NaN, so that a read through a
/// wrong row shows. With params.negative_pool > 0 every launch draws its super-batch's pool on
/// the device (launch_draw_pool) and passes the pool's rows when there is a row map.
class KernelHarness {
 public:
  explicit KernelHarness(const Problem& p, std::vector<uint32_t> row_of = {},
                         uint64_t device_rows = 0)
      : p_(p),
        vocab_(static_cast<uint32_t>(p.model.input.rows())),
        dim_(p.data.params.dim),
        stride_(sgns_row_stride(p.data.params.dim)),
        row_of_(std::move(row_of)),
        device_rows_(row_of_.empty() ? vocab_ : device_rows),
        tokens_(testing_util::upload(p.corpus.tokens, "tokens")),
        starts_(testing_util::upload(p.corpus.sentence_starts, "sentence starts")),
        keep_(testing_util::upload(p.keep, "keep")),
        noise_(testing_util::upload(p.noise.columns(), "noise")),
        input_(device_rows_ * stride_, "input"),
        output_(device_rows_ * stride_, "output"),
        input_grad_(device_rows_ * stride_, "input gradients"),
        output_grad_(device_rows_ * stride_, "output gradients"),
        touched_input_(device_rows_, "touched input"),
        touched_output_(device_rows_, "touched output"),
        pool_(std::max<uint32_t>(1, p.data.params.negative_pool), "pool"),
        pool_rows_(std::max<uint32_t>(1, p.data.params.negative_pool), "pool rows"),
        counters_(1, "counters") {
    if (!row_of_.empty()) {
      std::vector<uint32_t> token_rows(p.corpus.tokens.size());
      for (size_t k = 0; k < token_rows.size(); ++k) token_rows[k] = row_of_[p.corpus.tokens[k]];
      token_rows_ = testing_util::upload(token_rows, "token rows");
    }
    PAGEDW2V_CUDA_TRY(cudaMemset(touched_input_.data(), 0, touched_input_.bytes()));
    PAGEDW2V_CUDA_TRY(cudaMemset(touched_output_.data(), 0, touched_output_.bytes()));
    PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());  // the kernels' stream does not wait for these
  }

  uint32_t row(uint32_t id) const { return row_of_.empty() ? id : row_of_[id]; }

  /// Places the model's tables on the device.
  void upload(const Model& m) {
    put(m.input.data(), input_);
    put(m.output.data(), output_);
  }
  /// Places vocabulary × dim gradients (the values gradient mode adds to) on the device.
  void upload_grads(const std::vector<float>& in, const std::vector<float>& out) {
    put(in.data(), input_grad_);
    put(out.data(), output_grad_);
  }
  void download(Model& m) const {
    get(input_, m.input.data());
    get(output_, m.output.data());
  }
  /// The gradients and touched flags by id (vocabulary × dim, vocabulary).
  void download_grads(std::vector<float>* in, std::vector<float>* out, std::vector<uint8_t>* tin,
                      std::vector<uint8_t>* tout) const {
    in->assign(size_t{vocab_} * dim_, 0.0f);
    out->assign(size_t{vocab_} * dim_, 0.0f);
    get(input_grad_, in->data());
    get(output_grad_, out->data());
    const std::vector<uint8_t> ti = testing_util::download(touched_input_),
                               to = testing_util::download(touched_output_);
    tin->assign(vocab_, 0);
    tout->assign(vocab_, 0);
    for (uint32_t id = 0; id < vocab_; ++id) {
      if (row(id) == kNoRow) continue;
      (*tin)[id] = ti[row(id)];
      (*tout)[id] = to[row(id)];
    }
  }
  /// Whether every device row that holds no id still holds exactly the NaN it was given, in all
  /// four tables, and its touched flags are clear.
  bool spare_rows_untouched() const {
    std::vector<char> used(device_rows_, 0);
    for (uint32_t id = 0; id < vocab_; ++id) {
      if (row(id) != kNoRow) used[row(id)] = 1;
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const DeviceBuffer<float>* t : {&input_, &output_, &input_grad_, &output_grad_}) {
      const std::vector<float> h = testing_util::download(*t);
      for (uint64_t r = 0; r < device_rows_; ++r) {
        if (used[r]) continue;
        for (uint32_t k = 0; k < stride_; ++k) {
          if (std::memcmp(&h[r * stride_ + k], &nan, sizeof(float)) != 0) return false;
        }
      }
    }
    const std::vector<uint8_t> ti = testing_util::download(touched_input_),
                               to = testing_util::download(touched_output_);
    for (uint64_t r = 0; r < device_rows_; ++r) {
      if (!used[r] && (ti[r] != 0 || to[r] != 0)) return false;
    }
    return true;
  }

  /// Trains sentences [first, last) of the corpus in `epoch`, with the pool of `super_batch`.
  SpanStats launch(uint32_t epoch, uint64_t super_batch, uint64_t first, uint64_t last,
                   const LaunchMode& mode) {
    const TrainParams& params = p_.data.params;
    SgnsArgs a;
    a.model = params.model;
    a.kernel = params.kernel;
    a.input = input_.data();
    a.output = output_.data();
    a.stride = stride_;
    a.vocab = p_.noise.words();
    a.tokens = tokens_.data();
    a.token_base = 0;
    a.sentence_starts = starts_.data() + first;
    a.sentences = last - first;
    a.keep = keep_.data();
    a.noise = noise_.data();
    a.noise_columns = p_.noise.column_count();
    a.seed = params.seed;
    a.epoch = epoch;
    a.window = params.window;
    a.negative = params.negative;
    a.schedule = make_schedule(params);
    a.epoch_base = static_cast<uint64_t>(epoch) * params.words_per_epoch;
    a.counters = counters_.data();
    if (!row_of_.empty()) a.token_rows = token_rows_.data();
    if (params.negative_pool > 0) {
      launch_draw_pool(params.seed, epoch, super_batch, noise_.data(), p_.noise.column_count(),
                       params.negative_pool, pool_.data(), stream_.get());
      a.pool = pool_.data();
      a.pool_size = params.negative_pool;
      if (!row_of_.empty()) {
        stream_.synchronize();
        std::vector<uint32_t> pool = testing_util::download(pool_);
        for (uint32_t& id : pool) id = row(id);
        PAGEDW2V_CUDA_TRY(
            cudaMemcpy(pool_rows_.data(), pool.data(), pool_rows_.bytes(), cudaMemcpyHostToDevice));
        PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
        a.pool_rows = pool_rows_.data();
      }
    }
    if (mode.grad) {
      a.input_grad = input_grad_.data();
      a.output_grad = output_grad_.data();
      a.touched_input = touched_input_.data();
      a.touched_output = touched_output_.data();
    }
    a.max_warps = mode.serial ? 1 : 0;
    a.item_tokens = mode.item_tokens;
    // On the kernel's stream: a cudaMemset runs on the legacy default stream, which the
    // non-blocking stream does not wait for. A reset landing after the kernel started would
    // drop counts and zero next_sentence, the kernel's claim counter, so that sentences train
    // twice. Nothing but timing orders the two, and other processes on the GPU change it.
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), stream_.get()));
    launch_sgns(a, stream_.get());
    stream_.synchronize();
    const SgnsCounters c = testing_util::download(counters_)[0];
    SpanStats st;
    st.words = c.words;
    st.trained = c.trained;
    st.loss = c.loss;
    st.loss_terms = c.loss_terms;
    return st;
  }

  /// Every epoch, the sentences of each super-batch (batch_sentences apiece) in one launch.
  SpanStats run(const LaunchMode& mode, uint64_t batch_sentences = kPoolBatchSentences) {
    SpanStats total;
    const uint64_t n = p_.corpus.sentences();
    for (uint32_t e = 0; e < p_.epochs; ++e) {
      for (uint64_t s = 0; s < n; s += batch_sentences) {
        total += launch(e, s / batch_sentences, s, std::min(n, s + batch_sentences), mode);
      }
    }
    return total;
  }

 private:
  void put(const float* host, DeviceBuffer<float>& dev) {
    std::vector<float> h(device_rows_ * stride_, std::numeric_limits<float>::quiet_NaN());
    for (uint32_t id = 0; id < vocab_; ++id) {
      const uint32_t r = row(id);
      if (r == kNoRow) continue;
      std::copy_n(host + size_t{id} * dim_, dim_, &h[size_t{r} * stride_]);
      std::fill(&h[size_t{r} * stride_ + dim_], &h[size_t{r} * stride_ + stride_], 0.0f);
    }
    PAGEDW2V_CUDA_TRY(cudaMemcpy(dev.data(), h.data(), dev.bytes(), cudaMemcpyHostToDevice));
    PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  }
  void get(const DeviceBuffer<float>& dev, float* host) const {
    const std::vector<float> h = testing_util::download(dev);
    for (uint32_t id = 0; id < vocab_; ++id) {
      const uint32_t r = row(id);
      float* dst = host + size_t{id} * dim_;
      if (r == kNoRow) continue;
      std::copy_n(&h[size_t{r} * stride_], dim_, dst);
    }
  }

  const Problem& p_;
  uint32_t vocab_, dim_, stride_;
  std::vector<uint32_t> row_of_;
  uint64_t device_rows_;
  Stream stream_;
  DeviceBuffer<uint32_t> tokens_;
  DeviceBuffer<uint64_t> starts_;
  DeviceBuffer<float> keep_;
  DeviceBuffer<NoiseColumn> noise_;
  DeviceBuffer<float> input_, output_, input_grad_, output_grad_;
  DeviceBuffer<uint8_t> touched_input_, touched_output_;
  DeviceBuffer<uint32_t> pool_, pool_rows_, token_rows_;
  DeviceBuffer<SgnsCounters> counters_;
};

void poison(Model& m) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(m.input.data(), m.input.data() + m.input.rows() * m.input.dim(), nan);
  std::fill(m.output.data(), m.output.data() + m.output.rows() * m.output.dim(), nan);
}

class CudaSgnsPoolVsCpu : public ::testing::TestWithParam<Shape> {};

// Negatives from a pool per super-batch, drawn on the device: the parallel launch on disjoint
// sentences gives the CPU's result.
TEST_P(CudaSgnsPoolVsCpu, MatchesReferenceOnDisjointSentences) {
  PAGEDW2V_REQUIRE_GPU();
  const Shape s = GetParam();
  Problem p;
  make_disjoint_problem(&p, s, s.dim >= 500 ? 15013 : 90001);
  ASSERT_GE(p.corpus.sentences(), 2 * kPoolBatchSentences) << "too few disjoint sentences";
  Model want = copy_model(p.model);
  const SpanStats cpu = run_cpu(p, want);

  KernelHarness gpu_run(p);
  gpu_run.upload(p.model);
  const SpanStats gpu = gpu_run.run(LaunchMode{});
  Model got = copy_model(p.model);
  poison(got);
  gpu_run.download(got);

  EXPECT_EQ(gpu.words, cpu.words);
  EXPECT_EQ(gpu.trained, cpu.trained);
  EXPECT_EQ(gpu.loss_terms, cpu.loss_terms);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4 * cpu.loss + 1e-3);
  expect_tables_near(got.input, want.input, "input");
  expect_tables_near(got.output, want.output, "output");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaSgnsPoolVsCpu,
                         ::testing::Values(Shape{ModelKind::kSkipGram, 1, 1, 1, 31},
                                           Shape{ModelKind::kSkipGram, 33, 3, 5, 32},
                                           Shape{ModelKind::kSkipGram, 128, 5, 5, 33},
                                           Shape{ModelKind::kSkipGram, 128, 2, 15, 34},
                                           Shape{ModelKind::kSkipGram, 300, 5, 5, 35},
                                           Shape{ModelKind::kSkipGram, 1000, 1, 2, 36},
                                           Shape{ModelKind::kCbow, 7, 2, 2, 41},
                                           Shape{ModelKind::kCbow, 100, 5, 5, 42},
                                           Shape{ModelKind::kCbow, 128, 4, 15, 43},
                                           Shape{ModelKind::kCbow, 1000, 2, 3, 44}),
                         shape_name);

/// Sentences over a small Zipf-like vocabulary that share rows all the time.
void make_overlapping_problem(Problem* p, const Shape& s, uint32_t pool, uint32_t sentences = 160,
                              uint32_t longest = 40) {
  const uint32_t vocab = 700;
  std::mt19937 rng(s.seed);
  std::vector<uint64_t> counts(vocab);
  for (uint32_t w = 0; w < vocab; ++w) counts[w] = 20000 / (w + 1) + 3;
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  const KeepTable keep = keep_probabilities(counts, total, 1e-3);
  p->keep.resize(vocab);
  for (uint32_t w = 0; w < vocab; ++w) p->keep[w] = keep[w];
  p->noise = NoiseTable(unigram_weights(counts));
  std::discrete_distribution<uint32_t> word(counts.begin(), counts.end());
  std::uniform_int_distribution<uint32_t> len(1, longest);
  p->corpus.sentence_starts = {0};
  for (uint32_t k = 0; k < sentences; ++k) {
    const uint32_t n = len(rng);
    for (uint32_t i = 0; i < n; ++i) p->corpus.tokens.push_back(word(rng));
    p->corpus.sentence_starts.push_back(p->corpus.tokens.size());
  }
  TrainParams params;
  params.model = s.model;
  params.dim = s.dim;
  params.window = s.window;
  params.negative = s.negative;
  params.seed = s.seed * 31u + 7;
  params.alpha = s.model == ModelKind::kCbow ? 0.05f : 0.025f;
  params.negative_pool = pool;
  p->finish(vocab, params, 4, s.seed + 3);
}

/// Random gradients to start from (gradient mode adds to them), by id.
std::vector<float> random_grads(const Problem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> g(p.model.input.rows() * p.data.params.dim);
  for (float& x : g) x = u(rng);
  return g;
}

/// Gradient mode (parallel launch, sentences sharing rows) against the CPU's batched pass: the
/// same gradients up to summation order, the same touched rows exactly, the same statistics.
class CudaSgnsGradient : public ::testing::TestWithParam<std::tuple<Shape, uint32_t>> {};

void expect_gradient_matches_cpu(const Shape& s, uint32_t pool, SgnsKernel kernel) {
  Problem p;
  make_overlapping_problem(&p, s, pool);
  p.data.params.kernel = kernel;
  const uint32_t vocab = static_cast<uint32_t>(p.model.input.rows());
  const uint64_t n = p.corpus.sentences(), half = n / 2;
  const std::vector<float> gin0 = random_grads(p, 1), gout0 = random_grads(p, 2);

  // Two launches into the same gradients: super-batch 0 (first half), then 1.
  std::vector<float> want_in = gin0, want_out = gout0;
  std::vector<uint8_t> want_tin(vocab, 0), want_tout(vocab, 0);
  SpanStats cpu;
  for (int part = 0; part < 2; ++part) {
    detail::accumulate_gradients_cpu(p.data, p.model, 1, part, part == 0 ? 0 : half,
                                     part == 0 ? half : n, want_in.data(), want_out.data(),
                                     want_tin.data(), want_tout.data(), &cpu);
  }
  KernelHarness h(p);
  h.upload(p.model);
  h.upload_grads(gin0, gout0);
  SpanStats gpu = h.launch(1, 0, 0, half, LaunchMode{false, true});
  gpu += h.launch(1, 1, half, n, LaunchMode{false, true});
  std::vector<float> got_in, got_out;
  std::vector<uint8_t> got_tin, got_tout;
  h.download_grads(&got_in, &got_out, &got_tin, &got_tout);
  Model tables = copy_model(p.model);
  poison(tables);
  h.download(tables);

  EXPECT_EQ(gpu.words, cpu.words);
  EXPECT_EQ(gpu.trained, cpu.trained);
  EXPECT_EQ(gpu.loss_terms, cpu.loss_terms);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4 * cpu.loss + 1e-3);
  EXPECT_EQ(got_tin, want_tin);
  EXPECT_EQ(got_tout, want_tout);
  EXPECT_GT(std::accumulate(got_tout.begin(), got_tout.end(), 0u), 0u);
  expect_values_near(got_in.data(), want_in.data(), want_in.size(), "input gradient", 1e-4, 2e-4);
  expect_values_near(got_out.data(), want_out.data(), want_out.size(), "output gradient", 1e-4,
                     2e-4);
  // The tables are only read.
  EXPECT_TRUE(same_bits(tables.input, p.model.input));
  EXPECT_TRUE(same_bits(tables.output, p.model.output));
}

TEST_P(CudaSgnsGradient, MatchesCpuBatchedGradient) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [s, pool] = GetParam();
  expect_gradient_matches_cpu(s, pool, SgnsKernel::kPerPair);
}

// The same with negatives shared by each skip-gram window (train_centre_shared's gradient mode
// against shared_window_gradient); skip-gram shapes only, CBOW having per-pair negatives alone.
class CudaSgnsSharedGradient : public ::testing::TestWithParam<std::tuple<Shape, uint32_t>> {};

TEST_P(CudaSgnsSharedGradient, MatchesCpuBatchedGradient) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [s, pool] = GetParam();
  expect_gradient_matches_cpu(s, pool, SgnsKernel::kSharedNegatives);
}

std::string gradient_name(const ::testing::TestParamInfo<std::tuple<Shape, uint32_t>>& info) {
  const Shape& s = std::get<0>(info.param);
  const uint32_t pool = std::get<1>(info.param);
  return shape_name(::testing::TestParamInfo<Shape>(s, info.index)) + "_pool" +
         std::to_string(pool);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaSgnsGradient,
    ::testing::Combine(::testing::Values(Shape{ModelKind::kSkipGram, 1, 2, 1, 51},
                                         Shape{ModelKind::kSkipGram, 33, 3, 5, 52},
                                         Shape{ModelKind::kSkipGram, 128, 5, 5, 53},
                                         Shape{ModelKind::kSkipGram, 300, 4, 8, 54},
                                         Shape{ModelKind::kCbow, 7, 2, 2, 61},
                                         Shape{ModelKind::kCbow, 128, 5, 5, 62},
                                         Shape{ModelKind::kCbow, 500, 3, 15, 63}),
                       ::testing::Values(0u, 300u)),
    gradient_name);
INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaSgnsSharedGradient,
    ::testing::Combine(::testing::Values(Shape{ModelKind::kSkipGram, 1, 2, 1, 51},
                                         Shape{ModelKind::kSkipGram, 33, 3, 5, 52},
                                         Shape{ModelKind::kSkipGram, 128, 5, 5, 53},
                                         Shape{ModelKind::kSkipGram, 300, 4, 8, 54}),
                       ::testing::Values(0u, 300u)),
    gradient_name);

struct SerialCase {
  ModelKind model;
  uint32_t dim, pool;
  bool grad;
  SgnsKernel kernel = SgnsKernel::kPerPair;
};

std::string serial_name(const ::testing::TestParamInfo<SerialCase>& info) {
  const SerialCase& c = info.param;
  return std::string(c.model == ModelKind::kSkipGram ? "sg" : "cbow") + "_d" +
         std::to_string(c.dim) + "_pool" + std::to_string(c.pool) + (c.grad ? "_grad" : "_sgd") +
         (c.kernel == SgnsKernel::kSharedNegatives ? "_shared" : "");
}

class CudaSgnsSerial : public ::testing::TestWithParam<SerialCase> {};

/// Trains `p` in single-warp launches with the row map `row_of` (empty: by id) and returns the
/// resulting tables (SGD) or gradients and touched flags (gradient mode) by id.
struct SerialResult {
  Model tables;
  std::vector<float> gin, gout;
  std::vector<uint8_t> tin, tout;
  SpanStats stats;
  bool spare_rows_untouched = true;
};

SerialResult run_serial(const Problem& p, bool grad, std::vector<uint32_t> row_of = {},
                        uint64_t device_rows = 0, uint32_t item_tokens = 0) {
  KernelHarness h(p, std::move(row_of), device_rows);
  h.upload(p.model);
  h.upload_grads(random_grads(p, 5), random_grads(p, 6));
  SerialResult r;
  r.stats = h.run(LaunchMode{true, grad, item_tokens}, 50);
  r.tables = copy_model(p.model);
  poison(r.tables);
  h.download(r.tables);
  h.download_grads(&r.gin, &r.gout, &r.tin, &r.tout);
  r.spare_rows_untouched = h.spare_rows_untouched();
  return r;
}

void expect_same_bits(const SerialResult& a, const SerialResult& b) {
  EXPECT_TRUE(same_bits(a.tables.input, b.tables.input)) << "input";
  EXPECT_TRUE(same_bits(a.tables.output, b.tables.output)) << "output";
  EXPECT_TRUE(same_bits(a.gin.data(), b.gin.data(), a.gin.size())) << "input gradient";
  EXPECT_TRUE(same_bits(a.gout.data(), b.gout.data(), a.gout.size())) << "output gradient";
  EXPECT_EQ(a.tin, b.tin);
  EXPECT_EQ(a.tout, b.tout);
  EXPECT_EQ(a.stats.loss, b.stats.loss);
  EXPECT_EQ(a.stats.trained, b.stats.trained);
  EXPECT_EQ(a.stats.loss_terms, b.stats.loss_terms);
}

// One warp trains the sentences in order: two launches give the same bits.
TEST_P(CudaSgnsSerial, TwoRunsGiveIdenticalBits) {
  PAGEDW2V_REQUIRE_GPU();
  const SerialCase c = GetParam();
  Problem p;
  make_overlapping_problem(&p, Shape{c.model, c.dim, 5, 5, 71}, c.pool);
  p.data.params.kernel = c.kernel;
  const SerialResult a = run_serial(p, c.grad), b = run_serial(p, c.grad);
  expect_same_bits(a, b);
  if (!c.grad) {
    EXPECT_FALSE(same_bits(a.tables.input, p.model.input)) << "nothing trained";
  }
}

// The tables hold the ids at other rows (a random subset of a larger table, the rest NaN):
// token_rows and pool_rows lead every access there, and the result read back by id has the same
// bits as the run by id; rows that hold no id are never read or written.
// A row map needs a pool (alias negatives are rows by id): only cases with one.
class CudaSgnsSerialRowMap : public ::testing::TestWithParam<SerialCase> {};

TEST_P(CudaSgnsSerialRowMap, GivesTheSameBitsAsIds) {
  PAGEDW2V_REQUIRE_GPU();
  const SerialCase c = GetParam();
  ASSERT_GT(c.pool, 0u);
  Problem p;
  make_overlapping_problem(&p, Shape{c.model, c.dim, 5, 5, 72}, c.pool);
  p.data.params.kernel = c.kernel;
  const uint32_t vocab = static_cast<uint32_t>(p.model.input.rows());
  // Ids the run can touch: the corpus and every pool it draws.
  std::vector<char> used(vocab, 0);
  for (uint32_t id : p.corpus.tokens) used[id] = 1;
  const uint64_t batches = (p.corpus.sentences() + 49) / 50;
  for (uint32_t e = 0; e < p.epochs; ++e) {
    for (uint64_t sb = 0; sb < batches; ++sb) {
      for (uint32_t id : draw_pool(p.data.params.seed, e, sb, p.noise, c.pool)) used[id] = 1;
    }
  }
  const uint64_t device_rows = vocab + 57;
  std::vector<uint32_t> slots(device_rows);
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), std::mt19937(9));
  std::vector<uint32_t> row_of(vocab, kNoRow);
  size_t mapped = 0;
  for (uint32_t id = 0; id < vocab; ++id) {
    if (used[id]) row_of[id] = slots[mapped++];
  }
  ASSERT_LT(mapped, vocab) << "every id is used: the map would not leave ids out";

  SerialResult want = run_serial(p, c.grad);
  const SerialResult by_row = run_serial(p, c.grad, row_of, device_rows);
  // Ids without a row do not come back from the mapped run; the run by id never touches them
  // either. Compare the mapped ids only, by copying the others over.
  const uint32_t dim = c.dim;
  for (uint32_t id = 0; id < vocab; ++id) {
    if (row_of[id] != kNoRow) continue;
    EXPECT_EQ(want.tin[id], 0);
    EXPECT_EQ(want.tout[id], 0);
    std::copy_n(by_row.tables.input.row(id), dim, want.tables.input.row(id));
    std::copy_n(by_row.tables.output.row(id), dim, want.tables.output.row(id));
    std::copy_n(&by_row.gin[size_t{id} * dim], dim, &want.gin[size_t{id} * dim]);
    std::copy_n(&by_row.gout[size_t{id} * dim], dim, &want.gout[size_t{id} * dim]);
  }
  expect_same_bits(by_row, want);
  EXPECT_TRUE(by_row.spare_rows_untouched);
}

// Single-warp launches train sentences in the CPU's order, so they follow the CPU reference on
// sentences that share rows (SGD), within the tolerance of the other tests.
// SGD cases only: gradient mode is compared in CudaSgnsGradient.
class CudaSgnsSerialVsCpu : public ::testing::TestWithParam<SerialCase> {};

TEST_P(CudaSgnsSerialVsCpu, FollowsTheCpuOnSharedRows) {
  PAGEDW2V_REQUIRE_GPU();
  const SerialCase c = GetParam();
  ASSERT_FALSE(c.grad);
  Problem p;
  make_overlapping_problem(&p, Shape{c.model, c.dim, 5, 5, 73}, c.pool, 60);
  p.data.params.kernel = c.kernel;
  Model want = copy_model(p.model);
  const SpanStats cpu = run_cpu(p, want, 50);
  const SerialResult gpu = run_serial(p, false);
  EXPECT_EQ(gpu.stats.trained, cpu.trained);
  EXPECT_EQ(gpu.stats.loss_terms, cpu.loss_terms);
  EXPECT_NEAR(gpu.stats.loss, cpu.loss, 1e-4 * cpu.loss + 1e-3);
  expect_tables_near(gpu.tables.input, want.input, "input");
  expect_tables_near(gpu.tables.output, want.output, "output");
}

const SerialCase kSerialCases[] = {
    {ModelKind::kSkipGram, 32, 0, false},
    {ModelKind::kSkipGram, 128, 200, false},
    {ModelKind::kSkipGram, 300, 200, false},
    {ModelKind::kSkipGram, 128, 200, true},
    {ModelKind::kSkipGram, 33, 0, true},
    {ModelKind::kCbow, 32, 0, false},
    {ModelKind::kCbow, 128, 200, false},
    {ModelKind::kCbow, 128, 200, true},
    {ModelKind::kCbow, 7, 200, true},
    // Skip-gram with negatives shared by each window (train_centre_shared).
    {ModelKind::kSkipGram, 32, 0, false, SgnsKernel::kSharedNegatives},
    {ModelKind::kSkipGram, 128, 200, false, SgnsKernel::kSharedNegatives},
    {ModelKind::kSkipGram, 300, 200, false, SgnsKernel::kSharedNegatives},
    {ModelKind::kSkipGram, 1000, 0, false, SgnsKernel::kSharedNegatives},
    {ModelKind::kSkipGram, 128, 200, true, SgnsKernel::kSharedNegatives},
    {ModelKind::kSkipGram, 33, 0, true, SgnsKernel::kSharedNegatives}};

/// The cases of kSerialCases that `keep` accepts.
template <typename Keep>
std::vector<SerialCase> serial_cases(Keep keep) {
  std::vector<SerialCase> out;
  for (const SerialCase& c : kSerialCases)
    if (keep(c)) out.push_back(c);
  return out;
}

// Work items cut sentences into parts (SgnsArgs::item_tokens) whose centres' windows still reach
// over the whole sentence; one warp trains the parts in order, so the result has the bits of
// whole sentences whatever the item size — one token, less than a window, a sentence's length,
// more than a sentence — on sentences up to 300 words.
class CudaSgnsItems : public ::testing::TestWithParam<SerialCase> {};

TEST_P(CudaSgnsItems, PartsTrainedInOrderGiveTheBitsOfWholeSentences) {
  PAGEDW2V_REQUIRE_GPU();
  const SerialCase c = GetParam();
  Problem p;
  make_overlapping_problem(&p, Shape{c.model, c.dim, 5, 5, 74}, c.pool, 60, 300);
  p.data.params.kernel = c.kernel;
  const SerialResult whole = run_serial(p, c.grad);
  for (const uint32_t k : {1u, 3u, 64u, 257u, 100000u}) {
    SCOPED_TRACE("item_tokens " + std::to_string(k));
    const SerialResult parts = run_serial(p, c.grad, {}, 0, k);
    EXPECT_EQ(parts.stats.words, whole.stats.words);
    EXPECT_EQ(parts.stats.trained, whole.stats.trained);
    EXPECT_EQ(parts.stats.loss_terms, whole.stats.loss_terms);
    EXPECT_NEAR(parts.stats.loss, whole.stats.loss, 1e-5 * whole.stats.loss);
    EXPECT_TRUE(same_bits(parts.tables.input, whole.tables.input)) << "input";
    EXPECT_TRUE(same_bits(parts.tables.output, whole.tables.output)) << "output";
    EXPECT_TRUE(same_bits(parts.gin.data(), whole.gin.data(), whole.gin.size())) << "input grad";
    EXPECT_TRUE(same_bits(parts.gout.data(), whole.gout.data(), whole.gout.size()))
        << "output grad";
    EXPECT_EQ(parts.tin, whole.tin);
    EXPECT_EQ(parts.tout, whole.tout);
  }
}

// Partitioned tables (SgnsArgs::parts): one warp over tables that hold one part of the input
// words and one of the output words, each at row id / parts, follows the CPU's partitioned
// reference (train_sentence_part_cpu) on sentences that share rows, negatives drawn from the
// output part's noise table. Over every (input, output) pair of parts the examples and the
// centres counted are the whole run's, each once (the launches of equal parts count centres);
// no launch counts words.
TEST(CudaSgnsParts, SingleWarpFollowsThePartReference) {
  PAGEDW2V_REQUIRE_GPU();
  Problem p;
  make_overlapping_problem(&p, Shape{ModelKind::kSkipGram, 36, 4, 5, 83}, 0, 60, 40);
  const TrainParams& params = p.data.params;
  const uint32_t vocab = static_cast<uint32_t>(p.model.input.rows());
  const uint32_t dim = params.dim, stride = sgns_row_stride(dim), parts = 3;
  const auto& starts = p.corpus.sentence_starts;
  SpanStats whole;
  {
    Model m = copy_model(p.model);
    whole = run_cpu(p, m);
  }
  SpanStats counted;
  for (uint32_t ip = 0; ip < parts; ++ip) {
    for (uint32_t op = 0; op < parts; ++op) {
      SCOPED_TRACE("input part " + std::to_string(ip) + ", output part " + std::to_string(op));
      const NoiseTable noise = p.noise.part(parts, op);
      // Compact tables of the parts: word id at row id / parts.
      auto part_rows = [&](const HostTable& t, uint32_t part) {
        const uint32_t n = (vocab - part + parts - 1) / parts;
        std::vector<float> rows(size_t{n} * dim);
        for (uint32_t j = 0; j < n; ++j) {
          std::copy_n(t.row(part + j * parts), dim, rows.data() + size_t{j} * dim);
        }
        return rows;
      };
      std::vector<float> want_in = part_rows(p.model.input, ip);
      std::vector<float> want_out = part_rows(p.model.output, op);
      const std::vector<float> start_in = want_in, start_out = want_out;
      SpanStats cpu;
      for (uint32_t e = 0; e < p.epochs; ++e) {
        for (uint64_t s = 0; s + 1 < starts.size(); ++s) {
          detail::train_sentence_part_cpu(p.data, noise, parts, ip, op, want_in.data(),
                                          want_out.data(), e, starts[s], starts[s + 1], &cpu);
        }
      }
      counted += cpu;
      // The same on the device, rows padded to the stride.
      auto padded = [&](const std::vector<float>& rows) {
        const size_t n = rows.size() / dim;
        std::vector<float> h(n * stride, 0.0f);
        for (size_t r = 0; r < n; ++r) std::copy_n(&rows[r * dim], dim, &h[r * stride]);
        return testing_util::upload(h, "part rows");
      };
      DeviceBuffer<float> in = padded(start_in), out = padded(start_out);
      const DeviceBuffer<uint32_t> tokens = testing_util::upload(p.corpus.tokens, "tokens");
      const DeviceBuffer<uint64_t> dstarts = testing_util::upload(starts, "starts");
      const DeviceBuffer<float> keep = testing_util::upload(p.keep, "keep");
      const DeviceBuffer<NoiseColumn> columns = testing_util::upload(noise.columns(), "noise");
      DeviceBuffer<SgnsCounters> counters(1, "counters");
      PAGEDW2V_CUDA_TRY(cudaMemset(counters.data(), 0, counters.bytes()));
      Stream stream;
      for (uint32_t e = 0; e < p.epochs; ++e) {
        SgnsArgs a;
        a.model = ModelKind::kSkipGram;
        a.input = in.data();
        a.output = out.data();
        a.stride = stride;
        a.vocab = vocab;
        a.tokens = tokens.data();
        a.sentence_starts = dstarts.data();
        a.sentences = starts.size() - 1;
        a.keep = keep.data();
        a.noise = columns.data();
        a.noise_columns = noise.column_count();
        a.seed = params.seed;
        a.epoch = e;
        a.window = params.window;
        a.negative = params.negative;
        a.schedule = make_schedule(params);
        a.epoch_base = uint64_t{e} * params.words_per_epoch;
        a.counters = counters.data();
        a.max_warps = 1;
        a.parts = parts;
        a.input_part = ip;
        a.output_part = op;
        PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
        launch_sgns(a, stream.get());
        stream.synchronize();
      }
      const SgnsCounters c = testing_util::download(counters)[0];
      EXPECT_EQ(c.words, cpu.words);
      EXPECT_EQ(c.trained, cpu.trained);
      EXPECT_EQ(c.loss_terms, cpu.loss_terms);
      EXPECT_NEAR(c.loss, cpu.loss, 1e-4 * cpu.loss + 1e-3);
      auto unpadded = [&](const DeviceBuffer<float>& d) {
        const std::vector<float> h = testing_util::download(d);
        std::vector<float> rows(h.size() / stride * dim);
        for (size_t r = 0; r < h.size() / stride; ++r) {
          std::copy_n(&h[r * stride], dim, &rows[r * dim]);
        }
        return rows;
      };
      const std::vector<float> got_in = unpadded(in), got_out = unpadded(out);
      expect_values_near(got_in.data(), want_in.data(), want_in.size(), "input part");
      expect_values_near(got_out.data(), want_out.data(), want_out.size(), "output part");
      // Rows of the part that trained moved (the test is not vacuous).
      EXPECT_NE(got_in, start_in);
      EXPECT_NE(got_out, start_out);
    }
  }
  EXPECT_EQ(counted.words, 0u);
  EXPECT_GT(whole.words, 0u);
  EXPECT_EQ(counted.trained, whole.trained);
  EXPECT_EQ(counted.loss_terms, whole.loss_terms);
  // A part launch refuses what it cannot train.
  SgnsArgs bad;
  bad.model = ModelKind::kCbow;
  bad.parts = 2;
  EXPECT_THROW(launch_sgns(bad, nullptr), Error);
}

// Many warps on small items (Hogwild): every position is a centre exactly once — the counts of
// words, kept centres and examples equal the single-warp run's.
TEST(CudaSgnsItems, ConcurrentItemsTrainEveryCentreOnce) {
  PAGEDW2V_REQUIRE_GPU();
  Problem p;
  make_overlapping_problem(&p, Shape{ModelKind::kSkipGram, 64, 5, 5, 75}, 200, 200, 300);
  KernelHarness serial(p);
  serial.upload(p.model);
  const SpanStats one = serial.run(LaunchMode{true, false, 0}, 50);
  for (const uint32_t k : {kSmallLaunchItemTokens, kMinItemTokens}) {
    SCOPED_TRACE("item_tokens " + std::to_string(k));
    KernelHarness many(p);
    many.upload(p.model);
    const SpanStats items = many.run(LaunchMode{false, false, k}, 50);
    EXPECT_EQ(items.words, one.words);
    EXPECT_EQ(items.trained, one.trained);
    EXPECT_EQ(items.loss_terms, one.loss_terms);
    EXPECT_TRUE(std::isfinite(items.loss));
  }
}

// The item size a launch picks: a power of two within its bounds, growing with the tokens per
// warp, and small enough that each warp gets kItemsPerWarp items when the launch has the tokens;
// a launch with fewer tokens than its warps can take in items of kMinItemTokens gets items of
// about 5/3 tokens a warp, from kSmallLaunchItemTokens to kMinItemTokens, growing with its tokens.
TEST(SgnsItemTokens, GivesEveryWarpItsShare) {
  for (const uint64_t warps : {1ull, 100ull, 3072ull, 3168ull}) {
    uint32_t before = 0;
    for (uint64_t tokens = 1; tokens < (uint64_t{1} << 34); tokens = tokens * 3 / 2 + 1) {
      const uint32_t k = sgns_item_tokens(tokens, warps);
      EXPECT_GE(k, before) << tokens;
      before = k;
      if (tokens < warps * kMinItemTokens) {
        EXPECT_GE(k, kSmallLaunchItemTokens) << tokens;
        EXPECT_LE(k, kMinItemTokens) << tokens;
        // Within the bounds, each warp's share of the launch is about 3/5 of an item.
        if (k > kSmallLaunchItemTokens && k < kMinItemTokens) {
          EXPECT_LE(uint64_t{k} * warps * 3, tokens * 5) << tokens;
          EXPECT_GT(uint64_t{k + 1} * warps * 3, tokens * 5) << tokens;
        }
        continue;
      }
      EXPECT_GE(k, kMinItemTokens);
      EXPECT_LE(k, kMaxItemTokens);
      EXPECT_EQ(k & (k - 1), 0u) << k;
      if (k > kMinItemTokens) {
        EXPECT_GE(tokens / k, warps * kItemsPerWarp) << tokens;
      }
      if (k < kMaxItemTokens) {
        EXPECT_LT(tokens / (2 * k), warps * kItemsPerWarp) << tokens;
      }
    }
  }
  EXPECT_EQ(sgns_item_tokens(0, 3072), kSmallLaunchItemTokens);
  // A piece of ~4,900 words on 3,072 warps (mix5m at 8.1 MB) keeps items of 4; one of ~15,600
  // (mix5m at 12.15 MB with the union cuts) gets 8; one of ~53,000 (the walks) 16.
  EXPECT_EQ(sgns_item_tokens(4900, 3072), 4u);
  EXPECT_EQ(sgns_item_tokens(15600, 3072), 8u);
  EXPECT_EQ(sgns_item_tokens(3072 * kMinItemTokens - 1, 3072), kMinItemTokens);
  EXPECT_EQ(sgns_item_tokens(3072 * kMinItemTokens, 3072), kMinItemTokens);
  EXPECT_EQ(sgns_item_tokens(53000, 3072), kMinItemTokens);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaSgnsItems, ::testing::ValuesIn(kSerialCases), serial_name);
INSTANTIATE_TEST_SUITE_P(Cases, CudaSgnsSerial, ::testing::ValuesIn(kSerialCases), serial_name);
INSTANTIATE_TEST_SUITE_P(
    Cases, CudaSgnsSerialRowMap,
    ::testing::ValuesIn(serial_cases([](const SerialCase& c) { return c.pool > 0; })), serial_name);
INSTANTIATE_TEST_SUITE_P(
    Cases, CudaSgnsSerialVsCpu,
    ::testing::ValuesIn(serial_cases([](const SerialCase& c) { return !c.grad; })), serial_name);

// The device pool is the CPU pool, entry for entry.
TEST(CudaNegativePool, DevicePoolEqualsCpuPool) {
  PAGEDW2V_REQUIRE_GPU();
  std::vector<uint64_t> counts(5000);
  for (uint32_t w = 0; w < counts.size(); ++w) counts[w] = 1000000 / (w + 1) + 1;
  const NoiseTable noise(unigram_weights(counts));
  Stream stream;
  DeviceBuffer<NoiseColumn> d_noise = upload(noise.columns(), "noise");
  struct Case {
    uint64_t seed;
    uint32_t epoch;
    uint64_t super_batch;
    uint32_t n;
  };
  for (const Case& c :
       {Case{1, 0, 0, 1}, Case{1, 0, 0, 1000}, Case{77, 3, 12, 65536},
        Case{0x123456789ull, 9, 0xFFFFFFFFull, 4099}, Case{5, 1, 2, (1u << 20) + 12345}}) {
    DeviceBuffer<uint32_t> out(c.n + 1, "pool");
    // Poison, and a guard entry; on the kernel's stream, which does not wait for the legacy
    // default stream that cudaMemset uses.
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(out.data(), 0xA5, out.bytes(), stream.get()));
    launch_draw_pool(c.seed, c.epoch, c.super_batch, d_noise.data(), noise.column_count(), c.n,
                     out.data(), stream.get());
    stream.synchronize();
    const std::vector<uint32_t> got = download(out);
    const std::vector<uint32_t> want = draw_pool(c.seed, c.epoch, c.super_batch, noise, c.n);
    ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin()))
        << "seed " << c.seed << " epoch " << c.epoch << " super-batch " << c.super_batch;
    EXPECT_EQ(got[c.n], 0xA5A5A5A5u) << "wrote past the end";
  }
}

// Launch shapes come from limits asked of the driver once per device and kept: the driver's
// own numbers, and the same object at every launch.
TEST(CudaDeviceLimits, AreTheDriversAndKept) {
  PAGEDW2V_REQUIRE_GPU();
  int device = -1, sms = 0, shared = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  PAGEDW2V_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  PAGEDW2V_CUDA_TRY(
      cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const detail::DeviceLimits& limits = detail::device_limits();
  EXPECT_EQ(limits.device, device);
  EXPECT_EQ(limits.sms, sms);
  EXPECT_EQ(limits.max_shared_optin, shared);
  EXPECT_EQ(&detail::device_limits(), &limits);
}

}  // namespace
}  // namespace pagedw2v
