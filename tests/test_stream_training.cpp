#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/string_index.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

using testing_util::peak_rss_of_run;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

/// Lines of 1..60 words from a vocabulary of 300 with a long tail, some lines longer than a
/// sentence may be.
std::string corpus_text(uint64_t seed, size_t words) {
  std::mt19937_64 rng(seed);
  std::string t;
  size_t line = 0, len = 1 + rng() % 60;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t r = rng() % 1000;
    t += "w" + std::to_string(r * r % 300);
    if (++line == len) {
      t += "\n";
      line = 0;
      len = rng() % 50 == 0 ? 1500 : 1 + rng() % 60;
    } else {
      t += " ";
    }
  }
  return t;
}

Config config(const TempDir& dir, const std::string& out) {
  Config c = testing_util::small_cpu_config(dir, out, 8, 2);
  c.min_count = 2;
  c.sample = 1e-3;
  return c;
}

/// 64 KiB of encoded corpus: a few blocks at a time for a corpus of 120 k words.
constexpr uint64_t kSmallCap = 64 << 10;

class StreamedRun : public ::testing::TestWithParam<std::pair<ModelKind, OptimizerKind>> {};

// The same blocks in the same order: the vectors are the same bits, whether the corpus is held
// whole, streamed from the text, or streamed from the encoded cache of an earlier run.
TEST_P(StreamedRun, IsBitIdenticalToTheWholeCorpusRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(testing_util::fresh_seed(), 120000));
  Config whole = config(dir, "whole");
  whole.model = GetParam().first;
  whole.optimizer = GetParam().second;
  const TrainSummary a = run_training(whole);
  const std::string expected = read_file(dir.file("whole/vectors.npy"));
  ASSERT_FALSE(expected.empty());

  Config streamed = whole;
  streamed.max_corpus_memory = kSmallCap;
  streamed.given.insert("max-corpus-memory");
  streamed.output = dir.file("streamed");
  const TrainSummary b = run_training(streamed);
  EXPECT_EQ(b.words, a.words);
  EXPECT_EQ(read_file(dir.file("streamed/vectors.npy")), expected);

  streamed.cache_dir = dir.file("cache");
  for (const char* out : {"cached1", "cached2"}) {
    streamed.output = dir.file(out);
    run_training(streamed);
    EXPECT_EQ(read_file(dir.file(std::string(out) + "/vectors.npy")), expected) << out;
    const std::vector<std::string> files = testing_util::entries(dir.file("cache"));
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].rfind("encoded-", 0), 0u) << files[0];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, StreamedRun,
    ::testing::Values(std::make_pair(ModelKind::kSkipGram, OptimizerKind::kSgd),
                      std::make_pair(ModelKind::kCbow, OptimizerKind::kSgd),
                      std::make_pair(ModelKind::kSkipGram, OptimizerKind::kAdam)));

// Stopped in its first pass (the corpus's fingerprint is not known yet), a streamed run still
// writes a checkpoint; resuming it, streamed or whole, finishes with the uninterrupted run's bits.
TEST(StreamedRun, InterruptedInTheFirstPassResumesExactly) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(testing_util::fresh_seed(), 120000));
  Config whole = config(dir, "whole");
  whole.optimizer = OptimizerKind::kAdam;
  run_training(whole);
  Config streamed = whole;
  streamed.max_corpus_memory = kSmallCap;
  streamed.output = dir.file("stopped");
  std::atomic<int> stop{SIGINT};
  EXPECT_THROW(run_training(streamed, nullptr, &stop), Interrupted);
  const std::string ck = dir.file("stopped/checkpoints/latest.h5");
  const Checkpoint loaded = load_checkpoint(ck);
  EXPECT_EQ(loaded.position.epoch, 0u);
  EXPECT_GT(loaded.position.block, 0u);

  for (const bool stream_again : {true, false}) {
    Config resumed = testing_util::small_cpu_config(dir, stream_again ? "r1" : "r2", 0, 0, ck);
    if (stream_again) {
      resumed.max_corpus_memory = kSmallCap;
      resumed.cache_dir = dir.file("cache");
    }
    const TrainSummary s = run_training(resumed);
    EXPECT_EQ(s.words, 2 * s.words_per_epoch);
    EXPECT_EQ(read_file(resumed.output + "/vectors.npy"), read_file(dir.file("whole/vectors.npy")))
        << "streamed again: " << stream_again;
  }
}

