// The real binary on the corpus inputs people have: the same corpus as one plain file, gzip,
// zstd, standard input, several files and a directory trains the same vectors (--deterministic),
// and --save-vocab / --vocab give the vocabulary back.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

std::string quote(const std::string& s) { return "'" + s + "'"; }

/// Runs `pagedw2v train` with `corpus_args` (already quoted) and a small deterministic setting;
/// returns the exit status. `stdin_file` feeds standard input when not empty.
int train(const TempDir& dir, const std::string& corpus_args, const std::string& out,
          const std::string& extra = "", const std::string& stdin_file = "") {
  std::string cmd = std::string(PAGEDW2V_BINARY) + " train --corpus " + corpus_args + " --output " +
                    quote(dir.file(out)) +
                    " --quiet --deterministic --device cpu --dim 8 --epochs 1 --min-count 2 "
                    "--format npy,txt " +
                    extra + (stdin_file.empty() ? " < /dev/null" : " < " + quote(stdin_file)) +
                    " 2> " + quote(dir.file(out + ".err"));
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool tool(const std::string& cmd) { return std::system((cmd + " 2>/dev/null").c_str()) == 0; }

class IngestCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(testing_util::fresh_seed());
    for (int line = 0; line < 3000; ++line) {
      std::string& text = line < 1500 ? a_ : b_;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 20); i < n; ++i) {
        text += "w" + std::to_string(std::min(rng() % 800, rng() % 800)) + " ";
      }
      text += "\n";
    }
    write_file(dir_.file("plain.txt"), a_ + b_);
    ASSERT_EQ(train(dir_, quote(dir_.file("plain.txt")), "ref"), 0)
        << read_file(dir_.file("ref.err"));
    ref_ = read_file(dir_.file("ref/vectors.npy"));
    ASSERT_GT(ref_.size(), 1000u);
  }
  void expect_same(const std::string& out) {
    EXPECT_EQ(read_file(dir_.file(out + "/vocab.tsv")), read_file(dir_.file("ref/vocab.tsv")))
        << out;
    EXPECT_EQ(read_file(dir_.file(out + "/vectors.npy")), ref_) << out;
  }

  TempDir dir_;
  std::string a_, b_, ref_;
};

TEST_F(IngestCli, CompressedFilesTrainTheSameVectors) {
  ASSERT_TRUE(tool("gzip -c " + quote(dir_.file("plain.txt")) + " > " + quote(dir_.file("c.gz"))));
  ASSERT_EQ(train(dir_, quote(dir_.file("c.gz")), "gz"), 0) << read_file(dir_.file("gz.err"));
  expect_same("gz");
  if (!tool("zstd -q -c " + quote(dir_.file("plain.txt")) + " > " + quote(dir_.file("c.zst")))) {
    PAGEDW2V_SKIP_WITHOUT("no zstd tool to make the .zst file");
  }
  ASSERT_EQ(train(dir_, quote(dir_.file("c.zst")), "zst"), 0) << read_file(dir_.file("zst.err"));
  expect_same("zst");
}

TEST_F(IngestCli, StandardInputTrainsTheSameVectors) {
  ASSERT_EQ(train(dir_, "-", "stdin", "", dir_.file("plain.txt")), 0)
      << read_file(dir_.file("stdin.err"));
  expect_same("stdin");
}

TEST_F(IngestCli, SeveralFilesAndADirectoryTrainTheSameVectors) {
  write_file(dir_.file("a.txt"), a_);
  write_file(dir_.file("b.txt"), b_);
  ASSERT_EQ(train(dir_, quote(dir_.file("a.txt")) + " " + quote(dir_.file("b.txt")), "two"), 0)
      << read_file(dir_.file("two.err"));
  expect_same("two");
  ASSERT_EQ(::mkdir(dir_.file("d").c_str(), 0755), 0);
  write_file(dir_.file("d/1.txt"), a_);
  ASSERT_TRUE(tool("gzip -c " + quote(dir_.file("b.txt")) + " > " + quote(dir_.file("d/2.gz"))));
  ASSERT_EQ(train(dir_, quote(dir_.file("d")), "dir"), 0) << read_file(dir_.file("dir.err"));
  expect_same("dir");
}

