// Resume on the GPU, the way `pagedw2v train` runs: options set by name as the command line sets
// them, then run_training(). With --deterministic (one warp per launch) two epochs straight and
// one epoch, a checkpoint and a --resume give the same bits, tables resident or paged.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "io/npy.hpp"
#include "model/optimizer.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

using testing_util::expect_same_bits;
using testing_util::hot_rows;
using testing_util::Log;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

constexpr uint32_t kVocab = 12000;
constexpr uint32_t kZipfTokens = 36000;
constexpr uint32_t kShortestSentence = 5;
constexpr uint32_t kLongestSentence = 30;
constexpr uint32_t kDim = 16;
constexpr uint32_t kPool = 256;
constexpr uint64_t kBatchWords = 8192;  // two blocks: several super-batches (optimizer steps)
constexpr uint64_t kPoolWords = 4096;

/// Sentences of w0 … w(kVocab−1): kZipfTokens tokens drawn from Zipf(1), then every word once
/// more so that each is in the vocabulary (min-count 1) and rare rows are used; sentences of
/// kShortestSentence … kLongestSentence tokens, shuffled.
std::string zipf_corpus(uint64_t seed, uint32_t zipf_tokens = kZipfTokens) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> tokens = testing_util::zipf_ids(kVocab, zipf_tokens, rng);
  std::vector<uint32_t> every(kVocab);
  std::iota(every.begin(), every.end(), 0u);
  std::shuffle(every.begin(), every.end(), rng);
  tokens.insert(tokens.end(), every.begin(), every.end());

  std::uniform_int_distribution<uint32_t> length(kShortestSentence, kLongestSentence);
  std::vector<std::string> sentences;
  for (size_t i = 0; i < tokens.size();) {
    const size_t end = std::min(tokens.size(), i + length(rng));
    std::string s;
    for (; i < end; ++i) s += "w" + std::to_string(tokens[i]) + (i + 1 < end ? " " : "\n");
    sentences.push_back(std::move(s));
  }
  std::shuffle(sentences.begin(), sentences.end(), rng);
  std::string text;
  for (const std::string& s : sentences) text += s;
  return text;
}

/// A --gpu-memory budget with room for about kVocab rows (half of them with sgd) beyond the
/// fixed part of a paged plan (sampling tables, the buffers of the pieces in flight, the plan's
/// margin), the fixed part estimated as the device's cut of pieces needs it, a little high. The
/// backend gives about half of that room to hot rows and half to its row cache, so about half
/// of the vocabulary lives in host memory alone; with sgd, whose pieces are cut on the host for
/// so small a cache, the bytes the fixed part then does not need go to hot rows, and a quarter
/// of the vocabulary or more stays in host memory alone. The test checks the plan it got.
uint64_t paged_budget(OptimizerKind optimizer) {
  const uint64_t stride = (kDim + 3) & ~3u;
  const bool stateful = optimizer != OptimizerKind::kSgd;
  // A row of every table (input, output, optimizer state, gradients) and its bookkeeping.
  const uint64_t row =
      stride * sizeof(float) * (2 + 2 * state_tables(optimizer) + (stateful ? 2 : 0)) + 16;
  const uint64_t tokens = kBatchWords + 2 * kLongestSentence;
  const uint64_t pools = kBatchWords / kPoolWords * kPool;  // the pools of one super-batch
  const uint64_t list = std::min<uint64_t>(kVocab, tokens + pools);
  const uint64_t piece =
      tokens * 8 + (tokens / kShortestSentence + 1) * 12 + list * 16 + pools * 8 + 64;
  const uint64_t fixed = uint64_t{kVocab} * 24 + 3 * piece + (uint64_t{16} << 10);
  return testing_util::with_paged_margin(fixed + uint64_t{stateful ? kVocab : kVocab / 2} * row);
}

class CudaResume : public ::testing::TestWithParam<std::tuple<Placement, OptimizerKind>> {
 protected:
  /// The machine's options, which a resumed run gives again: GPU, placement, budget, outputs.
  void set_machine(Config& c, const std::string& out) const {
    const auto [placement, optimizer] = GetParam();
    apply_option(c, "output", out);
    apply_option(c, "device", "cuda");
    apply_option(c, "deterministic", "true");
    apply_option(c, "placement", to_string(placement));
    if (placement == Placement::kPaged) {
      apply_option(c, "gpu-memory", std::to_string(paged_budget(optimizer)));
    }
    apply_option(c, "format", "npy");
    apply_option(c, "save-context", "true");
  }
};

