// Nothing a user has is lost or mixed, on the real binary: a writing command never replaces its
// input or another run's files without --overwrite, output sets are locked while written and one
// unit for readers (a process killed at any rename leaves a directory that readers read as the
// older set, the newer one, or refuse with one line), and stop signals leave no temporary file.
//
// The moments a process is killed or stopped at are chosen exactly: a library preloaded into the
// binary (rename_shim.cpp) kills it at, or holds it in, its k-th rename under a directory.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
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
using Files = std::map<std::string, std::string>;

Outcome run(const TempDir& dir, const Args& args) {
  Process p(args, dir.path());
  return p.wait();
}

::testing::AssertionResult succeeds(const Outcome& r) {
  if (!r.exited || r.code != 0) return ::testing::AssertionFailure() << describe(r);
  return ::testing::AssertionSuccess();
}

/// Every regular file under `dir` (recursively) with its bytes, by path relative to `dir`.
Files snapshot(const std::string& dir) {
  Files files;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) {
      files[std::filesystem::relative(e.path(), dir).string()] = read_file(e.path().string());
    }
  }
  return files;
}

/// Entries under `dir` (recursively) whose names say they are temporary: files and staging
/// directories of a writer.
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

std::string zipf_corpus(uint64_t tokens, uint32_t distinct, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::string text;
  for (uint64_t i = 0; i < tokens; ++i) {
    const auto rank = static_cast<uint32_t>(std::exp(u(rng) * std::log(distinct + 1.0))) - 1;
    text += "w" + std::to_string(std::min(rank, distinct - 1));
    text += i % 17 == 16 || i + 1 == tokens ? '\n' : ' ';
  }
  return text;
}

/// The binary's environment while it lives: the rename shim preloaded, set to `action` ("kill"
/// or "hold") at the `at`-th rename under `under`; `mark` is the file a hold creates.
class RenameShim {
 public:
  RenameShim(const std::string& under, long at, const std::string& action,
             const std::string& mark = "") {
    ::setenv("LD_PRELOAD", PAGEDW2V_RENAME_SHIM, 1);
    // A sanitizer build checks that its runtime comes first; the shim does not need it to.
    const char* asan = std::getenv("ASAN_OPTIONS");
    had_asan_options_ = asan != nullptr;
    asan_options_ = asan != nullptr ? asan : "";
    ::setenv(
        "ASAN_OPTIONS",
        (asan_options_ + (asan_options_.empty() ? "" : ":") + "verify_asan_link_order=0").c_str(),
        1);
    ::setenv("PAGEDW2V_TEST_RENAME_UNDER", under.c_str(), 1);
    ::setenv("PAGEDW2V_TEST_RENAME_AT", std::to_string(at).c_str(), 1);
    ::setenv("PAGEDW2V_TEST_RENAME_DO", action.c_str(), 1);
    ::setenv("PAGEDW2V_TEST_RENAME_MARK", mark.c_str(), 1);
  }
  ~RenameShim() {
    for (const char* name : {"LD_PRELOAD", "PAGEDW2V_TEST_RENAME_UNDER", "PAGEDW2V_TEST_RENAME_AT",
                             "PAGEDW2V_TEST_RENAME_DO", "PAGEDW2V_TEST_RENAME_MARK"}) {
      ::unsetenv(name);
    }
    if (had_asan_options_) {
      ::setenv("ASAN_OPTIONS", asan_options_.c_str(), 1);
    } else {
      ::unsetenv("ASAN_OPTIONS");
    }
  }
  RenameShim(const RenameShim&) = delete;
  RenameShim& operator=(const RenameShim&) = delete;

 private:
  bool had_asan_options_ = false;
  std::string asan_options_;
};

class WriteSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* replay = std::getenv("PAGEDW2V_TEST_SEED");
    seed_ = replay != nullptr ? std::strtoull(replay, nullptr, 10) : std::random_device{}();
    std::printf("seed %llu (PAGEDW2V_TEST_SEED replays it)\n",
                static_cast<unsigned long long>(seed_));
    write_file(dir_.file("c.txt"), zipf_corpus(20000, 1500, seed_));
    // A test process may have inherited SIGHUP ignored (nohup); the binary would keep it so.
    std::signal(SIGHUP, SIG_DFL);
  }

  /// A small quiet run of `epochs` into `output`, in `formats`.
  Args quick(const std::string& output, const std::string& formats = "npy", int epochs = 1) const {
    return {
        "train",    "--corpus", dir_.file("c.txt"),     "--output",    output, "--quiet",   "--dim",
        "4",        "--epochs", std::to_string(epochs), "--min-count", "1",    "--threads", "2",
        "--format", formats};
  }

  /// A run long enough to be stopped while it trains.
  Args slow(const std::string& output) {
    if (!exists(dir_.file("long.txt"))) {
      write_file(dir_.file("long.txt"), zipf_corpus(200000, 5000, seed_ + 1));
    }
    return {"train",    "--corpus",    dir_.file("long.txt"),
            "--output", output,        "--quiet",
            "--dim",    "8",           "--epochs",
            "50",       "--min-count", "1",
            "--format", "npy",         "--deterministic"};
  }

  /// A checkpoint of a fresh run (`epochs` epochs: runs of different lengths give different
  /// vectors of the same words).
  std::string checkpoint(const std::string& name, int epochs) {
    const std::string out = dir_.file(name);
    EXPECT_TRUE(succeeds(run(dir_, quick(out, "none", epochs))));
    return out + "/checkpoints/latest.h5";
  }

  Args export_to(const std::string& ck, const std::string& output, const std::string& formats) {
    return {"export", "--checkpoint", ck, "--output", output, "--format", formats};
  }

  TempDir dir_;
  uint64_t seed_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Inputs and another run's files

TEST_F(WriteSafety, ExportNeverReplacesOrRemovesItsInput) {
  const std::string run_dir = dir_.file("run");
  ASSERT_TRUE(succeeds(run(dir_, quick(run_dir, "npy,h5,bin,txt"))));
  const Files before = snapshot(run_dir);
  for (const bool overwrite : {false, true}) {
    SCOPED_TRACE(overwrite ? "--overwrite" : "");
    auto args = [&](Args a) {
      if (overwrite) a.push_back("--overwrite");
      return a;
    };
    for (const char* input : {"vectors.bin", "vectors.txt", "embeddings.h5", "vocab.tsv"}) {
      const std::string path = run_dir + "/" + input;
      const Outcome r =
          run(dir_, args({"export", "--vectors", path, "--output", run_dir, "--format", "npy"}));
      EXPECT_TRUE(fails_cleanly(
          r, 1,
          "--vectors '" + path + "' is '" + path + "', a file this export writes or replaces"));
    }
    // A .npy reads vocab.tsv beside it: that is an input too.
    EXPECT_TRUE(fails_cleanly(run(dir_, args({"export", "--vectors", run_dir + "/vectors.npy",
                                              "--output", run_dir, "--format", "txt"})),
                              1, "a file this export writes or replaces"));
    EXPECT_TRUE(fails_cleanly(
        run(dir_, args({"export", "--vectors", run_dir, "--output", run_dir, "--format", "txt"})),
        1, "--vectors '" + run_dir + "' is the --output directory"));
  }
  EXPECT_EQ(snapshot(run_dir), before);
  EXPECT_TRUE(leftovers(run_dir).empty());
  // An input that cannot be read leaves no output directory behind.
  const std::string never = dir_.file("never");
  EXPECT_TRUE(
      fails_cleanly(run(dir_, {"export", "--vectors", dir_.file("absent.bin"), "--output", never}),
                    1, "cannot read"));
  EXPECT_FALSE(exists(never));
}

