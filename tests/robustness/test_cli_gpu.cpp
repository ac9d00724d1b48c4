// The command line on the GPU: the real binary, shown the GPU, with the options that only reach
// CUDA through it (--placement paged, --gpu-memory, --storage bf16), a resume across devices and
// a run continued on new text.
// Skipped where the binary finds no usable GPU; with PAGEDW2V_REQUIRE_GPU set that fails instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "io/npy.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;

RunResult run(const TempDir& dir, const Args& args) {
  static int serial = 0;
  testing_util::ProcessOptions options;
  options.log_name = "gpu-" + std::to_string(++serial);
  options.show_gpus = true;
  testing_util::Process p(args, dir.path(), options);
  return p.wait(testing_util::kHangSeconds);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Zipf(1) sentences over `words` words, every word at least once.
std::string zipf_corpus(uint64_t seed, uint32_t words, uint32_t tokens) {
  std::mt19937_64 rng(seed);
  std::vector<double> weights(words);
  for (uint32_t r = 0; r < words; ++r) weights[r] = 1.0 / (r + 1.0);
  std::discrete_distribution<uint32_t> zipf(weights.begin(), weights.end());
  std::string text;
  for (uint32_t i = 0; i < tokens + words; ++i) {
    const uint32_t w = i < words ? i : zipf(rng);
    text += "w" + std::to_string(w) + (i % 17 == 16 ? "\n" : " ");
  }
  return text + "\n";
}

bool gpu_required() {
  const char* v = std::getenv("PAGEDW2V_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

class CliGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing_util::fresh_seed();
    write_file(dir_.file("corpus.txt"), zipf_corpus(seed_, 20000, 400000));
    // Does the binary find a GPU? A short run says.
    const RunResult probe =
        run(dir_, {"train", "--corpus", dir_.file("corpus.txt"), "--output", dir_.file("probe"),
                   "--device", "cuda", "--epochs", "1", "--dim", "8", "--min-count", "1",
                   "--format", "none", "--keep-checkpoints", "0", "--quiet"});
    if (!probe.exited || probe.code != 0) {
      const bool no_gpu =
          contains(probe.err, "no CUDA device") || contains(probe.err, "no CUDA backend");
      if (no_gpu && !gpu_required()) GTEST_SKIP() << probe.err;
      FAIL() << probe.command << "\n" << probe.err;
    }
  }
  Args train(const std::string& out) const {
    return {"train",
            "--corpus",
            dir_.file("corpus.txt"),
            "--output",
            dir_.file(out),
            "--dim",
            "128",
            "--epochs",
            "2",
            "--min-count",
            "1",
            "--format",
            "npy",
            "--seed",
            std::to_string(seed_),
            "--threads",
            "4"};
  }
  static nlohmann::json settings(const std::string& run_dir) {
    return nlohmann::json::parse(read_file(run_dir + "/run.json"))["settings"];
  }
  TempDir dir_;
  uint64_t seed_ = 0;
};

// --placement paged, --gpu-memory and --storage bf16 reach the CUDA backend through the binary:
// the run pages (its backend line says so), records what it was given, and trains finite rows.
TEST_F(CliGpu, PagedBf16WithABudgetTrainsAndRecordsIt) {
  Args args = train("paged");
  for (const char* a :
       {"--device", "cuda", "--placement", "paged", "--gpu-memory", "24MiB", "--storage", "bf16"})
    args.push_back(a);
  const RunResult r = run(dir_, args);
  ASSERT_TRUE(r.exited && r.code == 0) << r.command << "\n" << r.err;
  EXPECT_TRUE(contains(r.err, "tables paged")) << r.err;
  const nlohmann::json s = settings(dir_.file("paged"));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir_.file("paged/run.json")))["device"], "cuda");
  EXPECT_EQ(s["placement"], "paged");
  EXPECT_EQ(s["storage"], "bf16");
  EXPECT_EQ(s["gpu-memory"], "24MiB") << s.dump();  // as given
  const std::vector<float> v = read_npy(dir_.file("paged/vectors.npy")).data;
  ASSERT_FALSE(v.empty());
  for (const float x : v) ASSERT_TRUE(std::isfinite(x));
}

// A budget too small for the plan is refused with one line, before training, and no crash.
TEST_F(CliGpu, ABudgetTooSmallIsOneLine) {
  Args args = train("tiny");
  for (const char* a : {"--device", "cuda", "--placement", "paged", "--gpu-memory", "64KiB"})
    args.push_back(a);
  const RunResult r = run(dir_, args);
  ASSERT_TRUE(r.exited) << r.command << " ended by signal " << r.signal;
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.err, "gpu-memory")) << r.err;
}

