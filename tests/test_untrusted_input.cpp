// Values from files that a run cannot trust: checkpoint positions and words, NaN rows, text that
// is not UTF-8; and worker threads whose start or work fails.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/worker_threads.hpp"
#include "eval/analogy.hpp"
#include "eval/neighbors.hpp"
#include "eval/similarity.hpp"
#include "io/hdf5_io.hpp"
#include "test_util.hpp"
#include "text/tokenizer.hpp"
#include "text/utf8.hpp"
#include "train/checkpoint.hpp"
#include "train/run_check.hpp"

namespace pagedw2v {
namespace {

using testing_util::expect_error_naming;
using testing_util::TempDir;
using testing_util::write_file;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Worker threads

TEST(WorkerThreads, RunEveryShareOnce) {
  std::vector<std::atomic<int>> calls(6);
  run_workers(6, [&](uint32_t t) { ++calls[t]; });
  for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
}

TEST(WorkerThreads, AFailedStartJoinsTheStartedAndRunsNothing) {
  for (const uint32_t fail_at : {1u, 3u, 7u}) {
    SCOPED_TRACE(fail_at);
    std::atomic<int> started{0};
    std::atomic<int> ran{0};
    const ThreadStarter start = [&](std::function<void()> body) {
      if (++started == static_cast<int>(fail_at)) {
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      }
      return std::thread(std::move(body));
    };
    expect_error_naming(
        [&] {
          run_workers(
              8, [&](uint32_t) { ++ran; }, start);
        },
        "cannot start thread " + std::to_string(fail_at + 1) + " of 8: ");
    EXPECT_EQ(ran.load(), 0);
  }
}

TEST(WorkerThreads, OutOfMemoryInAWorkerIsAnError) {
  std::atomic<int> finished{0};
  expect_error_naming(
      [&] {
        run_workers(4, [&](uint32_t t) {
          if (t == 2) throw std::bad_alloc();
          ++finished;
        });
      },
      "not enough memory in a worker thread");
  EXPECT_EQ(finished.load(), 3);
  expect_error_naming(
      [&] {
        run_workers(3, [&](uint32_t t) {
          if (t == 0) throw Error("mine");
        });
      },
      "mine");
}

// ---------------------------------------------------------------------------------------------
// UTF-8

TEST(Utf8, ValidTextIsKeptAndBadBytesAreReplaced) {
  const std::string good = "caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80 plain";
  EXPECT_TRUE(is_valid_utf8(good));
  EXPECT_EQ(valid_utf8(good), good);
  const std::string replacement = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> bad[] = {
      {"a\xFF"
       "b",
       "a" + replacement + "b"},
      {"\xC0\xAF", replacement + replacement},                                      // overlong '/'
      {"\xED\xA0\x80", replacement + replacement + replacement},                    // surrogate
      {"\xF4\x90\x80\x80", replacement + replacement + replacement + replacement},  // > U+10FFFF
      {"end\xE2\x82", "end" + replacement + replacement},                           // cut short
  };
  for (const auto& [in, out] : bad) {
    EXPECT_FALSE(is_valid_utf8(in)) << in;
    EXPECT_EQ(valid_utf8(in), out);
    EXPECT_TRUE(is_valid_utf8(valid_utf8(in)));
  }
}

// ---------------------------------------------------------------------------------------------
// NaN and infinite rows

LoadedEmbeddings embeddings_with_bad_rows() {
  LoadedEmbeddings e;
  e.words = {"a", "b", "c", "d", "e"};
  e.dim = 2;
  e.rows = 5;
  e.vectors = {1, 0, 0.9f, 0.1f, kNaN, 1, std::numeric_limits<float>::infinity(), 0, -1, 0.2f};
  return e;
}

TEST(Utf8, TerminalSafeShowsWhatWouldSteerATerminal) {
  EXPECT_EQ(terminal_safe("plain w\xc3\xb6rd \xe8\xaa\x9e"), "plain w\xc3\xb6rd \xe8\xaa\x9e");
  EXPECT_EQ(terminal_safe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(terminal_safe(std::string("a\0b\x07\x7f", 5)), "a\\x00b\\x07\\x7f");
  // C1 controls (CSI is U+009B) and bytes that are not UTF-8 (a raw 0x9B is CSI to some
  // terminals) become one \xNN a byte; U+00A0 and on are kept.
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J \x9b \xc2\xa0"),
            "\\xc2\\x9b2J \\x9b \xc2\xa0");
  EXPECT_EQ(terminal_safe("tab\there\nline"), "tab\\x09here\\x0aline");
}

TEST(Words, UnstorableWordsAreNamed) {
  EXPECT_EQ(unstorable_word("word"), nullptr);
  EXPECT_EQ(unstorable_word("\x1b[31m"), nullptr);  // odd, but one word in every format
  EXPECT_STREQ(unstorable_word(""), "is empty");
  EXPECT_STREQ(unstorable_word("two\nlines"), "holds a line break");
  EXPECT_STREQ(unstorable_word(std::string("a\0b", 3)), "holds a NUL byte");
  for (const char* w : {"a b", "a\tb", "a\rb", "a\vb", "a\fb"}) {
    EXPECT_STREQ(unstorable_word(w), "holds a space, tab, CR, VT or FF") << w;
  }
}

TEST(NonFiniteRows, SimilarSkipsThem) {
  const LoadedEmbeddings e = embeddings_with_bad_rows();
  EXPECT_EQ(nonfinite_rows(e, e.rows), 2u);
  const auto near = nearest(e, "a", 10);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0].first, "b");
  EXPECT_EQ(near[1].first, "e");
  for (const auto& [word, cosine] : near) EXPECT_TRUE(std::isfinite(cosine)) << word;
  expect_error_naming([&] { nearest(e, "c", 3); }, "word 'c' holds NaN or infinite values");
}

