// Whole runs of `pagedw2v train` on the GPU, compared by value: with the tables paged against
// resident, and with the CPU backend (the reference), through run_training() exactly as the
// command runs them (options set by name, the plan made from the budget, the export read back).
//
// What each comparison can promise, and why:
// - --deterministic paged against --deterministic resident: the same bytes. One warp trains a
//   launch's sentences in order and the launches keep their order, so where a row lives (hot,
//   cached in a slot, evicted and read again) must not change a bit. 16-bit storage with sgd is
//   the exception the design names: rows are rounded when they go back to the host (evictions,
//   span ends), which a resident run never does; there the paged run is compared with itself
//   (the same bits twice) and with resident by value.
// - The GPU against the CPU: not the same bytes. The kernel holds a centre's output row across
//   its window and applies a window's updates in another order than word2vec.c's loop, so two
//   deterministic runs round differently and drift. What must agree is the arithmetic: with a
//   small learning rate a run is close to its first-order expansion, in which the order of the
//   updates does not matter, so the tables' movement from the untrained tables must agree row by
//   row within a small share of that movement (kFollowShare, measured beside it). A gradient
//   scaled by 0.9 or a negative dropped moves them 10 % or more apart. The optimizers (Adam,
//   Adagrad) compute every example of a batch against the batch's starting tables, so there only
//   the summation order differs.
// - Hogwild runs (many warps, the default): the loss of every epoch and the quality of the
//   vectors (how far apart the cosines within and across planted topics are, on a corpus made
//   of topics) within the spread that CPU runs of three seeds show, widened by a fixed floor.
//   The paged sgd cases train a larger topic corpus on a budget its plan fills with far fewer
//   rows than it has, so that trained rows leave the GPU and are read back (a row read into
//   the wrong slot then shows); WholeRunHogwildPlan checks that plan without a GPU.
//
// Every random input comes from testing_util::fresh_seed(): printed on failure, replayed from
// PAGEDW2V_TEST_SEED.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_device.hpp"
#include "io/npy.hpp"
#include "model/model.hpp"
#include "model/optimizer.hpp"
#include "support/compare.hpp"
#include "support/made_up_gpu.hpp"
#include "support/random_data.hpp"
#include "support/whole_run.hpp"
#include "test_util.hpp"
#include "train/run_plan.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

using testing_util::bits_differ;
using testing_util::expect_follows_cpu;
using testing_util::name_of;
using testing_util::share_off;
using testing_util::TempDir;
using testing_util::Trained;
using testing_util::write_file;

constexpr uint32_t kVocab = 12000;
constexpr uint32_t kDim = 16;
constexpr uint32_t kPool = 128;
constexpr uint64_t kBatchWords = 8192;
constexpr uint64_t kPoolWords = 4096;
constexpr uint32_t kShortestSentence = 5;
constexpr uint32_t kLongestSentence = 30;

/// Sentences of w0 … w(kVocab−1) drawn from Zipf(1), every word at least once (min-count 1),
/// sentences of kShortestSentence … kLongestSentence tokens.
std::string zipf_corpus(uint64_t seed, uint32_t tokens) {
  return testing_util::zipf_corpus(seed, kVocab, tokens, kShortestSentence, kLongestSentence);
}

/// Sentences about one of kTopics topics each, of words t<topic>_<j> drawn from that topic's
/// `topic_words` words (Zipf within the topic), with one word in three drawn from any topic.
constexpr uint32_t kTopics = 20;
constexpr uint32_t kTopicWords = 40;
std::string topic_corpus(uint64_t seed, uint32_t sentences, uint32_t topic_words = kTopicWords) {
  std::mt19937_64 rng(seed);
  std::vector<double> weights(topic_words);
  for (uint32_t r = 0; r < topic_words; ++r) weights[r] = 1.0 / (r + 2.0);
  std::discrete_distribution<uint32_t> word(weights.begin(), weights.end());
  std::uniform_int_distribution<uint32_t> topic(0, kTopics - 1), length(8, 20), noise(0, 2);
  std::string text;
  for (uint32_t s = 0; s < sentences; ++s) {
    const uint32_t t = topic(rng);
    const uint32_t n = length(rng);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t from = noise(rng) == 0 ? topic(rng) : t;
      text +=
          "t" + std::to_string(from) + "_" + std::to_string(word(rng)) + (i + 1 < n ? " " : "\n");
    }
  }
  return text;
}

