// The real binary continuing a finished run on new text (`train --continue-from`): every word of
// the run kept (a word the new text lacks keeps its input vector and optimizer state as the run
// left them), the new text's words added and trained, run.json saying where it started,
// deterministic reruns the same bytes, a resume of the continued run exact, and each refusal one
// line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../support/seed.hpp"
#include "../test_util.hpp"
#include "io/npy.hpp"
#include "run_binary.hpp"
#include "train/checkpoint.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::expect_same_bits;
using testing_util::fails_cleanly;
using testing_util::read_file;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;

RunResult run(const TempDir& dir, const Args& args) {
  static int serial = 0;
  testing_util::ProcessOptions options;
  options.log_name = "continue-" + std::to_string(++serial);
  testing_util::Process p(args, dir.path(), options);
  return p.wait(testing_util::kHangSeconds);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Sentences of words drawn from `groups` (prefix, number of words), every word at least once;
/// a word's weight falls with its number.
std::string corpus(std::mt19937_64& rng,
                   const std::vector<std::pair<std::string, uint32_t>>& groups, uint32_t tokens) {
  std::vector<std::string> words;
  std::vector<double> weights;
  for (const auto& [prefix, n] : groups) {
    for (uint32_t i = 0; i < n; ++i) {
      words.push_back(prefix + std::to_string(i));
      weights.push_back(1.0 / (1.0 + i));
    }
  }
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::string text;
  for (uint32_t i = 0; i < tokens + words.size(); ++i) {
    text += (i < words.size() ? words[i] : words[pick(rng)]) + (i % 13 == 12 ? "\n" : " ");
  }
  return text + "\n";
}

/// A run's vectors by word (vocab.tsv and vectors.npy).
std::map<std::string, std::vector<float>> vectors_of(const std::string& run_dir) {
  const NpyMatrix m = read_npy(run_dir + "/vectors.npy");
  const std::string vocab = read_file(run_dir + "/vocab.tsv");
  std::map<std::string, std::vector<float>> by_word;
  size_t at = 0;
  for (uint64_t r = 0; r < m.rows; ++r) {
    const size_t tab = vocab.find('\t', at), end = vocab.find('\n', at);
    EXPECT_NE(tab, std::string::npos);
    by_word[vocab.substr(at, tab - at)] =
        std::vector<float>(m.data.begin() + r * m.cols, m.data.begin() + (r + 1) * m.cols);
    at = end + 1;
  }
  return by_word;
}

/// `args` with each option of `more` (name, value pairs) set: its value replaced where `args`
/// has it, else appended.
Args with(Args args, const Args& more) {
  for (size_t i = 0; i + 1 < more.size(); i += 2) {
    bool found = false;
    for (size_t j = 0; j + 1 < args.size(); ++j) {
      if (args[j] == more[i]) {
        args[j + 1] = more[i + 1];
        found = true;
      }
    }
    if (!found) args.insert(args.end(), {more[i], more[i + 1]});
  }
  return args;
}

nlohmann::json json_of(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

class ContinueCli : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing_util::fresh_seed();
    std::mt19937_64 rng(seed_);
    // Both texts share the s words; only the first has the a words, only the second the b words.
    write_file(dir_.file("a.txt"), corpus(rng, {{"a", 120}, {"s", 80}}, 30000));
    write_file(dir_.file("b.txt"), corpus(rng, {{"s", 80}, {"b", 60}}, 25000));
  }
  Args train(const std::string& corpus_file, const std::string& out) const {
    return {"train",    "--corpus", dir_.file(corpus_file), "--output", dir_.file(out),
            "--device", "cpu",      "--deterministic",      "--dim",    "16",
            "--epochs", "1",        "--min-count",          "2",        "--format",
            "npy",      "--quiet"};
  }
  Args cont(const std::string& from, const std::string& out, const Args& more = {}) const {
    Args a = train("b.txt", out);
    a.push_back("--continue-from");
    a.push_back(dir_.file(from));
    return with(a, more);
  }
  void ok(const Args& args) {
    const RunResult r = run(dir_, args);
    ASSERT_TRUE(r.exited && r.code == 0) << describe(r) << " seed " << seed_;
  }
  /// R1 trained on a.txt, R2 continued from it on b.txt.
  void checks_a_then_b(const Args& r1_more, const Args& r2_more) {
    ASSERT_NO_FATAL_FAILURE(ok(with(train("a.txt", "r1"), r1_more)));
    ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2", r2_more)));
    const auto before = vectors_of(dir_.file("r1"));
    const auto after = vectors_of(dir_.file("r2"));
    size_t moved = 0, a_words = 0;
    for (const auto& [word, v] : before) {
      ASSERT_TRUE(after.count(word)) << word << " was dropped; seed " << seed_;
      // The a words are not in the new text: no step trains their input vectors.
      if (word[0] == 'a') {
        ++a_words;
        EXPECT_EQ(after.at(word), v) << word << "; seed " << seed_;
      } else {
        moved += after.at(word) != v;
      }
    }
    EXPECT_GT(a_words, 100u);
    EXPECT_GT(moved, 60u) << "the words of both texts did not train";
    size_t added = 0;
    for (const auto& [word, v] : after) {
      if (before.count(word)) continue;
      ++added;
      EXPECT_EQ(word[0], 'b') << word;
      double norm = 0;
      for (const float x : v) norm += double{x} * x;
      EXPECT_TRUE(std::isfinite(norm) && norm > 0) << word;
    }
    EXPECT_EQ(added, 60u) << "seed " << seed_;
    const nlohmann::json record = json_of(dir_.file("r2/run.json"));
    const nlohmann::json& from = record["continued_from"];
    EXPECT_EQ(from["path"], dir_.file("r1"));
    EXPECT_EQ(from["words_kept"], before.size());
    EXPECT_EQ(from["words_added"], 60u);
    // Every word of b.txt is in it at least twice (--min-count 2): none left out.
    EXPECT_EQ(from["new_words_left_out"], 0u);
    EXPECT_EQ(from["new_tokens_left_out"], 0u);
    EXPECT_EQ(from["output_set"], json_of(dir_.file("r1/run.json"))["output_set"]);
    EXPECT_TRUE(contains(from["checkpoint"].get<std::string>(), "/r1/checkpoints/epoch-1.h5"));
    EXPECT_EQ(record["settings"]["continue-from"], dir_.file("r1"));
  }

  TempDir dir_;
  uint64_t seed_ = 0;
};

