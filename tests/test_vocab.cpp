#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "test_util.hpp"
#include "text/tokenizer.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;

VocabOptions opts(uint64_t min_count, uint64_t max_vocab) {
  VocabOptions o;
  o.min_count = min_count;
  o.max_vocab = max_vocab;
  return o;
}

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
  const Vocab v = Vocab::count("z y x z y x w", opts(1, 0));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v.word(0), "z");
  EXPECT_EQ(v.word(1), "y");
  EXPECT_EQ(v.word(2), "x");
  EXPECT_EQ(v.word(3), "w");
}

TEST(Vocab, MaxVocabPrunesTheRarest) {
  const Vocab v = Vocab::count("a a a a b b b c c d", opts(1, 2));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.word(1), "b");
  EXPECT_EQ(v.total_count(), 7u);
}

TEST(Vocab, LongWordsAreTruncatedTo100Bytes) {
  const std::string longw(250, 'q');
  const Vocab v = Vocab::count(longw + " " + longw.substr(0, 120), opts(1, 0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.word(0).size(), 100u);
  EXPECT_EQ(v.count(0), 2u);
}

TEST(Vocab, AnyBytesAreWords) {
  std::mt19937 rng(7);
  std::string text(1 << 16, '\0');
  for (char& c : text) c = static_cast<char>(rng());
  const Vocab v = Vocab::count(text, opts(1, 0));
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
  const Vocab v = Vocab::count(text, opts(1, 0));
  ASSERT_EQ(v.size(), 20000u);
  for (int i = 0; i < 20000; i += 997) {
    const int64_t id = v.find("w" + std::to_string(i));
    ASSERT_GE(id, 0);
    EXPECT_EQ(v.count(static_cast<uint32_t>(id)), i < 10000 ? 3u : 2u);
  }
}

/// Whether `s` is valid UTF-8 (Python would decode it).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t bad = 0;
    const size_t k =
        detail::utf8_char(reinterpret_cast<const unsigned char*>(s.data()) + i, s.size() - i, &bad);
    if (k == 0) return false;
    i += k;
  }
  return true;
}

TEST(Vocab, LongWordsAreCutAtACharacterBoundary) {
  std::string cjk;
  for (int i = 0; i < 40; ++i) cjk += "\xe8\xaa\x9e";  // 語, 3 bytes
  const std::string ascii98(98, 'a');
  const Vocab v =
      Vocab::count(cjk + " " + ascii98 + "\xc3\xa9 a" + ascii98 + "\xc3\xa9", opts(1, 0));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.word(0), cjk.substr(0, 99));     // 33 whole characters
  EXPECT_EQ(v.word(1), ascii98 + "\xc3\xa9");  // exactly 100 bytes: kept whole
  EXPECT_EQ(v.word(2), "a" + ascii98);         // 'é' would end at byte 101
}

