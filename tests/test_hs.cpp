// Hierarchical softmax (--hs) on the CPU backend: one path's update against a reference in
// double, whole sentences against word2vec.c's loops written out here, and whole runs (loss,
// topics, repeatability, every optimizer).

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/hs_cpu.hpp"
#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "model/huffman.hpp"
#include "model/params.hpp"
#include "support/seed.hpp"
#include "support/topics.hpp"
#include "test_util.hpp"
#include "train/backend_factory.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

namespace pagedw2v {
namespace {

using testing_util::topic_separation;
using testing_util::two_topic_corpus;

using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<float> random_vector(size_t n, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

class HsUpdate : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

// One path against word2vec's loop in double: f = h·node, g = (1 − code − σ(f))·lr, err += g·node,
// node += g·h, with the node whose |f| passes 6 skipped (and its loss still counted).
TEST_P(HsUpdate, MatchesWord2vecsLoop) {
  const auto [dim, length] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  const uint32_t nodes = length + 4;
  std::vector<float> table = random_vector(size_t{nodes} * dim, rng, 0.5f);
  const std::vector<float> h = random_vector(dim, rng, 0.5f);
  std::vector<uint32_t> rows(length);
  std::vector<uint8_t> codes(length);
  for (uint32_t d = 0; d < length; ++d) {
    rows[d] = (d * 5 + 2) % nodes;  // distinct rows
    codes[d] = static_cast<uint8_t>(rng() % 2);
  }
  // The last node of the path saturates: h·node = 8 > 6.
  {
    float* node = &table[size_t{rows[length - 1]} * dim];
    double hh = 0;
    for (uint32_t d = 0; d < dim; ++d) hh += double{h[d]} * h[d];
    for (uint32_t d = 0; d < dim; ++d) node[d] = static_cast<float>(8.0 * h[d] / hh);
  }
  const float lr = 0.05f;
  std::vector<double> want(table.begin(), table.end());
  std::vector<double> want_err(dim, 0.0);
  double want_loss = 0;
  for (uint32_t k = 0; k < length; ++k) {
    double* node = &want[size_t{rows[k]} * dim];
    double f = 0;
    for (uint32_t d = 0; d < dim; ++d) f += h[d] * node[d];
    const double x = std::clamp(codes[k] ? -f : f, -6.0, 6.0);
    want_loss += -std::log(sigmoid(x));
    if (f <= -6 || f >= 6) continue;
    const double g = (1.0 - codes[k] - sigmoid(f)) * lr;
    for (uint32_t d = 0; d < dim; ++d) want_err[d] += g * node[d];
    for (uint32_t d = 0; d < dim; ++d) node[d] += g * h[d];
  }
  std::vector<float> err(dim, 0.0f);
  const auto node_row = [&](uint32_t r) { return &table[size_t{r} * dim]; };
  const double loss = detail::hs_update_rows(h.data(), err.data(), node_row, rows.data(),
                                             codes.data(), length, dim, lr, true);
  EXPECT_NEAR(loss, want_loss, 1e-4 * want_loss);
  for (uint32_t d = 0; d < dim; ++d) EXPECT_NEAR(err[d], want_err[d], 1e-6) << d;
  for (size_t i = 0; i < table.size(); ++i) EXPECT_NEAR(table[i], want[i], 1e-6) << i;
  // The saturated node did not move.
  for (uint32_t d = 0; d < dim; ++d) {
    const size_t i = size_t{rows[length - 1]} * dim + d;
    EXPECT_EQ(table[i], static_cast<float>(want[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HsUpdate,
                         ::testing::Values(std::make_pair(1u, 1u), std::make_pair(7u, 3u),
                                           std::make_pair(100u, 12u), std::make_pair(128u, 40u)));

// The gradient form (the batched optimizers) gives what the update applies, divided by −lr.
TEST(HsGradient, IsTheUpdateOverMinusTheRate) {
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  const uint32_t dim = 16, nodes = 9, length = 6;
  const std::vector<float> table = random_vector(size_t{nodes} * dim, rng, 0.8f);
  const std::vector<float> h = random_vector(dim, rng, 0.8f);
  const std::vector<uint32_t> rows = {0, 3, 5, 1, 8, 2};
  const std::vector<uint8_t> codes = {1, 0, 0, 1, 1, 0};
  std::vector<float> grads(table.size(), 0.0f), err(dim, 0.0f);
  detail::hs_gradient(
      h.data(), err.data(), [&](uint32_t r) { return &table[size_t{r} * dim]; },
      [&](uint32_t r) { return &grads[size_t{r} * dim]; }, rows.data(), codes.data(), length, dim);
  // The update with lr 1 on a copy, one node at a time against the original nodes (no row
  // repeats on the path, so the order does not matter).
  std::vector<float> updated = table;
  std::vector<float> uerr(dim, 0.0f);
  detail::hs_update_rows(
      h.data(), uerr.data(), [&](uint32_t r) { return &updated[size_t{r} * dim]; }, rows.data(),
      codes.data(), length, dim, 1.0f, false);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_NEAR(grads[i], -(updated[i] - table[i]), 1e-5) << i;
  }
  for (uint32_t d = 0; d < dim; ++d) EXPECT_NEAR(err[d], -uerr[d], 1e-5) << d;
}

// The tree of counts 5 4 3 2 1 as test_huffman.cpp works it out by hand: rows and codes.
const std::vector<std::vector<uint32_t>> kPathRows = {{0, 1}, {0, 1}, {0, 2}, {0, 2, 3}, {0, 2, 3}};
const std::vector<std::vector<int>> kPathCodes = {{1, 1}, {1, 0}, {0, 1}, {0, 0, 1}, {0, 0, 0}};

/// The only word the noise of a fixture with negatives draws.
constexpr uint32_t kNoise = 4;

/// One sentence over the 5-word vocabulary: window 1, nothing subsampled, hierarchical softmax
/// alone, the inner nodes' vectors random rows 0 … 3 of the output table.
struct Fixture {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks = {0, 1};
  KeepTable keep{{}, 5};
  NoiseTable noise{std::vector<double>(5, 1.0)};
  HuffmanTree tree = build_huffman_tree(CountList(std::vector<uint64_t>{5, 4, 3, 2, 1}));
  TrainData data;
  Model model{HostTable(5, 1, "in", ""), HostTable(5, 1, "out", "")};

  Fixture(std::vector<uint32_t> tokens, ModelKind kind, uint32_t dim, uint32_t negative = 0) {
    corpus.tokens = std::move(tokens);
    corpus.sentence_starts = {0, corpus.tokens.size()};
    data.corpus = &corpus;
    data.blocks = &blocks;
    data.keep = &keep;
    data.noise = &noise;
    data.tree = &tree;
    data.params.model = kind;
    data.params.dim = dim;
    data.params.window = 1;
    data.params.negative = negative;
    data.params.hs = true;
    data.params.alpha = kind == ModelKind::kCbow ? 0.05f : 0.025f;
    data.params.words_per_epoch = corpus.tokens.size();
    data.params.epochs = 1;
    model = allocate_model(5, dim, OptimizerKind::kSgd, false, "", Storage::kFp32,
                           needs_node_table(true, negative));
    init_model(model, 5);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (uint64_t i = 0; i < 5 * dim; ++i) model.output.data()[i] = u(rng);
    for (uint64_t i = 0; i < model.nodes.rows() * dim; ++i) model.nodes.data()[i] = u(rng);
    if (negative > 0) {
      // Every negative is word kNoise.
      std::vector<double> weights(5, 0.0);
      weights[kNoise] = 1.0;
      noise = NoiseTable(weights);
    }
  }
};

/// word2vec.c's hierarchical-softmax loop over the centre's path, in double; returns the error
/// that goes to the context rows.
std::vector<double> reference_path(std::vector<double>& out, const std::vector<double>& h,
                                   uint32_t centre, double lr, uint32_t dim) {
  std::vector<double> err(dim, 0.0);
  for (size_t k = 0; k < kPathRows[centre].size(); ++k) {
    double* node = &out[size_t{kPathRows[centre][k]} * dim];
    double f = 0;
    for (uint32_t d = 0; d < dim; ++d) f += h[d] * node[d];
    if (f <= -6 || f >= 6) continue;
    const double g = (1.0 - kPathCodes[centre][k] - sigmoid(f)) * lr;
    for (uint32_t d = 0; d < dim; ++d) err[d] += g * node[d];
    for (uint32_t d = 0; d < dim; ++d) node[d] += g * h[d];
  }
  return err;
}

void expect_near(const HostTable& got, const std::vector<double>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got.data()[i], want[i], 1e-6) << what << i;
}

// Skip-gram: each context word's input row against the centre's path (word2vec.c: l1 is the
// context word, the path the centre's).
TEST(HsSentence, SkipGramTrainsTheContextRowAgainstTheCentresPath) {
  const uint32_t dim = 6;
  const std::vector<uint32_t> ids = {3, 0, 4, 1};
  Fixture f(ids, ModelKind::kSkipGram, dim);
  std::vector<double> in(f.model.input.data(), f.model.input.data() + 5 * dim);
  std::vector<double> out(f.model.output.data(), f.model.output.data() + 5 * dim);
  for (uint32_t i = 0; i < ids.size(); ++i) {
    const double lr = f.data.params.alpha * (1.0 - i / (ids.size() + 1.0));
    for (int j : {static_cast<int>(i) - 1, static_cast<int>(i) + 1}) {
      if (j < 0 || j >= static_cast<int>(ids.size())) continue;
      double* h = &in[size_t{ids[j]} * dim];
      const std::vector<double> err =
          reference_path(out, std::vector<double>(h, h + dim), ids[i], lr, dim);
      for (uint32_t d = 0; d < dim; ++d) h[d] += err[d];
    }
  }
  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, ids.size(), &stats);
  EXPECT_EQ(stats.loss_terms, 6u);
  EXPECT_GT(stats.loss, 0.0);
  expect_near(f.model.input, in, "input ");
  expect_near(f.model.output, out, "output ");
  // Row 4 is no inner node of a 5-word tree: untouched.
  for (uint32_t d = 0; d < dim; ++d)
    EXPECT_EQ(f.model.output.data()[4 * dim + d], out[4 * dim + d]);
}

// CBOW: the mean of the window's input rows against the centre's path; the whole error goes to
// every context row (word2vec.c with cbow's mean).
TEST(HsSentence, CbowTrainsTheWindowMeanAgainstTheCentresPath) {
  const uint32_t dim = 5;
  const std::vector<uint32_t> ids = {2, 4, 0, 3};
  Fixture f(ids, ModelKind::kCbow, dim);
  std::vector<double> in(f.model.input.data(), f.model.input.data() + 5 * dim);
  std::vector<double> out(f.model.output.data(), f.model.output.data() + 5 * dim);
  for (uint32_t i = 0; i < ids.size(); ++i) {
    std::vector<uint32_t> context;
    if (i > 0) context.push_back(ids[i - 1]);
    if (i + 1 < ids.size()) context.push_back(ids[i + 1]);
    std::vector<double> h(dim, 0.0);
    for (uint32_t r : context) {
      for (uint32_t d = 0; d < dim; ++d) h[d] += in[size_t{r} * dim + d] / context.size();
    }
    const double lr = f.data.params.alpha * (1.0 - i / (ids.size() + 1.0));
    const std::vector<double> err = reference_path(out, h, ids[i], lr, dim);
    for (uint32_t r : context) {
      for (uint32_t d = 0; d < dim; ++d) in[size_t{r} * dim + d] += err[d];
    }
  }
  SpanStats stats;
  detail::train_sentence_cpu(f.data, f.model, 0, 0, ids.size(), &stats);
  EXPECT_EQ(stats.loss_terms, 4u);
  expect_near(f.model.input, in, "input ");
  expect_near(f.model.output, out, "output ");
}

/// word2vec.c's negative-sampling loop in double: the centre (label 1), then kNoise `negative`
/// times (label 0), each against its output row; returns the error for the context rows.
std::vector<double> reference_negatives(std::vector<double>& out, const std::vector<double>& h,
                                        uint32_t centre, uint32_t negative, double lr,
                                        uint32_t dim) {
  std::vector<double> err(dim, 0.0);
  std::vector<uint32_t> targets = {centre};
  for (uint32_t k = 0; k < negative; ++k) targets.push_back(kNoise);
  for (size_t k = 0; k < targets.size(); ++k) {
    double* o = &out[size_t{targets[k]} * dim];
    double f = 0;
    for (uint32_t d = 0; d < dim; ++d) f += h[d] * o[d];
    const double g = ((k == 0 ? 1.0 : 0.0) - sigmoid(f)) * lr;
    for (uint32_t d = 0; d < dim; ++d) err[d] += g * o[d];
    for (uint32_t d = 0; d < dim; ++d) o[d] += g * h[d];
  }
  return err;
}

// Beside negative sampling (word2vec's -hs 1 -negative N): the path trains the inner-node table,
// the centre and its negatives train the output table, and both errors, summed, go to the
// context row (the hierarchical softmax first, against the same h).
TEST(HsSentence, BesideNegativeSamplingBothLossesTrainTheInputRow) {
  const uint32_t dim = 7, negative = 2;
  const std::vector<uint32_t> ids = {0, 2, 3, 1};  // kNoise is never a centre
  for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    SCOPED_TRACE(to_string(kind));
    Fixture f(ids, kind, dim, negative);
    ASSERT_EQ(f.model.nodes.rows(), 5u);
    std::vector<double> in(f.model.input.data(), f.model.input.data() + 5 * dim);
    std::vector<double> out(f.model.output.data(), f.model.output.data() + 5 * dim);
    std::vector<double> nodes(f.model.nodes.data(), f.model.nodes.data() + 5 * dim);
    for (uint32_t i = 0; i < ids.size(); ++i) {
      const double lr = f.data.params.alpha * (1.0 - i / (ids.size() + 1.0));
      std::vector<uint32_t> context;
      if (i > 0) context.push_back(ids[i - 1]);
      if (i + 1 < ids.size()) context.push_back(ids[i + 1]);
      const auto train = [&](const std::vector<uint32_t>& rows) {
        std::vector<double> h(dim, 0.0);
        for (uint32_t r : rows) {
          for (uint32_t d = 0; d < dim; ++d) h[d] += in[size_t{r} * dim + d] / rows.size();
        }
        std::vector<double> err = reference_path(nodes, h, ids[i], lr, dim);
        const std::vector<double> ns = reference_negatives(out, h, ids[i], negative, lr, dim);
        for (uint32_t d = 0; d < dim; ++d) err[d] += ns[d];
        for (uint32_t r : rows) {
          for (uint32_t d = 0; d < dim; ++d) in[size_t{r} * dim + d] += err[d];
        }
      };
      if (kind == ModelKind::kSkipGram) {
        for (uint32_t r : context) train({r});
      } else {
        train(context);
      }
    }
    SpanStats stats;
    detail::train_sentence_cpu(f.data, f.model, 0, 0, ids.size(), &stats);
    expect_near(f.model.input, in, "input ");
    expect_near(f.model.output, out, "output ");
    expect_near(f.model.nodes, nodes, "nodes ");
  }
}

// The inner-node table (hierarchical softmax beside negative sampling) and its state go after
// every other table of an id when the tables are interleaved (paged), so the layout of the others
// is the one a model without it has; without --hs beside --negative there is none.
TEST(HsModel, TheInnerNodeTableInterleavesAfterTheOthers) {
  const uint32_t dim = 3;
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    SCOPED_TRACE(to_string(kind));
    const uint32_t n = state_tables(kind);
    Model plain = allocate_model(7, dim, kind, true, "");
    EXPECT_EQ(plain.nodes.rows(), 0u);
    EXPECT_TRUE(plain.nodes_state.empty());
    EXPECT_EQ(plain.input.stride(), uint64_t{2 + 2 * n} * dim);
    Model m = allocate_model(7, dim, kind, true, "", Storage::kFp32, true);
    ASSERT_EQ(m.nodes.rows(), 7u);
    ASSERT_EQ(m.nodes_state.size(), n);
    EXPECT_EQ(m.input.stride(), uint64_t{3 + 3 * n} * dim);
    for (uint64_t r : {0u, 6u}) {
      EXPECT_EQ(m.output.row(r) - m.input.row(r), dim);
      for (uint32_t k = 0; k < n; ++k) {
        EXPECT_EQ(m.input_state[k].row(r) - m.input.row(r), (2 + k) * dim);
        EXPECT_EQ(m.output_state[k].row(r) - m.input.row(r), (2 + n + k) * dim);
        EXPECT_EQ(m.nodes_state[k].row(r) - m.input.row(r), (3 + 2 * n + k) * dim);
      }
      EXPECT_EQ(m.nodes.row(r) - m.input.row(r), (2 + 2 * n) * dim);
    }
    // Apart, it is a table of its own, zeroed by init_model like the output table.
    Model apart = allocate_model(7, dim, kind, false, "", Storage::kFp32, true);
    apart.nodes.fill(1.0f);
    init_model(apart, 3);
    EXPECT_TRUE(apart.nodes.contiguous());
    EXPECT_TRUE(apart.nodes.all_zero());
    EXPECT_EQ(apart.nodes_state.size(), n);
  }
}

Config hs_config(const TempDir& dir, const std::string& out) {
  Config c = testing_util::small_cpu_config(dir, out, 16, 4);
  c.sample = 0;
  c.hs = true;
  c.negative = 0;
  c.formats = {"npy", "txt"};
  return c;
}

struct RunCase {
  ModelKind model;
  OptimizerKind optimizer;
  uint32_t threads;
  uint32_t negative = 0;
};

class HsRun : public ::testing::TestWithParam<RunCase> {};

// Whole runs with hierarchical softmax alone: the loss falls from epoch to epoch and the words
// of one topic end nearer each other than words of the other topic.
TEST_P(HsRun, LowersTheLossAndSeparatesTopics) {
  const uint64_t seed = testing_util::fresh_seed();
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus(1500, seed));
  Config c = hs_config(dir, "out");
  c.model = GetParam().model;
  c.optimizer = GetParam().optimizer;
  c.threads = GetParam().threads;
  c.negative = GetParam().negative;
  const TrainSummary s = run_training(c);
  EXPECT_EQ(s.vocab_size, 40u);
  ASSERT_EQ(s.epoch_loss.size(), 4u);
  for (double l : s.epoch_loss) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(s.epoch_loss.back(), s.epoch_loss.front());
  // A word's path in a tree of 40 about equally frequent words is 5 or 6 nodes, and negative
  // sampling's loss starts at (1 + negative)·log 2: less than that at the end means they learn.
  EXPECT_LT(s.epoch_loss.back(), (6 + 1 + GetParam().negative) * std::log(2.0));
  EXPECT_GT(topic_separation(dir.file("out/vectors.txt")), 0.3);
}

INSTANTIATE_TEST_SUITE_P(
    All, HsRun,
    ::testing::Values(RunCase{ModelKind::kSkipGram, OptimizerKind::kSgd, 1},
                      RunCase{ModelKind::kSkipGram, OptimizerKind::kSgd, 2},
                      RunCase{ModelKind::kCbow, OptimizerKind::kSgd, 1},
                      RunCase{ModelKind::kCbow, OptimizerKind::kSgd, 2},
                      RunCase{ModelKind::kSkipGram, OptimizerKind::kAdagrad, 1},
                      RunCase{ModelKind::kCbow, OptimizerKind::kAdam, 1},
                      RunCase{ModelKind::kSkipGram, OptimizerKind::kSgd, 2, 5},
                      RunCase{ModelKind::kCbow, OptimizerKind::kSgd, 1, 3},
                      RunCase{ModelKind::kSkipGram, OptimizerKind::kAdagrad, 1, 5}));

// One thread repeats a run bit for bit; another seed changes it.
TEST(HsRun, OneThreadIsBitIdenticalRunToRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus(400, 1));
  run_training(hs_config(dir, "a"));
  run_training(hs_config(dir, "b"));
  const std::string a = read_file(dir.file("a/vectors.npy"));
  ASSERT_GT(a.size(), 16u * 40u * 4u);
  EXPECT_EQ(a, read_file(dir.file("b/vectors.npy")));
  Config other = hs_config(dir, "c");
  other.seed = 2;
  run_training(other);
  EXPECT_NE(a, read_file(dir.file("c/vectors.npy")));
}

