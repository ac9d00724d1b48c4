// The real binary at the edges a new user meets: similar's --ignore-case hint (the word it would
// match, only when there is one), a GloVe file with a row of the wrong length, and resuming: the
// epochs checked before the corpus is read, a run trained from standard input, and the learning
// rate that --lr-schedule chooses when --epochs is raised.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::fails_cleanly;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;

/// Runs the binary in `dir` with `input` on its standard input.
RunResult run(const TempDir& dir, const Args& args, const std::string& input = "") {
  static int serial = 0;
  testing_util::ProcessOptions options;
  options.log_name = "edge-" + std::to_string(++serial);
  options.stdin_path = dir.file(options.log_name + ".in");
  options.cwd = dir.path();
  write_file(options.stdin_path, input);
  testing_util::Process p(args, dir.path(), options);
  return p.wait(120);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A corpus of `sentences` lines of 12 words drawn from `words` words.
std::string random_corpus(uint64_t seed, int words, int sentences) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    for (int i = 0; i < 12; ++i) {
      text += "w" + std::to_string(rng() % words) + (i == 11 ? "\n" : " ");
    }
  }
  return text;
}

/// The rate on the line "learning rate: R at epoch …" of `err`, or -1 when there is none.
double announced_rate(const std::string& err) {
  const std::string key = "learning rate: ";
  const size_t at = err.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(err.c_str() + at + key.size(), nullptr);
}

// ---------------------------------------------------------------------------------------------
// similar's --ignore-case hint

TEST(UserEdges, IgnoreCaseHintNamesTheWordItWouldMatchAndOnlyWhenOneExists) {
  const TempDir dir;
  write_file(dir.file("v.txt"), "paris 0.1 0.2 0.3\nberlin 0.3 0.1 0.2\nrome 0.2 0.3 0.1\n");
  const RunResult one = run(dir, {"similar", "--vectors", "v.txt", "Paris"});
  EXPECT_TRUE(fails_cleanly(one, 1, "(--ignore-case finds 'paris' for 'Paris')"));

  const RunResult none = run(dir, {"similar", "--vectors", "v.txt", "Madrid"});
  EXPECT_TRUE(fails_cleanly(none, 1, "'Madrid' not in the vocabulary"));
  EXPECT_FALSE(contains(none.err, "--ignore-case")) << describe(none);

  // Among other queries: the one skipped names the match; the others are answered.
  const RunResult some = run(dir, {"similar", "--vectors", "v.txt", "Paris", "Madrid", "berlin"});
  ASSERT_TRUE(some.exited && some.code == 0) << describe(some);
  EXPECT_TRUE(contains(some.err,
                       "skipped 'Paris': 'Paris' is not in the vocabulary "
                       "(--ignore-case finds 'paris' for 'Paris')"))
      << describe(some);
  EXPECT_TRUE(contains(some.err, "skipped 'Madrid': 'Madrid' is not in the vocabulary\n"))
      << describe(some);
  EXPECT_TRUE(contains(some.out, "berlin\n")) << some.out;

  // The questions about given words say the same.
  const RunResult pair = run(dir, {"similarity", "--vectors", "v.txt", "Paris", "berlin"});
  EXPECT_TRUE(fails_cleanly(pair, 1, "(--ignore-case finds 'paris' for 'Paris')"));
  const RunResult unknown = run(dir, {"word-vector", "--vectors", "v.txt", "Madrid"});
  EXPECT_TRUE(fails_cleanly(unknown, 1, "'Madrid' not in the vocabulary"));
  EXPECT_FALSE(contains(unknown.err, "--ignore-case")) << describe(unknown);

  const RunResult folded = run(dir, {"similar", "--vectors", "v.txt", "--ignore-case", "Paris"});
  ASSERT_TRUE(folded.exited && folded.code == 0) << describe(folded);
  EXPECT_TRUE(contains(folded.out, "berlin")) << folded.out;
}

// ---------------------------------------------------------------------------------------------
// GloVe files (no header): a row of the wrong length names the first row's dimension

TEST(UserEdges, GloveRowOfTheWrongLengthNamesTheFirstRowNotAHeader) {
  const TempDir dir;
  write_file(dir.file("short.txt"), "paris 0.1 0.2 0.3\nberlin 0.1 0.2\nrome 0.3 0.2 0.1\n");
  write_file(dir.file("long.txt"), "paris 0.1 0.2 0.3\nberlin 0.1 0.2 0.3 0.4\nrome 0.3 0.2 0.1\n");
  const RunResult short_row = run(dir, {"similar", "--vectors", "short.txt", "paris"});
  EXPECT_TRUE(fails_cleanly(short_row, 1, "line 2: fewer values than the first row's 3"));
  EXPECT_FALSE(contains(short_row.err, "in the header")) << describe(short_row);
  const RunResult long_row = run(dir, {"similar", "--vectors", "long.txt", "paris"});
  EXPECT_TRUE(fails_cleanly(long_row, 1, "line 2: more values than the first row's 3"));

  // A file with a header keeps naming it.
  write_file(dir.file("w2v.txt"), "2 3\nparis 0.1 0.2 0.3\nberlin 0.1 0.2\n");
  const RunResult headed = run(dir, {"similar", "--vectors", "w2v.txt", "paris"});
  EXPECT_TRUE(fails_cleanly(headed, 1, "line 3: fewer values than the dimension in the header"));
}