TEST_P(CudaResume, FromEpochOneCheckpointIsBitForBit) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [placement, optimizer] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  write_file(dir.file("corpus.txt"), zipf_corpus(seed));

  Config straight;
  apply_option(straight, "corpus", dir.file("corpus.txt"));
  apply_option(straight, "model", "skipgram");
  apply_option(straight, "optimizer", to_string(optimizer));
  apply_option(straight, "dim", std::to_string(kDim));
  apply_option(straight, "epochs", "2");
  apply_option(straight, "min-count", "1");
  apply_option(straight, "negative-pool", std::to_string(kPool));
  apply_option(straight, "pool-words", std::to_string(kPoolWords));
  apply_option(straight, "batch-words", std::to_string(kBatchWords));
  apply_option(straight, "seed", std::to_string(seed));
  set_machine(straight, dir.file("a"));
  Log straight_log;
  ASSERT_NE(straight_log.get(), nullptr);
  const TrainSummary a = run_training(straight, straight_log.get());
  const std::string log = straight_log.text();
  EXPECT_EQ(a.device, "cuda");
  ASSERT_EQ(a.vocab_size, kVocab);
  if (placement == Placement::kPaged) {
    const int64_t hot = hot_rows(log);
    ASSERT_GE(hot, 0) << "not paged:\n" << log;
    EXPECT_LT(hot, int64_t{kVocab}) << "every row is hot: nothing was paged\n" << log;
  } else {
    EXPECT_NE(log.find("tables resident"), std::string::npos) << log;
  }

  // As `pagedw2v train --resume a/checkpoints/epoch-1.h5 --output b` with the machine's flags.
  Config resumed;
  apply_option(resumed, "resume", dir.file("a/checkpoints/epoch-1.h5"));
  set_machine(resumed, dir.file("b"));
  Log resumed_log;
  const TrainSummary b = run_training(resumed, resumed_log.get());
  const std::string rlog = resumed_log.text();
  EXPECT_NE(rlog.find("resumed at word"), std::string::npos) << rlog;
  EXPECT_EQ(b.device, "cuda");
  EXPECT_EQ(b.words, a.words);
  if (placement == Placement::kPaged) {
    EXPECT_EQ(hot_rows(rlog), hot_rows(log)) << rlog;
  }

  expect_same_bits(dir.file("a/vectors.npy"), dir.file("b/vectors.npy"));
  expect_same_bits(dir.file("a/context_vectors.npy"), dir.file("b/context_vectors.npy"));
}

std::string case_name(const ::testing::TestParamInfo<CudaResume::ParamType>& info) {
  return to_string(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    SkipGram, CudaResume,
    ::testing::Combine(::testing::Values(Placement::kResident, Placement::kPaged),
                       ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam)),
    case_name);

/// The values of a host table, row after row.
std::vector<float> values(const HostTable& t) {
  std::vector<float> v(t.rows() * t.dim());
  t.copy_to(v.data());
  return v;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], 4) != 0;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << a.size() << " floats differ";
}

class CudaMidEpochResume : public CudaResume {};

