// Phrases (word2phrase's score and joining) on small corpora whose counts are worked out by
// hand, and on random ones against a plain reference and across thread counts.
#include "text/phrases.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "test_util.hpp"
#include "text/phrase_file.hpp"

namespace pagedw2v {
namespace {

/// The seed of the random inputs: PAGEDW2V_TEST_SEED when set, else fresh; printed.
uint64_t test_seed() {
  const char* v = std::getenv("PAGEDW2V_TEST_SEED");
  const uint64_t s =
      v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : testing_util::fresh_seed();
  std::printf("test seed %llu (replay with PAGEDW2V_TEST_SEED=%llu)\n",
              static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
  return s;
}

PhraseOptions options_with(double threshold, uint64_t min_count, uint32_t passes = 1) {
  PhraseOptions o;
  o.threshold = threshold;
  o.min_count = min_count;
  o.passes = passes;
  return o;
}

std::string phrase_output(const std::string& text, const PhraseOptions& o) {
  return apply_phrases(text, learn_phrases(PhraseText::of(text), o), o);
}

std::set<std::string> phrase_names(const PhraseTable& t) {
  std::set<std::string> names;
  for (const PhraseTable::Phrase& p : t.phrases()) names.insert(p.first + "_" + p.second);
  return names;
}

TEST(PhraseScore, Word2phraseFormula) {
  // (ab - min_count) * N / (a * b)
  EXPECT_DOUBLE_EQ(phrase_score(10, 20, 25, 5, 1000), 5.0 * 1000 / (20 * 25));
  EXPECT_DOUBLE_EQ(phrase_score(3, 4, 4, 1, 17), 2.0 * 17 / 16);
  // Any count below min_count: never a phrase.
  EXPECT_EQ(phrase_score(4, 20, 25, 5, 1000), 0.0);
  EXPECT_EQ(phrase_score(10, 4, 25, 5, 1000), 0.0);
  EXPECT_EQ(phrase_score(10, 20, 4, 5, 1000), 0.0);
  // A pair seen exactly min_count times scores 0.
  EXPECT_EQ(phrase_score(5, 20, 25, 5, 1000), 0.0);
}

// N = 17 words. With min_count 1: new 4, york 4, new york 3 -> (3-1)*17/16 = 2.125;
// is 2, big 2, is big 2 -> (2-1)*17/4 = 4.25; every other pair is seen once -> 0. The pairs
// across lines (big new, city i, ...) are not pairs.
const char* const kSmallCorpus =
    "new york is big\n"
    "new york city\n"
    "i love new york\n"
    "york new\n"
    "the city is big\n";

TEST(Phrases, HandCountedCorpus) {
  PhrasePassStats stats;
  const PhraseTable table =
      count_phrases(PhraseText::of(kSmallCorpus), {}, options_with(2.0, 1), &stats);
  EXPECT_EQ(stats.words, 17u);
  EXPECT_EQ(stats.distinct_words, 8u);
  EXPECT_EQ(stats.distinct_pairs, 9u);
  EXPECT_EQ(stats.pruned_below, 0u);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table.phrases()[0].first, "is");  // the highest score first
  EXPECT_EQ(table.phrases()[0].second, "big");
  EXPECT_DOUBLE_EQ(table.phrases()[0].score, 4.25);
  EXPECT_EQ(table.phrases()[0].count, 2u);
  EXPECT_EQ(table.phrases()[1].first, "new");
  EXPECT_DOUBLE_EQ(table.phrases()[1].score, 2.125);
  EXPECT_EQ(table.phrases()[1].count, 3u);

  EXPECT_EQ(phrase_output(kSmallCorpus, options_with(2.0, 1)),
            "new_york is_big\n"
            "new_york city\n"
            "i love new_york\n"
            "york new\n"
            "the city is_big\n");
  // Between the two scores: only is_big.
  EXPECT_EQ(phrase_output(kSmallCorpus, options_with(3.0, 1)),
            "new york is_big\nnew york city\ni love new york\nyork new\nthe city is_big\n");
  // min_count 2: new york (3-2)*17/16 = 1.0625, is big (2-2) = 0.
  EXPECT_EQ(phrase_names(count_phrases(PhraseText::of(kSmallCorpus), {}, options_with(1.0, 2))),
            std::set<std::string>{"new_york"});
  EXPECT_TRUE(
      count_phrases(PhraseText::of(kSmallCorpus), {}, options_with(1.07, 2)).phrases().empty());
}

TEST(Phrases, JoinsLeftToRightAndNeverTwice) {
  // a 5, b 5, c 5, a b 5, b c 5, N 15: both pairs score (5-1)*15/25 = 2.4. Read left to right,
  // `a b` joins and `b`, taken, cannot join `c` (word2phrase).
  std::string text;
  for (int i = 0; i < 5; ++i) text += "a b c\n";
  const PhraseTable t = count_phrases(PhraseText::of(text), {}, options_with(2.0, 1));
  EXPECT_EQ(phrase_names(t), (std::set<std::string>{"a_b", "b_c"}));
  EXPECT_DOUBLE_EQ(t.phrases()[0].score, 2.4);
  std::string want;
  for (int i = 0; i < 5; ++i) want += "a_b c\n";
  EXPECT_EQ(phrase_output(text, options_with(2.0, 1)), want);
}

TEST(Phrases, NeverAcrossLinesOrFiles) {
  // `a` ends 10 lines and `b` starts the next: were those pairs, a b would score
  // (11-1)*N/(11*11) > 1. Within lines `a b` is seen once: (1-1) = 0.
  std::string text;
  for (int i = 0; i < 10; ++i) text += "x a\nb y\n";
  text += "a b\n";
  const PhraseTable t = count_phrases(PhraseText::of(text), {}, options_with(0.5, 1));
  EXPECT_EQ(phrase_names(t).count("a_b"), 0u);
  EXPECT_NE(phrase_names(t).count("x_a"), 0u);  // (10-1)*42/(10*11) = 3.4
  EXPECT_NE(phrase_output(text, options_with(0.5, 1)).find("\na b\n"), std::string::npos);

  // Two parts: the first's last word and the second's first word are no pair, and the first,
  // which ends without a newline, gets one.
  std::string one, two;
  for (int i = 0; i < 10; ++i) {
    one += "x a\n";
    two += "b y\n";
  }
  one += "x a";
  const PhraseText parts{{one, two}, nullptr};
  const PhraseOptions o = options_with(0.5, 1);
  const std::vector<PhraseTable> tables = learn_phrases(parts, o);
  EXPECT_EQ(phrase_names(tables[0]).count("a_b"), 0u);
  std::string out;
  apply_phrases(parts, tables, o, [&](std::string_view s) { out.append(s); });
  std::string want;
  for (int i = 0; i < 11; ++i) want += "x_a\n";
  for (int i = 0; i < 10; ++i) want += "b_y\n";
  EXPECT_EQ(out, want);
}

TEST(Phrases, SecondPassJoinsPhrases) {
  // Pass 1: new 4, york 4, times 4, N 12; new york 4 and york times 4 score (4-1)*12/16 = 2.25;
  // `new york` joins first. Pass 2 reads `new_york times` x4: N 8, (4-1)*8/16 = 1.5.
  std::string text;
  for (int i = 0; i < 4; ++i) text += "new york times\n";
  const PhraseOptions one = options_with(1.0, 1, 1), two = options_with(1.0, 1, 2);
  std::vector<PhrasePassStats> stats;
  const std::vector<PhraseTable> tables = learn_phrases(
      PhraseText::of(text), two,
      [&](uint32_t, const PhraseTable&, const PhrasePassStats& s) { stats.push_back(s); });
  ASSERT_EQ(tables.size(), 2u);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].words, 12u);
  EXPECT_EQ(stats[1].words, 8u);
  ASSERT_EQ(tables[1].size(), 1u);
  EXPECT_EQ(tables[1].phrases()[0].first, "new_york");
  EXPECT_EQ(tables[1].phrases()[0].second, "times");
  EXPECT_DOUBLE_EQ(tables[1].phrases()[0].score, 1.5);
  std::string want1, want2;
  for (int i = 0; i < 4; ++i) {
    want1 += "new_york times\n";
    want2 += "new_york_times\n";
  }
  EXPECT_EQ(phrase_output(text, one), want1);
  EXPECT_EQ(apply_phrases(text, tables, two), want2);
  // Above pass 2's score, the second pass finds nothing.
  EXPECT_EQ(phrase_output(text, options_with(1.6, 1, 2)), want1);
}