TEST(Vocab, InvalidUtf8IsRepairedAsPythonDecodesIt) {
  // Each input with bytes.decode("utf-8", "replace").encode() of it.
  const std::pair<std::string, std::string> cases[] = {
      {"caf\xe9", "caf\xef\xbf\xbd"},  // Latin-1
      {"\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd"},
      {"x\xc0\xaf", "x\xef\xbf\xbd\xef\xbf\xbd"},  // overlong '/'
      {"y\x80", "y\xef\xbf\xbd"},
      {"\xed\xa0\x80z", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"},                // a surrogate
      {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // > U+10FFFF
      {"t\xe6\x97", "t\xef\xbf\xbd"},  // a character cut short
  };
  for (const auto& [raw, repaired] : cases) {
    const Vocab v = Vocab::count(raw, opts(1, 0));
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v.word(0), repaired);
  }
  // 60 Latin-1 bytes grow to 180: the word is cut at 33 replacement characters.
  const Vocab v = Vocab::count(std::string(60, '\xe9'), opts(1, 0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.word(0).size(), 99u);
  EXPECT_TRUE(valid_utf8(v.word(0)));
}

TEST(Vocab, EveryWordOfRandomBytesIsValidUtf8) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  std::string text(1 << 18, '\0');
  for (char& c : text) c = static_cast<char>(rng() % 4 == 0 ? ' ' : rng());
  for (uint32_t threads : {1u, 3u}) {
    VocabOptions o = opts(1, 0);
    o.threads = threads;
    o.min_bytes_per_thread = 1;
    const Vocab v = Vocab::count(text, o);
    ASSERT_GT(v.size(), 100u);
    for (const std::string_view w : v.words()) {
      ASSERT_TRUE(valid_utf8(w));
      ASSERT_LE(w.size(), kMaxWordBytes);
    }
  }
}

TEST(Vocab, LowercaseIsOptIn) {
  const std::string text =
      "The THE the \xc3\x80\xc3\x89\xc3\x8e \xce\xa9mega \xd0\x9f\xd0\xa0\xd0\x98 \xd0\x80\xd0\x81 "
      "\xc4\x80\xc4\xb9\xc5\xb8\xc5\xbd \xe8\xaa\x9e";
  const Vocab kept = Vocab::count(text, opts(1, 0));
  EXPECT_EQ(kept.size(), 9u);
  VocabOptions o = opts(1, 0);
  o.text.lowercase = true;
  const Vocab lower = Vocab::count(text, o);
  EXPECT_EQ(lower.words().to_strings(),
            (std::vector<std::string>{"the", "\xc3\xa0\xc3\xa9\xc3\xae", "\xcf\x89mega",
                                      "\xd0\xbf\xd1\x80\xd0\xb8", "\xd1\x90\xd1\x91",
                                      "\xc4\x81\xc4\xba\xc3\xbf\xc5\xbe", "\xe8\xaa\x9e"}));
  EXPECT_EQ(lower.count(0), 3u);
  EXPECT_EQ(Vocab::count_serial(text, o).words(), lower.words());
}

TEST(Vocab, LowercaseTakesGreekCapitalsWithTonos) {
  // Ά Έ Ή Ί Ό Ύ Ώ and their lower-case forms, as Unicode's simple case mapping pairs them.
  const std::pair<char32_t, char32_t> pairs[] = {{0x386, 0x3AC}, {0x388, 0x3AD}, {0x389, 0x3AE},
                                                 {0x38A, 0x3AF}, {0x38C, 0x3CC}, {0x38E, 0x3CD},
                                                 {0x38F, 0x3CE}};
  auto utf8 = [](char32_t cp) {
    return std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
  };
  TextOptions lower;
  lower.lowercase = true;
  char buf[kMaxWordBytes];
  for (const auto& [upper, small] : pairs) {
    const std::string word = utf8(upper) + "x" + utf8(small);
    EXPECT_EQ(std::string(normalize_word(word, lower, buf)), utf8(small) + "x" + utf8(small))
        << "U+" << std::hex << static_cast<uint32_t>(upper);
    EXPECT_EQ(std::string(normalize_word(word, TextOptions{}, buf)), word);
  }
  // The Greek block's other characters between them stay as they are (΄ ΅ · are not letters).
  for (const char32_t cp : {char32_t{0x384}, char32_t{0x385}, char32_t{0x387}, char32_t{0x38B},
                            char32_t{0x38D}, char32_t{0x390}}) {
    const std::string word = utf8(cp);
    EXPECT_EQ(std::string(normalize_word(word, lower, buf)), word);
  }
}

TEST(Vocab, TsvRoundTrip) {
  TempDir dir;
  const Vocab v = Vocab::count("the cat the dog the cat é\xff", opts(1, 0));
  v.save_tsv(dir.file("vocab.tsv"));
  const Vocab w = Vocab::load_tsv(dir.file("vocab.tsv"));
  ASSERT_EQ(w.size(), v.size());
  for (uint32_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(w.word(i), v.word(i));
    EXPECT_EQ(w.count(i), v.count(i));
  }
  EXPECT_EQ(testing_util::read_file(dir.file("vocab.tsv")).substr(0, 6), "the\t3\n");
}

TEST(Vocab, TsvWordsNoFormatCanHoldAreRefusedAndTrainingOnesMustBeTheTokenizers) {
  TempDir dir;
  const std::string long_word(101, 'x');
  testing_util::write_file(dir.file("long.tsv"), "a\t3\n" + long_word + "\t2\n");
  testing_util::write_file(dir.file("latin1.tsv"), "a\t3\ncaf\xe9\t2\n");
  // Kept when vectors come with the file (other tools make such words); refused to train with.
  EXPECT_EQ(Vocab::load_tsv(dir.file("long.tsv")).word(1), long_word);
  EXPECT_EQ(Vocab::load_tsv(dir.file("latin1.tsv")).word(1), "caf\xe9");
  const std::pair<std::string, std::string> refused[] = {
      {"long.tsv", "line 2: a word of 101 bytes"}, {"latin1.tsv", "line 2: the word is not UTF-8"}};
  for (const auto& [name, message] : refused) {
    try {
      Vocab::load_tsv(dir.file(name), true);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  // Never: a word split where the tokenizer splits, counts past 2^64 - 1.
  testing_util::write_file(dir.file("space.tsv"), "a b\t3\n");
  testing_util::write_file(dir.file("vt.tsv"), "a\t3\nb\vc\t1\n");
  testing_util::write_file(dir.file("sum.tsv"), "a\t18446744073709551615\nb\t1\n");
  const std::pair<std::string, std::string> never[] = {
      {"space.tsv", "line 1: the word holds a space"},
      {"vt.tsv", "line 2: the word holds a space, tab, CR, VT or FF"},
      {"sum.tsv", "line 2: the counts add up past 2^64 - 1"}};
  for (const auto& [name, message] : never) {
    for (const bool training : {false, true}) {
      try {
        Vocab::load_tsv(dir.file(name), training);
        ADD_FAILURE() << name << ": no error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      }
    }
  }
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

TEST(Vocab, ACountedVocabularyBuildsItsIndexOnTheFirstFind) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    text += "w" + std::to_string(rng() % 20000) + (rng() % 10 == 0 ? "\n" : " ");
  }
  VocabOptions o = opts(2, 0);
  o.threads = 3;
  o.min_bytes_per_thread = 1;
  Vocab v = Vocab::count(text, o);
  ASSERT_GT(v.size(), 1000u);
  EXPECT_FALSE(v.index_built());
  // Threads find at once, while the index is being built.
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < v.size(); ++i) {
        const uint32_t row = (i + static_cast<uint32_t>(t) * 977) % v.size();
        if (v.find(v.word(row)) != static_cast<int64_t>(row)) ++wrong;
      }
      if (v.find("x" + std::to_string(t)) != -1) ++wrong;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_TRUE(v.index_built());
  v.drop_index();
  EXPECT_FALSE(v.index_built());
  EXPECT_EQ(v.find(v.word(0)), -1);
  EXPECT_TRUE(Vocab::from_words({"a", "b"}, {2, 1}).index_built());
  EXPECT_FALSE(Vocab().index_built());
}

TEST(Vocab, DroppingTheIndexKeepsWordsAndCounts) {
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  for (uint64_t i = 0; i < 1000; ++i) {
    words.push_back("w" + std::to_string(i));
    counts.push_back(2000 - i);
  }
  Vocab v = Vocab::from_words(words, counts);
  EXPECT_EQ(v.find("w999"), 999);
  v.drop_index();
  EXPECT_EQ(v.find("w999"), -1);
  EXPECT_EQ(v.find("w0"), -1);
  EXPECT_EQ(v.words().to_strings(), words);
  EXPECT_EQ(v.counts(), counts);
  EXPECT_EQ(v.total_count(), std::accumulate(counts.begin(), counts.end(), uint64_t{0}));
}

// A million short words (w0 … w999999, 6.9 bytes on average) cost their bytes, a NUL, a length
// byte and an 8-byte start for every 32, and their counts (all different here: 12 bytes each, as
// runs of one): under 24 bytes a word, where std::string words and their counts took 40.
TEST(Vocab, AMillionShortWordsTakeUnder24BytesAWord) {
  constexpr uint32_t kWords = 1000000;
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  size_t chars = 0;
  for (uint32_t i = 0; i < kWords; ++i) {
    words.push_back("w" + std::to_string(i));
    counts.push_back(kWords - i);
    chars += words.back().size();
  }
  Vocab v = Vocab::from_words(words, counts);
  v.drop_index();
  EXPECT_EQ(v.words().memory_bytes(), chars + 2 * kWords + 8 * ((kWords + 31) / 32));
  EXPECT_LT(v.memory_bytes(), 24u * kWords);
  for (uint32_t i : {0u, 9u, 10u, 123456u, kWords - 1}) EXPECT_EQ(v.word(i), words[i]);

  // Counted from a text (the parallel count fills the words in place): the same bound.
  std::string text;
  for (const std::string& w : words) (text += w) += ' ';
  VocabOptions o = opts(1, 0);
  o.threads = 3;
  o.min_bytes_per_thread = 1;
  Vocab counted = Vocab::count(text, o);
  ASSERT_EQ(counted.size(), kWords);
  counted.drop_index();
  EXPECT_EQ(counted.words().memory_bytes(), chars + 2 * kWords + 8 * ((kWords + 31) / 32));
  EXPECT_LT(counted.memory_bytes(), 24u * kWords);
  EXPECT_EQ(counted.words().to_strings(), words);  // all counts 1: first occurrence order
}

// Words of every length, long UTF-8 ones included, come back as given, as views, as C strings
// and through a vocab.tsv.
TEST(Vocab, WordsOfAnyLengthRoundTrip) {
  std::vector<std::string> words = {"a", "\xc3\xa9t\xc3\xa9", std::string(15, 'x'),
                                    std::string(16, 'y')};
  std::string cjk;
  for (int i = 0; i < 400; ++i) cjk += "\xe8\xaa\x9e";  // 1,200 bytes of one character
  words.push_back(cjk);
  words.push_back("\xf0\x9f\x98\x80" + cjk + "\xd0\x96");
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string w;
    const size_t n = 1 + rng() % 300;
    for (size_t j = 0; j < n; ++j) w += static_cast<char>('!' + rng() % 90);
    words.push_back(w + std::to_string(i));
  }
  const std::vector<uint64_t> counts(words.size(), 3);
  const Vocab v = Vocab::from_words(words, counts);
  ASSERT_EQ(v.size(), words.size());
  for (uint32_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v.word(i), words[i]);
    EXPECT_EQ(std::string(v.word_c_str(i)), words[i]);
    EXPECT_EQ(v.find(words[i]), static_cast<int64_t>(i));
  }
  size_t i = 0;
  for (const std::string_view w : v.words()) EXPECT_EQ(w, words[i++]);
  EXPECT_EQ(i, words.size());
  EXPECT_EQ(v.words().to_strings(), words);

  TempDir dir;
  v.save_tsv(dir.file("vocab.tsv"));
  const Vocab back = Vocab::load_tsv(dir.file("vocab.tsv"));
  EXPECT_EQ(back.words().to_strings(), words);
  EXPECT_EQ(back.counts(), counts);
  EXPECT_TRUE(back.words() == v.words());
}

