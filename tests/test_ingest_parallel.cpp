// The parallel vocabulary count and encoding against the one-thread reference: same words,
// counts, order, ids, tokens and sentence cuts for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "corpus/corpus.hpp"
#include "test_util.hpp"
#include "text/text_chunks.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

struct Shape {
  const char* name;
  std::string (*make)(std::mt19937_64& rng);
};

std::string word_of(uint64_t i) { return "w" + std::to_string(i); }

/// Many words with equal counts whose first occurrences lie in different chunks.
std::string ties(std::mt19937_64& rng) {
  std::string t;
  for (int round = 0; round < 3; ++round) {
    std::vector<int> ids(3000);
    for (int i = 0; i < 3000; ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int i = 0; i < 3000; ++i) t += word_of(ids[i]) + (i % 9 == 8 ? "\n" : " ");
  }
  return t;
}

/// Lines of 0 to 3000 words (cut at 1000), empty lines and runs of spaces, no final newline.
std::string long_and_empty_lines(std::mt19937_64& rng) {
  std::string t;
  for (int line = 0; line < 60; ++line) {
    const int words = line % 7 == 0 ? 0 : static_cast<int>(rng() % 3000);
    for (int i = 0; i < words; ++i) {
      t += word_of(std::min<uint64_t>(rng() % 500, rng() % 500));
      t += rng() % 13 == 0 ? " \t  " : " ";
    }
    t += line % 5 == 0 ? "\n\n\n" : "\r\n";
  }
  t += "tail words without newline";
  return t;
}

/// Long words (cut at 100 bytes), multi-byte characters and invalid bytes.
std::string long_words_and_utf8(std::mt19937_64& rng) {
  const std::string pieces[] = {std::string(150, 'x'),
                                std::string(120, 'x') + "y",
                                "日本語のテキストは空白なしで長く続きます日本語のテキストは空白な"
                                "しで長く続きます",
                                "caf\xe9",
                                "\xff\xfe",
                                "Straße",
                                "a"};
  std::string t;
  for (int i = 0; i < 5000; ++i) t += pieces[rng() % 7] + (rng() % 11 == 0 ? "\n" : " ");
  return t;
}

/// A handful of words, fewer bytes than the threads would like (chunks inside a line).
std::string tiny(std::mt19937_64& rng) {
  std::string t = "b a c a b a d a b e";
  if (rng() % 2) t += "\n";
  return t;
}

/// One 200 kB line.
std::string one_line(std::mt19937_64& rng) {
  std::string t;
  while (t.size() < 200000) t += word_of(rng() % 2000) + " ";
  return t;
}

/// A large vocabulary: about 70 k distinct words of 2 to 43 bytes (past a table slot's 16-byte
/// head), most seen once or twice, so that tables grow many times, every shard holds many words and
/// count ties are everywhere; a few frequent words are spread over the whole text.
std::string large_vocabulary(std::mt19937_64& rng) {
  std::string t;
  const std::string pad(40, 'q');
  for (uint64_t i = 0; i < 80000; ++i) {
    const uint64_t id = rng() % 5 == 0 ? rng() % 50 : i * 7919 % 80021;
    t += word_of(id) + pad.substr(0, id % 37);
    t += rng() % 40 == 0 ? "\n" : " ";
    if (rng() % 3 == 0) t += word_of(rng() % 40000) + " ";
  }
  return t;
}

const Shape kShapes[] = {{"large_vocabulary", large_vocabulary},
                         {"ties", ties},
                         {"long_and_empty_lines", long_and_empty_lines},
                         {"long_words_and_utf8", long_words_and_utf8},
                         {"tiny", tiny},
                         {"one_line", one_line}};

class ParallelIngest : public ::testing::TestWithParam<Shape> {};

void expect_same_vocab(const Vocab& a, const Vocab& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.words(), b.words());
  EXPECT_EQ(a.counts(), b.counts());
  EXPECT_EQ(a.corpus_tokens(), b.corpus_tokens());
  for (uint32_t row = 0; row < a.size(); ++row) {
    ASSERT_EQ(a.find(a.word(row)), row) << a.word(row);
  }
  EXPECT_EQ(a.find("not-a-word-of-any-text"), -1);
}

