#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "error.hpp"
#include "test_util.hpp"
#include "vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;

TEST(Vocab, CountsSortsAndAppliesMinCount) {
  const std::string text = "b a c a b a\nd a b\n e";  // a:4 b:3 c:1 d:1 e:1
  VocabOptions o;
  o.min_count = 2;
  const Vocab v = Vocab::count(text, o);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.word(0), "a");
  EXPECT_EQ(v.count(0), 4u);
  EXPECT_EQ(v.word(1), "b");
  EXPECT_EQ(v.count(1), 3u);
  EXPECT_EQ(v.total_count(), 7u);
  EXPECT_EQ(v.corpus_tokens(), 10u);
  EXPECT_EQ(v.find("a"), 0);
  EXPECT_EQ(v.find("c"), -1);
}

TEST(Vocab, TiesKeepFirstOccurrenceOrder) {
  const Vocab v = Vocab::count("z y x z y x w", VocabOptions{1, 0});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v.word(0), "z");
  EXPECT_EQ(v.word(1), "y");
  EXPECT_EQ(v.word(2), "x");
  EXPECT_EQ(v.word(3), "w");
}

TEST(Vocab, MaxVocabPrunesTheRarest) {
  const Vocab v = Vocab::count("a a a a b b b c c d", VocabOptions{1, 2});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.word(1), "b");
  EXPECT_EQ(v.total_count(), 7u);
}

TEST(Vocab, LongWordsAreTruncatedTo100Bytes) {
  const std::string longw(250, 'q');
  const Vocab v = Vocab::count(longw + " " + longw.substr(0, 120), VocabOptions{1, 0});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.word(0).size(), 100u);
  EXPECT_EQ(v.count(0), 2u);
}

TEST(Vocab, AnyBytesAreWords) {
  std::mt19937 rng(7);
  std::string text(1 << 16, '\0');
  for (char& c : text) c = static_cast<char>(rng());
  const Vocab v = Vocab::count(text, VocabOptions{1, 0});
  EXPECT_GT(v.size(), 0u);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v.find(v.word(i)), static_cast<int64_t>(i));
    sum += v.count(i);
  }
  EXPECT_EQ(sum, v.corpus_tokens());
}

TEST(Vocab, ManyDistinctWordsSurviveRehashing) {
  std::string text;
  for (int i = 0; i < 50000; ++i) text += "w" + std::to_string(i % 20000) + " ";
  const Vocab v = Vocab::count(text, VocabOptions{1, 0});
  ASSERT_EQ(v.size(), 20000u);
  for (int i = 0; i < 20000; i += 997) {
    const int64_t id = v.find("w" + std::to_string(i));
    ASSERT_GE(id, 0);
    EXPECT_EQ(v.count(static_cast<uint32_t>(id)), i < 10000 ? 3u : 2u);
  }
}

TEST(Vocab, TsvRoundTrip) {
  TempDir dir;
  const Vocab v = Vocab::count("the cat the dog the cat é\xff", VocabOptions{1, 0});
  v.save_tsv(dir.file("vocab.tsv"));
  const Vocab w = Vocab::load_tsv(dir.file("vocab.tsv"));
  ASSERT_EQ(w.size(), v.size());
  for (uint32_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(w.word(i), v.word(i));
    EXPECT_EQ(w.count(i), v.count(i));
  }
  EXPECT_EQ(testing_util::read_file(dir.file("vocab.tsv")).substr(0, 6), "the\t3\n");
}

TEST(Vocab, BadTsvNamesTheLine) {
  TempDir dir;
  testing_util::write_file(dir.file("v.tsv"), "a\t3\nb three\n");
  try {
    Vocab::load_tsv(dir.file("v.tsv"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Vocab::load_tsv(dir.file("missing.tsv")), Error);
}

TEST(Vocab, DuplicateWordsAreRejected) {
  EXPECT_THROW(Vocab::from_words({"a", "b", "a"}, {3, 2, 1}), Error);
  std::vector<std::string> words;
  for (int i = 0; i < 100000; ++i) words.push_back("w" + std::to_string(i));
  words.push_back("w99999");
  EXPECT_THROW(Vocab::from_words(words, std::vector<uint64_t>(words.size(), 1)), Error);
}

TEST(Vocab, FindsEveryWordOfALargeVocabulary) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  std::vector<std::string> words;
  for (int i = 0; i < 300000; ++i) {
    // Short and long words, some sharing long prefixes.
    words.push_back((i % 3 ? "w" : "a-rather-long-common-prefix-") + std::to_string(rng()));
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  const Vocab v = Vocab::from_words(words, std::vector<uint64_t>(words.size(), 1));
  for (uint32_t i = 0; i < words.size(); ++i) {
    ASSERT_EQ(v.find(words[i]), static_cast<int64_t>(i)) << words[i];
  }
  for (int i = 0; i < 100000; ++i) {
    const std::string absent = "x" + std::to_string(rng());
    ASSERT_EQ(v.find(absent), -1) << absent;
    const std::string prefix = words[i].substr(0, words[i].size() - 1);
    const int64_t id = v.find(prefix);
    if (id >= 0) {
      ASSERT_EQ(v.word(static_cast<uint32_t>(id)), prefix);
    }
  }
}

TEST(Vocab, EmptyAndMovedFromFindNothing) {
  const Vocab empty;
  EXPECT_EQ(empty.find("a"), -1);
  EXPECT_EQ(empty.find(""), -1);
  Vocab v = Vocab::from_words({"a", "b"}, {2, 1});
  Vocab w = std::move(v);
  EXPECT_EQ(w.find("b"), 1);
  EXPECT_EQ(Vocab::from_words({}, {}).find("a"), -1);
}

}  // namespace
}  // namespace pagedw2v