// Words of every length (a long word's length in the side list), added one at a time: every
// word reads back by index, in order and as a C string, at a little over 2 bytes a word beside
// its characters.
TEST(WordList, EveryWordReadsBackAtTwoBytesAndAQuarterAWord) {
  WordList list;
  std::vector<std::string> words;
  for (int i = 0; i < 200; ++i) {
    const size_t len = i % 37 == 5 ? 250 + i : i % 11;
    words.push_back(std::string(len, static_cast<char>('a' + i % 26)) + std::to_string(i));
    list.push_back(words.back());
    ASSERT_EQ(list.size(), words.size());
    if (i % 17 == 0) {
      for (size_t j = 0; j < words.size(); ++j) ASSERT_EQ(list[j], words[j]) << i;
    }
  }
  for (size_t j = 0; j < words.size(); ++j) {
    EXPECT_EQ(list[j], words[j]);
    EXPECT_EQ(std::string(list.c_str(j)), words[j]);
  }
  size_t chars = 0, longs = 0;
  for (const std::string& w : words) {
    chars += w.size() + 1;
    longs += w.size() >= 255;
  }
  EXPECT_GT(longs, 0u);
  list.shrink_to_fit();
  EXPECT_EQ(list.memory_bytes(),
            chars + words.size() + 8 * ((words.size() + 31) / 32) + longs * 2 * sizeof(uint64_t));
  EXPECT_EQ(list.to_strings(), words);
  EXPECT_TRUE(list == WordList(words));
  EXPECT_FALSE(list == WordList(std::vector<std::string>(words.begin(), words.end() - 1)));
  std::vector<std::string> other = words;
  other[100] += "x";
  EXPECT_FALSE(list == WordList(other));
}