TEST_P(ParallelIngest, EveryThreadCountGivesTheOneThreadResult) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string text = GetParam().make(rng);
  for (bool lowercase : {false, true}) {
    for (auto [min_count, max_vocab] : {std::pair<uint64_t, uint64_t>{1, 0}, {3, 0}, {1, 777}}) {
      VocabOptions vo;
      vo.min_count = min_count;
      vo.max_vocab = max_vocab;
      vo.text.lowercase = lowercase;
      const Vocab ref = Vocab::count_serial(text, vo);
      EncodeOptions eo;
      eo.text = vo.text;
      const EncodedCorpus ref_corpus = encode_corpus_serial(text, ref, eo);
      // Every thread count with the plain options; the other options, which change the words
      // kept and how they are read, not how the text is split, with an even and an odd count.
      // (Most of the time goes to the many threads' tables: 16 and 64 threads run once each.)
      const bool plain = !lowercase && min_count == 1 && max_vocab == 0;
      const std::vector<uint32_t> thread_counts =
          plain ? std::vector<uint32_t>{1, 2, 3, 4, 7, 16, 64} : std::vector<uint32_t>{2, 7};
      for (uint32_t threads : thread_counts) {
        for (bool keep_tokens : {false, true}) {
          SCOPED_TRACE("threads " + std::to_string(threads) + (keep_tokens ? ", tokens kept" : ""));
          vo.threads = threads;
          vo.min_bytes_per_thread = 1;  // every thread counts, however small the text
          vo.keep_tokens = keep_tokens;
          const Vocab v = Vocab::count(text, vo);
          expect_same_vocab(v, ref);
          EXPECT_EQ(v.counted_text() != nullptr, keep_tokens);
          eo.threads = threads;
          const EncodedCorpus c = encode_corpus({text}, v, eo);
          EXPECT_EQ(c.tokens, ref_corpus.tokens);
          EXPECT_EQ(c.sentence_starts, ref_corpus.sentence_starts);
          if (keep_tokens) {
            // Another text (here a copy) is read, not taken for the one counted.
            const std::string copy = text;
            eo.threads = 3;
            const EncodedCorpus d = encode_corpus({copy}, v, eo);
            EXPECT_EQ(d.tokens, ref_corpus.tokens);
            EXPECT_EQ(d.sentence_starts, ref_corpus.sentence_starts);
          }
        }
      }
    }
  }
}

// A count that hands its text back as it goes (VocabOptions::read_done, so that a mapped
// file's pages can leave memory) reads it in slices cut before space bytes: the words, counts and
// kept tokens are those of one piece a thread, and the slices cover the text once.
TEST_P(ParallelIngest, ACountInSlicesGivesTheSameResultAndReturnsEveryByteOnce) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string text = GetParam().make(rng);
  VocabOptions vo;
  const Vocab ref = Vocab::count_serial(text, vo);
  EncodeOptions eo;
  const EncodedCorpus ref_corpus = encode_corpus_serial(text, ref, eo);
  for (uint32_t threads : {1u, 3u, 7u}) {
    for (uint64_t slice : {uint64_t{1}, uint64_t{37}, uint64_t{4096}}) {
      for (bool keep_tokens : {false, true}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + ", slices of " + std::to_string(slice) +
                     (keep_tokens ? ", tokens kept" : ""));
        std::mutex m;
        std::vector<std::string_view> slices;
        vo.threads = threads;
        vo.min_bytes_per_thread = 1;
        vo.keep_tokens = keep_tokens;
        vo.read_slice_bytes = slice;
        vo.read_done = [&](std::string_view s) {
          std::lock_guard<std::mutex> lock(m);
          slices.push_back(s);
        };
        const Vocab v = Vocab::count(text, vo);
        expect_same_vocab(v, ref);
        eo.threads = threads;
        const EncodedCorpus c = encode_corpus({text}, v, eo);
        EXPECT_EQ(c.tokens, ref_corpus.tokens);
        EXPECT_EQ(c.sentence_starts, ref_corpus.sentence_starts);
        std::sort(slices.begin(), slices.end(),
                  [](std::string_view a, std::string_view b) { return a.data() < b.data(); });
        size_t at = 0;
        for (std::string_view s : slices) {
          ASSERT_EQ(static_cast<size_t>(s.data() - text.data()), at) << "a gap or an overlap";
          ASSERT_FALSE(s.empty());
          at += s.size();
          if (at < text.size()) {
            EXPECT_TRUE(is_space_byte(static_cast<unsigned char>(text[at])))
                << "a slice ends inside a word at byte " << at;
          }
          if (s.size() > slice) {
            // Longer only by the word it would have cut.
            const std::string_view over = s.substr(slice);
            EXPECT_EQ(std::count_if(
                          over.begin(), over.end(),
                          [](char ch) { return is_space_byte(static_cast<unsigned char>(ch)); }),
                      0);
          }
        }
        EXPECT_EQ(at, text.size());
        vo.read_done = nullptr;
      }
    }
  }
}

TEST_P(ParallelIngest, PartsAreTextsJoinedByNewlines) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::string> texts;
  for (int i = 0; i < 4; ++i) texts.push_back(GetParam().make(rng));
  texts.insert(texts.begin() + 2, "");  // an empty file
  texts[0] += "no-newline-at-the-end";
  std::string joined;
  std::vector<std::string_view> parts;
  for (const std::string& t : texts) {
    joined += t + "\n";
    parts.push_back(t);
  }
  VocabOptions vo;
  vo.min_count = 1;
  const Vocab ref = Vocab::count_serial(joined, vo);
  const EncodedCorpus ref_corpus = encode_corpus_serial(joined, ref, EncodeOptions{});
  for (uint32_t threads : {1u, 2u, 5u, 32u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    vo.threads = threads;
    vo.min_bytes_per_thread = 1;  // every thread counts, however small the text
    expect_same_vocab(Vocab::count(parts, vo), ref);
    EncodeOptions eo;
    eo.threads = threads;
    const EncodedCorpus c = encode_corpus(parts, ref, eo);
    EXPECT_EQ(c.tokens, ref_corpus.tokens);
    EXPECT_EQ(c.sentence_starts, ref_corpus.sentence_starts);
    vo.keep_tokens = true;
    const Vocab kept = Vocab::count(parts, vo);
    vo.keep_tokens = false;
    ASSERT_NE(kept.counted_text(), nullptr);
    expect_same_vocab(kept, ref);
    const EncodedCorpus k = encode_corpus(parts, kept, eo);
    EXPECT_EQ(k.tokens, ref_corpus.tokens);
    EXPECT_EQ(k.sentence_starts, ref_corpus.sentence_starts);
  }
}

