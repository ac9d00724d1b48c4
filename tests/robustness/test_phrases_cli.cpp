// `pagedw2v phrases` as people run it: every corpus input `train` takes gives the same file, the
// file trains, and a bad command line or a failing run leaves one error line and no file.
#include <gtest/gtest.h>
#include <signal.h>
#include <zlib.h>
#ifdef PAGEDW2V_HAVE_ZSTD
#include <zstd.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::exists;
using testing_util::fails_cleanly;
using testing_util::Process;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;
using Outcome = testing_util::RunResult;

constexpr double kTimeoutSeconds = 120;

/// The seed of the random inputs: PAGEDW2V_TEST_SEED when set, else fresh; printed.
uint64_t test_seed() {
  const char* v = std::getenv("PAGEDW2V_TEST_SEED");
  const uint64_t s =
      v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : testing_util::fresh_seed();
  std::printf("test seed %llu (replay with PAGEDW2V_TEST_SEED=%llu)\n",
              static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
  return s;
}

Outcome run(const TempDir& dir, const Args& args, const std::string& stdin_path = "",
            long max_file_bytes = -1) {
  testing_util::ProcessOptions options;
  options.stdin_path = stdin_path;
  options.max_file_bytes = max_file_bytes;
  Process p(args, dir.path(), options);
  return p.wait(kTimeoutSeconds);
}

::testing::AssertionResult succeeds(const Outcome& r) {
  if (r.exited && r.code == 0 && !testing_util::has_crash_report(r.err)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << testing_util::describe(r);
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

#ifdef PAGEDW2V_HAVE_ZSTD
void write_zstd(const std::string& path, const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  out.resize(n);
  write_file(path, out);
}
#endif

/// The names in `dir` other than the test's own logs.
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const std::string& n : testing_util::entries(dir)) {
    if (n.find(".stdout") == std::string::npos && n.find(".stderr") == std::string::npos) {
      names.push_back(n);
    }
  }
  return names;
}

class PhrasesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t seed = test_seed();
    std::mt19937_64 rng(seed);
    // Filler words with "new york" and "united states" among them.
    for (int line = 0; line < 2000; ++line) {
      std::string& text = line < 1000 ? a_ : b_;
      for (int i = 0, n = 3 + static_cast<int>(rng() % 15); i < n; ++i) {
        const uint64_t r = rng() % 1000;
        if (r < 5) {
          text += "new york ";
        } else if (r < 8) {
          text += "united states ";
        } else {
          text += "w" + std::to_string(std::min(rng() % 300, rng() % 300)) + " ";
        }
      }
      text += "\n";
    }
    write_file(dir_.file("a.txt"), a_);
    write_file(dir_.file("b.txt"), b_);
    write_file(dir_.file("all.txt"), a_ + b_);
    ASSERT_TRUE(succeeds(run(
        dir_, {"phrases", "--corpus", dir_.file("all.txt"), "--output", dir_.file("ref.txt")})));
    ref_ = read_file(dir_.file("ref.txt"));
  }

  TempDir dir_;
  std::string a_, b_, ref_;
};

size_t occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST_F(PhrasesCli, JoinsTheCollocationsAndKeepsTheLines) {
  EXPECT_GT(occurrences(ref_, "new_york"), 50u);
  EXPECT_GT(occurrences(ref_, "united_states"), 25u);
  EXPECT_EQ(occurrences(ref_, "new york"), 0u);
  EXPECT_EQ(occurrences(ref_, "\n"), 2000u);
  // The filler's pairs are no phrases.
  EXPECT_EQ(occurrences(ref_, "w0_w0"), 0u);
}