// Mid-epoch: a run stopped between two spans inside an epoch, its checkpoint written and read
// back as `train --resume` does, continues on a new backend to the bits of the run that never
// stopped — one warp per launch, tables resident or paged (rows cached, evicted, flushed at the
// stop), with an optimizer stopped between two of its steps.
void mid_epoch_resume_is_bit_for_bit(Placement placement, OptimizerKind optimizer,
                                     Storage storage) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  Config c;
  apply_option(c, "corpus", dir.file("corpus.txt"));
  apply_option(c, "optimizer", to_string(optimizer));
  apply_option(c, "dim", std::to_string(kDim));
  apply_option(c, "epochs", "2");
  apply_option(c, "min-count", "1");
  apply_option(c, "negative-pool", std::to_string(kPool));
  apply_option(c, "pool-words", std::to_string(kPoolWords));
  apply_option(c, "batch-words", std::to_string(kBatchWords));
  apply_option(c, "seed", std::to_string(seed));
  apply_option(c, "storage", to_string(storage));  // recorded in the checkpoint, as train does
  const TrainingSet set = make_training_set(zipf_corpus(seed), c);
  const TrainData data = set.train_data(c);
  ASSERT_EQ(set.vocab.size(), kVocab);
  const bool paged = placement == Placement::kPaged;
  CudaBackendOptions o;
  o.serial = true;  // what --deterministic sets
  o.gpu.placement = placement;
  if (paged) {  // a quarter of the rows hot, half of them cached: the rest only on the host
    o.hot_rows = kVocab / 4;
    o.cache_rows = kVocab / 2;
  }
  const uint64_t nb = set.block_count();
  const uint64_t batch_blocks = kBatchWords / 4096;
  // Stop after the first super-batch boundary past the middle of epoch 0.
  const uint64_t stop = (nb / 2 + batch_blocks - 1) / batch_blocks * batch_blocks;
  ASSERT_GT(stop, 0u);
  ASSERT_LT(stop, nb);

  Model straight = allocate_model(kVocab, kDim, optimizer, paged, "", storage);
  init_model(straight, c.seed);
  uint64_t words = 0;
  {
    auto backend = make_cuda_backend(straight, data, o);
    words += backend->train(0, 0, stop).words;  // the same spans as the resumed run
    words += backend->train(0, stop, nb).words;
    words += backend->train(1, 0, nb).words;
    backend->sync_to_host();
    CudaBackendReport report;
    ASSERT_TRUE(cuda_backend_report(*backend, &report));
    EXPECT_EQ(report.paged, paged);
    if (paged) {
      EXPECT_GT(report.rows_to_host, 0u);
    }
  }
  EXPECT_EQ(words, 2 * set.corpus.size());

  const std::string path = dir.file("step.h5");
  {
    Model first = allocate_model(kVocab, kDim, optimizer, paged, "", storage);
    init_model(first, c.seed);
    auto backend = make_cuda_backend(first, data, o);
    const SpanStats s = backend->train(0, 0, stop);
    backend->sync_to_host();
    save_checkpoint(path, c, set.vocab, first, TrainPosition{0, stop, s.words},
                    fingerprint(set.corpus), make_schedule(data.params).at(s.words));
  }
  Checkpoint ck = load_checkpoint(path, [&](uint64_t, const Config&) { return paged; });
  EXPECT_EQ(ck.position.epoch, 0u);
  EXPECT_EQ(ck.position.block, stop);
  EXPECT_TRUE(fingerprint(set.corpus) == ck.corpus);
  {
    auto backend = make_cuda_backend(ck.model, data, o);
    uint64_t more = backend->train(0, ck.position.block, nb).words;
    more += backend->train(1, 0, nb).words;
    backend->sync_to_host();
    EXPECT_EQ(ck.position.words_done + more, words);
  }
  expect_same_bits(values(ck.model.input), values(straight.input), "input");
  expect_same_bits(values(ck.model.output), values(straight.output), "output");
  ASSERT_EQ(ck.model.input_state.size(), straight.input_state.size());
  for (size_t k = 0; k < straight.input_state.size(); ++k) {
    expect_same_bits(values(ck.model.input_state[k]), values(straight.input_state[k]),
                     "input state " + std::to_string(k));
    expect_same_bits(values(ck.model.output_state[k]), values(straight.output_state[k]),
                     "output state " + std::to_string(k));
  }
}

TEST_P(CudaMidEpochResume, IsBitForBit) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [placement, optimizer] = GetParam();
  mid_epoch_resume_is_bit_for_bit(placement, optimizer, Storage::kFp32);
}

// The same with 16-bit host tables: the checkpoint holds the stored values, and a run resumed
// from it continues to the bits of the run that never stopped.
class CudaHalfMidEpochResume
    : public ::testing::TestWithParam<std::tuple<Placement, OptimizerKind, Storage>> {};

TEST_P(CudaHalfMidEpochResume, IsBitForBit) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [placement, optimizer, storage] = GetParam();
  mid_epoch_resume_is_bit_for_bit(placement, optimizer, storage);
}

INSTANTIATE_TEST_SUITE_P(
    SkipGram, CudaHalfMidEpochResume,
    ::testing::Combine(::testing::Values(Placement::kResident, Placement::kPaged),
                       ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam),
                       ::testing::Values(Storage::kBf16, Storage::kFp16)),
    [](const auto& info) {
      return to_string(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param)) + "_" +
             to_string(std::get<2>(info.param));
    });