/// A --gpu-memory budget with room for `room` rows (of every table the optimizer needs) beyond
/// the fixed part of a paged plan for this file's shapes over a vocabulary of `vocab` words
/// (sampling tables, the pieces in flight, the plan's margin), the fixed part estimated a little
/// high. The tests check that the plan they got pages: not every row is hot.
uint64_t paged_budget(OptimizerKind optimizer, uint64_t room, uint64_t vocab = kVocab) {
  const uint64_t stride = (kDim + 3) & ~3u;
  const bool stateful = optimizer != OptimizerKind::kSgd;
  const uint64_t row =
      stride * sizeof(float) * (2 + 2 * state_tables(optimizer) + (stateful ? 2 : 0)) + 16;
  const uint64_t tokens = kBatchWords + 2 * kLongestSentence;
  const uint64_t pools = kBatchWords / kPoolWords * kPool;
  const uint64_t list = std::min<uint64_t>(vocab, tokens + pools);
  const uint64_t piece =
      tokens * 8 + (tokens / kShortestSentence + 1) * 12 + list * 16 + pools * 8 + 64;
  const uint64_t fixed = vocab * 24 + 3 * piece + (uint64_t{16} << 10);
  return testing_util::with_paged_margin(fixed + room * row);
}

struct RunOptions {
  ModelKind model = ModelKind::kSkipGram;
  SgnsKernel kernel = SgnsKernel::kPerPair;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  Storage storage = Storage::kFp32;
  std::string device = "cuda";
  Placement placement = Placement::kResident;
  uint64_t budget = 0;  ///< --gpu-memory for paged runs
  bool deterministic = true;
  uint32_t threads = 1;
  uint32_t epochs = 2;
  uint64_t seed = 1;
  std::string alpha;  ///< empty: the optimizer's default
  /// --batch-words: the GPU's optimizers step once per super-batch of this many words, the
  /// CPU's once per work block (--pool-words); equal, the two step alike.
  uint64_t batch_words = kBatchWords;
};

/// The Config of `pagedw2v train` for a run of `corpus` under `o`, written to `out`.
Config run_config(const std::string& corpus, const RunOptions& o, const std::string& out) {
  Config c;
  apply_option(c, "corpus", corpus);
  apply_option(c, "output", out);
  apply_option(c, "model", to_string(o.model));
  apply_option(c, "kernel", to_string(o.kernel));
  apply_option(c, "optimizer", to_string(o.optimizer));
  apply_option(c, "dim", std::to_string(kDim));
  apply_option(c, "epochs", std::to_string(o.epochs));
  apply_option(c, "min-count", "1");
  apply_option(c, "negative-pool", std::to_string(kPool));
  apply_option(c, "pool-words", std::to_string(kPoolWords));
  apply_option(c, "batch-words", std::to_string(o.batch_words));
  apply_option(c, "seed", std::to_string(o.seed));
  apply_option(c, "device", o.device);
  apply_option(c, "threads", std::to_string(o.threads));
  apply_option(c, "deterministic", o.deterministic ? "true" : "false");
  if (!o.alpha.empty()) apply_option(c, "alpha", o.alpha);
  if (o.device == "cuda") {
    apply_option(c, "storage", to_string(o.storage));
    apply_option(c, "placement", to_string(o.placement));
    if (o.placement == Placement::kPaged) apply_option(c, "gpu-memory", std::to_string(o.budget));
  }
  apply_option(c, "format", "npy");
  apply_option(c, "save-context", "true");
  return c;
}

Trained train(const std::string& corpus, const RunOptions& o, const std::string& out) {
  return testing_util::run_and_read(run_config(corpus, o, out), out);
}

