// The counting tables: ZeroedArray's storage and WordTable over it (an empty slot is all zero
// bytes), through many rehashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/huge_pages.hpp"
#include "base/string_index.hpp"
#include "corpus/corpus.hpp"
#include "test_util.hpp"
#include "text/word_table.hpp"

namespace pagedw2v {
namespace {

TEST(ZeroedArray, StartsZeroAndOwnsItsBytes) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  // Below and above the 2 MiB where calloc gives way to a mapping of its own.
  for (const size_t n : {size_t{1}, size_t{1000}, (size_t{2} << 20) / 8 - 1, (size_t{2} << 20) / 8,
                         (size_t{5} << 20) / 8 + 3}) {
    SCOPED_TRACE("n " + std::to_string(n));
    ZeroedArray<uint64_t> a(n);
    ASSERT_EQ(a.size(), n);
    ASSERT_NE(a.data(), nullptr);
    if (n * 8 >= (size_t{2} << 20)) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % (size_t{2} << 20), 0u);
    }
    uint64_t nonzero = 0;
    for (const uint64_t v : a) nonzero += v != 0;
    EXPECT_EQ(nonzero, 0u);
    const uint64_t first = rng(), last = rng();
    a[0] = first;
    a[n - 1] = last;
    ZeroedArray<uint64_t> b(std::move(a));
    EXPECT_EQ(a.size(), 0u);  // NOLINT: a moved-from array is empty
    EXPECT_EQ(a.data(), nullptr);
    ASSERT_EQ(b.size(), n);
    EXPECT_EQ(b[n - 1], last);
    if (n > 1) {
      EXPECT_EQ(b[0], first);
    }
    ZeroedArray<uint64_t> c(3);
    c = std::move(b);
    EXPECT_EQ(c.size(), n);
    EXPECT_EQ(c[n - 1], last);
  }
  EXPECT_EQ(ZeroedArray<uint32_t>().size(), 0u);
  EXPECT_EQ(ZeroedArray<uint32_t>(0).data(), nullptr);
}

TEST(WordTable, KeepsEveryWordThroughRehashes) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  detail::WordTable table(1);
  std::unordered_map<std::string, uint64_t> expected;  // word -> count
  std::vector<std::string> order;                      // by id
  for (int i = 0; i < 200000; ++i) {
    std::string w = (i % 3 == 0 ? "a-long-shared-prefix-" : "") + std::to_string(rng() % 60000);
    // Hashes whose tag bits (40..63) are zero too: no slot may be taken for empty.
    const uint64_t h = i % 5 == 0 ? detail::hash_bytes(w) & 0xFFFFFFFFFFull : detail::hash_bytes(w);
    if (i % 5 == 0) w += "#";  // another word, so that each word keeps one hash
    detail::WordTable::Slot& s = table.insert(w, h);
    if (s.value++ == 0) {
      ASSERT_EQ(s.id, order.size());
      order.push_back(w);
    }
    ++expected[w];
  }
  ASSERT_EQ(table.size(), expected.size());
  size_t visited = 0;
  table.for_each([&](detail::WordTable::Slot& s) {
    ++visited;
    ASSERT_LT(s.id, order.size());
    EXPECT_EQ(table.key(s.id), order[s.id]);
    EXPECT_EQ(s.value, expected[order[s.id]]);
  });
  EXPECT_EQ(visited, expected.size());
  for (uint32_t id = 0; id < order.size(); ++id) {
    const detail::WordTable::Slot* s = table.find(order[id], table.hash(id));
    ASSERT_NE(s, nullptr) << order[id];
    EXPECT_EQ(s->id, id);
  }
  EXPECT_EQ(table.find("absent", detail::hash_bytes("absent")), nullptr);
  EXPECT_EQ(table.find("", 0), nullptr);
}

TEST(LookupTable, LeavesOutTheEmptyWordThatNoTextHolds) {
  // An empty slot is all zero bytes, and a word's tag holds its length: no table holds "".
  const Vocab v = Vocab::from_words({"b", "", "a"}, {3, 2, 1});
  const detail::ShardedWordTable table = detail::lookup_table(v, 2);
  EXPECT_EQ(table.size(), 2u);
  const std::string text = "a b  c\nb a\n\n";
  EncodeOptions eo;
  eo.threads = 2;
  const EncodedCorpus c = encode_corpus({text}, v, eo);
  const EncodedCorpus ref = encode_corpus_serial(text, v, eo);
  EXPECT_EQ(c.tokens, ref.tokens);
  EXPECT_EQ(c.tokens, (std::vector<uint32_t>{2, 0, 0, 2}));
  EXPECT_EQ(c.sentence_starts, ref.sentence_starts);
}

}  // namespace
}  // namespace pagedw2v