TEST(CountedText, TheEncoderTakesTheTokensPreparedWhileTheCountMerged) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string text = large_vocabulary(rng);
  for (uint64_t min_count : {1, 2}) {
    SCOPED_TRACE("min_count " + std::to_string(min_count));
    VocabOptions vo;
    vo.min_count = min_count;
    vo.threads = 4;
    vo.min_bytes_per_thread = 1;
    vo.keep_tokens = true;
    const Vocab v = Vocab::count(text, vo);
    const EncodedCorpus ref = encode_corpus_serial(text, Vocab::count_serial(text, vo), {});
    const detail::CountedText* counted = v.counted_text();
    ASSERT_NE(counted, nullptr);
    EXPECT_TRUE(counted->prepared_tokens.valid());
    EXPECT_EQ(counted->all_kept, v.size() == v.distinct_words());
    EXPECT_EQ(counted->all_kept, min_count == 1);  // the text has words seen once
    EncodeOptions eo;
    eo.threads = 4;
    const EncodedCorpus c = encode_corpus({text}, v, eo);
    EXPECT_FALSE(counted->prepared_tokens.valid());
    EXPECT_EQ(c.tokens, ref.tokens);
    EXPECT_EQ(c.sentence_starts, ref.sentence_starts);
    // Again, with no vector prepared.
    const EncodedCorpus again = encode_corpus({text}, v, eo);
    EXPECT_EQ(again.tokens, ref.tokens);
    EXPECT_EQ(again.sentence_starts, ref.sentence_starts);
  }
}

TEST(CountedText, TakesThePreparedTokensOnceAndOnlyWhenTheirSizeFits) {
  auto prepared = [](size_t size) {
    std::promise<std::vector<uint32_t>> p;
    p.set_value(std::vector<uint32_t>(size, 7));
    return p.get_future();
  };
  detail::CountedText counted;
  EXPECT_EQ(counted.take_tokens(5).size(), 5u);
  counted.prepared_tokens = prepared(100);
  std::vector<uint32_t> taken = counted.take_tokens(90);
  EXPECT_EQ(taken.size(), 100u);  // the prepared vector (its excess within an eighth)
  EXPECT_EQ(taken[0], 7u);
  EXPECT_FALSE(counted.prepared_tokens.valid());
  EXPECT_EQ(counted.take_tokens(90).size(), 90u);  // a new one
  counted.prepared_tokens = prepared(100);
  EXPECT_EQ(counted.take_tokens(50).size(), 50u);  // too large: a new one
  counted.prepared_tokens = prepared(100);
  EXPECT_EQ(counted.take_tokens(101).size(), 101u);  // too small: a new one
}

INSTANTIATE_TEST_SUITE_P(Ingest, ParallelIngest, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SplitText, ChunksCoverThePartsOnceAndCutOnlyBeforeSpaces) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> texts(1 + rng() % 4);
    for (std::string& t : texts) {
      const size_t len = rng() % 40;
      for (size_t i = 0; i < len; ++i) t += "ab \n"[rng() % 4];
    }
    std::vector<std::string_view> parts(texts.begin(), texts.end());
    const size_t n = 1 + rng() % 12;
    const std::vector<TextChunk> chunks = split_text(parts, n);
    ASSERT_EQ(chunks.size(), n);
    size_t part = 0, off = 0;
    for (const TextChunk& chunk : chunks) {
      for (const TextSegment& seg : chunk) {
        while (part < parts.size() && off == parts[part].size() &&
               seg.text.data() != parts[part].data() + off) {
          ++part;
          off = 0;
        }
        ASSERT_LT(part, parts.size());
        ASSERT_EQ(seg.text.data(), parts[part].data() + off) << "trial " << trial;
        if (off > 0 && !seg.text.empty()) {
          EXPECT_TRUE(is_space_byte(static_cast<unsigned char>(seg.text[0])));
        }
        off += seg.text.size();
        EXPECT_EQ(seg.ends_part, off == parts[part].size());
      }
    }
    while (part < parts.size() && off == parts[part].size()) {
      ++part;
      off = 0;
    }
    EXPECT_EQ(part, parts.size()) << "trial " << trial;
  }
}

}  // namespace
}  // namespace pagedw2v