TEST_F(WriteSafety, ExportKeepsAUsersFilesUnlessOverwriteIsGiven) {
  const std::string ck = checkpoint("a", 1);
  const std::string mine = dir_.file("mine");
  ASSERT_EQ(::mkdir(mine.c_str(), 0755), 0);
  write_file(mine + "/vocab.tsv", "my own\t1\n");
  write_file(mine + "/vectors.txt", "not pagedw2v's\n");
  write_file(mine + "/notes.md", "notes\n");
  const Files before = snapshot(mine);
  EXPECT_TRUE(fails_cleanly(run(dir_, export_to(ck, mine, "npy")), 1,
                            "output '" + mine +
                                "' holds the files of another run (vocab.tsv, "
                                "vectors.txt); choose another --output, or add --overwrite"));
  EXPECT_EQ(snapshot(mine), before);
  // A fresh directory takes the export; a second export into it is refused the same way.
  const std::string fresh = dir_.file("fresh");
  ASSERT_TRUE(succeeds(run(dir_, export_to(ck, fresh, "npy"))));
  const Files exported = snapshot(fresh);
  EXPECT_TRUE(fails_cleanly(run(dir_, export_to(ck, fresh, "txt")), 1, "holds the files of"));
  EXPECT_EQ(snapshot(fresh), exported);
  // --overwrite replaces the set's files, and only those.
  Args overwrite = export_to(ck, mine, "npy");
  overwrite.push_back("--overwrite");
  ASSERT_TRUE(succeeds(run(dir_, overwrite)));
  EXPECT_EQ(read_file(mine + "/notes.md"), "notes\n");
  EXPECT_FALSE(exists(mine + "/vectors.txt"));
  EXPECT_EQ(read_file(mine + "/vectors.npy"), exported.at("vectors.npy"));
}

TEST_F(WriteSafety, TrainNeverWritesOverItsCorpusOrItsSet) {
  const std::string corpus = dir_.file("c.txt");
  const std::string text = read_file(corpus);
  const std::string out = dir_.file("run");
  for (const bool overwrite : {false, true}) {
    SCOPED_TRACE(overwrite ? "--overwrite" : "");
    auto args = [&](Args a) {
      if (overwrite) a.push_back("--overwrite");
      return a;
    };
    EXPECT_TRUE(fails_cleanly(
        run(dir_, args(with(quick(out), "save-vocab", corpus))), 1,
        "--save-vocab '" + corpus + "' is --corpus '" + corpus + "', which this run reads"));
    EXPECT_EQ(read_file(corpus), text);
    for (const char* name : {"vocab.tsv", "vectors.npy", "run.json", "manifest.json"}) {
      EXPECT_TRUE(fails_cleanly(run(dir_, args(with(quick(out), "save-vocab", out + "/" + name))),
                                1, "is a file of the set this run writes into"));
    }
    // A corpus directory as the output: every later run would train on this run's files.
    const std::string corpus_dir = dir_.file("texts");
    std::filesystem::create_directories(corpus_dir);
    write_file(corpus_dir + "/c.txt", text);
    Args into_corpus = quick(corpus_dir);
    into_corpus[2] = corpus_dir;
    EXPECT_TRUE(fails_cleanly(run(dir_, args(into_corpus)), 1,
                              "--corpus '" + corpus_dir + "' is the --output directory"));
    Args vocab_into_corpus = with(quick(out), "save-vocab", corpus_dir + "/v.tsv");
    vocab_into_corpus[2] = corpus_dir;
    EXPECT_TRUE(fails_cleanly(
        run(dir_, args(vocab_into_corpus)), 1,
        "--save-vocab '" + corpus_dir + "/v.tsv' lies in --corpus '" + corpus_dir + "'"));
    EXPECT_EQ(testing_util::entries(corpus_dir), std::vector<std::string>{"c.txt"});
  }
  // A vocabulary given to a run is its input: never the set's vocab.tsv that the run replaces.
  const std::string before = dir_.file("before");
  ASSERT_TRUE(succeeds(run(dir_, quick(before))));
  const Files before_files = snapshot(before);
  Args given = with(quick(before), "vocab", before + "/vocab.tsv");
  given.push_back("--overwrite");
  EXPECT_TRUE(fails_cleanly(run(dir_, given), 1,
                            "--vocab '" + before + "/vocab.tsv' is '" + before +
                                "/vocab.tsv', a file this run writes or replaces"));
  EXPECT_EQ(snapshot(before), before_files);
  // A file the user has is replaced only with --overwrite.
  write_file(dir_.file("v.tsv"), "mine\n");
  EXPECT_TRUE(fails_cleanly(run(dir_, with(quick(out), "save-vocab", dir_.file("v.tsv"))), 1,
                            "--save-vocab '" + dir_.file("v.tsv") + "' exists"));
  EXPECT_EQ(read_file(dir_.file("v.tsv")), "mine\n");
  Args again = with(quick(out), "save-vocab", dir_.file("v.tsv"));
  again.push_back("--overwrite");
  ASSERT_TRUE(succeeds(run(dir_, again)));
  EXPECT_EQ(read_file(dir_.file("v.tsv")), read_file(out + "/vocab.tsv"));
  EXPECT_EQ(read_file(corpus), text);
}