// of_lengths() lays out words of given lengths, NUL-ended, to be written in place.
TEST(WordList, OfLengthsLaysOutWordsToFillInPlace) {
  const std::vector<std::string> words = {"", "ab", "\xe2\x82\xac", std::string(300, 'q')};
  WordList list = WordList::of_lengths(words.size(), [&](size_t i) { return words[i].size(); });
  ASSERT_EQ(list.size(), words.size());
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(list[i].size(), words[i].size());
    std::copy(words[i].begin(), words[i].end(), list.data(i));
  }
  EXPECT_EQ(list.to_strings(), words);
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(std::string(list.c_str(i)), words[i]);
  EXPECT_TRUE(WordList::of_lengths(0, [](size_t) { return 1; }).empty());
}

// of_buffer() finds the words of a buffer at their NULs, takes the lengths of the words it is told
// hold NULs, and refuses a buffer that does not hold the words it is said to.
TEST(WordList, OfBufferFindsTheWordsAtTheirNuls) {
  const std::vector<std::string> words = {
      "", "ab", std::string("a\0b", 3), std::string(300, 'q'), std::string(1, '\0'), "z"};
  const WordList list(words);
  const std::string_view b = list.buffer();
  EXPECT_EQ(list.bytes(), b.size());
  const WordList back =
      WordList::of_buffer(std::vector<char>(b.begin(), b.end()), words.size(), {{2, 3}, {4, 1}});
  EXPECT_EQ(back.to_strings(), words);
  EXPECT_TRUE(back == list);
  EXPECT_THROW(WordList::of_buffer(std::vector<char>(b.begin(), b.end()), words.size()),
               std::invalid_argument);
  EXPECT_THROW(WordList::of_buffer(std::vector<char>(b.begin(), b.end()), words.size() - 1,
                                   {{2, 3}, {4, 1}}),
               std::invalid_argument);
  EXPECT_THROW(WordList::of_buffer(std::vector<char>(b.begin(), b.end() - 1), words.size(),
                                   {{2, 3}, {4, 1}}),
               std::invalid_argument);
  EXPECT_TRUE(WordList::of_buffer({}, 0).empty());
}