// A corpus streamed a window at a time (more than --max-corpus-memory encoded) trains the bits
// of the same corpus held whole: the tree comes from the counts either way.
TEST(HsRun, AStreamedCorpusTrainsTheSameBits) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus(3000, 5));  // 36,000 words: 144 kB encoded
  for (const uint32_t negative : {0u, 3u}) {
    Config whole = hs_config(dir, "whole" + std::to_string(negative));
    whole.negative = negative;
    const TrainSummary a = run_training(whole);
    Config streamed = hs_config(dir, "streamed" + std::to_string(negative));
    streamed.negative = negative;
    streamed.max_corpus_memory = 64 << 10;
    const TrainSummary b = run_training(streamed);
    EXPECT_EQ(a.words, b.words);
    const std::string bits =
        read_file(dir.file("whole" + std::to_string(negative) + "/vectors.npy"));
    ASSERT_FALSE(bits.empty());
    EXPECT_EQ(bits, read_file(dir.file("streamed" + std::to_string(negative) + "/vectors.npy")))
        << "negative " << negative;
  }
}

class HsResume : public ::testing::TestWithParam<RunCase> {};

// Two epochs straight, and one epoch then a resume from epoch-1.h5, give the same bits: the
// checkpoint records --hs and --negative 0, the tree is rebuilt from its vocabulary's counts, and
// the inner nodes' rows travel as rows of the output table (with their optimizer state).
TEST_P(HsResume, FromAnEpochCheckpointIsExact) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus(600, 7));
  Config straight = hs_config(dir, "a");
  straight.epochs = 2;
  straight.model = GetParam().model;
  straight.optimizer = GetParam().optimizer;
  straight.negative = GetParam().negative;
  run_training(straight);
  const Checkpoint ck = load_checkpoint(dir.file("a/checkpoints/epoch-1.h5"));
  EXPECT_TRUE(ck.config.hs);
  EXPECT_EQ(ck.config.negative, GetParam().negative);
  // Beside negative sampling the inner nodes (and their optimizer state) have a table of their
  // own in the checkpoint.
  EXPECT_EQ(ck.model.nodes.rows(), GetParam().negative > 0 ? 40u : 0u);
  EXPECT_EQ(ck.model.nodes_state.size(),
            ck.model.nodes.rows() > 0 ? ck.model.input_state.size() : 0u);
  Config resumed =
      testing_util::small_cpu_config(dir, "b", 0, 0, dir.file("a/checkpoints/epoch-1.h5"));
  resumed.formats = {"npy"};
  const TrainSummary s = run_training(resumed);
  EXPECT_EQ(s.words, 2u * 600u * 12u);
  const std::string a = read_file(dir.file("a/vectors.npy"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, read_file(dir.file("b/vectors.npy")));
}