TEST_F(ContinueCli, KeepsEveryWordAddsTheNewTextsAndTrains) { checks_a_then_b({}, {}); }

TEST_F(ContinueCli, CarriesAdamState) {
  // --lr is the rate of the run's optimizer, given without --optimizer.
  checks_a_then_b({"--optimizer", "adam"}, {"--lr", "0.02"});
  // The a words' state, untouched by the new text's steps, is the run's; the others moved on.
  const Checkpoint r1 = load_checkpoint(dir_.file("r1/checkpoints/latest.h5"));
  const Checkpoint r2 = load_checkpoint(dir_.file("r2/checkpoints/latest.h5"));
  ASSERT_EQ(r2.config.optimizer, OptimizerKind::kAdam);
  ASSERT_EQ(r2.model.input_state.size(), 2u);
  size_t same = 0, a_words = 0;
  for (uint32_t r = 0; r < r1.vocab.size(); ++r) {
    const int64_t to = r2.vocab.find(r1.vocab.word(r));
    ASSERT_GE(to, 0);
    for (size_t k = 0; k < 2; ++k) {
      const std::vector<float> was(r1.model.input_state[k].row(r),
                                   r1.model.input_state[k].row(r) + 16);
      const std::vector<float> is(r2.model.input_state[k].row(static_cast<uint64_t>(to)),
                                  r2.model.input_state[k].row(static_cast<uint64_t>(to)) + 16);
      if (r1.vocab.word(r)[0] == 'a') {
        ++a_words;
        EXPECT_EQ(is, was) << r1.vocab.word(r) << " state " << k;
        EXPECT_NE(was, std::vector<float>(16, 0.0f)) << "the run left no state to carry";
      }
      same += is == was;
    }
  }
  EXPECT_LT(same, r1.vocab.size() * 2) << "no state moved";
  EXPECT_GT(a_words, 0u);
}

