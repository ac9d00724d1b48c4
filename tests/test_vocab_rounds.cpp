// The parallel count reads its chunks in rounds and hands each word to the thread of its shard:
// whatever the round size and thread count, the vocabulary (words, counts, order) and the tokens
// kept for the encoder are the one-thread reference's; a thread that fails mid-count stops the
// others instead of leaving them waiting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "error.hpp"
#include "mapped_file.hpp"
#include "string_index.hpp"
#include "test_util.hpp"
#include "text_chunks.hpp"
#include "vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;
using testing_util::write_file;

/// Words of a Zipf-like spread, some seen once, first occurrences spread over the text, long
/// words past a table slot's 16-byte head, lines of all lengths.
std::string mixed_text(uint64_t seed, size_t words) {
  std::mt19937_64 rng(seed);
  std::string t;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t r = rng() % 4;
    if (r == 0) {
      t += "once" + std::to_string(i);
    } else if (r == 1) {
      t += "long-word-past-the-head-" + std::to_string(rng() % 300);
    } else {
      t += "w" + std::to_string(std::min(rng() % 5000, rng() % 5000));
    }
    t += rng() % 17 == 0 ? "\n" : (rng() % 50 == 0 ? "  \t" : " ");
  }
  return t;
}

/// The word hash as first written (its tail copied into a zeroed word): files and caches keyed
/// by it must keep their keys.
uint64_t reference_hash(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

TEST(VocabRounds, TheWordHashIsUnchangedForEveryLength) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  for (size_t len = 0; len <= 40; ++len) {
    for (int trial = 0; trial < 50; ++trial) {
      std::string s(len, '\0');
      for (char& c : s) c = static_cast<char>(rng());
      ASSERT_EQ(detail::hash_bytes(s), reference_hash(s)) << "length " << len;
    }
  }
}

TEST(VocabRounds, AnyRoundSizeGivesTheOneThreadResult) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string text = mixed_text(seed, 40000);
  VocabOptions vo;
  vo.min_count = 2;
  const Vocab ref = Vocab::count_serial(text, vo);
  const EncodedCorpus ref_corpus = encode_corpus_serial(text, ref, EncodeOptions{});
  ASSERT_GT(ref.size(), 1000u);
  for (const uint64_t round_bytes :
       {uint64_t{1}, uint64_t{97}, uint64_t{4096}, uint64_t{1} << 20}) {
    for (const uint32_t threads : {1u, 2u, 3u, 8u}) {
      SCOPED_TRACE("round_bytes " + std::to_string(round_bytes) + ", threads " +
                   std::to_string(threads));
      vo.threads = threads;
      vo.min_bytes_per_thread = 1;
      vo.round_bytes = round_bytes;
      vo.keep_tokens = true;
      const Vocab v = Vocab::count(text, vo);
      ASSERT_EQ(v.words(), ref.words());
      EXPECT_EQ(v.counts(), ref.counts());
      EXPECT_EQ(v.corpus_tokens(), ref.corpus_tokens());
      EXPECT_EQ(v.distinct_words(), ref.distinct_words());
      ASSERT_NE(v.counted_text(), nullptr);
      EncodeOptions eo;
      eo.threads = threads;
      const EncodedCorpus c = encode_corpus({text}, v, eo);
      EXPECT_EQ(c.tokens, ref_corpus.tokens);
      EXPECT_EQ(c.sentence_starts, ref_corpus.sentence_starts);
    }
  }
}

// Words first met late in an early chunk and again early in a later one: their first
// occurrences are the earlier chunk's, although the later chunk's round counts them first.
TEST(VocabRounds, FirstOccurrenceIsTheEarliestAcrossChunksAndRounds) {
  // Chunk 0 ends with "x y", chunk 1 starts with "y x"; both are seen twice, so only their first
  // occurrences order them: x, then y.
  std::string a;
  for (int i = 0; i < 100; ++i) a += "p ";
  a += "x y\n";
  std::string b = " y x";
  while (b.size() + 2 < a.size()) b += " q";
  while (b.size() < a.size()) b += " ";
  const std::string text = a + b;
  ASSERT_EQ(split_text({text}, 2)[1].front().text.data(), text.data() + a.size());
  VocabOptions vo;
  vo.min_count = 1;
  const Vocab ref = Vocab::count_serial(text, vo);
  ASSERT_EQ(ref.find("x") + 1, ref.find("y"));
  vo.threads = 2;
  vo.min_bytes_per_thread = 1;
  for (const uint64_t round_bytes : {uint64_t{8}, uint64_t{1} << 20}) {
    vo.round_bytes = round_bytes;
    const Vocab v = Vocab::count(text, vo);
    EXPECT_EQ(v.words(), ref.words()) << "round_bytes " << round_bytes;
    EXPECT_EQ(v.counts(), ref.counts());
  }
}

TEST(VocabRounds, AThreadThatFailsStopsTheOthers) {
  TempDir dir;
  const std::string text = mixed_text(testing_util::fresh_seed(), 400000);
  write_file(dir.file("c.txt"), text);
  const MappedFile file(dir.file("c.txt"));
  // The first half stays readable: the threads of the first chunks count on (and wait at the
  // end of each round) while those of the last fail.
  ASSERT_EQ(::truncate(dir.file("c.txt").c_str(), static_cast<off_t>(text.size() / 2)), 0);
  VocabOptions vo;
  vo.threads = 4;
  vo.min_bytes_per_thread = 1;
  vo.round_bytes = 4096;
  try {
    Vocab::count(file.view(), vo);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed while it was read"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pagedw2v
