// What the real binary writes, and when: the output lock, another run's files, the corpus in the
// output directory, file size limits, repeated stop signals, the resume command it prints,
// --keep-checkpoints 0, --format none, the time summary and run.json.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::exists;
using testing_util::fails_cleanly;
using testing_util::Process;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::wait_until;
using testing_util::with;
using testing_util::write_file;
using Args = std::vector<std::string>;
using Outcome = testing_util::RunResult;

/// Runs the binary to its end. `max_file_bytes` >= 0 sets RLIMIT_FSIZE with SIGXFSZ left at its
/// default action, as in a shell with `ulimit -f`.
Outcome run(const TempDir& dir, const Args& args, long max_file_bytes = -1) {
  testing_util::ProcessOptions options;
  options.max_file_bytes = max_file_bytes;
  options.default_sigxfsz = true;
  Process p(args, dir.path(), options);
  return p.wait();
}

::testing::AssertionResult succeeds(const Outcome& r) {
  if (!r.exited || r.code != 0) return ::testing::AssertionFailure() << describe(r);
  return ::testing::AssertionSuccess();
}

/// Files under `dir` (recursively) whose names say they are temporary or partial.
std::vector<std::string> leftovers(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

/// `tokens` words over w0 … w(distinct − 1), Zipf-distributed, 17 to a line.
std::string zipf_corpus(uint64_t tokens, uint32_t distinct, uint64_t seed) {
  return testing_util::zipf_text(tokens, distinct, seed, 17, 17);
}

class RunOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing_util::fresh_seed();
    write_file(dir_.file("c.txt"), zipf_corpus(30000, 2000, seed_));
  }
  /// A small quiet run into `output`.
  Args quick(const std::string& output) const {
    return {"train",     "--corpus", dir_.file("c.txt"), "--output", output,        "--quiet",
            "--dim",     "4",        "--epochs",         "1",        "--min-count", "1",
            "--threads", "2",        "--format",         "npy"};
  }
  /// A run long enough to be stopped while it trains (a long corpus, many epochs, one thread).
  Args slow(const std::string& output, int epochs = 50) {
    if (!exists(dir_.file("long.txt"))) {
      write_file(dir_.file("long.txt"), zipf_corpus(200000, 5000, seed_ + 1));
    }
    return {"train",
            "--corpus",
            dir_.file("long.txt"),
            "--output",
            output,
            "--quiet",
            "--dim",
            "8",
            "--epochs",
            std::to_string(epochs),
            "--min-count",
            "1",
            "--format",
            "npy",
            "--deterministic"};
  }

  TempDir dir_;
  uint64_t seed_ = 0;
};

TEST_F(RunOutputs, ASecondRunWithTheSameOutputIsRefused) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::string out = dir_.file("run");
  Process first(slow(out), dir_.path());
  ASSERT_TRUE(wait_until(first, [&] { return exists(out + "/checkpoints"); }));
  const Outcome second = run(dir_, quick(out));
  EXPECT_TRUE(fails_cleanly(second, 1, "is in use by another pagedw2v process"));
  EXPECT_TRUE(first.running());
  first.send(SIGKILL);
  first.wait();
  // The lock goes with the process: a run with --overwrite may now replace what it left.
  EXPECT_TRUE(succeeds(run(dir_, [&] {
    Args a = quick(out);
    a.push_back("--overwrite");
    return a;
  }())));
  EXPECT_TRUE(leftovers(out).empty());
}

TEST_F(RunOutputs, AnotherRunsFilesAreKeptUnlessOverwriteIsGiven) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::string out = dir_.file("run");
  const Args first = with(with(quick(out), "format", "txt"), "epochs", "2");
  ASSERT_TRUE(succeeds(run(dir_, first)));
  const std::string txt = read_file(out + "/vectors.txt");

  EXPECT_TRUE(fails_cleanly(run(dir_, quick(out)), 1, "holds the files of another run"));
  EXPECT_EQ(read_file(out + "/vectors.txt"), txt);
  EXPECT_TRUE(exists(out + "/checkpoints/epoch-2.h5"));

  Args again = quick(out);
  again.push_back("--overwrite");
  ASSERT_TRUE(succeeds(run(dir_, again)));
  // Nothing of the older run is left to be mistaken for this one's.
  EXPECT_FALSE(exists(out + "/vectors.txt"));
  EXPECT_FALSE(exists(out + "/checkpoints/epoch-2.h5"));
  EXPECT_TRUE(exists(out + "/vectors.npy"));
  EXPECT_TRUE(exists(out + "/checkpoints/epoch-1.h5"));
}