TEST_F(PhrasesCli, EveryInputKindGivesTheSameFile) {
  write_gzip(dir_.file("all.txt.gz"), a_ + b_);
  ASSERT_EQ(::mkdir(dir_.file("dir").c_str(), 0755), 0);
  write_file(dir_.file("dir/1.txt"), a_);
  write_gzip(dir_.file("dir/2.txt.gz"), b_);
  struct Case {
    std::string name;
    Args corpus;
    std::string stdin_path;
  };
  std::vector<Case> cases = {
      {"gzip", {dir_.file("all.txt.gz")}, ""},
      {"directory", {dir_.file("dir")}, ""},
      {"two files", {dir_.file("a.txt"), dir_.file("b.txt")}, ""},
      {"stdin", {"-"}, dir_.file("all.txt")},
      {"gzip on stdin", {"-"}, dir_.file("all.txt.gz")},
  };
#ifdef PAGEDW2V_HAVE_ZSTD
  write_zstd(dir_.file("all.txt.zst"), a_ + b_);
  cases.push_back({"zstd", {dir_.file("all.txt.zst")}, ""});
#endif
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string out = dir_.file("out" + std::to_string(k++) + ".txt");
    Args args = {"phrases", "--corpus"};
    args.insert(args.end(), c.corpus.begin(), c.corpus.end());
    args.insert(args.end(), {"--output", out, "--threads", "2"});
    ASSERT_TRUE(succeeds(run(dir_, args, c.stdin_path)));
    EXPECT_EQ(read_file(out), ref_);
  }
}

TEST_F(PhrasesCli, TheOutputTrains) {
  const Outcome r =
      run(dir_, {"train", "--corpus", dir_.file("ref.txt"), "--output", dir_.file("run"),
                 "--epochs", "1", "--dim", "8", "--device", "cpu", "--format", "txt", "--quiet"});
  ASSERT_TRUE(succeeds(r));
  const std::string vocab = read_file(dir_.file("run/vocab.tsv"));
  EXPECT_NE(vocab.find("new_york\t"), std::string::npos);
  EXPECT_NE(vocab.find("united_states\t"), std::string::npos);
}

TEST_F(PhrasesCli, ThresholdAndPassesChangeTheResult) {
  // A threshold above every score joins nothing: the text comes back as it was read, less the
  // spaces that ended its lines.
  ASSERT_TRUE(succeeds(run(dir_, {"phrases", "--corpus", dir_.file("all.txt"), "--output",
                                  dir_.file("none.txt"), "--threshold", "1e12"})));
  std::string plain;
  const std::string all = a_ + b_;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!(all[i] == ' ' && i + 1 < all.size() && all[i + 1] == '\n')) plain += all[i];
  }
  EXPECT_EQ(read_file(dir_.file("none.txt")), plain);
  // A second pass keeps every line and every phrase of the first.
  ASSERT_TRUE(succeeds(run(dir_, {"phrases", "--corpus", dir_.file("all.txt"), "--output",
                                  dir_.file("two.txt"), "--passes", "2", "--threads", "2"})));
  const std::string two = read_file(dir_.file("two.txt"));
  EXPECT_EQ(occurrences(two, "\n"), 2000u);
  EXPECT_GE(occurrences(two, "new_york"), occurrences(ref_, "new_york"));
}

TEST_F(PhrasesCli, BadFlagsAreOneLineAndExit2) {
  const std::string in = dir_.file("all.txt"), out = dir_.file("bad.txt");
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"phrases", "--corpus", in, "--output", out, "--threshold", "abc"}, "--threshold"},
      {{"phrases", "--corpus", in, "--output", out, "--threshold=-1"}, "--threshold"},
      {{"phrases", "--corpus", in, "--output", out, "--threshold", "nan"}, "--threshold"},
      {{"phrases", "--corpus", in, "--output", out, "--min-count", "0"}, "--min-count"},
      {{"phrases", "--corpus", in, "--output", out, "--passes", "0"}, "--passes"},
      {{"phrases", "--corpus", in, "--output", out, "--passes", "17"}, "--passes"},
      {{"phrases", "--corpus", in, "--output", out, "--max-pairs", "many"}, "--max-pairs"},
      {{"phrases", "--corpus", in, "--output", out, "--threads", "0"}, "--threads"},
      {{"phrases", "--corpus", in, "--output", out, "--treshold", "5"}, "--threshold"},
      {{"phrases", "--corpus", in}, "--output"},
      {{"phrases", "--output", out}, "--corpus"},
      {{"phrases", "--corpus", in, "--output", "-"}, "--output"},
      {{"phrases", "--corpus", in, "--output", out, "extra"}, "extra"},
  };
  for (const auto& [args, fragment] : cases) {
    EXPECT_TRUE(fails_cleanly(run(dir_, args), 2, fragment));
    EXPECT_FALSE(exists(out));
  }
}