INSTANTIATE_TEST_SUITE_P(Models, HsResume,
                         ::testing::Values(RunCase{ModelKind::kSkipGram, OptimizerKind::kSgd, 1},
                                           RunCase{ModelKind::kCbow, OptimizerKind::kSgd, 1},
                                           RunCase{ModelKind::kCbow, OptimizerKind::kAdam, 1},
                                           RunCase{ModelKind::kSkipGram, OptimizerKind::kSgd, 1, 5},
                                           RunCase{ModelKind::kCbow, OptimizerKind::kAdam, 1, 3}));

// --hs is part of the model a checkpoint fixes: a resumed run may not turn it off (nor on).
TEST(HsResume, HsCannotChange) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus(200, 8));
  Config c = hs_config(dir, "a");
  c.epochs = 2;
  run_training(c);
  Config r = testing_util::small_cpu_config(dir, "b", 0, 0, dir.file("a/checkpoints/epoch-1.h5"));
  apply_option(r, "hs", "false");
  try {
    run_training(r);
    FAIL() << "resumed with --hs turned off";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("--hs cannot change when resuming"), 0u) << e.what();
  }
}

// The GPU's default for hierarchical softmax in Hogwild launches (model/params.hpp): CBOW's
// inner nodes damped for the launch's own warps, skip-gram's not; a value given stays.
TEST(HsDamping, TheDefaultDampsCbowAndNotSkipGram) {
  EXPECT_EQ(hs_damp_warps_for(kHsDampByModel, ModelKind::kCbow), kHsDampLaunchWarps);
  EXPECT_EQ(hs_damp_warps_for(kHsDampByModel, ModelKind::kSkipGram), 0u);
  for (const ModelKind model : {ModelKind::kCbow, ModelKind::kSkipGram}) {
    EXPECT_EQ(hs_damp_warps_for(0, model), 0u);
    EXPECT_EQ(hs_damp_warps_for(1024, model), 1024u);
    EXPECT_EQ(hs_damp_warps_for(kHsDampLaunchWarps, model), kHsDampLaunchWarps);
  }
}

// And its cap on the warps in flight: CBOW's launches at most kHsCbowMaxWarps, skip-gram's as
// many as stay resident (0); a value given stays.
TEST(HsDamping, TheDefaultCapsCbowsWarpsAndNotSkipGrams) {
  EXPECT_EQ(hs_max_warps_for(kHsWarpsByModel, ModelKind::kCbow), kHsCbowMaxWarps);
  EXPECT_EQ(hs_max_warps_for(kHsWarpsByModel, ModelKind::kSkipGram), 0u);
  EXPECT_GT(kHsCbowMaxWarps, 0u);
  for (const ModelKind model : {ModelKind::kCbow, ModelKind::kSkipGram}) {
    EXPECT_EQ(hs_max_warps_for(0, model), 0u);
    EXPECT_EQ(hs_max_warps_for(256, model), 256u);
  }
}

}  // namespace
}  // namespace pagedw2v