TEST_F(RunOutputs, ACorpusInTheOutputDirectoryIsNeverOverwritten) {
  const std::string out = dir_.file("run");
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const std::string corpus = read_file(dir_.file("c.txt"));
  write_file(out + "/vectors.txt", corpus);
  for (const bool overwrite : {false, true}) {
    Args args = quick(out);
    args[2] = out + "/vectors.txt";
    if (overwrite) args.push_back("--overwrite");
    EXPECT_TRUE(fails_cleanly(run(dir_, args), 1, "a file this run writes"));
    EXPECT_EQ(read_file(out + "/vectors.txt"), corpus);
  }
}

TEST_F(RunOutputs, AFileSizeLimitIsOneClearErrorNotASignal) {
  // SIGXFSZ at its default action, as a shell with `ulimit -f` leaves it.
  const std::string out = dir_.file("run");
  const Outcome r = run(dir_, quick(out), 16 * 1024);
  EXPECT_TRUE(fails_cleanly(r, 1, "File too large"));
  EXPECT_TRUE(leftovers(out).empty());
  EXPECT_FALSE(exists(out + "/vectors.npy"));
  // The export command likewise.
  const std::string trained = dir_.file("trained");
  ASSERT_TRUE(succeeds(run(dir_, with(quick(trained), "dim", "16"))));
  const std::string exported = dir_.file("exported");
  const Outcome e = run(dir_,
                        {"export", "--checkpoint", trained + "/checkpoints/latest.h5", "--output",
                         exported, "--format", "txt"},
                        16 * 1024);
  EXPECT_TRUE(fails_cleanly(e, 1, "File too large"));
  EXPECT_TRUE(leftovers(exported).empty());
}

TEST_F(RunOutputs, TemporaryFilesOfEndedRunsAreRemoved) {
  const std::string out = dir_.file("run");
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = out + "/vectors.npy.abcdef.tmp-" + std::to_string(gone);
  const std::string live = out + "/vectors.npy.ghijkl.tmp-" + std::to_string(::getpid());
  write_file(stale, "partial");
  write_file(live, "another process's file in progress");
  ASSERT_TRUE(succeeds(run(dir_, quick(out))));
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live));
}

TEST_F(RunOutputs, ASecondStopSignalWaitsForTheCheckpoint) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string out = dir_.file("run-" + std::to_string(round));
    Process p(slow(out), dir_.path());
    ASSERT_TRUE(wait_until(p, [&] { return exists(out + "/checkpoints"); }));
    p.send(SIGINT);
    p.send(SIGINT);
    const Outcome r = p.wait();
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.code, 128 + SIGINT) << describe(r);
    EXPECT_NE(r.err.find("stopped by signal 2"), std::string::npos) << r.err;
    EXPECT_TRUE(exists(out + "/checkpoints/latest.h5"));
    EXPECT_TRUE(leftovers(out).empty());
    EXPECT_TRUE(succeeds(run(dir_, {"export", "--checkpoint", out + "/checkpoints/latest.h5",
                                    "--output", out + "-exported", "--format", "npy"})));
  }
}

/// The words of `line` split at spaces (the paths here need no quoting).
Args split(const std::string& line) {
  Args words;
  std::istringstream in(line);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

// The stop is asked for as soon as the run holds its output directory (its signal handlers are
// in place by then), while the run is frozen (SIGSTOP): it lands before the last span's end, where
// training last looks for it, whatever the machine's speed. Where in the run it stops does not
// matter: the resumed run must end with the uninterrupted run's bits.
TEST_F(RunOutputs, TheResumeCommandPrintedOnStopReproducesADeterministicRun) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::string straight = dir_.file("straight");
  ASSERT_TRUE(succeeds(run(dir_, slow(straight, 2))));

  const std::string stopped = dir_.file("stopped");
  Process p(slow(stopped, 2), dir_.path());
  ASSERT_TRUE(wait_until(p, [&] { return exists(stopped + "/checkpoints"); }))
      << describe(p.wait());
  ASSERT_TRUE(testing_util::freeze(p))
      << "the run ended before it was stopped: " << describe(p.wait());
  p.send(SIGINT);
  p.send(SIGCONT);
  const Outcome r = p.wait();
  ASSERT_TRUE(r.exited && r.code == 128 + SIGINT) << describe(r);
  const std::string key = "resume with: pagedw2v ";
  const size_t at = r.err.find(key);
  ASSERT_NE(at, std::string::npos) << r.err;
  const Args resume = split(r.err.substr(at + key.size(), r.err.find('\n', at) - at - key.size()));
  // Neither the thread count nor --deterministic is repeated: the checkpoint holds them.
  for (const std::string& w : resume) {
    EXPECT_NE(w, "--threads");
    EXPECT_NE(w, "--deterministic");
  }
  ASSERT_TRUE(succeeds(run(dir_, resume)));
  EXPECT_EQ(read_file(stopped + "/vectors.npy"), read_file(straight + "/vectors.npy"));
}

