#pragma once
// Whole runs of `pagedw2v train` in a test, through run_training() exactly as the command runs
// them, and what they wrote read back: the tests that compare the GPU's runs with the CPU's and
// with each other (test_cuda_whole_run.cpp, test_cuda_hs.cpp) set their options by name and
// read the same files.

#include <gtest/gtest.h>

#include <cstdio>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "io/npy.hpp"
#include "model/params.hpp"
#include "support/compare.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"

namespace pagedw2v::testing_util {

/// A parameterised case's name for a model: "sg" or "cbow".
inline std::string name_of(ModelKind m) { return m == ModelKind::kSkipGram ? "sg" : "cbow"; }

/// What a run wrote, read back.
struct Trained {
  TrainSummary summary;
  std::string log;
  /// vectors.npy, context_vectors.npy (with hierarchical softmax alone, its inner nodes)
  std::vector<float> input, output;
  std::vector<std::string> words;  ///< vocab.tsv's words, in row order
};

/// The words of a vocab.tsv, in row order.
inline std::vector<std::string> vocab_words(const std::string& path) {
  std::vector<std::string> words;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    words.push_back(line.substr(0, line.find('\t')));
  }
  return words;
}

/// Runs `c` (its output set to `out`, --format npy with --save-context) and reads back what it
/// wrote.
inline Trained run_and_read(const Config& c, const std::string& out) {
  Log log;
  Trained r;
  r.summary = run_training(c, log.get());
  r.log = log.text();
  r.input = read_npy(out + "/vectors.npy").data;
  r.output = read_npy(out + "/context_vectors.npy").data;
  r.words = vocab_words(out + "/vocab.tsv");
  return r;
}

/// The GPU's run follows the CPU's: each table lies within `share` of the CPU's movement from the
/// tables both started from (`in0`, `out0`), and each epoch's loss within `share` of the CPU's.
/// Prints the two shares.
inline void expect_follows_cpu(const Trained& gpu, const Trained& cpu,
                               const std::vector<float>& in0, const std::vector<float>& out0,
                               double share) {
  ASSERT_EQ(in0.size(), cpu.input.size());
  ASSERT_EQ(out0.size(), cpu.output.size());
  const double in_off = share_off(gpu.input, cpu.input, in0);
  const double out_off = share_off(gpu.output, cpu.output, out0);
  std::printf("GPU against CPU: input %.5f, output %.5f of the CPU's movement apart\n", in_off,
              out_off);
  EXPECT_LT(in_off, share);
  EXPECT_LT(out_off, share);
  ASSERT_EQ(gpu.summary.epoch_loss.size(), cpu.summary.epoch_loss.size());
  for (size_t e = 0; e < cpu.summary.epoch_loss.size(); ++e) {
    EXPECT_NEAR(gpu.summary.epoch_loss[e], cpu.summary.epoch_loss[e],
                share * cpu.summary.epoch_loss[e])
        << "epoch " << e + 1;
  }
}

}  // namespace pagedw2v::testing_util