TEST_F(ContinueCli, DeterministicRerunGivesTheSameBytes) {
  ASSERT_NO_FATAL_FAILURE(ok(train("a.txt", "r1")));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2")));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2b")));
  expect_same_bits(dir_.file("r2/vectors.npy"), dir_.file("r2b/vectors.npy"));
  EXPECT_EQ(read_file(dir_.file("r2/vocab.tsv")), read_file(dir_.file("r2b/vocab.tsv")));
}

// A new text streamed (more than --max-corpus-memory) trains the same bytes as one held whole; a
// continued run continues again.
TEST_F(ContinueCli, StreamedTextAndAContinuedRunContinuedAgain) {
  ASSERT_NO_FATAL_FAILURE(ok(train("a.txt", "r1")));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2")));
  Args streamed = cont("r1", "r2s", {"--max-corpus-memory", "64KiB"});
  streamed.erase(std::find(streamed.begin(), streamed.end(), "--quiet"));
  const RunResult s = run(dir_, streamed);
  ASSERT_TRUE(s.exited && s.code == 0) << describe(s);
  EXPECT_TRUE(contains(s.err, "streamed")) << s.err;
  expect_same_bits(dir_.file("r2/vectors.npy"), dir_.file("r2s/vectors.npy"));
  Args again = train("a.txt", "r3");
  again.insert(again.end(), {"--continue-from", dir_.file("r2")});
  ASSERT_NO_FATAL_FAILURE(ok(again));
  const nlohmann::json from = json_of(dir_.file("r3/run.json"))["continued_from"];
  EXPECT_EQ(from["words_kept"], vectors_of(dir_.file("r2")).size());
  EXPECT_EQ(from["words_added"], 0u);
}

TEST_F(ContinueCli, ContinuesFromACheckpointFile) {
  ASSERT_NO_FATAL_FAILURE(ok(train("a.txt", "r1")));
  const Args from_dir = cont("r1", "r2");
  Args from_file = from_dir;
  from_file.back() = dir_.file("r1/checkpoints/epoch-1.h5");
  from_file[4] = dir_.file("r2b");
  ASSERT_NO_FATAL_FAILURE(ok(from_dir));
  ASSERT_NO_FATAL_FAILURE(ok(from_file));
  expect_same_bits(dir_.file("r2/vectors.npy"), dir_.file("r2b/vectors.npy"));
}

TEST_F(ContinueCli, AResumeOfTheContinuedRunIsExact) {
  ASSERT_NO_FATAL_FAILURE(ok(train("a.txt", "r1")));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2", {"--epochs", "2", "--optimizer", "sgd"})));
  // Resumed from its first epoch's checkpoint, once with the corpus taken from the checkpoint,
  // once given again.
  ASSERT_NO_FATAL_FAILURE(ok({"train", "--resume", dir_.file("r2/checkpoints/epoch-1.h5"),
                              "--output", dir_.file("r3"), "--format", "npy", "--quiet"}));
  ASSERT_NO_FATAL_FAILURE(
      ok({"train", "--resume", dir_.file("r2/checkpoints/epoch-1.h5"), "--corpus",
          dir_.file("b.txt"), "--output", dir_.file("r3b"), "--format", "npy", "--quiet"}));
  expect_same_bits(dir_.file("r2/vectors.npy"), dir_.file("r3/vectors.npy"));
  expect_same_bits(dir_.file("r2/vectors.npy"), dir_.file("r3b/vectors.npy"));
  const nlohmann::json record = json_of(dir_.file("r3/run.json"));
  EXPECT_EQ(record["continued_from"]["path"], dir_.file("r1"));
  EXPECT_EQ(record["continued_from"]["words_added"], 60u);
  EXPECT_EQ(record["continued_from"]["output_set"],
            json_of(dir_.file("r2/run.json"))["continued_from"]["output_set"]);
  // Another corpus is still refused.
  const RunResult other =
      run(dir_, {"train", "--resume", dir_.file("r2/checkpoints/epoch-1.h5"), "--corpus",
                 dir_.file("a.txt"), "--output", dir_.file("r4"), "--quiet"});
  EXPECT_TRUE(fails_cleanly(other, 1, "is not the corpus the checkpoint was trained on"));
}