TEST_F(PhrasesCli, RefusesToWriteOverAnInputOrAnExistingFile) {
  const std::string in = dir_.file("all.txt");
  const std::string before = read_file(in);
  EXPECT_TRUE(fails_cleanly(run(dir_, {"phrases", "--corpus", in, "--output", in, "--overwrite"}),
                            1, "is the input"));
  EXPECT_EQ(read_file(in), before);
  // Through another name of the same file.
  EXPECT_TRUE(fails_cleanly(
      run(dir_, {"phrases", "--corpus", dir_.path() + "/./all.txt", "--output", in, "--overwrite"}),
      1, "is the input"));
  // A file of an input directory.
  ASSERT_EQ(::mkdir(dir_.file("dir").c_str(), 0755), 0);
  write_file(dir_.file("dir/1.txt"), a_);
  EXPECT_TRUE(fails_cleanly(run(dir_, {"phrases", "--corpus", dir_.file("dir"), "--output",
                                       dir_.file("dir/1.txt"), "--overwrite"}),
                            1, "input directory"));
  EXPECT_EQ(read_file(dir_.file("dir/1.txt")), a_);
  // An existing output without --overwrite stays; with it, it is replaced.
  write_file(dir_.file("old.txt"), "old\n");
  EXPECT_TRUE(fails_cleanly(
      run(dir_, {"phrases", "--corpus", in, "--output", dir_.file("old.txt")}), 1, "--overwrite"));
  EXPECT_EQ(read_file(dir_.file("old.txt")), "old\n");
  ASSERT_TRUE(succeeds(
      run(dir_, {"phrases", "--corpus", in, "--output", dir_.file("old.txt"), "--overwrite"})));
  EXPECT_EQ(read_file(dir_.file("old.txt")), ref_);
  EXPECT_TRUE(fails_cleanly(run(dir_, {"phrases", "--corpus", in, "--output", dir_.path()}), 1,
                            "is a directory"));
}