// Words of every kind (empty, long, holding NULs, UTF-8) over several slices and a remainder pack
// and come back whole, a slice at a time and on any number of threads, in fewer bytes.
TEST(PackedWords, EveryWordComesBackWholeOrBySlice) {
  std::vector<std::string> words;
  std::mt19937 rng(11);
  const size_t n = 2 * PackedWords::kSliceWords + 1234;
  for (size_t i = 0; i < n; ++i) {
    std::string w = "w" + std::to_string(rng() % 10000000);
    if (i % 1000 == 7) w = "";
    if (i % 4099 == 3) w = std::string(280 + i % 50, static_cast<char>('a' + i % 26));
    if (i % 7919 == 11) w = std::string("nul\0inside", 11) + std::to_string(i);
    if (i % 997 == 5) w = "\xc3\xa9t\xc3\xa9" + std::to_string(i);
    words.push_back(w);
  }
  const WordList list(words);
  for (const uint32_t threads : {1u, 3u, 8u}) {
    const PackedWords packed(list, threads);
    ASSERT_EQ(packed.size(), n);
    ASSERT_EQ(packed.slices(), 3u);
    EXPECT_EQ(packed.bytes(), list.bytes());
    EXPECT_LT(packed.memory_bytes(), list.bytes() * 3 / 4);
    EXPECT_TRUE(packed.unpack(threads) == list) << threads;
    EXPECT_EQ(packed.unpack(2).to_strings(), words);
    for (size_t k = 0; k < packed.slices(); ++k) {
      const WordList slice = packed.slice(k);
      const size_t first = k * PackedWords::kSliceWords;
      ASSERT_EQ(slice.size(), std::min(PackedWords::kSliceWords, n - first));
      for (size_t i = 0; i < slice.size(); ++i) ASSERT_EQ(slice[i], words[first + i]) << k << i;
    }
    EXPECT_THROW(packed.slice(3), std::out_of_range);
  }
  const PackedWords none(WordList(), 4);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.slices(), 0u);
  EXPECT_TRUE(none.unpack(4).empty());
}