/// How well the vectors separate the planted topics: the mean cosine of two words of one topic
/// (the number between "t" and "_") less the mean cosine of two words of different topics.
/// CPU runs of three seeds on topic_corpus(…, 6000) with 2 threads gave 0.434 … 0.439.
double topic_separation(const Trained& r) {
  const size_t n = r.words.size();
  std::vector<double> unit(n * kDim);
  std::vector<int> topic(n);
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (uint32_t d = 0; d < kDim; ++d) s += double(r.input[i * kDim + d]) * r.input[i * kDim + d];
    const double norm = std::sqrt(s) + 1e-30;
    for (uint32_t d = 0; d < kDim; ++d) unit[i * kDim + d] = r.input[i * kDim + d] / norm;
    topic[i] = std::atoi(r.words[i].c_str() + 1);
  }
  double same = 0, other = 0;
  uint64_t same_n = 0, other_n = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      double c = 0;
      for (uint32_t d = 0; d < kDim; ++d) c += unit[i * kDim + d] * unit[j * kDim + d];
      if (topic[i] == topic[j]) {
        same += c, ++same_n;
      } else {
        other += c, ++other_n;
      }
    }
  }
  return same / std::max<uint64_t>(same_n, 1) - other / std::max<uint64_t>(other_n, 1);
}

/// A model and its window update: skip-gram per pair, CBOW, and skip-gram with shared negatives.
struct Update {
  ModelKind model;
  SgnsKernel kernel;
};
const Update kUpdates[] = {{ModelKind::kSkipGram, SgnsKernel::kPerPair},
                           {ModelKind::kCbow, SgnsKernel::kPerPair},
                           {ModelKind::kSkipGram, SgnsKernel::kSharedNegatives}};

std::string name_of(const Update& u) {
  return name_of(u.model) + (u.kernel == SgnsKernel::kSharedNegatives ? "_shared" : "");
}

// ---------------------------------------------------------------------------------------------
// Deterministic: paged as the plan makes it, at two budgets, against resident.

using PagedCase = std::tuple<Update, OptimizerKind, Storage>;
class WholeRunPagedEqualsResident : public ::testing::TestWithParam<PagedCase> {};

TEST_P(WholeRunPagedEqualsResident, SameBytes) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [update, optimizer, storage] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  write_file(dir.file("corpus.txt"), zipf_corpus(seed, 36000));
  RunOptions o;
  o.model = update.model;
  o.kernel = update.kernel;
  o.optimizer = optimizer;
  o.storage = storage;
  o.seed = seed;
  const Trained resident = train(dir.file("corpus.txt"), o, dir.file("resident"));
  EXPECT_EQ(resident.summary.device, "cuda");
  // Room for about half the rows (all of them with an optimizer, whose super-batch must fit
  // whole) and for a quarter more: the plan splits it into hot rows and its row cache, so
  // rows are evicted and read again.
  const bool stateful = optimizer != OptimizerKind::kSgd;
  const uint64_t base_room = stateful ? kVocab : kVocab / 2;
  for (const uint64_t room : {base_room, base_room + base_room / 4}) {
    SCOPED_TRACE("room for " + std::to_string(room) + " rows");
    o.placement = Placement::kPaged;
    o.budget = paged_budget(optimizer, room);
    const std::string out = dir.file("paged-" + std::to_string(room));
    const Trained paged = train(dir.file("corpus.txt"), o, out);
    const int64_t hot = testing_util::hot_rows(paged.log);
    ASSERT_GE(hot, 0) << "not paged:\n" << paged.log;
    EXPECT_LT(hot, int64_t{kVocab}) << paged.log;
    EXPECT_EQ(paged.summary.words, resident.summary.words);
    const bool rounded_on_the_way = storage != Storage::kFp32 && optimizer == OptimizerKind::kSgd;
    if (!rounded_on_the_way) {
      EXPECT_EQ(bits_differ(paged.input, resident.input), 0u) << "input";
      EXPECT_EQ(bits_differ(paged.output, resident.output), 0u) << "output";
    } else {
      // Rounded to 16 bits when rows go back: the same bits every time, and close to resident.
      const Trained again = train(dir.file("corpus.txt"), o, out + "-again");
      EXPECT_EQ(bits_differ(again.input, paged.input), 0u) << "input";
      EXPECT_EQ(bits_differ(again.output, paged.output), 0u) << "output";
      const std::vector<float> zero(resident.output.size(), 0.0f);
      const double off = share_off(paged.output, resident.output, zero);
      std::printf("16-bit sgd, paged against resident: output %.4f of its size apart\n", off);
      EXPECT_LT(off, 0.05);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, WholeRunPagedEqualsResident,
                         ::testing::Combine(::testing::ValuesIn(kUpdates),
                                            ::testing::Values(OptimizerKind::kSgd,
                                                              OptimizerKind::kAdam,
                                                              OptimizerKind::kAdagrad),
                                            ::testing::Values(Storage::kFp32, Storage::kBf16)),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) + "_" +
                                  to_string(std::get<1>(info.param)) + "_" +
                                  to_string(std::get<2>(info.param));
                         });