TEST(NonFiniteRows, SimilarityLeavesTheirPairsOut) {
  const TempDir dir;
  const LoadedEmbeddings e = embeddings_with_bad_rows();
  write_file(dir.file("p.tsv"), "a\tb\t9\na\te\t1\nb\te\t2\na\tc\t5\nd\te\t3\n");
  const SimilarityReport r = evaluate_similarity(e, dir.file("p.tsv"));
  EXPECT_EQ(r.nonfinite_rows, 2u);
  EXPECT_EQ(r.pairs, 3u);
  EXPECT_EQ(r.oov, 2u);
  EXPECT_TRUE(std::isfinite(r.spearman));
  EXPECT_DOUBLE_EQ(r.spearman, 1.0);
}

TEST(NonFiniteRows, SpearmanIgnoresNaNPairs) {
  const std::vector<double> gold = {1, 2, 3, 4, 5};
  const std::vector<double> model = {0.1, std::nan(""), 0.3, 0.4, std::nan("")};
  EXPECT_DOUBLE_EQ(spearman_correlation(gold, model), 1.0);
  EXPECT_TRUE(std::isnan(spearman_correlation({1, 2}, {std::nan(""), std::nan("")})));
}

TEST(NonFiniteRows, AnalogiesCountTheirWordsAsOutOfVocabulary) {
  const TempDir dir;
  LoadedEmbeddings e = embeddings_with_bad_rows();
  write_file(dir.file("q.txt"), ": s\na b e d\na b c e\n");
  const AnalogyReport r = evaluate_analogies(e, dir.file("q.txt"), 0);
  EXPECT_EQ(r.nonfinite_rows, 2u);
  EXPECT_EQ(r.questions, 2u);
  EXPECT_EQ(r.oov, 2u);
}

TEST(RunOutcome, NothingTrainedWarnsAndNaNVectorsAreErrors) {
  Model m{HostTable(3, 2, "in", ""), HostTable(3, 2, "out", "")};
  for (int i = 0; i < 6; ++i) m.input.data()[i] = 0.5f;
  EXPECT_NO_THROW(check_run_outcome(10, m));
  EXPECT_NO_THROW(check_run_outcome(0, m));
  EXPECT_EQ(untrained_warning(10), "");
  EXPECT_NE(untrained_warning(0).find("no (word, context) example"), std::string::npos);
  EXPECT_EQ(untrained_warning(0).find('\n'), std::string::npos);
  m.input.data()[3] = kNaN;
  expect_error_naming([&] { check_run_outcome(10, m); }, "1 of 3 vectors hold NaN");
}

// ---------------------------------------------------------------------------------------------
// Checkpoint positions and words

struct Doctored {
  std::string attribute;
  int64_t value;
  std::string fragment;
};

std::string small_checkpoint(const TempDir& dir, const std::vector<std::string>& words,
                             const TrainPosition& pos = {1, 2, 150}, const Config& base = {}) {
  Config c = base;
  c.dim = 2;
  c.epochs = 3;
  std::vector<uint64_t> counts;
  for (size_t i = 0; i < words.size(); ++i) counts.push_back(10 - i);
  const Vocab vocab = Vocab::from_words(words, counts);
  Model m{HostTable(words.size(), 2, "in", ""), HostTable(words.size(), 2, "out", "")};
  for (size_t i = 0; i < words.size() * 2; ++i) {
    m.input.data()[i] = 0.25f * static_cast<float>(i);
    m.output.data()[i] = -0.5f * static_cast<float>(i);
  }
  save_checkpoint(dir.file("c.h5"), c, vocab, m, pos, CorpusFingerprint{100, 10, 7}, 0.01f);
  return dir.file("c.h5");
}