TEST_F(IngestCli, SavedVocabularyTrainsTheSameVectors) {
  ASSERT_EQ(train(dir_, quote(dir_.file("plain.txt")), "save",
                  "--save-vocab " + quote(dir_.file("v.tsv"))),
            0);
  EXPECT_EQ(read_file(dir_.file("v.tsv")), read_file(dir_.file("ref/vocab.tsv")));
  ASSERT_EQ(
      train(dir_, quote(dir_.file("plain.txt")), "given", "--vocab " + quote(dir_.file("v.tsv"))),
      0)
      << read_file(dir_.file("given.err"));
  expect_same("given");
}

TEST_F(IngestCli, BadInputIsOneLineAndExitOne) {
  ASSERT_TRUE(tool("gzip -c " + quote(dir_.file("plain.txt")) + " > " + quote(dir_.file("c.gz"))));
  const std::string gz = read_file(dir_.file("c.gz"));
  write_file(dir_.file("cut.gz"), gz.substr(0, gz.size() / 2));
  ASSERT_TRUE(
      tool("bzip2 -c " + quote(dir_.file("plain.txt")) + " > " + quote(dir_.file("c.bz2"))));
  for (const char* name : {"cut.gz", "c.bz2"}) {
    EXPECT_EQ(train(dir_, quote(dir_.file(name)), "bad"), 1) << name;
    const std::string err = read_file(dir_.file("bad.err"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(name), std::string::npos) << err;
    struct stat st {};
    EXPECT_NE(::stat(dir_.file("bad/vectors.npy").c_str(), &st), 0);
  }
}

// Counting on many threads holds every distinct word once. A text of 400,000 distinct words, each
// 16 times in random order, so that every thread's chunk meets most of them: the count on 16
// threads may add its lists of words waiting for their shards' owners (about 0.8 MB a thread and
// round, two rounds) but not a table of the vocabulary a thread (about 85 bytes a word, 34 MB
// each, some 350 MB in all: 388 MB more than on one thread when each thread had its own).
TEST(IngestMemory, ACountOnManyThreadsHoldsTheVocabularyOnce) {
  TempDir dir;
  constexpr uint32_t kWords = 400000, kRepeats = 16;
  std::vector<uint32_t> tokens;
  tokens.reserve(uint64_t{kWords} * kRepeats);
  for (uint32_t r = 0; r < kRepeats; ++r) {
    for (uint32_t w = 0; w < kWords; ++w) tokens.push_back(w);
  }
  std::mt19937_64 rng(3);
  std::shuffle(tokens.begin(), tokens.end(), rng);
  std::string text;
  text.reserve(tokens.size() * 8);
  for (size_t i = 0; i < tokens.size(); ++i) {
    text += "w" + std::to_string(tokens[i]);
    text += (i % 20 == 19) ? '\n' : ' ';
  }
  write_file(dir.file("c.txt"), text);
  auto peak = [&](const char* threads) {
    std::string err;
    const uint64_t bytes = testing_util::peak_rss_of_run(
        PAGEDW2V_BINARY,
        {"bench", "ingest", "--corpus", dir.file("c.txt"), "--min-count", "1", "--repeat", "1",
         "--threads", threads, dir.file(std::string("err-") + threads)},
        &err);
    EXPECT_GT(bytes, 0u) << err;
    return bytes;
  };
  const uint64_t one = peak("1");
  const uint64_t many = peak("16");
  std::printf("peak RSS counting %zu bytes of text: %.1f MB on 1 thread, %.1f MB on 16\n",
              text.size(), one / 1e6, many / 1e6);
#if defined(__SANITIZE_ADDRESS__)
  // Shadow memory and the quarantine of freed blocks say nothing of the count: the bound is
  // checked by the build without sanitizers.
  std::printf("(under AddressSanitizer: not checked)\n");
#else
  EXPECT_LT(many, one + uint64_t{100} * 1000 * 1000);
#endif
}

}  // namespace
}  // namespace pagedw2v