// ---------------------------------------------------------------------------------------------
// Deterministic: the GPU against the CPU, row by row, in the first-order regime.

/// How far apart the GPU's and the CPU's tables may be, as a share of how far the CPU's moved
/// from the untrained tables (share_off). Set from the first-order argument above: at --alpha
/// 0.0025 the order of a window's updates moves a table by about a hundredth of its movement,
/// while a gradient scaled by 0.9 moves it a tenth (scripts/broken-kernels.sh plants that fault).
/// Measured on an H100 (2026-12-07, PAGEDW2V_TEST_SEED 20261207): under 1e-5 with sgd, at most
/// 7e-5 with Adam and Adagrad (one step per block on both backends), resident and paged.
constexpr double kFollowShare = 0.03;

using FollowCase = std::tuple<Update, OptimizerKind, Placement>;
class WholeRunGpuFollowsCpu : public ::testing::TestWithParam<FollowCase> {};

TEST_P(WholeRunGpuFollowsCpu, RowByRow) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [update, optimizer, placement] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  write_file(dir.file("corpus.txt"), zipf_corpus(seed, 36000));
  RunOptions o;
  o.model = update.model;
  o.kernel = update.kernel;
  o.optimizer = optimizer;
  o.seed = seed;
  o.epochs = 1;
  // A small step keeps word2vec's per-example updates in their first-order regime; an optimizer
  // steps once per block on both backends.
  if (optimizer == OptimizerKind::kSgd) o.alpha = "0.0025";
  if (optimizer != OptimizerKind::kSgd) o.batch_words = kPoolWords;
  o.device = "cpu";
  const Trained cpu = train(dir.file("corpus.txt"), o, dir.file("cpu"));
  o.device = "cuda";
  o.placement = placement;
  o.budget = paged_budget(optimizer, optimizer == OptimizerKind::kSgd ? kVocab / 2 : kVocab);
  const Trained gpu = train(dir.file("corpus.txt"), o, dir.file("gpu"));
  EXPECT_EQ(gpu.summary.device, "cuda");
  EXPECT_EQ(gpu.summary.words, cpu.summary.words);
  if (placement == Placement::kPaged) {
    EXPECT_GE(testing_util::hot_rows(gpu.log), 0) << gpu.log;
  }

  // The untrained tables, as exported (rows in vocabulary order).
  Model start = allocate_model(kVocab, kDim, optimizer, false, "");
  init_model(start, seed);
  std::vector<float> in0(start.input.rows() * start.input.dim());
  std::vector<float> out0(start.output.rows() * start.output.dim());
  start.input.copy_to(in0.data());
  start.output.copy_to(out0.data());
  expect_follows_cpu(gpu, cpu, in0, out0, kFollowShare);
}

INSTANTIATE_TEST_SUITE_P(
    All, WholeRunGpuFollowsCpu,
    ::testing::Combine(::testing::ValuesIn(kUpdates),
                       ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam,
                                         OptimizerKind::kAdagrad),
                       ::testing::Values(Placement::kResident, Placement::kPaged)),
    [](const auto& info) {
      return name_of(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param)) + "_" +
             to_string(std::get<2>(info.param));
    });

// ---------------------------------------------------------------------------------------------
// Hogwild (the default launch mode): loss and quality against the CPU's seed-to-seed spread.

