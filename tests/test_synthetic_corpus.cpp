#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bench/synthetic_corpus.hpp"
#include "model/sampler.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::fresh_seed;
using testing_util::TempDir;

/// The generalised harmonic number H(n, s) = Σ r^−s, summed smallest terms first.
long double harmonic(uint32_t n, double s) {
  long double h = 0;
  for (uint32_t r = n; r >= 1; --r) h += std::pow(static_cast<long double>(r), -s);
  return h;
}

/// How often each id occurs in `tokens`.
std::vector<uint64_t> frequencies(const std::vector<uint32_t>& tokens, uint32_t vocab) {
  std::vector<uint64_t> f(vocab, 0);
  for (uint32_t t : tokens) ++f.at(t);
  return f;
}

TEST(SyntheticSpec, Parses) {
  SyntheticSpec s = parse_synthetic_spec("10000000,200000000,1.0");
  EXPECT_EQ(s.vocab, 10000000u);
  EXPECT_EQ(s.words, 200000000u);
  EXPECT_DOUBLE_EQ(s.zipf, 1.0);
  s = parse_synthetic_spec("1,1,0");
  EXPECT_EQ(s.vocab, 1u);
  EXPECT_EQ(s.words, 1u);
  EXPECT_DOUBLE_EQ(s.zipf, 0.0);
  s = parse_synthetic_spec("4294967294,1099511627776,1.07");
  EXPECT_EQ(s.vocab, 4294967294u);
  EXPECT_EQ(s.words, uint64_t{1} << 40);
  EXPECT_DOUBLE_EQ(s.zipf, 1.07);
}

TEST(SyntheticSpec, RejectsBadValuesWithOneLine) {
  for (const char* text : {"abc",
                           "0,10,1",
                           "10,0,1",
                           "10,10,-1",
                           "10,10",
                           "10",
                           "",
                           ",,",
                           "10,,1",
                           ",10,1",
                           "10,10,",
                           "10,10,1,1",
                           "10,10,nan",
                           "10,10,inf",
                           "10,10,11",
                           "4294967295,10,1",
                           "10,1099511627777,1",
                           "1.5,10,1",
                           "-10,10,1",
                           " 10,10,1",
                           "10,10,1 ",
                           "10,1e6,1",
                           "99999999999999999999999,1,1"}) {
    try {
      parse_synthetic_spec(text);
      ADD_FAILURE() << "'" << text << "' accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--synthetic: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("'") + text + "'"), std::string::npos) << what;
    }
  }
}

TEST(SyntheticVocab, CountsAreZipfsExpectation) {
  for (const double s : {0.0, 0.8, 1.0, 1.3}) {
    SCOPED_TRACE(s);
    const SyntheticSpec spec{5000, 3000000, s};
    const std::vector<uint64_t> counts = zipf_counts(spec, 3);
    ASSERT_EQ(counts.size(), 5000u);
    const long double h = harmonic(spec.vocab, s);
    for (uint32_t r = 1; r <= spec.vocab; r += 97) {
      const long double expected = spec.words * std::pow(static_cast<long double>(r), -s) / h;
      EXPECT_EQ(counts[r - 1], std::max<uint64_t>(1, std::llround(expected))) << "rank " << r;
    }
    EXPECT_TRUE(std::is_sorted(counts.rbegin(), counts.rend()));
    EXPECT_GE(*std::min_element(counts.begin(), counts.end()), 1u);
    const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
    EXPECT_NEAR(static_cast<double>(total), 3e6, 5000.0);
  }
}

TEST(SyntheticVocab, EveryCountIsAtLeastOne) {
  // 100 words among a million ranks: most ranks expect far less than one occurrence.
  const std::vector<uint64_t> counts = zipf_counts({1000000, 100, 1.0}, 2);
  EXPECT_EQ(counts[0], 7u);  // 100 / H(10^6) = 6.95
  EXPECT_EQ(counts.back(), 1u);
  EXPECT_GE(*std::min_element(counts.begin(), counts.end()), 1u);
}

TEST(SyntheticVocab, TheSameForAnyThreadCount) {
  const SyntheticSpec spec{300001, 123456789, 1.1};
  const std::vector<uint64_t> one = zipf_counts(spec, 1);
  for (const uint32_t threads : {2u, 3u, 7u, 16u}) EXPECT_EQ(zipf_counts(spec, threads), one);
}

TEST(SyntheticVocab, WordsAreRanks) {
  const SyntheticSpec spec{20000, 1000000, 1.0};
  const Vocab v = synthetic_vocab(spec, 2);
  ASSERT_EQ(v.size(), 20000u);
  EXPECT_EQ(v.counts(), zipf_counts(spec, 1));
  for (uint32_t i = 0; i < v.size(); i += 613) {
    EXPECT_EQ(v.word(i), "w" + std::to_string(i));
    EXPECT_EQ(v.find("w" + std::to_string(i)), static_cast<int64_t>(i));
  }
  EXPECT_EQ(v.find("w20000"), -1);
  EXPECT_EQ(v.find("w"), -1);
}