TEST(PhraseFile, ReadsBackTheTablesThatJoinAsTheLearnedOnes) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::string text;
  for (int line = 0; line < 400; ++line) {
    for (int i = 0, n = 2 + static_cast<int>(rng() % 12); i < n; ++i) {
      text += rng() % 20 == 0 ? "new york times " : "w" + std::to_string(rng() % 40) + " ";
    }
    text += "\n";
  }
  const PhraseOptions o = options_with(2.0, 2, 3);
  const std::vector<PhraseTable> tables = learn_phrases(PhraseText::of(text), o);
  testing_util::TempDir dir;
  const std::string written = phrase_file_text(tables);
  testing_util::write_file(dir.file("p.tsv"), written);
  const std::vector<PhraseTable> back = read_phrase_file(dir.file("p.tsv"));
  // Passes after the last that found a phrase hold nothing to write.
  size_t used = tables.size();
  while (used > 0 && tables[used - 1].size() == 0) --used;
  ASSERT_EQ(back.size(), used);
  for (size_t k = 0; k < used; ++k) {
    ASSERT_EQ(back[k].size(), tables[k].size()) << "pass " << k + 1;
    for (size_t i = 0; i < back[k].size(); ++i) {
      EXPECT_EQ(back[k].phrases()[i].first, tables[k].phrases()[i].first);
      EXPECT_EQ(back[k].phrases()[i].second, tables[k].phrases()[i].second);
      EXPECT_EQ(back[k].phrases()[i].count, tables[k].phrases()[i].count);
      EXPECT_EQ(back[k].phrases()[i].score, tables[k].phrases()[i].score);
    }
  }
  EXPECT_EQ(phrase_file_text(back), written);
  EXPECT_EQ(apply_phrases(text, back, o), apply_phrases(text, tables, o));
  EXPECT_NE(apply_phrases(text, back, o), apply_phrases(text, {}, o));
}