/// Added to the CPU's spread. The GPU's Hogwild is not the CPU's (thousands of warps against a
/// few threads, the loss taken as examples train): on an H100 (2026-12-07, PAGEDW2V_TEST_SEED
/// 20261207) skip-gram sgd's epoch losses were 2.31, 2.25, 2.26 against the CPU's 2.40–2.42,
/// 2.14–2.15, 2.22–2.24 (5 % apart at most), CBOW's 2.60, 2.39, 2.14 against 2.51–2.54,
/// 2.22–2.24, 2.11–2.13 (7 %), and the GPU's topic separation 0.54–0.57 against the CPU's
/// 0.46–0.47 (sgd) and 0.15–0.29 against 0.13–0.26 (Adam, Adagrad). So the loss must stay within
/// 10 % of the CPU's range, and the separation must not fall below it (a broken kernel loses
/// it); it may rise above.
constexpr double kLossFloor = 0.10;        ///< relative, per epoch
constexpr double kSeparationFloor = 0.05;  ///< absolute
constexpr double kLearnt = 0.1;  ///< the CPU's separation that shows the topics were learnt
/// GPU runs a case trains (seeds seed + 7, seed + 8, ...): every one's loss is checked, and the
/// best one's separation. Adam's separation after three epochs is noisy: on an H100
/// (2026-12-07) one GPU run of skip-gram Adam paged fell to 0.083 against the CPU's
/// 0.167–0.183, with its loss inside the CPU's range, while 24 runs of the eight cases before and
/// after it passed. A broken kernel moves every seed (scripts/broken-kernels.sh).
constexpr int kGpuSeeds = 2;

/// The topic corpus of the paged sgd cases: 20 topics of 400 words, 8,000 rows, so that the
/// rows outweigh the plan's fixed buffers and a budget can keep fewer rows on the GPU than the
/// corpus has: trained rows leave the GPU and are read back, where a row read into the wrong
/// slot shows in the loss and the topics. (The 800 rows of the other cases fit the least cache
/// of a paged plan nearly whole: at their budgets every row was hot.) An optimizer's super-batch
/// must fit the cache whole, so its paged case keeps the small corpus.
constexpr uint32_t kPagedTopicWords = 400;
constexpr uint32_t kPagedTopicRows = kTopics * kPagedTopicWords;
constexpr uint32_t kPagedSentences = 80000;

/// Whether a Hogwild case trains the paged sgd corpus.
bool pages_rows_out(OptimizerKind optimizer, Placement placement) {
  return optimizer == OptimizerKind::kSgd && placement == Placement::kPaged;
}

/// The topic corpus of a Hogwild case.
std::string hogwild_corpus(uint64_t seed, OptimizerKind optimizer, Placement placement) {
  return pages_rows_out(optimizer, placement)
             ? topic_corpus(seed, kPagedSentences, kPagedTopicWords)
             : topic_corpus(seed, 6000);
}

/// The options of a Hogwild case's runs, on the CPU (the GPU's set device and placement).
RunOptions hogwild_options(ModelKind model, OptimizerKind optimizer) {
  RunOptions o;
  o.model = model;
  o.optimizer = optimizer;
  o.deterministic = false;
  o.epochs = 3;
  o.batch_words = kPoolWords;  // optimizers step once per block on both backends
  o.threads = 4;
  o.device = "cpu";
  return o;
}

/// The "a cache of N rows" of a log's "tables paged" line, or −1 without one.
int64_t cache_rows(const std::string& log) {
  const std::string key = " hot rows + a cache of ";
  const size_t at = log.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(log.c_str() + at + key.size(), nullptr, 10);
}

/// The plans `train` makes for the paged run `o` of `text` (written as `corpus`) at any budget:
/// the device and sizes as plan_device and plan_sizes make them, over one training set.
class PagedPlans {
 public:
  PagedPlans(const std::string& text, const RunOptions& o, const std::string& corpus)
      : config_(run_config(corpus, o, corpus + ".out")), set_(make_training_set(text, config_)) {}

  /// The plan at --gpu-memory `budget` on `gpu`; `scratch`: the kernels' scratch sizes, null
  /// for CUB's own (which need a GPU). Throws the plan's Error when the budget is too small.
  GpuPlan at(uint64_t budget, const DeviceFacts& gpu, const GpuScratchBytes& scratch) const {
    Config c = config_;
    apply_option(c, "gpu-memory", std::to_string(budget));
    RunPlan plan = plan_device(c, set_.vocab.size(), gpu, 1, false);
    plan_sizes(plan, c, set_.train_data(c), false, {}, scratch);
    if (!plan.gpu_plan) throw Error("no GPU plan");
    return *plan.gpu_plan;
  }
  uint64_t rows() const { return set_.vocab.size(); }

 private:
  Config config_;
  TrainingSet set_;
};

/// Rows a paged sgd Hogwild case's budget holds beyond the least its plan accepts, and the bytes
/// of one (both fp32 tables and its slot's entry).
constexpr uint64_t kHogwildRoom = 1500;
constexpr uint64_t kHogwildRowBytes = 2 * ((kDim + 3) & ~3u) * sizeof(float) + 16;