TEST_F(RunOutputs, KeepCheckpointsZeroAndFormatNone) {
  const std::string a = dir_.file("a");
  const Args no_checkpoints = with(with(quick(a), "keep-checkpoints", "0"), "epochs", "2");
  ASSERT_TRUE(succeeds(run(dir_, no_checkpoints)));
  EXPECT_TRUE(exists(a + "/vectors.npy"));
  EXPECT_TRUE(testing_util::entries(a + "/checkpoints").empty());
  EXPECT_TRUE(fails_cleanly(run(dir_, with(no_checkpoints, "checkpoint-interval", "10")), 2,
                            "--keep-checkpoints"));

  const std::string b = dir_.file("b");
  ASSERT_TRUE(succeeds(run(dir_, with(quick(b), "format", "none"))));
  EXPECT_EQ(testing_util::entries(b),
            (std::vector<std::string>{"checkpoints", "manifest.json", "run.json"}));
  EXPECT_TRUE(exists(b + "/checkpoints/epoch-1.h5"));
}

TEST_F(RunOutputs, TheSummaryAndRunJsonSayWhereTheTimeWent) {
  std::string pairs;
  for (int i = 0; i < 12; ++i) {
    pairs += "w" + std::to_string(i) + "\tw" + std::to_string(i + 1) + "\t" +
             std::to_string(10 - i % 10) + "\n";
  }
  write_file(dir_.file("pairs.tsv"), pairs);
  const std::string out = dir_.file("run");
  Args args = quick(out);
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  args = with(with(with(args, "epochs", "2"), "format", "npy,txt"), "eval-similarity",
              dir_.file("pairs.tsv"));
  args.push_back("--save-context");
  const Outcome r = run(dir_, args);
  ASSERT_TRUE(succeeds(r));
  for (const char* stage : {"time: read ", "vocabulary ", "encoding ", "setup ", "training ",
                            "checkpoints ", "export "}) {
    EXPECT_NE(r.err.find(stage), std::string::npos) << stage << " in:\n" << r.err;
  }
  // Every path listed after "wrote:" exists.
  const size_t wrote = r.err.find("wrote:\n");
  ASSERT_NE(wrote, std::string::npos) << r.err;
  const Args paths = split(r.err.substr(wrote + 7));
  EXPECT_EQ(paths.size(), 7u) << r.err;  // 5 export files, run.json, the last checkpoint
  for (const std::string& p : paths) EXPECT_TRUE(exists(p)) << p;
  EXPECT_TRUE(exists(out + "/context_vectors.txt"));

  const auto record = nlohmann::json::parse(read_file(out + "/run.json"));
  EXPECT_EQ(record.at("pagedw2v_version").get<std::string>(), PAGEDW2V_TEST_VERSION);
  EXPECT_EQ(record.at("settings").at("dim").get<uint64_t>(), 4u);
  EXPECT_EQ(record.at("vocabulary").at("corpus_tokens").get<uint64_t>(), 30000u);
  EXPECT_GT(record.at("vocabulary").at("words").get<uint64_t>(), 100u);
  EXPECT_EQ(record.at("words_trained").get<uint64_t>(), 60000u);
  EXPECT_EQ(record.at("loss_per_epoch").size(), 2u);
  EXPECT_GT(record.at("words_per_second").get<double>(), 0.0);
  for (const char* stage :
       {"read", "vocabulary", "encoding", "setup", "training", "checkpoints", "export", "total"}) {
    EXPECT_GE(record.at("seconds").at(stage).get<double>(), 0.0) << stage;
  }
  EXPECT_GT(record.at("seconds").at("training").get<double>(), 0.0);
  ASSERT_EQ(record.at("evaluation").size(), 2u);
  EXPECT_EQ(record.at("evaluation")[1].at("epoch").get<int>(), 2);
  EXPECT_TRUE(record.at("evaluation")[1].at("similarity").contains("spearman"));
  EXPECT_EQ(record.at("checkpoint").get<std::string>(), out + "/checkpoints/epoch-2.h5");
}

}  // namespace
}  // namespace pagedw2v