/// This process's resident set in bytes (VmRSS), 0 when /proc does not say.
uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtoull(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kib * 1024;
}

// A vocabulary of millions of words: row i is w<i> with the Zipf count of rank i, every word
// found by its text. The host memory it takes is printed as a figure (bytes per word; the
// design is the word's length + 5 bytes, 8 per count and 8 to 16 of index), not checked: the
// resident set depends on the allocator, the page size and sanitizers.
TEST(SyntheticVocab, MillionsOfWordsAllFoundAndMemoryPrinted) {
  const uint64_t before = resident_bytes();
  const SyntheticSpec spec{3000000, 10000000, 1.0};
  const Vocab v = synthetic_vocab(spec, 2);
  const uint64_t after = resident_bytes();
  ASSERT_EQ(v.size(), spec.vocab);
  const std::vector<uint64_t> counts = zipf_counts(spec, 1);
  for (uint32_t i : {0u, 1u, 77u, 123456u, 2999999u}) {
    const std::string word = "w" + std::to_string(i);
    EXPECT_EQ(v.words()[i], word);
    EXPECT_EQ(v.find(word), static_cast<int64_t>(i)) << word;
    EXPECT_EQ(v.counts()[i], counts[i]) << word;
  }
  EXPECT_LT(v.find("w3000000"), 0);
  if (before > 0 && after >= before) {
    std::printf("BENCH synthetic vocabulary of %llu words: %.1f bytes of resident set per word\n",
                static_cast<unsigned long long>(spec.vocab),
                static_cast<double>(after - before) / spec.vocab);
  }
}

TEST(SyntheticCorpus, DeterministicPerSeedForAnyThreadCount) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  const SyntheticSpec spec{50000, 200001, 1.0};  // odd: the last draw gives one token
  const EncodedCorpus a = synthetic_corpus(spec, seed, 1);
  for (const uint32_t threads : {2u, 5u, 16u}) {
    const EncodedCorpus b = synthetic_corpus(spec, seed, threads);
    EXPECT_EQ(a.tokens, b.tokens) << threads << " threads";
    EXPECT_EQ(a.sentence_starts, b.sentence_starts);
  }
  const EncodedCorpus other = synthetic_corpus(spec, seed + 1, 2);
  ASSERT_EQ(other.tokens.size(), a.tokens.size());
  uint64_t same = 0;
  for (size_t i = 0; i < a.tokens.size(); ++i) same += a.tokens[i] == other.tokens[i];
  // Two independent Zipf(1) draws over 50000 ranks agree about 1.3% of the time.
  EXPECT_LT(same, a.tokens.size() / 20);
}

TEST(SyntheticCorpus, IdsAndSentences) {
  const SyntheticSpec spec{777, 123457, 0.9};
  const EncodedCorpus c = synthetic_corpus(spec, fresh_seed(), 3);
  ASSERT_EQ(c.size(), 123457u);
  EXPECT_LT(*std::max_element(c.tokens.begin(), c.tokens.end()), 777u);
  ASSERT_EQ(c.sentences(), 2470u);
  EXPECT_EQ(c.sentence_starts.front(), 0u);
  EXPECT_EQ(c.sentence_starts.back(), 123457u);
  for (uint64_t s = 0; s + 1 < c.sentences(); ++s) {
    EXPECT_EQ(c.sentence_starts[s + 1] - c.sentence_starts[s], kSyntheticSentenceLength);
  }
  EXPECT_EQ(c.sentence_starts[2470] - c.sentence_starts[2469], 7u);

  const EncodedCorpus tiny = synthetic_corpus({1, 1, 1.0}, 1, 4);
  EXPECT_EQ(tiny.tokens, std::vector<uint32_t>{0});
  EXPECT_EQ(tiny.sentence_starts, (std::vector<uint64_t>{0, 1}));
}

TEST(SyntheticCorpus, RankOneFrequencyAndSlopeFollowZipf) {
  for (const double s : {1.0, 1.3}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << "zipf " << s << " seed " << seed);
    const SyntheticSpec spec{10000, 2000000, s};
    const std::vector<uint64_t> f = frequencies(synthetic_corpus(spec, seed, 2).tokens, spec.vocab);
    const double expected_first = spec.words / static_cast<double>(harmonic(spec.vocab, s));
    EXPECT_NEAR(f[0] / expected_first, 1.0, 0.02);
    // Least squares of log frequency against log rank over the top 100 ranks.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const int n = 100;
    for (int r = 1; r <= n; ++r) {
      ASSERT_GT(f[r - 1], 0u);
      const double x = std::log(r), y = std::log(static_cast<double>(f[r - 1]));
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    EXPECT_NEAR(slope, -s, 0.05);
  }
}