TEST_F(ContinueCli, MergedCountAddsWordsRareInEachText) {
  // "rare" is in each text twice: below --min-count 3 in either, not in both together.
  write_file(dir_.file("a.txt"), read_file(dir_.file("a.txt")) + "rare x rare\n");
  write_file(dir_.file("b.txt"), read_file(dir_.file("b.txt")) + "rare y rare\n");
  ASSERT_NO_FATAL_FAILURE(ok(with(train("a.txt", "r1"), {"--min-count", "3"})));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r2", {"--min-count", "3"})));
  ASSERT_NO_FATAL_FAILURE(ok(cont("r1", "r3", {"--min-count", "3", "--continue-count", "merged"})));
  EXPECT_EQ(vectors_of(dir_.file("r1")).count("rare"), 0u);
  EXPECT_EQ(vectors_of(dir_.file("r2")).count("rare"), 0u);
  EXPECT_EQ(vectors_of(dir_.file("r3")).count("rare"), 1u);
  const std::string vocab = read_file(dir_.file("r3/vocab.tsv"));
  EXPECT_TRUE(contains(vocab, "\nrare\t4\n")) << "its count is both texts'";
}

TEST_F(ContinueCli, RefusalsAreOneLine) {
  ASSERT_NO_FATAL_FAILURE(ok(train("a.txt", "r1")));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r1", "x1", {"--dim", "32"})), 2,
                            "--dim cannot change when continuing a run (the run has 16)"));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r1", "x2", {"--optimizer", "adam"})), 2,
                            "--optimizer cannot change"));
  // The run's optimizer is sgd: --lr is not its rate.
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r1", "x11", {"--lr", "0.1"})), 2, "--lr applies"));
  Args no_corpus = cont("r1", "x12");
  no_corpus.erase(no_corpus.begin() + 1, no_corpus.begin() + 3);
  EXPECT_TRUE(fails_cleanly(run(dir_, no_corpus), 2, "--corpus is required"));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("missing", "x3")), 1, "--continue-from"));
  ASSERT_EQ(::mkdir(dir_.file("empty").c_str(), 0755), 0);
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("empty", "x4")), 1, "neither a run directory"));
  ASSERT_NO_FATAL_FAILURE(ok(with(train("a.txt", "r0"), {"--keep-checkpoints", "0"})));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r0", "x5")), 1, "keeps no checkpoint"));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("a.txt", "x6")), 1, "a.txt"));
  EXPECT_TRUE(fails_cleanly(
      run(dir_, cont("r1", "x7", {"--resume", dir_.file("r1/checkpoints/latest.h5")})), 2,
      "give one of them"));
  EXPECT_TRUE(fails_cleanly(run(dir_, with(train("b.txt", "x8"), {"--continue-count", "merged"})),
                            2, "--continue-count applies"));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r1", "x9", {"--vocab", dir_.file("r1/vocab.tsv")})), 2,
                            "--vocab cannot be given with --continue-from"));
  EXPECT_TRUE(fails_cleanly(run(dir_, cont("r1", "x10", {"--continue-count", "both"})), 2,
                            "--continue-count"));
  // The run's own directory as the output: its checkpoint would be replaced.
  const std::string before = read_file(dir_.file("r1/vectors.npy"));
  Args into_run = cont("r1", "r1");
  EXPECT_TRUE(fails_cleanly(run(dir_, into_run), 1, "a file this run replaces"));
  into_run.push_back("--overwrite");
  EXPECT_TRUE(fails_cleanly(run(dir_, into_run), 1, "a file this run replaces"));
  EXPECT_EQ(read_file(dir_.file("r1/vectors.npy")), before);
  EXPECT_FALSE(json_of(dir_.file("r1/run.json")).contains("continued_from"));
  // Nothing was written for a refused run.
  for (const char* out :
       {"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12"}) {
    EXPECT_FALSE(testing_util::exists(dir_.file(std::string(out) + "/run.json"))) << out;
  }
}

}  // namespace
}  // namespace pagedw2v