// ------------------------------------------------------------------------------------------------
// Stop signals

TEST_F(WriteSafety, AStopSignalDuringAnExportRemovesItsStaging) {
  const std::string old_ck = checkpoint("a", 1);
  const std::string new_ck = checkpoint("b", 2);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE("signal " + std::to_string(sig));
    const std::string out = dir_.file("out-" + std::to_string(sig));
    ASSERT_TRUE(succeeds(run(dir_, export_to(old_ck, out, "npy,txt"))));
    const Files before = snapshot(out);
    Args args = export_to(new_ck, out, "npy,h5,txt");
    args.push_back("--overwrite");
    const std::string mark = out + "-held";
    std::optional<Outcome> r;
    {
      // Held at its first rename: a file of the new set complete in the staging directory.
      const RenameShim shim(out, 1, "hold", mark);
      Process p(args, dir_.path());
      ASSERT_TRUE(wait_until(p, [&] { return exists(mark); })) << describe(p.wait());
      EXPECT_FALSE(leftovers(out).empty());
      p.send(sig);
      r = p.wait();
    }
    EXPECT_TRUE(fails_cleanly(*r, 128 + sig, "stopped by signal " + std::to_string(sig)));
    EXPECT_TRUE(leftovers(out).empty());
    EXPECT_EQ(snapshot(out), before);
  }
}

TEST_F(WriteSafety, TheStagingOfAKilledExportIsRemovedByTheNextOne) {
  const std::string ck = checkpoint("a", 1);
  const std::string out = dir_.file("out");
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  // A staging directory of a process that still runs (this one) is not ours to remove.
  const std::string live = out + "/export.abcdef.tmp-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(live.c_str(), 0700), 0);
  write_file(live + "/vectors.npy", "in progress");
  {
    const RenameShim shim(out, 1, "kill");
    const Outcome r = run(dir_, export_to(ck, out, "npy,txt"));
    ASSERT_EQ(r.signal, SIGKILL) << describe(r);
  }
  std::vector<std::string> left = leftovers(out);
  left.erase(std::remove_if(left.begin(), left.end(),
                            [&](const std::string& p) { return p.rfind(live, 0) == 0; }),
             left.end());
  ASSERT_FALSE(left.empty()) << "the killed export left no staging directory";
  ASSERT_TRUE(succeeds(run(dir_, export_to(ck, out, "npy"))));
  for (const std::string& p : leftovers(out)) EXPECT_EQ(p.rfind(live, 0), 0u) << p;
  EXPECT_EQ(read_file(live + "/vectors.npy"), "in progress");
}

TEST_F(WriteSafety, TrainStopsOnSighupWithACheckpoint) {
  const std::string out = dir_.file("run");
  Process p(slow(out), dir_.path());
  ASSERT_TRUE(wait_until(p, [&] { return exists(out + "/checkpoints"); }));
  p.send(SIGHUP);
  const Outcome r = p.wait();
  EXPECT_TRUE(fails_cleanly(r, 128 + SIGHUP, "stopped by signal 1"));
  EXPECT_NE(r.err.find("resume with: pagedw2v train"), std::string::npos) << r.err;
  EXPECT_TRUE(exists(out + "/checkpoints/latest.h5"));
  EXPECT_TRUE(leftovers(out).empty());
}