TEST(PhraseFile, RefusesABrokenLineByNumber) {
  testing_util::TempDir dir;
  const std::string head = "# pass\tfirst\tsecond\tcount\tscore\n1\ta\tb\t5\t10\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2\tc\td\t5\t10\n1\te\tf\t5\t10\n", "line 4: pass 1 out of order"},
      {"3\tc\td\t5\t10\n", "line 3: pass 3 out of order"},
      {"1\ta\tb\t6\t11\n", "line 3: 'a b' twice"},
      {"1\tc\td\t5\n", "line 3: expected"},
      {"1\tc\td\tfive\t10\n", "line 3: the count"},
      {"1\tc\td\t5\tnan\n", "line 3: the score"},
      {"0\tc\td\t5\t10\n", "line 3: the pass"},
      {"1\tc d\te\t5\t10\n", "line 3: a phrase's words"},
      {"1\t" + std::string(60, 'x') + "\t" + std::string(60, 'y') + "\t5\t10\n",
       "line 3: the joined"},
  };
  for (const auto& [body, fragment] : cases) {
    testing_util::write_file(dir.file("bad.tsv"), head + body);
    try {
      read_phrase_file(dir.file("bad.tsv"));
      ADD_FAILURE() << "accepted: " << body;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
  testing_util::write_file(dir.file("empty.tsv"), "");
  EXPECT_TRUE(read_phrase_file(dir.file("empty.tsv")).empty());
}

TEST(Phrases, TokensAreNormalisedAndPhrasesStayUnderTheWordCap) {
  // Tabs, runs of spaces and CRs become one space; a joined token may not pass 100 bytes.
  const std::string l60(60, 'l'), r40(40, 'r'), r39(39, 'r');
  std::string text;
  for (int i = 0; i < 5; ++i) text += l60 + "\t" + r40 + "  \r\n" + l60 + " " + r39 + "\n";
  const PhraseTable t = count_phrases(PhraseText::of(text), {}, options_with(0.1, 1));
  EXPECT_EQ(phrase_names(t), std::set<std::string>{l60 + "_" + r39});  // 100 bytes, not 101
  std::string want;
  for (int i = 0; i < 5; ++i) want += l60 + " " + r40 + "\n" + l60 + "_" + r39 + "\n";
  EXPECT_EQ(phrase_output(text, options_with(0.1, 1)), want);
}

TEST(Phrases, PrunesTheRarestPairsWhenFull) {
  // 300 pairs seen once and one seen 50 times, in a table of 64 pairs: the rare ones are
  // dropped as it fills, the frequent one stays and still joins.
  std::string text;
  for (int i = 0; i < 300; ++i) text += "u" + std::to_string(i) + " v" + std::to_string(i) + "\n";
  for (int i = 0; i < 50; ++i) text += "big deal\n";
  PhraseOptions o = options_with(1.0, 5);
  o.max_pairs = 64;
  PhrasePassStats stats;
  const PhraseTable t = count_phrases(PhraseText::of(text), {}, o, &stats);
  EXPECT_GE(stats.pruned_below, 1u);
  EXPECT_LE(stats.distinct_pairs, 64u);
  EXPECT_EQ(stats.distinct_words, 602u);  // words are never dropped
  EXPECT_EQ(phrase_names(t), std::set<std::string>{"big_deal"});
}

// ---- random corpora -------------------------------------------------------------------------

/// The plain reference: word2phrase's passes over lines of space-separated words, with maps.
std::string reference_phrases(const std::vector<std::string>& parts, const PhraseOptions& o) {
  std::vector<std::vector<std::string>> lines;
  for (const std::string& part : parts) {
    std::istringstream in(part);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::vector<std::string> ws;
      for (std::string w; words >> w;) ws.push_back(w);
      lines.push_back(ws);
    }
  }
  for (uint32_t pass = 0; pass < o.passes; ++pass) {
    std::map<std::string, uint64_t> count;
    std::map<std::pair<std::string, std::string>, uint64_t> pairs;
    uint64_t n = 0;
    for (const auto& ws : lines) {
      for (size_t i = 0; i < ws.size(); ++i) {
        ++count[ws[i]];
        ++n;
        if (i > 0) ++pairs[{ws[i - 1], ws[i]}];
      }
    }
    auto joins = [&](const std::string& a, const std::string& b) {
      const auto it = pairs.find({a, b});
      if (it == pairs.end() || a.size() + 1 + b.size() > kMaxWordBytes) return false;
      return phrase_score(it->second, count[a], count[b], o.min_count, n) > o.threshold;
    };
    for (auto& ws : lines) {
      std::vector<std::string> out;
      bool free = false;  // the last word out may join the next
      for (const std::string& w : ws) {
        if (free && joins(out.back(), w)) {
          out.back() += "_" + w;
          free = false;
        } else {
          out.push_back(w);
          free = true;
        }
      }
      ws = out;
    }
  }
  std::string text;
  size_t line = 0;
  for (const std::string& part : parts) {
    size_t newlines = 0;
    for (const char c : part) newlines += c == '\n';
    const bool tail = !part.empty() && part.back() != '\n';
    for (size_t i = 0; i < newlines + (tail ? 1 : 0); ++i, ++line) {
      for (size_t k = 0; k < lines[line].size(); ++k) text += (k ? " " : "") + lines[line][k];
      if (i < newlines || !lines[line].empty()) text += "\n";
    }
  }
  return text;
}

