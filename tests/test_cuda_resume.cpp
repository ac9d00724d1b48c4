// Resume on the GPU, the way `pagedw2v train` runs: options set by name as the command line sets
// them, then run_training(). With --deterministic (one warp per launch) two epochs straight and
// one epoch, a checkpoint and a --resume give the same bits, tables resident or paged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "config.hpp"
#include "gpu/cuda_backend.hpp"
#include "optimizer.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"

namespace pagedw2v {
namespace {

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
std::string zipf_corpus(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weights(kVocab);
  for (uint32_t r = 0; r < kVocab; ++r) weights[r] = 1.0 / (r + 1.0);
  std::discrete_distribution<uint32_t> zipf(weights.begin(), weights.end());
  std::vector<uint32_t> tokens(kZipfTokens);
  for (uint32_t& t : tokens) t = zipf(rng);
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

/// A --gpu-memory budget with room for about kVocab rows beyond the fixed part of a paged plan
/// (sampling tables, the buffers of the pieces in flight, 16 MiB of slack), the fixed part
/// estimated a little high. The backend gives about half of that room to hot rows and half to
/// its row cache, so about half of the vocabulary lives in host memory alone; the test checks
/// the plan it got.
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
  const uint64_t fixed =
      (uint64_t{16} << 20) + uint64_t{kVocab} * 24 + 3 * piece + (uint64_t{16} << 10);
  return fixed + uint64_t{kVocab} * row;
}

/// A run's log, read back after it ends.
class Log {
 public:
  Log() : file_(std::tmpfile(), &std::fclose) {}
  std::FILE* get() const { return file_.get(); }
  std::string text() const {
    std::fflush(file_.get());
    std::rewind(file_.get());
    std::string out;
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, file_.get())) > 0) out.append(buf, n);
    return out;
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

/// The hot rows of the "tables paged: N hot rows …" line of a log, or −1 without one.
int64_t hot_rows(const std::string& log) {
  const std::string key = "tables paged: ";
  const size_t at = log.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(log.c_str() + at + key.size(), nullptr, 10);
}

/// Compares two files a float at a time, naming how many differ.
void expect_same_bits(const std::string& a_path, const std::string& b_path) {
  const std::string a = read_file(a_path), b = read_file(b_path);
  ASSERT_FALSE(a.empty()) << a_path;
  ASSERT_EQ(a.size(), b.size()) << a_path << " and " << b_path;
  size_t differ = 0;
  for (size_t i = 0; i + 4 <= a.size(); i += 4) differ += a.compare(i, 4, b, i, 4) != 0;
  EXPECT_EQ(differ, 0u) << a_path << " and " << b_path << ": " << differ << " of " << a.size() / 4
                        << " words differ";
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
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
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

}  // namespace
}  // namespace pagedw2v