// Checkpoints of versions that hashed the corpus whole (before streaming) still resume.
TEST(StreamedRun, CheckpointsWithTheEarlierFingerprintResume) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(testing_util::fresh_seed(), 40000));
  Config c = config(dir, "a");
  run_training(c);
  const Checkpoint ck = load_checkpoint(dir.file("a/checkpoints/epoch-1.h5"));
  const TrainingSet set = make_training_set(read_file(dir.file("corpus.txt")), c);
  auto whole_hash = [](const void* p, size_t n) {
    return detail::hash_bytes(std::string_view(static_cast<const char*>(p), n));
  };
  CorpusFingerprint earlier{set.corpus.size(), set.corpus.sentences(), 0};
  earlier.hash =
      whole_hash(set.corpus.tokens.data(), set.corpus.tokens.size() * 4) ^
      (whole_hash(set.corpus.sentence_starts.data(), set.corpus.sentence_starts.size() * 8) *
       0x9E3779B97F4A7C15ull);
  ASSERT_FALSE(earlier == ck.corpus);
  const std::string old = dir.file("old.h5");
  save_checkpoint(old, ck.config, ck.vocab, ck.model, ck.position, earlier, ck.lr);
  run_training(testing_util::small_cpu_config(dir, "b", 0, 0, old));
  EXPECT_EQ(read_file(dir.file("b/vectors.npy")), read_file(dir.file("a/vectors.npy")));
  // A different earlier hash is still another corpus.
  earlier.hash ^= 1;
  save_checkpoint(old, ck.config, ck.vocab, ck.model, ck.position, earlier, ck.lr);
  EXPECT_THROW(run_training(testing_util::small_cpu_config(dir, "c", 0, 0, old)), Error);
}

TEST(StreamedRun, ResumingOnAnotherCorpusIsRefused) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(1, 60000));
  Config c = config(dir, "a");
  c.epochs = 1;
  run_training(c);
  // The same words and counts, lines in another order: only the encoded corpus tells them apart.
  std::vector<std::string> lines;
  std::istringstream in(read_file(dir.file("corpus.txt")));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string text;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) text += *it + "\n";
  write_file(dir.file("corpus.txt"), text);
  Config resumed =
      testing_util::small_cpu_config(dir, "b", 0, 0, dir.file("a/checkpoints/latest.h5"));
  resumed.epochs = 2;
  resumed.given.insert("epochs");
  resumed.max_corpus_memory = kSmallCap;
  try {
    run_training(resumed);
    FAIL() << "resumed on another corpus";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not the corpus"), std::string::npos) << e.what();
  }
}

// A given vocabulary does not say how many words the corpus has: a first pass counts them.
TEST(StreamedRun, WithAGivenVocabularyIsTheWholeRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(testing_util::fresh_seed(), 80000));
  Config whole = config(dir, "whole");
  whole.save_vocab = dir.file("vocab.tsv");
  run_training(whole);
  Config streamed = config(dir, "streamed");
  streamed.vocab_file = dir.file("vocab.tsv");
  streamed.max_corpus_memory = kSmallCap;
  run_training(streamed);
  EXPECT_EQ(read_file(dir.file("streamed/vectors.npy")), read_file(dir.file("whole/vectors.npy")));
}