/// Text from a Markov chain over `vocab` words in which word i is often followed by i + 1, so
/// that there are phrases, chains of them (a b c d) and phrases of phrases, between filler words
/// that join nothing; some lines are long, so that cuts between threads fall inside lines.
std::string chain_text(std::mt19937_64& rng, size_t lines, uint32_t vocab) {
  std::string text;
  for (size_t l = 0; l < lines; ++l) {
    const size_t len = rng() % 10 == 0 ? 500 + rng() % 1500 : 1 + rng() % 30;
    uint32_t w = static_cast<uint32_t>(rng() % vocab);
    for (size_t i = 0; i < len; ++i) {
      const std::string word =
          rng() % 10 < 3 ? "f" + std::to_string(rng() % 5) : "w" + std::to_string(w);
      text += word + (rng() % 17 == 0 ? "\t " : " ");
      w = rng() % 3 != 0 ? (w + 1) % vocab : static_cast<uint32_t>(rng() % vocab);
    }
    text += "\n";
  }
  return text;
}

TEST(Phrases, RandomCorporaMatchTheReferenceOnAnyThreadCount) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> parts = {chain_text(rng, 200, 40), chain_text(rng, 150, 60),
                                      chain_text(rng, 5, 30)};
    parts[1].pop_back();  // a part without its last newline
    PhraseOptions o = options_with(round == 0 ? 10.0 : 5.0, 3, round + 1);
    o.max_pairs = 1 << 20;
    const std::string want = reference_phrases(parts, o);
    const PhraseText text{{parts[0], parts[1], parts[2]}, nullptr};
    std::vector<std::set<std::string>> names_1;
    for (const uint32_t threads : {1u, 2u, 3u, 8u}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", passes " + std::to_string(o.passes));
      o.threads = threads;
      o.min_bytes_per_thread = 1;
      o.slice_bytes = 1000 + rng() % 5000;
      const std::vector<PhraseTable> tables = learn_phrases(text, o);
      ASSERT_EQ(tables.size(), o.passes);
      if (threads == 1) {
        for (const PhraseTable& t : tables) names_1.push_back(phrase_names(t));
        EXPECT_FALSE(names_1.front().empty());
      } else {
        for (size_t k = 0; k < tables.size(); ++k) EXPECT_EQ(phrase_names(tables[k]), names_1[k]);
      }
      std::string out;
      const PhraseOutputStats stats =
          apply_phrases(text, tables, o, [&](std::string_view s) { out.append(s); });
      EXPECT_EQ(out, want);
      EXPECT_EQ(stats.bytes, out.size());
      EXPECT_GT(stats.joined, 0u);
    }
  }
}

}  // namespace
}  // namespace pagedw2v