// --deterministic on the GPU through the binary: the same bytes twice, resident and paged.
TEST_F(CliGpu, DeterministicRunsRepeatTheirBytes) {
  for (const std::string& placement : {std::string("resident"), std::string("paged")}) {
    for (const std::string& out : {placement + "-a", placement + "-b"}) {
      Args args = train(out);
      // --deterministic runs one CPU thread: the fixture's --threads goes.
      const auto threads = std::find(args.begin(), args.end(), "--threads");
      ASSERT_NE(threads, args.end());
      args.erase(threads, threads + 2);
      args.insert(args.end(), {"--device", "cuda", "--deterministic", "--placement", placement});
      // The same negative pool and super-batch for both placements: a paged run left to itself
      // chooses a pool and a resident run draws from the noise table, which are different draws
      // (the design promises paged = resident for the same run, not for two different ones).
      args.insert(args.end(),
                  {"--negative-pool", "128", "--pool-words", "4096", "--batch-words", "8192"});
      // A budget that pages the tables (0.03 GiB at dim 128); resident runs take the GPU's.
      if (placement == "paged") args.insert(args.end(), {"--gpu-memory", "24MiB"});
      const RunResult r = run(dir_, args);
      ASSERT_TRUE(r.exited && r.code == 0) << r.command << "\n" << r.err;
    }
    EXPECT_EQ(read_file(dir_.file(placement + "-a/vectors.npy")),
              read_file(dir_.file(placement + "-b/vectors.npy")))
        << placement;
  }
  // Resident and paged give the same bytes too.
  EXPECT_EQ(read_file(dir_.file("resident-a/vectors.npy")),
            read_file(dir_.file("paged-a/vectors.npy")));
}

// --hs trains on the GPU, alone (--negative 0, word2vec's -hs 1 -negative 0) and beside negative
// sampling, resident and paged, and --device auto takes the GPU for it.
TEST_F(CliGpu, HierarchicalSoftmaxTrainsResidentAndPaged) {
  for (const std::string negative : {"0", "5"}) {
    for (const std::string placement : {"resident", "paged", "auto"}) {
      const std::string out = "hs-" + negative + "-" + placement;
      Args args = train(out);
      args.insert(args.end(), {"--hs", "--negative", negative, "--placement", placement});
      if (placement == "auto") {
        args.insert(args.end(), {"--device", "auto"});
      } else {
        // The budget pages the 20,000 rows (0.03 GiB of tables at dim 128); resident runs
        // take the GPU's memory.
        args.insert(args.end(), {"--device", "cuda"});
        if (placement == "paged") args.insert(args.end(), {"--gpu-memory", "24MiB"});
      }
      const RunResult r = run(dir_, args);
      ASSERT_TRUE(r.exited && r.code == 0) << r.command << "\n" << r.err;
      if (placement == "paged") EXPECT_TRUE(contains(r.err, "tables paged")) << r.err;
      const nlohmann::json run_json =
          nlohmann::json::parse(read_file(dir_.file(out + "/run.json")));
      EXPECT_EQ(run_json["device"], "cuda") << out;
      EXPECT_EQ(run_json["settings"]["hs"], true) << out;
      const std::vector<float> v = read_npy(dir_.file(out + "/vectors.npy")).data;
      ASSERT_FALSE(v.empty());
      for (const float x : v) ASSERT_TRUE(std::isfinite(x));
    }
  }
}

// A checkpoint of a CPU run continues on the GPU, and one of a GPU run on the CPU, through the
// binary: each finishes the run's words, and run.json names the device that finished it.
TEST_F(CliGpu, ResumeAcrossDevices) {
  for (const std::string& from : {std::string("cpu"), std::string("cuda")}) {
    const std::string to = from == "cpu" ? "cuda" : "cpu";
    Args args = train(from);
    args.push_back("--device");
    args.push_back(from);
    const RunResult first = run(dir_, args);
    ASSERT_TRUE(first.exited && first.code == 0) << first.command << "\n" << first.err;
    const RunResult resumed = run(
        dir_, {"train", "--resume", dir_.file(from + "/checkpoints/epoch-1.h5"), "--output",
               dir_.file(from + "-to-" + to), "--device", to, "--threads", "4", "--format", "npy"});
    ASSERT_TRUE(resumed.exited && resumed.code == 0) << resumed.command << "\n" << resumed.err;
    const nlohmann::json a = nlohmann::json::parse(read_file(dir_.file(from + "/run.json")));
    const nlohmann::json b =
        nlohmann::json::parse(read_file(dir_.file(from + "-to-" + to + "/run.json")));
    EXPECT_EQ(b["device"], to);
    EXPECT_EQ(a["words_trained"], b["words_trained"]) << a.dump() << "\n" << b.dump();
    const std::vector<float> v = read_npy(dir_.file(from + "-to-" + to + "/vectors.npy")).data;
    for (const float x : v) ASSERT_TRUE(std::isfinite(x));
  }
}

/// Text over the words w0 … w(shared − 1) of the fixture's corpus and `fresh` words of its own,
/// n0 … n(fresh − 1), Zipf(1) over both by rank, every word at least once.
std::string continued_corpus(uint64_t seed, uint32_t shared, uint32_t fresh, uint32_t tokens) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> words;
  std::vector<double> weights;
  for (uint32_t r = 0; r < std::max(shared, fresh); ++r) {
    if (r < shared) words.push_back("w" + std::to_string(r));
    if (r < shared) weights.push_back(1.0 / (r + 1.0));
    if (r < fresh) words.push_back("n" + std::to_string(r));
    if (r < fresh) weights.push_back(1.0 / (r + 1.0));
  }
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::string text;
  for (uint32_t i = 0; i < tokens + words.size(); ++i) {
    text += (i < words.size() ? words[i] : words[pick(rng)]) + (i % 17 == 16 ? "\n" : " ");
  }
  return text + "\n";
}