TEST(SyntheticCorpus, ChiSquareAgainstTheLaw) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  const SyntheticSpec spec{2000, 1000000, 1.0};
  const std::vector<uint64_t> f = frequencies(synthetic_corpus(spec, seed, 3).tokens, spec.vocab);
  const long double h = harmonic(spec.vocab, spec.zipf);
  // The top 200 ranks on their own, the rest in one bin.
  double chi2 = 0, tail_expected = spec.words, tail_seen = spec.words;
  const int bins = 200;
  for (int r = 1; r <= bins; ++r) {
    const double e =
        static_cast<double>(spec.words * std::pow(static_cast<long double>(r), -1) / h);
    chi2 += (f[r - 1] - e) * (f[r - 1] - e) / e;
    tail_expected -= e;
    tail_seen -= f[r - 1];
  }
  chi2 += (tail_seen - tail_expected) * (tail_seen - tail_expected) / tail_expected;
  // 200 degrees of freedom: mean 200, standard deviation 20; a real mismatch is far beyond.
  EXPECT_LT(chi2, 200 + 8 * 20);
  // A uniform sampler, say, would be off by orders of magnitude.
  EXPECT_GT(f[0], 50 * f[999]);
}

// The files `bench synthetic` writes hold the corpus and vocabulary `bench train --synthetic`
// trains on: a line per sentence of w<id> words, and the vocabulary that train --vocab reads
// back word for word and count for count. Existing files are never replaced.
TEST(SyntheticFiles, HoldTheBenchsCorpusAndVocabulary) {
  TempDir dir;
  const SyntheticSpec spec{3000, 12345, 0.9};
  const std::string corpus = dir.path() + "/corpus.txt", vocab = dir.path() + "/vocab.tsv";
  write_synthetic_files(spec, 17, 3, corpus, vocab);
  const EncodedCorpus want = synthetic_corpus(spec, 17, 1);
  std::ifstream in(corpus);
  std::string line;
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> starts{0};
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      ASSERT_EQ(w[0], 'w') << w;
      tokens.push_back(static_cast<uint32_t>(std::stoul(w.substr(1))));
    }
    starts.push_back(tokens.size());
  }
  EXPECT_EQ(tokens, want.tokens);
  EXPECT_EQ(starts, want.sentence_starts);
  const Vocab read = Vocab::load_tsv(vocab);
  const Vocab bench = synthetic_vocab(spec, 2);
  ASSERT_EQ(read.size(), bench.size());
  EXPECT_EQ(read.counts(), bench.counts());
  for (uint32_t i = 0; i < read.size(); ++i) ASSERT_EQ(read.word(i), bench.word(i)) << i;
  // A second write into the same place is refused, and leaves the files as they were.
  EXPECT_THROW(write_synthetic_files(spec, 18, 1, corpus, dir.path() + "/other.tsv"), UsageError);
  EXPECT_THROW(write_synthetic_files(spec, 18, 1, dir.path() + "/other.txt", vocab), UsageError);
  std::ifstream again(corpus);
  std::string first;
  std::getline(again, first);
  std::ostringstream expect;
  for (uint64_t p = 0; p < want.sentence_starts[1]; ++p) {
    expect << (p > 0 ? " w" : "w") << want.tokens[p];
  }
  EXPECT_EQ(first, expect.str());
  EXPECT_FALSE(std::ifstream(dir.path() + "/other.tsv").good());
  EXPECT_FALSE(std::ifstream(dir.path() + "/other.txt").good());
}

TEST(SyntheticTrainingSet, BuiltAsFromText) {
  const SyntheticSpec spec{3000, 100000, 1.0};
  Config c;
  c.seed = fresh_seed();
  c.sample = 1e-3;
  c.threads = 2;
  const TrainingSet set = make_synthetic_training_set(spec, c);
  EXPECT_EQ(set.corpus.tokens, synthetic_corpus(spec, c.seed, 1).tokens);
  EXPECT_EQ(set.vocab.counts(), zipf_counts(spec, 1));
  EXPECT_EQ(set.blocks, make_blocks(set.corpus, kBlockWords));
  const KeepTable keep = keep_probabilities(set.vocab.counts(), set.vocab.total_count(), 1e-3);
  ASSERT_EQ(set.keep.words(), keep.words());
  ASSERT_EQ(set.keep.stored(), keep.stored());
  for (uint32_t i = 0; i < keep.stored(); ++i) EXPECT_EQ(set.keep[i], keep[i]);
  const NoiseTable noise = NoiseTable::of_counts(set.vocab.counts());
  ASSERT_EQ(set.noise.words(), noise.words());
  ASSERT_EQ(set.noise.column_count(), noise.column_count());
  for (uint32_t i = 0; i < noise.column_count(); ++i) {
    EXPECT_EQ(set.noise.columns()[i].prob, noise.columns()[i].prob);
    EXPECT_EQ(set.noise.columns()[i].alias, noise.columns()[i].alias);
    EXPECT_EQ(set.noise.columns()[i].first, noise.columns()[i].first);
    EXPECT_EQ(set.noise.columns()[i].length, noise.columns()[i].length);
  }
  EXPECT_EQ(set.block_count(), 25u);  // 2000 sentences of 50 words, 82 to a block of 4096+
  EXPECT_LT(set.keep[0], 1.0f);       // the most frequent word is subsampled
  const TrainData data = set.train_data(c);
  EXPECT_EQ(data.params.words_per_epoch, 100000u);
}

}  // namespace
}  // namespace pagedw2v