// A packed vocabulary keeps its size and counts, writes the same vocab.tsv, gives its words by
// runs and as strings, refuses reads of one word, and unpacks to what it was.
TEST(Vocab, PackedWordsAreReadByRunsAndUnpackToWhatTheyWere) {
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  const size_t n = PackedWords::kSliceWords + 99;
  for (size_t i = 0; i < n; ++i) {
    words.push_back("t" + std::to_string(i * 7919 % 1000003));
    counts.push_back(n + 5 - i / 3);
  }
  Vocab v = Vocab::from_words(words, counts);
  TempDir dir;
  v.save_tsv(dir.file("before.tsv"));
  const uint64_t bytes = v.word_bytes();
  const size_t before = v.memory_bytes();
  v.pack_words(3);
  ASSERT_TRUE(v.words_packed());
  EXPECT_EQ(v.size(), n);
  EXPECT_EQ(v.word_bytes(), bytes);
  EXPECT_EQ(v.count(12345), counts[12345]);
  EXPECT_LT(v.memory_bytes(), before / 2);  // the index went too
  EXPECT_THROW(v.word(0), std::logic_error);
  EXPECT_THROW(v.word_c_str(0), std::logic_error);
  EXPECT_THROW(v.words(), std::logic_error);
  EXPECT_EQ(v.find(words[5]), -1);
  EXPECT_EQ(v.word_strings(), words);
  std::vector<uint64_t> firsts;
  std::vector<std::string> seen;
  v.for_each_word_run([&](uint64_t first, const WordList& run) {
    firsts.push_back(first);
    for (const std::string_view w : run) seen.emplace_back(w);
  });
  EXPECT_EQ(firsts, (std::vector<uint64_t>{0, PackedWords::kSliceWords}));
  EXPECT_EQ(seen, words);
  v.save_tsv(dir.file("packed.tsv"));
  EXPECT_EQ(testing_util::read_file(dir.file("packed.tsv")),
            testing_util::read_file(dir.file("before.tsv")));
  Vocab moved = std::move(v);
  EXPECT_TRUE(moved.words_packed());
  const Vocab unpacked = moved.with_words_unpacked(2);
  EXPECT_TRUE(moved.words_packed());
  EXPECT_FALSE(unpacked.words_packed());
  EXPECT_EQ(unpacked.words().to_strings(), words);
  EXPECT_EQ(unpacked.word(77), words[77]);
  EXPECT_EQ(unpacked.counts(), moved.counts());
  EXPECT_EQ(unpacked.total_count(), moved.total_count());
  EXPECT_EQ(unpacked.size(), n);
  firsts.clear();
  unpacked.for_each_word_run([&](uint64_t first, const WordList& run) {
    firsts.push_back(first);
    EXPECT_EQ(run.size(), n);
  });
  EXPECT_EQ(firsts, std::vector<uint64_t>{0});
  EXPECT_EQ(moved.with_words_unpacked(1).words().to_strings(), words);
  EXPECT_EQ(unpacked.with_words_unpacked(1).words().to_strings(), words);
}