INSTANTIATE_TEST_SUITE_P(
    SkipGram, CudaMidEpochResume,
    ::testing::Combine(::testing::Values(Placement::kResident, Placement::kPaged),
                       ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam)),
    case_name);

/// Rows of `got` farther from `want` than `share` of how far `want` moved from `start`, plus
/// 1e-5, as "table row r: distance / moved"; the largest ratio goes to *worst.
std::vector<std::string> rows_off(const std::vector<float>& got, const std::vector<float>& want,
                                  const std::vector<float>& start, uint32_t dim, double share,
                                  double* worst) {
  std::vector<std::string> off;
  for (size_t r = 0; r * dim < want.size(); ++r) {
    double dist = 0, moved = 0;
    for (uint32_t d = 0; d < dim; ++d) {
      const size_t i = r * dim + d;
      dist += double(got[i] - want[i]) * (got[i] - want[i]);
      moved += double(want[i] - start[i]) * (want[i] - start[i]);
    }
    dist = std::sqrt(dist);
    moved = std::sqrt(moved);
    *worst = std::max(*worst, dist / std::max(moved, 1e-12));
    if (!(dist <= share * moved + 1e-5)) {
      off.push_back("row " + std::to_string(r) + ": " + std::to_string(dist) + " / " +
                    std::to_string(moved));
    }
  }
  return off;
}

/// How far apart a cross-device run's tables may be from the run that never changed devices, as a
/// share of how far the latter moved from the untrained tables, over the whole table. Both runs
/// are deterministic and train in word2vec's first-order regime (a small --alpha; optimizers
/// step once per block on both backends), where the order of a window's updates moves a table by
/// about a hundredth of its movement (tests/test_cuda_whole_run.cpp, kFollowShare, measured).
constexpr double kCrossShare = 0.03;

/// Expects the run in `got_dir` to have trained every row onward from the untrained tables
/// `start`, with finite values, and to have come within kCrossShare of the run in `want_dir`.
/// The largest distance of one row, as a share of its own movement, is printed.
void expect_rows_follow(const std::string& got_dir, const std::string& want_dir,
                        const Model& start) {
  for (const bool context : {false, true}) {
    const std::string name = context ? "context_vectors.npy" : "vectors.npy";
    const std::vector<float> got = read_npy(got_dir + "/" + name).data;
    const std::vector<float> want = read_npy(want_dir + "/" + name).data;
    const std::vector<float> init = values(context ? start.output : start.input);
    ASSERT_EQ(got.size(), want.size()) << name;
    ASSERT_EQ(init.size(), want.size()) << name;
    for (const float v : got) ASSERT_TRUE(std::isfinite(v)) << name;
    double worst = 0, off = 0, moved = 0;
    const size_t far_rows = rows_off(got, want, init, kDim, 0.02, &worst).size();
    for (size_t i = 0; i < want.size(); ++i) {
      off += double(got[i] - want[i]) * (got[i] - want[i]);
      moved += double(want[i] - init[i]) * (want[i] - init[i]);
    }
    const double share = std::sqrt(off) / std::max(std::sqrt(moved), 1e-30);
    std::printf(
        "%s: distance / movement %.6f over the table, %.5f at most for one row, %zu rows beyond "
        "0.02 of their own movement\n",
        name.c_str(), share, worst, far_rows);
    EXPECT_LT(share, kCrossShare) << name << ": the cross-device run left the other's path";
    double unused = 0;
    // Both runs moved (nearly) every row away from the untrained tables.
    EXPECT_GE(rows_off(init, want, init, kDim, 0.02, &unused).size(), kVocab * 9 / 10) << name;
    EXPECT_GE(rows_off(init, got, init, kDim, 0.02, &unused).size(), kVocab * 9 / 10) << name;
  }
}