TEST_F(PhrasesCli, AFailedRunLeavesNoFile) {
  const std::vector<std::string> before = files_in(dir_.path());
  // An input that cannot be read: nothing is written.
  write_file(dir_.file("binary.bin"), std::string(4096, '\x01'));
  EXPECT_TRUE(fails_cleanly(
      run(dir_, {"phrases", "--corpus", dir_.file("binary.bin"), "--output", dir_.file("p.txt")}),
      1, "binary"));
  EXPECT_TRUE(fails_cleanly(
      run(dir_, {"phrases", "--corpus", dir_.file("missing.txt"), "--output", dir_.file("p.txt")}),
      1, "missing.txt"));
  EXPECT_FALSE(exists(dir_.file("p.txt")));
  // A directory that is not there: refused before the corpus is read.
  EXPECT_TRUE(fails_cleanly(run(dir_, {"phrases", "--corpus", dir_.file("all.txt"), "--output",
                                       dir_.file("nowhere/p.txt")}),
                            1, "is not a directory"));
  // A write that fails half way (a file size limit, as a full disk): no file, no temporary.
  EXPECT_TRUE(fails_cleanly(
      run(dir_,
          {"phrases", "--corpus", dir_.file("all.txt"), "--output", dir_.file("p.txt"), "--quiet"},
          "", 4096),
      1, "File too large"));
  EXPECT_FALSE(exists(dir_.file("p.txt")));
  // With --overwrite, a failed run keeps the old file.
  write_file(dir_.file("old.txt"), "old\n");
  EXPECT_TRUE(fails_cleanly(run(dir_,
                                {"phrases", "--corpus", dir_.file("all.txt"), "--output",
                                 dir_.file("old.txt"), "--overwrite", "--quiet"},
                                "", 4096),
                            1));
  EXPECT_EQ(read_file(dir_.file("old.txt")), "old\n");
  std::vector<std::string> after = files_in(dir_.path());
  std::vector<std::string> want = before;
  want.push_back("binary.bin");
  want.push_back("old.txt");
  std::sort(after.begin(), after.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(after, want);
}

// SIGINT or SIGTERM while the file is written: exit 128 + signal, no file, no temporary.
void stop_while_writing(int sig) {
  TempDir dir;
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  // About 40 MB, so that writing it lasts long enough to be interrupted.
  std::string text;
  for (int line = 0; line < 400000; ++line) {
    for (int i = 0; i < 12; ++i) text += "w" + std::to_string(rng() % 5000) + " ";
    text += "new york\n";
  }
  write_file(dir.file("big.txt"), text);
  text.clear();
  testing_util::ProcessOptions options;
  Process p(
      {"phrases", "--corpus", dir.file("big.txt"), "--output", dir.file("out.txt"), "--quiet"},
      dir.path(), options);
  const std::string temp_suffix = ".tmp-" + std::to_string(p.pid());
  auto writing = [&] {
    for (const std::string& n : testing_util::entries(dir.path())) {
      if (n.rfind("out.txt.", 0) == 0 && n.find(temp_suffix) != std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(testing_util::wait_until(p, writing, kTimeoutSeconds))
      << "the run ended before its temporary file was seen";
  p.send(sig);
  const Outcome r = p.wait(kTimeoutSeconds);
  EXPECT_TRUE(fails_cleanly(r, 128 + sig, "was not written"));
  std::vector<std::string> left = files_in(dir.path());
  EXPECT_EQ(left, std::vector<std::string>{"big.txt"});
}

TEST(PhrasesStop, SigintWhileWritingLeavesNoFile) { stop_while_writing(SIGINT); }
TEST(PhrasesStop, SigtermWhileWritingLeavesNoFile) { stop_while_writing(SIGTERM); }

// `train --phrases`: the phrases joined into the text as it is read, nothing written but the
// phrase table; the run equals training on the file `phrases` writes.
class TrainPhrasesCli : public PhrasesCli {
 protected:
  /// A deterministic CPU run on `corpus` into `out`, with `extra` flags.
  Outcome train(const Args& corpus, const std::string& out, const Args& extra = {},
                const std::string& stdin_path = "") {
    Args args = {"train", "--corpus"};
    args.insert(args.end(), corpus.begin(), corpus.end());
    args.insert(args.end(), {"--output", out, "--epochs", "2", "--dim", "8", "--device", "cpu",
                             "--deterministic", "--format", "txt", "--quiet"});
    args.insert(args.end(), extra.begin(), extra.end());
    return run(dir_, args, stdin_path);
  }
  /// What a run's vectors and vocabulary hold, to compare two runs by.
  std::string result(const std::string& out) {
    return read_file(out + "/vocab.tsv") + read_file(out + "/vectors.txt");
  }
};

TEST_F(TrainPhrasesCli, JoinsTrainsAndKeepsThePhrases) {
  ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("run"), {"--phrases", "1"})));
  // The joined words have vectors.
  const std::string vectors = read_file(dir_.file("run/vectors.txt"));
  EXPECT_NE(vectors.find("\nnew_york "), std::string::npos);
  EXPECT_NE(vectors.find("\nunited_states "), std::string::npos);
  EXPECT_EQ(vectors.find("\nnew "), std::string::npos);
  const std::string table = read_file(dir_.file("run/phrases.tsv"));
  EXPECT_NE(table.find("\n1\tnew\tyork\t"), std::string::npos) << table;
  const std::string record = read_file(dir_.file("run/run.json"));
  EXPECT_NE(record.find("\"phrases\": 1,"), std::string::npos);
  EXPECT_NE(record.find("\"joined_tokens\""), std::string::npos);
  EXPECT_NE(record.find("\"phrases.tsv\""), std::string::npos);
  // The input is left as it was, and no joined copy is written.
  EXPECT_EQ(read_file(dir_.file("all.txt")), a_ + b_);
  std::vector<std::string> run_files = files_in(dir_.file("run"));
  std::sort(run_files.begin(), run_files.end());
  EXPECT_EQ(run_files, (std::vector<std::string>{"checkpoints", "manifest.json", "phrases.tsv",
                                                 "run.json", "vectors.txt", "vocab.tsv"}));
  // A run without phrases in its place takes the table away with the rest of the old set.
  ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("run"), {"--overwrite"})));
  EXPECT_FALSE(exists(dir_.file("run/phrases.tsv")));
  EXPECT_EQ(read_file(dir_.file("run/vectors.txt")).find("\nnew_york "), std::string::npos);
}