// The host-memory rule (docs/usage.md): a streamed run holds its tables and optimizer state, at
// most
// --max-corpus-memory of encoded corpus, and a fixed overhead; not the corpus, not its text.
TEST(StreamedRun, ACorpusLargerThanTheMemoryCapTrainsWithinTheRule) {
  TempDir dir;
  // 160 MB of text: 64 words of 80 bytes (few tokens to train, many bytes to read).
  std::vector<std::string> words;
  std::string vocab;
  for (int i = 0; i < 64; ++i) {
    words.push_back("w" + std::to_string(i) + std::string(79 - std::to_string(i).size(), 'x'));
  }
  const size_t lines = 100000, per_line = 20;
  std::vector<uint64_t> counts(words.size(), 0);
  {
    std::ofstream out(dir.file("corpus.txt"), std::ios::binary);
    std::mt19937_64 rng(testing_util::fresh_seed());
    std::string line;
    for (size_t l = 0; l < lines; ++l) {
      line.clear();
      for (size_t i = 0; i < per_line; ++i) {
        const size_t w = rng() % words.size();
        ++counts[w];
        line += words[w];
        line += i + 1 == per_line ? '\n' : ' ';
      }
      out << line;
    }
  }
  for (size_t i = 0; i < words.size(); ++i)
    vocab += words[i] + "\t" + std::to_string(counts[i]) + "\n";
  write_file(dir.file("vocab.tsv"), vocab);
  const uint64_t text_bytes = lines * per_line * 81;
  const uint64_t encoded_bytes = lines * per_line * 4 + lines * 8;  // 8.8 MB
  const uint64_t cap = uint64_t{2} << 20;
  ASSERT_GT(encoded_bytes, 4 * cap);

  // The rule: tables + state (64 words: nothing), the cap, and the process's own overhead
  // (code, libraries, thread stacks, the vocabulary): 48 MiB is several times what it needs.
  const uint64_t fixed = uint64_t{48} << 20;
  const uint64_t rule = cap + fixed;
  std::vector<std::string> common = {"train",
                                     "--corpus",
                                     dir.file("corpus.txt"),
                                     "--vocab",
                                     dir.file("vocab.tsv"),
                                     "--dim",
                                     "2",
                                     "--window",
                                     "2",
                                     "--negative",
                                     "1",
                                     "--epochs",
                                     "2",
                                     "--threads",
                                     "2",
                                     "--format",
                                     "npy",
                                     "--keep-checkpoints",
                                     "0",
                                     "--quiet"};
  std::vector<std::string> streamed = common;
  for (const char* a : {"--max-corpus-memory", "2MiB", "--output"}) streamed.push_back(a);
  streamed.push_back(dir.file("streamed"));
  streamed.push_back(dir.file("streamed-run"));
  std::string err;
  const uint64_t peak = peak_rss_of_run(PAGEDW2V_BINARY, streamed, &err);
  ASSERT_GT(peak, 0u) << err;
  const std::string npy = read_file(dir.file("streamed/vectors.npy"));
  EXPECT_GT(npy.size(), 64u * 2 * 4);
  if (kAddressSanitizer) {
    // Shadow memory and the quarantine of freed blocks say nothing of the rule: the run trained
    // to the end; the bounds are checked by the build without sanitizers.
    std::printf("peak RSS %llu bytes under AddressSanitizer (not checked)\n",
                static_cast<unsigned long long>(peak));
    return;
  }
  EXPECT_LE(peak, rule) << "peak RSS " << peak << " bytes";

  // The same run holding the corpus whole breaks the rule: the test can tell them apart.
  std::vector<std::string> whole = common;
  for (const char* a : {"--max-corpus-memory", "1GiB", "--output"}) whole.push_back(a);
  whole.push_back(dir.file("whole"));
  whole.push_back(dir.file("whole-run"));
  const uint64_t whole_peak = peak_rss_of_run(PAGEDW2V_BINARY, whole, &err);
  ASSERT_GT(whole_peak, 0u) << err;
  EXPECT_GT(whole_peak, rule + encoded_bytes / 2) << "text " << text_bytes;
  // Same blocks, same order, two threads: not bit-identical, but the same words trained.
  EXPECT_EQ(read_file(dir.file("whole/vocab.tsv")), read_file(dir.file("streamed/vocab.tsv")));
}

}  // namespace
}  // namespace pagedw2v