/// The least --gpu-memory the plans accept, to 4 KiB (bisection).
uint64_t least_budget(const PagedPlans& plans, const DeviceFacts& gpu,
                      const GpuScratchBytes& scratch) {
  const auto accepted = [&](uint64_t budget) {
    try {
      return plans.at(budget, gpu, scratch).paged;
    } catch (const Error&) {
      return false;  // too small
    }
  };
  uint64_t lo = uint64_t{64} << 10, hi = uint64_t{64} << 20;
  if (accepted(lo) || !accepted(hi)) throw Error("no least budget between 64 KiB and 64 MiB");
  while (hi - lo > 4096) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (accepted(mid) ? hi : lo) = mid;
  }
  return hi;
}

/// The budget of a paged sgd Hogwild case: the least its plan accepts and room for
/// kHogwildRoom rows more, far fewer rows than the corpus's 8,000.
uint64_t hogwild_sgd_budget(const PagedPlans& plans, const DeviceFacts& gpu,
                            const GpuScratchBytes& scratch) {
  return least_budget(plans, gpu, scratch) + kHogwildRoom * kHogwildRowBytes;
}

using HogwildCase = std::tuple<ModelKind, OptimizerKind, Placement, Storage>;
class WholeRunHogwild : public ::testing::TestWithParam<HogwildCase> {};

TEST_P(WholeRunHogwild, LossAndQualityAsTheCpus) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [model, optimizer, placement, storage] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  const std::string text = hogwild_corpus(seed, optimizer, placement);
  write_file(dir.file("corpus.txt"), text);
  RunOptions o = hogwild_options(model, optimizer);
  std::vector<std::vector<double>> losses;
  std::vector<double> separation;
  for (uint64_t k = 0; k < 3; ++k) {
    o.seed = seed + k;
    const Trained cpu = train(dir.file("corpus.txt"), o, dir.file("cpu-" + std::to_string(k)));
    losses.push_back(cpu.summary.epoch_loss);
    separation.push_back(topic_separation(cpu));
  }
  o.device = "cuda";
  o.placement = placement;
  o.storage = storage;
  // With an optimizer, room for every row of the small corpus (a super-batch fits whole).
  o.budget =
      pages_rows_out(optimizer, placement)
          ? hogwild_sgd_budget(PagedPlans(text, o, dir.file("corpus.txt")), query_device(), nullptr)
          : paged_budget(optimizer, kVocab);
  std::vector<Trained> gpus;
  for (uint64_t k = 0; k < kGpuSeeds; ++k) {
    o.seed = seed + 7 + k;
    gpus.push_back(train(dir.file("corpus.txt"), o, dir.file("gpu-" + std::to_string(k))));
    EXPECT_EQ(gpus.back().summary.device, "cuda");
    if (placement == Placement::kPaged) {
      const std::string& log = gpus.back().log;
      const auto rows = static_cast<int64_t>(gpus.back().words.size());
      const int64_t hot = testing_util::hot_rows(log);
      ASSERT_GE(hot, 0) << "not paged:\n" << log;
      EXPECT_LT(hot, rows) << log;
      if (pages_rows_out(optimizer, placement)) {
        EXPECT_GT(rows - hot, cache_rows(log)) << "the cache holds every cold row:\n" << log;
      }
    }
  }

  const auto [smin, smax] = std::minmax_element(separation.begin(), separation.end());
  double got = -1e300;
  for (const Trained& gpu : gpus) got = std::max(got, topic_separation(gpu));
  std::printf("topic separation: CPU %.4f … %.4f, GPU (best of %d seeds) %.4f\n", *smin, *smax,
              kGpuSeeds, got);
  EXPECT_GE(got, *smin - (*smax - *smin) - kSeparationFloor);
  // Three epochs teach Adam less than sgd (CPU separations of 0.13–0.26 on an H100's host,
  // 2026-12-07, against sgd's 0.46–0.47), but far more than untrained vectors' ~0.
  EXPECT_GT(*smin, kLearnt) << "the planted topics were not learnt: the comparison means nothing";

  for (const Trained& gpu : gpus) {
    ASSERT_EQ(gpu.summary.epoch_loss.size(), losses[0].size());
    for (size_t e = 0; e < losses[0].size(); ++e) {
      double lo = 1e300, hi = -1e300;
      for (const auto& l : losses) lo = std::min(lo, l[e]), hi = std::max(hi, l[e]);
      const double slack = (hi - lo) + kLossFloor * hi;
      std::printf("epoch %zu loss: CPU %.5f … %.5f, GPU %.5f\n", e + 1, lo, hi,
                  gpu.summary.epoch_loss[e]);
      EXPECT_GE(gpu.summary.epoch_loss[e], lo - slack) << "epoch " << e + 1;
      EXPECT_LE(gpu.summary.epoch_loss[e], hi + slack) << "epoch " << e + 1;
    }
  }
}