/// Each word's row of a run's vectors.npy (vocab.tsv gives the words in row order).
std::map<std::string, std::vector<float>> rows_by_word(const std::string& run_dir) {
  const NpyMatrix m = read_npy(run_dir + "/vectors.npy");
  const std::string vocab = read_file(run_dir + "/vocab.tsv");
  std::map<std::string, std::vector<float>> rows;
  size_t at = 0;
  for (uint64_t r = 0; r < m.rows && at < vocab.size(); ++r) {
    const size_t tab = vocab.find('\t', at), end = vocab.find('\n', at);
    rows[vocab.substr(at, tab - at)] =
        std::vector<float>(m.data.begin() + r * m.cols, m.data.begin() + (r + 1) * m.cols);
    at = end + 1;
  }
  return rows;
}

// A finished run continued on new text on the GPU: a GPU run resident, one paged (a budget
// smaller than the grown tables, 16-bit storage), and a CPU run continued paged on the GPU. Every
// word of the run is kept, and a word the new text lacks
// keeps the input row the run left it (no step trains it: so the rows started as the run's); the
// new words get finite rows; the words of both texts train; and a deterministic rerun repeats the
// bytes.
TEST_F(CliGpu, ContinuedRunKeepsTheRunsRowsAndRepeatsItsBytes) {
  write_file(dir_.file("new.txt"), continued_corpus(seed_ + 1, 12000, 6000, 200000));
  struct Case {
    std::string name;
    Args first;   ///< the device and tables of the run continued from
    Args second;  ///< those of the continued run
  };
  const Args paged = {"--device", "cuda", "--placement", "paged", "--gpu-memory", "24MiB"};
  Args paged_bf16 = paged;
  paged_bf16.insert(paged_bf16.end(), {"--storage", "bf16"});
  const Args resident = {"--device", "cuda", "--placement", "resident"};
  const std::vector<Case> cases = {{"resident", resident, resident},
                                   {"paged", paged_bf16, paged_bf16},
                                   // A CPU run continued on the GPU, paged.
                                   {"cpu-to-paged", {"--device", "cpu"}, paged}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ", seed " + std::to_string(seed_));
    const std::string r1 = "r1-" + c.name;
    Args first = {"train",
                  "--corpus",
                  dir_.file("corpus.txt"),
                  "--output",
                  dir_.file(r1),
                  "--dim",
                  "128",
                  "--min-count",
                  "1",
                  "--format",
                  "npy",
                  "--seed",
                  std::to_string(seed_),
                  "--deterministic",
                  "--epochs",
                  "1"};
    first.insert(first.end(), c.first.begin(), c.first.end());
    const RunResult a = run(dir_, first);
    ASSERT_TRUE(a.exited && a.code == 0) << a.command << "\n" << a.err;
    for (const std::string& out : {"r2-" + c.name, "r2b-" + c.name}) {
      Args args = {"train",
                   "--continue-from",
                   dir_.file(r1),
                   "--corpus",
                   dir_.file("new.txt"),
                   "--output",
                   dir_.file(out),
                   "--deterministic",
                   "--epochs",
                   "1",
                   "--format",
                   "npy"};
      args.insert(args.end(), c.second.begin(), c.second.end());
      const RunResult r = run(dir_, args);
      ASSERT_TRUE(r.exited && r.code == 0) << r.command << "\n" << r.err;
      if (c.second == paged || c.second == paged_bf16) {
        EXPECT_TRUE(contains(r.err, "tables paged")) << r.err;
      }
      EXPECT_TRUE(contains(r.err, "6000 added from the new text")) << r.err;
    }
    EXPECT_EQ(read_file(dir_.file("r2-" + c.name + "/vectors.npy")),
              read_file(dir_.file("r2b-" + c.name + "/vectors.npy")));
    const auto before = rows_by_word(dir_.file(r1));
    const auto after = rows_by_word(dir_.file("r2-" + c.name));
    size_t kept = 0, moved = 0, added = 0;
    for (const auto& [word, row] : before) {
      ASSERT_TRUE(after.count(word)) << word;
      if (std::stoul(word.substr(1)) >= 12000) {
        ++kept;
        ASSERT_EQ(after.at(word), row) << word;
      } else {
        moved += after.at(word) != row;
      }
    }
    for (const auto& [word, row] : after) {
      if (before.count(word)) continue;
      ++added;
      ASSERT_EQ(word[0], 'n');
      for (const float x : row) ASSERT_TRUE(std::isfinite(x)) << word;
    }
    EXPECT_EQ(kept, 8000u);
    EXPECT_EQ(added, 6000u);
    EXPECT_GT(moved, 6000u);
  }
}

}  // namespace
}  // namespace pagedw2v