// ---------------------------------------------------------------------------------------------
// Resuming

const Args kSmall = {"--dim", "8", "--min-count", "1", "--threads", "1", "--format", "none"};

Args train_args(const std::string& corpus, const std::string& output, const std::string& epochs) {
  Args args = {"train", "--corpus", corpus, "--output", output, "--epochs", epochs};
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  return args;
}

TEST(UserEdges, ResumeWithoutMoreEpochsIsRefusedBeforeTheCorpusIsRead) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 40, 300));
  const RunResult first = run(dir, train_args("c.txt", "a", "2"));
  ASSERT_TRUE(first.exited && first.code == 0) << describe(first);
  // The corpus gone: the refusal comes from the checkpoint alone, before any settings line.
  ASSERT_EQ(std::remove(dir.file("c.txt").c_str()), 0);
  const RunResult again =
      run(dir, {"train", "--resume", "a/checkpoints/latest.h5", "--output", "b"});
  EXPECT_TRUE(fails_cleanly(again, 2, "the checkpoint has finished 2 epochs; raise --epochs"));
  const RunResult fewer =
      run(dir, {"train", "--resume", "a/checkpoints/latest.h5", "--output", "b", "--epochs", "1"});
  EXPECT_TRUE(fails_cleanly(fewer, 2, "the checkpoint has finished 2 epochs"));
}

TEST(UserEdges, RunFromStandardInputResumesWithItsTextGivenAgain) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string text = random_corpus(seed, 40, 300);
  write_file(dir.file("c.txt"), text);
  write_file(dir.file("other.txt"), random_corpus(seed + 1, 40, 300));
  const RunResult first = run(dir, train_args("-", "a", "1"), text);
  ASSERT_TRUE(first.exited && first.code == 0) << describe(first);

  const Args resume = {"train", "--resume", "a/checkpoints/latest.h5", "--epochs", "2"};
  auto resume_to = [&](const std::string& output, const Args& more, const std::string& input) {
    Args args = resume;
    args.insert(args.end(), {"--output", output});
    args.insert(args.end(), more.begin(), more.end());
    return run(dir, args, input);
  };
  const RunResult plain = resume_to("b", {}, text);
  EXPECT_TRUE(fails_cleanly(plain, 2, "was trained on standard input, which cannot be read again"));
  EXPECT_TRUE(contains(plain.err, "--corpus FILE")) << describe(plain);

  const RunResult from_file = resume_to("c", {"--corpus", "c.txt"}, "");
  EXPECT_TRUE(from_file.exited && from_file.code == 0) << describe(from_file);
  const RunResult piped = resume_to("d", {"--corpus", "-"}, text);
  EXPECT_TRUE(piped.exited && piped.code == 0) << describe(piped);
  // Another text is refused: its words are not the checkpoint's.
  const RunResult other = resume_to("e", {"--corpus", "other.txt"}, "");
  EXPECT_TRUE(other.exited && other.code == 1) << describe(other);
  EXPECT_TRUE(contains(other.err, "does not give the vocabulary of the checkpoint"))
      << describe(other);
}

TEST(UserEdges, LrScheduleChoosesTheRateOfAResumedRunWithMoreEpochs) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 40, 300));
  const RunResult first = run(dir, train_args("c.txt", "a", "1"));
  ASSERT_TRUE(first.exited && first.code == 0) << describe(first);

  auto resumed = [&](const std::string& schedule) {
    Args args = {"train",    "--resume", "a/checkpoints/latest.h5", "--output", "r-" + schedule,
                 "--epochs", "2",        "--lr-schedule",           schedule};
    const RunResult r = run(dir, args);
    EXPECT_TRUE(r.exited && r.code == 0) << describe(r);
    return r;
  };
  const double alpha = 0.025;  // skip-gram's default
  // rejoin: the rate of a 2-epoch run half way, about alpha / 2, up from the end of the first run.
  const RunResult rejoin = resumed("rejoin");
  EXPECT_NEAR(announced_rate(rejoin.err), alpha / 2, alpha * 0.01) << describe(rejoin);
  EXPECT_TRUE(contains(rejoin.err, "the checkpoint's run had 1 epochs")) << describe(rejoin);
  // restart: the starting rate again.
  const RunResult restart = resumed("restart");
  EXPECT_NEAR(announced_rate(restart.err), alpha, alpha * 1e-4) << describe(restart);
  // continue: the rate the checkpoint stopped at, the floor of a run that ended.
  const RunResult cont = resumed("continue");
  const double rate = announced_rate(cont.err);
  EXPECT_GT(rate, 0) << describe(cont);
  EXPECT_LT(rate, alpha * 1e-3) << describe(cont);

  const RunResult fresh =
      run(dir, {"train", "--corpus", "c.txt", "--output", "g", "--lr-schedule", "restart"});
  EXPECT_TRUE(fails_cleanly(fresh, 2, "--lr-schedule applies to a resumed run"));
  const RunResult bad = run(dir, {"train", "--resume", "a/checkpoints/latest.h5", "--output", "h",
                                  "--epochs", "2", "--lr-schedule", "cosine"});
  EXPECT_TRUE(fails_cleanly(bad, 2, "--lr-schedule: expected rejoin, continue or restart"));
}

}  // namespace
}  // namespace pagedw2v