TEST_F(WriteSafety, ThreeStopSignalsLeaveNoTemporaryFile) {
  const std::string out = dir_.file("run");
  const std::string mark = dir_.file("held");
  std::optional<Outcome> r;
  {
    // The first checkpoint is held before its rename: its temporary file complete beside it.
    const RenameShim shim(out + "/checkpoints", 1, "hold", mark);
    testing_util::ProcessOptions options;
    options.log_name = "three";
    Process p(slow(out), dir_.path(), options);
    ASSERT_TRUE(wait_until(p, [&] { return exists(out + "/checkpoints"); }));
    p.send(SIGINT);
    ASSERT_TRUE(wait_until(p, [&] { return exists(mark); })) << describe(p.wait());
    EXPECT_FALSE(leftovers(out).empty());
    // One signal at a time: a second one sent before the first was taken would merge with it.
    p.send(SIGINT);
    ASSERT_TRUE(wait_until(p, [&] {
      return read_file(dir_.file("three.stderr")).find("signal again") != std::string::npos;
    })) << describe(p.wait());
    p.send(SIGINT);
    r = p.wait();
  }
  EXPECT_TRUE(!r->exited && r->signal == SIGINT) << describe(*r);
  EXPECT_TRUE(leftovers(out).empty());
  // What it left is resumed, or replaced, without a word about temporary files.
  Args again = slow(out);
  again = with(again, "epochs", "1");
  again.push_back("--overwrite");
  EXPECT_TRUE(succeeds(run(dir_, again)));
}

// ------------------------------------------------------------------------------------------------
// Locks and sets

TEST_F(WriteSafety, ExportAndTrainNeverWriteOneDirectoryAtOnce) {
  const std::string ck = checkpoint("a", 1);
  // export while train runs there
  const std::string out = dir_.file("run");
  {
    Process train(slow(out), dir_.path());
    ASSERT_TRUE(wait_until(train, [&] { return exists(out + "/checkpoints"); }));
    Args args = export_to(ck, out, "npy");
    args.push_back("--overwrite");
    EXPECT_TRUE(fails_cleanly(run(dir_, args), 1, "is in use by another pagedw2v process"));
    EXPECT_TRUE(train.running());
    train.send(SIGINT);
    train.wait();
  }
  EXPECT_FALSE(exists(out + "/vectors.npy"));
  // train while export writes there
  const std::string out2 = dir_.file("run2");
  const std::string mark = dir_.file("held");
  std::optional<Outcome> exported;
  {
    const RenameShim shim(out2, 1, "hold", mark);
    Process exporting(export_to(ck, out2, "npy,txt"), dir_.path());
    ASSERT_TRUE(wait_until(exporting, [&] { return exists(mark); }));
    ::unsetenv("LD_PRELOAD");
    Args train = quick(out2);
    train.push_back("--overwrite");
    EXPECT_TRUE(fails_cleanly(run(dir_, train), 1, "is in use by another pagedw2v process"));
    exporting.send(SIGTERM);
    exported = exporting.wait();
  }
  EXPECT_TRUE(fails_cleanly(*exported, 128 + SIGTERM, "stopped by signal"));
  EXPECT_TRUE(leftovers(out2).empty());
  EXPECT_EQ(testing_util::entries(out2), std::vector<std::string>{});
}

/// Reads `path` through `export --vectors` into a fresh directory and returns its vectors.npy and
/// vocab.tsv, or the failed run.
struct ReadBack {
  Outcome outcome;
  std::string npy;
  std::string vocab;
};

ReadBack read_back(const TempDir& dir, const std::string& path, const std::string& into) {
  ReadBack r;
  r.outcome = run(dir, {"export", "--vectors", path, "--output", into, "--format", "npy"});
  if (r.outcome.exited && r.outcome.code == 0) {
    r.npy = read_file(into + "/vectors.npy");
    r.vocab = read_file(into + "/vocab.tsv");
  }
  return r;
}