void set_int_attribute(const std::string& path, const std::string& name, int64_t value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attr = H5Aopen_by_name(file, "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &value), 0);
  H5Aclose(attr);
  H5Fclose(file);
  seal_h5_file(path);
}

TEST(CheckpointPositions, OutOfRangeValuesAreRefused) {
  const TempDir dir;
  EXPECT_NO_THROW(load_checkpoint(small_checkpoint(dir, {"a", "b", "c"})));
  const Doctored cases[] = {
      {"epoch", (int64_t{1} << 32) + 1, "'epoch' is 4294967297, outside 0..3"},
      {"epoch", 4, "'epoch' is 4, outside 0..3"},
      {"epoch", -1, "'epoch' is -1"},
      {"block", int64_t{1} << 62, "'block' is 4611686018427387904, outside 0..10"},
      {"words_done", int64_t{1} << 62, "'words_done' is 4611686018427387904, outside 0..200"},
      {"corpus_sentences", 101, "'corpus_sentences' is 101, outside 0..100"},
      {"corpus_words", -5, "'corpus_words' is -5"},
  };
  for (const Doctored& d : cases) {
    SCOPED_TRACE(d.attribute + " = " + std::to_string(d.value));
    const std::string path = small_checkpoint(dir, {"a", "b", "c"});
    set_int_attribute(path, d.attribute, d.value);
    expect_error_naming([&] { load_checkpoint(path); }, "is damaged: " + d.fragment);
  }
  // At the end of the last epoch a run has no block left.
  const std::string done = small_checkpoint(dir, {"a", "b"}, {3, 1, 150});
  expect_error_naming([&] { load_checkpoint(done); }, "'block' is 1, outside 0..0");
  // Inside the epoch, the block must exist in the corpus the run resumes on; at its end, the
  // run resumes at the next epoch.
  const TrainPosition inside = resume_position({1, 4, 40}, 5, "c.h5");
  EXPECT_EQ(inside.epoch, 1u);
  EXPECT_EQ(inside.block, 4u);
  EXPECT_EQ(inside.words_done, 40u);
  EXPECT_EQ(resume_position({2, 0, 50}, 5, "c.h5").block, 0u);
  const TrainPosition end = resume_position({1, 5, 50}, 5, "c.h5");
  EXPECT_EQ(end.epoch, 2u);
  EXPECT_EQ(end.block, 0u);
  EXPECT_EQ(end.words_done, 50u);
  expect_error_naming(
      [] {
        resume_position({1, 6, 0}, 5, "c.h5");
      },
      "checkpoint 'c.h5' is damaged: it stands at block 6 of an epoch of 5 blocks");
}

TEST(CheckpointPositions, CountsBeyondTheCorpusAreRefused) {
  const TempDir dir;
  const std::string path = small_checkpoint(dir, {"a", "b", "c"}, {1, 2, 30});
  EXPECT_NO_THROW(load_checkpoint(path));
  set_int_attribute(path, "corpus_words", 26);  // the counts are 10 + 9 + 8
  expect_error_naming([&] { load_checkpoint(path); },
                      "its word counts add up to more than the 26 words of its corpus");
}

// A changed byte can make the recorded optimizer one that the recorded hyperparameters do not
// apply to: the checkpoint is damaged (a runtime error, exit 1), not the command line wrong.
TEST(CheckpointPositions, SettingsThatDoNotHoldTogetherAreRefused) {
  const TempDir dir;
  Config sgd_with_eps;
  sgd_with_eps.eps = 1e-6f;
  const std::string path = small_checkpoint(dir, {"a", "b", "c"}, {1, 2, 150}, sgd_with_eps);
  expect_error_naming([&] { load_checkpoint(path); },
                      "is damaged: --eps does not apply to --optimizer sgd");
  Config sgd_with_lr;
  sgd_with_lr.lr = 0.01f;
  const std::string lr = small_checkpoint(dir, {"a", "b", "c"}, {1, 2, 150}, sgd_with_lr);
  expect_error_naming([&] { load_checkpoint(lr); }, "is damaged: --lr applies to the other");
}

TEST(CheckpointPositions, WordsThatExportsCannotHoldAreRefused) {
  const TempDir dir;
  for (const std::string& bad : {std::string(""), std::string("a\nb"), std::string("x y"),
                                 std::string("t\tab"), std::string(101, 'w')}) {
    SCOPED_TRACE(bad);
    const std::string path = small_checkpoint(dir, {"fine", bad, "also"});
    expect_error_naming([&] { load_checkpoint(path); },
                        "is damaged: word 1 is empty, too long or holds whitespace");
  }
}

}  // namespace
}  // namespace pagedw2v