TEST_F(TrainPhrasesCli, EqualsTrainingOnWhatPhrasesWrites) {
  struct Case {
    Args phrases_flags, train_flags;
  };
  const std::vector<Case> cases = {
      {{}, {"--phrases", "1"}},
      {{"--passes", "2", "--threshold", "20", "--min-count", "3"},
       {"--phrases", "2", "--phrase-threshold", "20", "--phrase-min-count", "3"}},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(k);
    const std::string n = std::to_string(k++);
    Args args = {"phrases",          "--corpus",       dir_.file("all.txt"), "--output",
                 dir_.file("p" + n), "--save-phrases", dir_.file("s" + n),   "--quiet"};
    args.insert(args.end(), c.phrases_flags.begin(), c.phrases_flags.end());
    ASSERT_TRUE(succeeds(run(dir_, args)));
    ASSERT_TRUE(succeeds(train({dir_.file("p" + n)}, dir_.file("file" + n))));
    ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("joined" + n), c.train_flags)));
    EXPECT_EQ(result(dir_.file("joined" + n)), result(dir_.file("file" + n)));
    EXPECT_EQ(read_file(dir_.file("joined" + n + "/phrases.tsv")), read_file(dir_.file("s" + n)));
    // The saved table joins as the learned one did, in train and in `phrases`.
    ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("from" + n),
                               {"--phrases-from", dir_.file("joined" + n + "/phrases.tsv")})));
    EXPECT_EQ(result(dir_.file("from" + n)), result(dir_.file("file" + n)));
    ASSERT_TRUE(succeeds(run(dir_, {"phrases", "--corpus", dir_.file("all.txt"), "--output",
                                    dir_.file("q" + n), "--phrases-from", dir_.file("s" + n)})));
    EXPECT_EQ(read_file(dir_.file("q" + n)), read_file(dir_.file("p" + n)));
  }
}

TEST_F(TrainPhrasesCli, EveryInputKindAndCorpusPathTrainsTheSame) {
  ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("ref"), {"--phrases", "2"})));
  const std::string want = result(dir_.file("ref"));
  write_gzip(dir_.file("all.txt.gz"), a_ + b_);
  ASSERT_EQ(::mkdir(dir_.file("dir").c_str(), 0755), 0);
  write_file(dir_.file("dir/1.txt"), a_);
  write_gzip(dir_.file("dir/2.txt.gz"), b_);
  struct Case {
    std::string name;
    Args corpus;
    std::string stdin_path;
    Args extra;
  };
  std::vector<Case> cases = {
      {"gzip", {dir_.file("all.txt.gz")}, "", {}},
      {"directory", {dir_.file("dir")}, "", {}},
      {"two files", {dir_.file("a.txt"), dir_.file("b.txt")}, "", {}},
      {"stdin", {"-"}, dir_.file("all.txt"), {}},
      {"gzip on stdin", {"-"}, dir_.file("all.txt.gz"), {}},
      // The encoded corpus streamed a slice at a time, written to a cache and read back.
      {"streamed", {dir_.file("all.txt")}, "", {"--max-corpus-memory", "64KiB"}},
      {"streamed, cached",
       {dir_.file("all.txt")},
       "",
       {"--max-corpus-memory", "64KiB", "--cache-dir", dir_.file("cache")}},
      {"streamed, from the cache",
       {dir_.file("all.txt")},
       "",
       {"--max-corpus-memory", "64KiB", "--cache-dir", dir_.file("cache")}},
      // A vocabulary read from a file (the joined words among its words).
      {"--vocab", {dir_.file("all.txt")}, "", {"--vocab", dir_.file("ref/vocab.tsv")}},
  };
#ifdef PAGEDW2V_HAVE_ZSTD
  write_zstd(dir_.file("all.txt.zst"), a_ + b_);
  cases.push_back({"zstd", {dir_.file("all.txt.zst")}, "", {}});
#endif
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string out = dir_.file("out" + std::to_string(k++));
    Args extra = {"--phrases", "2"};
    extra.insert(extra.end(), c.extra.begin(), c.extra.end());
    ASSERT_TRUE(succeeds(train(c.corpus, out, extra, c.stdin_path)));
    EXPECT_EQ(result(out), want);
  }
  // One cache file: the same phrases give the same encoding. Other phrases (here none) make
  // another.
  EXPECT_EQ(files_in(dir_.file("cache")).size(), 1u);
  ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("other"),
                             {"--phrases", "1", "--phrase-threshold", "1e12", "--max-corpus-memory",
                              "64KiB", "--cache-dir", dir_.file("cache")})));
  EXPECT_EQ(files_in(dir_.file("cache")).size(), 2u);
  EXPECT_NE(result(dir_.file("other")), want);
}