/// What a reader got after a writer was killed: the older set or the newer one, byte for byte, or
/// a refusal in one line; once the writer `finished`, the newer set.
void expect_old_new_or_refused(const ReadBack& got, const ReadBack& old_set,
                               const ReadBack& new_set, bool finished, int* refused) {
  if (got.outcome.exited && got.outcome.code == 0) {
    const bool is_old = got.npy == old_set.npy && got.vocab == old_set.vocab;
    const bool is_new = got.npy == new_set.npy && got.vocab == new_set.vocab;
    EXPECT_TRUE(is_old || is_new) << "a mixed set was read";
    EXPECT_TRUE(is_new || !finished) << "the finished writer's set was not read";
  } else {
    EXPECT_FALSE(finished) << describe(got.outcome);
    EXPECT_TRUE(fails_cleanly(got.outcome, 1, "mixes the files of two runs or exports"));
    ++*refused;
  }
}

TEST_F(WriteSafety, AKillAtAnyRenameLeavesTheOldSetTheNewOneOrARefusal) {
  const std::string old_ck = checkpoint("a", 1);
  const std::string new_ck = checkpoint("b", 2);
  const std::string formats = "npy,h5,txt";
  // What a reader reads from each whole set, file by file.
  const std::vector<std::string> readers = {"", "/vectors.npy", "/embeddings.h5", "/vectors.txt"};
  std::map<std::string, std::pair<ReadBack, ReadBack>> whole;
  const std::string old_set = dir_.file("old"), new_set = dir_.file("new");
  ASSERT_TRUE(succeeds(run(dir_, export_to(old_ck, old_set, formats))));
  ASSERT_TRUE(succeeds(run(dir_, export_to(new_ck, new_set, formats))));
  int reads = 0;
  for (const std::string& file : readers) {
    whole[file].first = read_back(dir_, old_set + file, dir_.file("r" + std::to_string(++reads)));
    whole[file].second = read_back(dir_, new_set + file, dir_.file("r" + std::to_string(++reads)));
    ASSERT_TRUE(succeeds(whole[file].first.outcome));
    ASSERT_TRUE(succeeds(whole[file].second.outcome));
    ASSERT_NE(whole[file].first.npy, whole[file].second.npy);
  }
  int refused = 0, killed = 0;
  for (long k = 1;; ++k) {
    SCOPED_TRACE("killed at rename " + std::to_string(k));
    const std::string out = dir_.file("out-" + std::to_string(k));
    ASSERT_TRUE(succeeds(run(dir_, export_to(old_ck, out, formats))));
    Args args = export_to(new_ck, out, formats);
    args.push_back("--overwrite");
    Outcome r;
    {
      const RenameShim shim(out, k, "kill");
      r = run(dir_, args);
    }
    const bool finished = r.exited && r.code == 0;
    if (!finished) {
      ASSERT_EQ(r.signal, SIGKILL) << describe(r);
      ++killed;
    }
    for (const std::string& file : readers) {
      SCOPED_TRACE("reading '" + out + file + "'");
      const ReadBack got = read_back(dir_, out + file, dir_.file("r" + std::to_string(++reads)));
      expect_old_new_or_refused(got, whole[file].first, whole[file].second, finished, &refused);
    }
    if (finished) break;
    // The next export cleans what the killed one left.
    ASSERT_TRUE(succeeds(run(dir_, args)));
    EXPECT_TRUE(leftovers(out).empty());
    EXPECT_EQ(read_back(dir_, out, dir_.file("r" + std::to_string(++reads))).npy,
              whole[""].second.npy);
    ASSERT_LT(k, 100) << "the export never finished";
  }
  // Killed inside the staging directory and while the set moved in (manifest, then 4 files).
  EXPECT_GE(killed, 5);
  EXPECT_GT(refused, 0);
}

