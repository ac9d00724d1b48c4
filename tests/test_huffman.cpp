#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/huffman.hpp"
#include "support/seed.hpp"

namespace pagedw2v {
namespace {

std::vector<uint32_t> rows_of(const HuffmanTree& t, uint32_t w) {
  return std::vector<uint32_t>(t.path_rows(w), t.path_rows(w) + t.length(w));
}
std::string code_of(const HuffmanTree& t, uint32_t w) {
  std::string s;
  for (uint32_t d = 0; d < t.length(w); ++d) s += static_cast<char>('0' + t.path_codes(w)[d]);
  return s;
}

// Counts 5 4 3 2 1, worked by hand through word2vec.c's CreateBinaryTree: inner node 0 joins the
// words of counts 1 and 2 (weight 3); node 1 joins node 0 and the word of count 3 (a tie: the
// inner node goes first); node 2 joins 4 and 5; node 3, the root, joins nodes 1 and 2. The
// second of each pair gets code 1. Rows: node i is row 3 − i (the root row 0).
TEST(Huffman, MatchesWord2vecOnAHandWorkedVocabulary) {
  const HuffmanTree t = build_huffman_tree(CountList(std::vector<uint64_t>{5, 4, 3, 2, 1}));
  ASSERT_EQ(t.words(), 5u);
  EXPECT_EQ(t.inner_nodes(), 4u);
  EXPECT_EQ(t.max_length, 3u);
  const std::vector<std::vector<uint32_t>> rows = {{0, 1}, {0, 1}, {0, 2}, {0, 2, 3}, {0, 2, 3}};
  const std::vector<std::string> codes = {"11", "10", "01", "001", "000"};
  for (uint32_t w = 0; w < 5; ++w) {
    EXPECT_EQ(rows_of(t, w), rows[w]) << w;
    EXPECT_EQ(code_of(t, w), codes[w]) << w;
  }
}

TEST(Huffman, OneAndTwoWords) {
  const HuffmanTree one = build_huffman_tree(CountList(std::vector<uint64_t>{9}));
  EXPECT_EQ(one.words(), 1u);
  EXPECT_EQ(one.inner_nodes(), 0u);
  EXPECT_EQ(one.length(0), 0u);
  const HuffmanTree two = build_huffman_tree(CountList(std::vector<uint64_t>{9, 4}));
  EXPECT_EQ(rows_of(two, 0), std::vector<uint32_t>{0});
  EXPECT_EQ(rows_of(two, 1), std::vector<uint32_t>{0});
  // word2vec takes the rarer first: the more frequent word is the second child, code 1.
  EXPECT_EQ(code_of(two, 0), "1");
  EXPECT_EQ(code_of(two, 1), "0");
}

/// The least weighted path length Σ count·length of any binary code of `counts` (a plain
/// Huffman construction with a priority queue): the tree's must equal it.
uint64_t optimal_cost(const std::vector<uint64_t>& counts) {
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> q(counts.begin(),
                                                                                 counts.end());
  uint64_t cost = 0;
  while (q.size() > 1) {
    const uint64_t a = q.top();
    q.pop();
    const uint64_t b = q.top();
    q.pop();
    cost += a + b;
    q.push(a + b);
  }
  return cost;
}

class HuffmanRandom : public ::testing::TestWithParam<uint32_t> {};

// On random sorted counts: codes are prefix-free and complete (Kraft's sum is 1), the weighted
// length is the optimum, every path starts at the root (row 0), the rows are the V − 1 inner
// nodes, and two words that share a code prefix share the nodes along it.
TEST_P(HuffmanRandom, IsAnOptimalPrefixCodeOverTheInnerRows) {
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  const uint32_t n = GetParam();
  std::vector<uint64_t> counts(n);
  for (uint64_t& c : counts) c = 1 + rng() % (rng() % 2 ? 10 : 100000);
  std::sort(counts.rbegin(), counts.rend());
  const HuffmanTree t = build_huffman_tree(CountList(counts));
  ASSERT_EQ(t.words(), n);
  uint64_t cost = 0;
  double kraft = 0;
  std::set<std::string> codes;
  std::map<std::string, uint32_t> node_at;  // code prefix → the row of the node it leads to
  std::set<uint32_t> rows_used;
  for (uint32_t w = 0; w < n; ++w) {
    const uint32_t len = t.length(w);
    ASSERT_GE(len, 1u);
    ASSERT_LE(len, kMaxCodeLength);
    EXPECT_EQ(t.path_rows(w)[0], 0u);
    cost += counts[w] * len;
    kraft += std::ldexp(1.0, -static_cast<int>(len));
    const std::string code = code_of(t, w);
    codes.insert(code);
    for (uint32_t d = 0; d < len; ++d) {
      const uint32_t row = t.path_rows(w)[d];
      ASSERT_LT(row, n - 1);
      rows_used.insert(row);
      const auto [it, fresh] = node_at.emplace(code.substr(0, d), row);
      EXPECT_EQ(it->second, row) << "prefix '" << code.substr(0, d) << "'";
    }
  }
  EXPECT_EQ(codes.size(), n);
  for (const std::string& a : codes) {
    for (uint32_t k = 1; k < a.size(); ++k) EXPECT_EQ(codes.count(a.substr(0, k)), 0u) << a;
  }
  EXPECT_DOUBLE_EQ(kraft, 1.0);
  EXPECT_EQ(cost, optimal_cost(counts));
  EXPECT_EQ(rows_used.size(), n - 1);
  EXPECT_EQ(t.rows.size(), t.codes.size());
}

INSTANTIATE_TEST_SUITE_P(Sizes, HuffmanRandom, ::testing::Values(3u, 17u, 1000u, 20000u));

/// Word w's path read from the links as a kernel reads them: up from the word's link to the root,
/// then reversed to root first. Rows and codes as path_rows and path_codes hold them.
std::pair<std::vector<uint32_t>, std::string> walk_links(const std::vector<uint32_t>& links,
                                                         uint32_t words, uint32_t w) {
  std::vector<uint32_t> rows;
  std::string codes;
  for (uint32_t link = links[w]; link != kHuffmanRootLink;
       link = links[words + (link & kHuffmanLinkRow)]) {
    rows.push_back(link & kHuffmanLinkRow);
    codes += static_cast<char>('0' + (link >> 31));
    if (rows.size() > kMaxCodeLength) break;  // a cycle: fails below
  }
  std::reverse(rows.begin(), rows.end());
  std::reverse(codes.begin(), codes.end());
  return {rows, codes};
}

// The links hand-worked for counts 5 4 3 2 1 (rows and codes as in the test above): the root
// (row 0) has none; row 1's parent is the root by code 1, rows 2 and 3 hang under rows 0 and 2
// by code 0.
TEST(HuffmanLinks, AreTheParentsOfTheHandWorkedTree) {
  const HuffmanTree t = build_huffman_tree(CountList(std::vector<uint64_t>{5, 4, 3, 2, 1}));
  const std::vector<uint32_t> links = huffman_links(t);
  const uint32_t c1 = 1u << 31;
  const std::vector<uint32_t> want = {1 | c1,           1,      2 | c1, 3 | c1, 3,  // the words
                                      kHuffmanRootLink, 0 | c1, 0,      2};  // inner rows 0 … 3
  EXPECT_EQ(links, want);
  EXPECT_TRUE(huffman_links(build_huffman_tree(CountList(std::vector<uint64_t>{}))).empty());
  const std::vector<uint32_t> one =
      huffman_links(build_huffman_tree(CountList(std::vector<uint64_t>{9})));
  EXPECT_EQ(one, std::vector<uint32_t>{kHuffmanRootLink});
}

class HuffmanLinksRandom : public ::testing::TestWithParam<uint32_t> {};

// On random counts, sorted or not: walking the links from each word gives its path, rows and
// codes, root first, and every parent's row is below its child's.
TEST_P(HuffmanLinksRandom, WalkToEveryWordsPath) {
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  const uint32_t n = GetParam();
  std::vector<uint64_t> counts(n);
  for (uint64_t& c : counts) c = 1 + rng() % (rng() % 2 ? 10 : 100000);
  if (rng() % 2) std::sort(counts.rbegin(), counts.rend());
  const HuffmanTree t = build_huffman_tree(CountList(counts));
  const std::vector<uint32_t> links = huffman_links(t);
  ASSERT_EQ(links.size(), 2u * n - 1);
  for (uint32_t w = 0; w < n; ++w) {
    const auto [rows, codes] = walk_links(links, n, w);
    ASSERT_EQ(rows, rows_of(t, w)) << "word " << w << " seed " << seed;
    ASSERT_EQ(codes, code_of(t, w)) << "word " << w << " seed " << seed;
  }
  for (uint32_t r = 1; r + 1 < n; ++r) {
    ASSERT_NE(links[n + r], kHuffmanRootLink) << r;
    EXPECT_LT(links[n + r] & kHuffmanLinkRow, r);
  }
  EXPECT_EQ(links[n], kHuffmanRootLink);
}

INSTANTIATE_TEST_SUITE_P(Sizes, HuffmanLinksRandom, ::testing::Values(2u, 3u, 17u, 1000u, 20000u));

// A vocabulary in another order (a --vocab file) gets the tree of its counts sorted: each word
// the path it has there.
TEST(Huffman, UnsortedCountsTakeTheSortedTree) {
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> sorted(300);
  for (uint64_t& c : sorted) c = 1 + rng() % 1000;
  std::stable_sort(sorted.begin(), sorted.end(), std::greater<uint64_t>());
  // Distinct counts keep the order of ties out of it.
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = sorted[i] * 1000 + (999 - i);
  std::vector<uint32_t> perm(sorted.size());
  for (uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<uint64_t> shuffled(sorted.size());
  for (size_t i = 0; i < perm.size(); ++i) shuffled[perm[i]] = sorted[i];
  const HuffmanTree a = build_huffman_tree(CountList(sorted));
  const HuffmanTree b = build_huffman_tree(CountList(shuffled));
  for (uint32_t i = 0; i < perm.size(); ++i) {
    EXPECT_EQ(rows_of(a, i), rows_of(b, perm[i]));
    EXPECT_EQ(code_of(a, i), code_of(b, perm[i]));
  }
}

// Counts that grow like the Fibonacci numbers make a path one longer per word: past word2vec's
// 40 the tree is refused, not cut.
TEST(Huffman, RefusesATreeDeeperThanWord2vecs) {
  std::vector<uint64_t> fib = {1, 1};
  while (fib.size() < 41) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
  std::vector<uint64_t> counts(fib.rbegin(), fib.rend());
  EXPECT_EQ(build_huffman_tree(CountList(counts)).max_length, 40u);
  counts.insert(counts.begin(), counts[0] + counts[1]);
  try {
    build_huffman_tree(CountList(counts));
    FAIL() << "a tree 41 deep was built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("41 levels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pagedw2v