TEST_F(TrainPhrasesCli, ResumesExactlyAndKeepsThePhraseSettings) {
  const Args phrases = {"--phrases", "2", "--phrase-threshold", "50"};
  ASSERT_TRUE(succeeds(train({dir_.file("all.txt")}, dir_.file("whole"), phrases)));
  // From the first epoch's checkpoint of the same run: the same end, the phrases rebuilt from
  // the checkpoint's settings.
  ASSERT_TRUE(succeeds(run(dir_, {"train", "--output", dir_.file("resumed"), "--resume",
                                  dir_.file("whole/checkpoints/epoch-1.h5"), "--quiet"})));
  EXPECT_EQ(result(dir_.file("resumed")), result(dir_.file("whole")));
  EXPECT_EQ(read_file(dir_.file("resumed/phrases.tsv")), read_file(dir_.file("whole/phrases.tsv")));
  const std::string ck = dir_.file("whole/checkpoints/epoch-1.h5");
  EXPECT_TRUE(fails_cleanly(run(dir_, {"train", "--output", dir_.file("r2"), "--resume", ck,
                                       "--phrase-threshold", "60", "--quiet"}),
                            2, "--phrase-threshold cannot change"));
  EXPECT_TRUE(fails_cleanly(run(dir_, {"train", "--output", dir_.file("r3"), "--resume", ck,
                                       "--phrases", "0", "--quiet"}),
                            2, "--phrases cannot change"));
  // Another corpus is refused.
  EXPECT_TRUE(fails_cleanly(run(dir_, {"train", "--output", dir_.file("r4"), "--resume", ck,
                                       "--corpus", dir_.file("b.txt"), "--quiet"}),
                            1, "corpus"));
}

TEST_F(TrainPhrasesCli, BadPhraseFlagsAndFilesAreOneLine) {
  const std::string in = dir_.file("all.txt"), out = dir_.file("bad");
  const Args base = {"train", "--corpus", in, "--output", out, "--device", "cpu", "--quiet"};
  auto plus = [&](const Args& extra) {
    Args a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  write_file(dir_.file("bad.tsv"), "1\tnew\tyork\t5\t1e3\n3\tunited\tstates\t5\t1e3\n");
  write_file(dir_.file("short.tsv"), "1\tnew york\t5\n");
  const std::vector<std::tuple<Args, int, std::string>> cases = {
      {plus({"--phrases", "17"}), 2, "--phrases"},
      {plus({"--phrases", "-1"}), 2, "--phrases"},
      {plus({"--phrase-threshold", "50"}), 2, "--phrase-threshold applies to --phrases"},
      {plus({"--phrase-min-count", "2"}), 2, "--phrase-min-count applies to --phrases"},
      {plus({"--phrases", "1", "--phrase-threshold", "x"}), 2, "--phrase-threshold"},
      {plus({"--phrases", "1", "--phrase-min-count", "0"}), 2, "--phrase-min-count"},
      {plus({"--phrases", "1", "--phrases-from", dir_.file("bad.tsv")}), 2, "give one"},
      {plus({"--phrases-from", dir_.file("missing.tsv")}), 1, "missing.tsv"},
      {plus({"--phrases-from", dir_.file("bad.tsv")}), 1, "line 2: pass 3 out of order"},
      {plus({"--phrases-from", dir_.file("short.tsv")}), 1, "line 1"},
      {{"phrases", "--corpus", in, "--output", dir_.file("x.txt"), "--phrases-from",
        dir_.file("bad.tsv"), "--threshold", "5"},
       2,
       "--threshold"},
      {{"phrases", "--corpus", in, "--output", dir_.file("x.txt"), "--phrases-from",
        dir_.file("short.tsv")},
       1,
       "line 1"},
  };
  for (const auto& [args, code, fragment] : cases) {
    EXPECT_TRUE(fails_cleanly(run(dir_, args), code, fragment));
    EXPECT_FALSE(exists(out + "/vocab.tsv"));
    EXPECT_FALSE(exists(dir_.file("x.txt")));
  }
}

}  // namespace
}  // namespace pagedw2v