TEST_F(WriteSafety, TrainKilledAtAnyRenameLeavesTheOldSetTheNewOneOrARefusal) {
  auto deterministic = [&](const std::string& out, int epochs) {
    return Args{"train",
                "--corpus",
                dir_.file("c.txt"),
                "--output",
                out,
                "--quiet",
                "--dim",
                "4",
                "--epochs",
                std::to_string(epochs),
                "--min-count",
                "1",
                "--format",
                "npy,txt",
                "--deterministic",
                "--keep-checkpoints",
                "0"};
  };
  ASSERT_TRUE(succeeds(run(dir_, deterministic(dir_.file("old"), 1))));
  ASSERT_TRUE(succeeds(run(dir_, deterministic(dir_.file("new"), 2))));
  int reads = 0;
  const ReadBack old_set =
      read_back(dir_, dir_.file("old"), dir_.file("r" + std::to_string(++reads)));
  const ReadBack new_set =
      read_back(dir_, dir_.file("new"), dir_.file("r" + std::to_string(++reads)));
  ASSERT_TRUE(succeeds(old_set.outcome));
  ASSERT_TRUE(succeeds(new_set.outcome));
  ASSERT_NE(old_set.npy, new_set.npy);
  int refused = 0, killed = 0;
  for (long k = 1;; ++k) {
    SCOPED_TRACE("killed at rename " + std::to_string(k));
    const std::string out = dir_.file("out-" + std::to_string(k));
    ASSERT_TRUE(succeeds(run(dir_, deterministic(out, 1))));
    Args second = deterministic(out, 2);
    second.push_back("--overwrite");
    Outcome r;
    {
      const RenameShim shim(out, k, "kill");
      r = run(dir_, second);
    }
    const bool finished = r.exited && r.code == 0;
    if (!finished) {
      ASSERT_EQ(r.signal, SIGKILL) << describe(r);
      ++killed;
    }
    const ReadBack got = read_back(dir_, out, dir_.file("r" + std::to_string(++reads)));
    expect_old_new_or_refused(got, old_set, new_set, finished, &refused);
    if (finished) break;
    ASSERT_LT(k, 100) << "the run never finished";
  }
  // Staging: vocab.tsv, vectors.npy, vectors.txt, run.json, the manifest; then the set moves in.
  EXPECT_GE(killed, 5);
  EXPECT_GT(refused, 0);
}

TEST_F(WriteSafety, ReadersRefuseFilesOfTwoSetsAndReadLoneFiles) {
  const std::string a = dir_.file("a"), b = dir_.file("b");
  ASSERT_TRUE(succeeds(run(dir_, export_to(checkpoint("ca", 1), a, "npy,txt"))));
  ASSERT_TRUE(succeeds(run(dir_, export_to(checkpoint("cb", 2), b, "npy,txt"))));
  std::filesystem::copy_file(b + "/vectors.npy", a + "/vectors.npy",
                             std::filesystem::copy_options::overwrite_existing);
  write_file(dir_.file("pairs.tsv"), "w1\tw2\t5\nw1\tw3\t4\nw2\tw3\t3\n");
  for (const Args& reader :
       {Args{"similar", "--vectors", a, "w1"},
        Args{"eval", "--vectors", a, "--similarity", dir_.file("pairs.tsv")},
        Args{"similar", "--vectors", a + "/vectors.npy", "w1"},
        Args{"export", "--vectors", a, "--output", dir_.file("x"), "--format", "txt"}}) {
    EXPECT_TRUE(fails_cleanly(run(dir_, reader), 1,
                              "'" + a + "/vectors.npy' is not the file that '" + a +
                                  "/manifest.json' lists (another hash)"));
  }
  // The other file of the set is still read; a file the manifest does not list is refused.
  EXPECT_TRUE(succeeds(run(dir_, {"similar", "--vectors", a + "/vectors.txt", "w1"})));
  std::filesystem::copy_file(b + "/vectors.txt", a + "/vectors.bin");
  EXPECT_TRUE(fails_cleanly(run(dir_, {"similar", "--vectors", a + "/vectors.bin", "w1"}), 1,
                            "is not one of the files that"));
  // Files a user made, with no manifest, are read as they are.
  const std::string lone = dir_.file("lone");
  std::filesystem::create_directories(lone);
  std::filesystem::copy_file(b + "/vectors.npy", lone + "/vectors.npy");
  std::filesystem::copy_file(b + "/vocab.tsv", lone + "/vocab.tsv");
  EXPECT_TRUE(succeeds(run(dir_, {"similar", "--vectors", lone, "w1"})));
  EXPECT_TRUE(succeeds(run(dir_, {"similar", "--vectors", lone + "/vectors.npy", "w1"})));
}

}  // namespace
}  // namespace pagedw2v