// The counts as runs: every read (by index, in order, as a vector, its first n) gives the counts
// it was made of, sorted or not, and a sorted list holds a run per distinct count.
TEST(CountList, ReadsBackWhatItHolds) {
  std::mt19937_64 rng(4);
  std::vector<std::vector<uint64_t>> cases = {{}, {7}, {9, 9, 5, 5, 5, 2, 1, 1}, {1, 2, 1, 2}};
  std::vector<uint64_t> sorted(20000);
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = 1000000 / (i + 1) + 3;
  cases.push_back(sorted);
  std::vector<uint64_t> random(5000);
  for (auto& c : random) c = rng() % 4;
  cases.push_back(random);
  for (const std::vector<uint64_t>& counts : cases) {
    SCOPED_TRACE(counts.size());
    const CountList list(counts);
    ASSERT_EQ(list.size(), counts.size());
    EXPECT_EQ(list.empty(), counts.empty());
    size_t distinct = 0;
    for (size_t i = 0; i < counts.size(); ++i) distinct += i == 0 || counts[i] != counts[i - 1];
    EXPECT_EQ(list.runs(), distinct);
    for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(list[i], counts[i]) << i;
    EXPECT_EQ(std::vector<uint64_t>(list.begin(), list.end()), counts);
    EXPECT_EQ(list.to_vector(), counts);
    const size_t n = counts.size() / 3;
    EXPECT_EQ(list.to_vector(n), std::vector<uint64_t>(counts.begin(), counts.begin() + n));
    EXPECT_TRUE(list == counts);
    EXPECT_TRUE(list == CountList(counts));
    if (!counts.empty()) {
      std::vector<uint64_t> other = counts;
      ++other.back();
      EXPECT_FALSE(list == other);
    }
  }
  // 20,000 sorted counts in a few hundred runs: far less than 8 bytes a word.
  EXPECT_LT(CountList(sorted).runs(), 2100u);
  EXPECT_LT(CountList(sorted).memory_bytes(), sorted.size() * 2);
}

// A counted vocabulary (sorted by count) holds its counts as a run per distinct count.
TEST(Vocab, CountsAreHeldAsRunsOfEqualCounts) {
  std::string text;
  for (int w = 0; w < 3000; ++w) {
    const int times = 1 + (w % 7 == 0 ? 40 : w % 5);
    for (int k = 0; k < times; ++k) text += "w" + std::to_string(w) + " ";
  }
  VocabOptions o;
  o.min_count = 1;
  const Vocab v = Vocab::count(text, o);
  ASSERT_EQ(v.size(), 3000u);
  EXPECT_EQ(v.counts().runs(), 6u);  // 41, 5, 4, 3, 2, 1
  uint64_t total = 0;
  for (uint32_t i = 0; i < v.size(); ++i) {
    total += v.count(i);
    if (i > 0) {
      EXPECT_LE(v.count(i), v.count(i - 1));
    }
  }
  EXPECT_EQ(total, v.total_count());
}

}  // namespace
}  // namespace pagedw2v
