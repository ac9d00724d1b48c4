// The command line on the GPU: the real binary, shown the GPU, with the options that only reach
// CUDA through it (--placement paged, --gpu-memory, --storage bf16) and a resume across devices.
// Skipped where the binary finds no usable GPU; with PAGEDW2V_REQUIRE_GPU set that fails instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
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
  EXPECT_NE(s["gpu-memory"].dump().find("25165824"), std::string::npos) << s.dump();
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
      args.insert(args.end(), {"--device", "cuda", "--deterministic", "--placement", placement,
                               "--gpu-memory", "24MiB"});
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
        args.insert(args.end(), {"--device", "cuda", "--gpu-memory", "24MiB"});
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

}  // namespace
}  // namespace pagedw2v