class CudaCrossResume : public CudaResume {
 protected:
  /// A deterministic run of `corpus` for `epochs` epochs on `device`, output in `out`.
  Config run(const std::string& corpus, uint64_t seed, uint32_t epochs, const std::string& device,
             const std::string& out) const {
    const auto [placement, optimizer] = GetParam();
    Config c;
    apply_option(c, "corpus", corpus);
    apply_option(c, "optimizer", to_string(optimizer));
    apply_option(c, "dim", std::to_string(kDim));
    apply_option(c, "epochs", std::to_string(epochs));
    apply_option(c, "min-count", "1");
    apply_option(c, "negative-pool", std::to_string(kPool));
    apply_option(c, "pool-words", std::to_string(kPoolWords));
    // The first-order regime in which the two backends follow each other (kCrossShare).
    if (optimizer == OptimizerKind::kSgd) {
      apply_option(c, "alpha", "0.0025");
      apply_option(c, "batch-words", std::to_string(kBatchWords));
    } else {
      apply_option(c, "batch-words", std::to_string(kPoolWords));
    }
    apply_option(c, "seed", std::to_string(seed));
    if (device == "cuda") {
      set_machine(c, out);
    } else {
      machine(c, out, "cpu");
    }
    return c;
  }
  /// A resumed run on `device`.
  Config resume(const std::string& checkpoint, const std::string& device,
                const std::string& out) const {
    Config c;
    apply_option(c, "resume", checkpoint);
    if (device == "cuda") {
      set_machine(c, out);
    } else {
      machine(c, out, "cpu");
    }
    return c;
  }
  static void machine(Config& c, const std::string& out, const std::string& device) {
    apply_option(c, "output", out);
    apply_option(c, "device", device);
    apply_option(c, "deterministic", "true");
    apply_option(c, "format", "npy");
    apply_option(c, "save-context", "true");
  }
};

// A checkpoint written mid-epoch on the CPU continues on the GPU from its block, and one written
// by the GPU at an epoch's end continues on the CPU; neither loses or repeats a word, and each
// follows, row by row, the run that never changed backends.
TEST_P(CudaCrossResume, CpuMidEpochToGpuAndGpuToCpu) {
  PAGEDW2V_REQUIRE_GPU();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  // Over two CPU spans (131,072 words each with one thread), so that a stop is mid-epoch.
  write_file(dir.file("corpus.txt"), zipf_corpus(seed, 300000));
  const std::string corpus = dir.file("corpus.txt");

  // The untrained tables (rows in vocabulary order, as exported), for the movement the
  // comparisons measure against.
  Model start = allocate_model(kVocab, kDim, std::get<1>(GetParam()), false, "");
  init_model(start, seed);
  const TrainSummary cpu = run_training(run(corpus, seed, 2, "cpu", dir.file("cpu")));
  const TrainSummary gpu = run_training(run(corpus, seed, 2, "cuda", dir.file("gpu")));
  EXPECT_EQ(gpu.device, "cuda");
  EXPECT_EQ(gpu.words, cpu.words);

  // CPU → GPU, mid-epoch.
  std::atomic<int> stop{SIGINT};
  EXPECT_THROW(run_training(run(corpus, seed, 2, "cpu", dir.file("stopped")), nullptr, &stop),
               Interrupted);
  const std::string step = dir.file("stopped/checkpoints/latest.h5");
  const Checkpoint ck = load_checkpoint(step);
  EXPECT_EQ(ck.position.epoch, 0u);
  EXPECT_GT(ck.position.block, 0u);
  EXPECT_LT(ck.position.words_done, cpu.words / 2);
  Log log;
  const TrainSummary to_gpu = run_training(resume(step, "cuda", dir.file("to-gpu")), log.get());
  EXPECT_EQ(to_gpu.device, "cuda");
  EXPECT_EQ(to_gpu.words, cpu.words);
  EXPECT_NE(log.text().find("resumed at word " + std::to_string(ck.position.words_done)),
            std::string::npos)
      << log.text();
  expect_rows_follow(dir.file("to-gpu"), dir.file("cpu"), start);

  // GPU → CPU, after epoch 1.
  const TrainSummary to_cpu =
      run_training(resume(dir.file("gpu/checkpoints/epoch-1.h5"), "cpu", dir.file("to-cpu")));
  EXPECT_EQ(to_cpu.device, "cpu");
  EXPECT_EQ(to_cpu.words, gpu.words);
  expect_rows_follow(dir.file("to-cpu"), dir.file("gpu"), start);
}

INSTANTIATE_TEST_SUITE_P(
    SkipGram, CudaCrossResume,
    ::testing::Combine(::testing::Values(Placement::kResident, Placement::kPaged),
                       ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam)),
    case_name);

}  // namespace
}  // namespace pagedw2v