// The plan of the Hogwild cases' paged sgd runs, as `train` makes it from their Config, with a
// GPU's facts made up (no GPU needed): more cold rows than cache slots, for every model and
// storage, so that the GPU cases read trained rows back from the host.
TEST(WholeRunHogwildPlan, PagedSgdReadsTrainedRowsBack) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  const std::string text = hogwild_corpus(seed, OptimizerKind::kSgd, Placement::kPaged);
  // Made-up scratch sizes (the GPU cases search with CUB's own) and device facts.
  const GpuScratchBytes scratch = testing_util::made_up_scratch;
  const DeviceFacts gpu = testing_util::made_up_gpu();
  for (const ModelKind model : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    for (const Storage storage : {Storage::kFp32, Storage::kBf16}) {
      SCOPED_TRACE(name_of(model) + " " + to_string(storage));
      RunOptions o = hogwild_options(model, OptimizerKind::kSgd);
      o.device = "cuda";
      o.placement = Placement::kPaged;
      o.storage = storage;
      const PagedPlans plans(text, o, dir.file("corpus.txt"));
      const uint64_t least = least_budget(plans, gpu, scratch);
      const uint64_t budget = hogwild_sgd_budget(plans, gpu, scratch);
      const GpuPlan p = plans.at(budget, gpu, scratch);
      const uint64_t rows = plans.rows();  // nearly every word of the topics occurs
      std::printf(
          "%s %s: budget %llu: %llu hot rows + a cache of %llu of %llu rows\n",
          name_of(model).c_str(), to_string(storage).c_str(),
          static_cast<unsigned long long>(budget), static_cast<unsigned long long>(p.hot_rows),
          static_cast<unsigned long long>(p.cache_rows), static_cast<unsigned long long>(rows));
      EXPECT_GT(rows, kPagedTopicRows * 9 / 10);
      EXPECT_TRUE(p.paged);
      EXPECT_GT(rows - p.hot_rows, p.cache_rows) << "the cache holds every cold row";
      // The least budget is the least: 4 KiB less is refused.
      EXPECT_EQ(budget, least + kHogwildRoom * kHogwildRowBytes);
      EXPECT_THROW(plans.at(least - 4096, gpu, scratch), Error);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, WholeRunHogwild,
    ::testing::Values(std::make_tuple(ModelKind::kSkipGram, OptimizerKind::kSgd,
                                      Placement::kResident, Storage::kFp32),
                      std::make_tuple(ModelKind::kSkipGram, OptimizerKind::kSgd, Placement::kPaged,
                                      Storage::kFp32),
                      std::make_tuple(ModelKind::kSkipGram, OptimizerKind::kSgd, Placement::kPaged,
                                      Storage::kBf16),
                      std::make_tuple(ModelKind::kCbow, OptimizerKind::kSgd, Placement::kResident,
                                      Storage::kFp32),
                      std::make_tuple(ModelKind::kCbow, OptimizerKind::kSgd, Placement::kPaged,
                                      Storage::kBf16),
                      std::make_tuple(ModelKind::kSkipGram, OptimizerKind::kAdam, Placement::kPaged,
                                      Storage::kFp32),
                      std::make_tuple(ModelKind::kSkipGram, OptimizerKind::kAdagrad,
                                      Placement::kResident, Storage::kBf16),
                      std::make_tuple(ModelKind::kCbow, OptimizerKind::kAdam, Placement::kResident,
                                      Storage::kFp32)),
    [](const auto& info) {
      return name_of(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param)) + "_" +
             to_string(std::get<2>(info.param)) + "_" + to_string(std::get<3>(info.param));
    });

}  // namespace
}  // namespace pagedw2v
