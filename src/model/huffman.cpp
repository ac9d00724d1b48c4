/// @file huffman.cpp
/// word2vec.c's CreateBinaryTree over counts sorted descending (huffman.hpp).

#include "model/huffman.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/error.hpp"

namespace pagedw2v {

HuffmanTree build_huffman_tree(const CountList& counts) {
  HuffmanTree tree;
  const uint64_t n = counts.size();
  tree.offsets.assign(n + 1, 0);
  if (n < 2) return tree;
  // word2vec's tree is built over its vocabulary sorted by count descending: `order[k]` is the
  // word at sorted position k (the identity for a counted vocabulary).
  const std::vector<uint64_t> count_of = counts.to_vector();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (!std::is_sorted(count_of.begin(), count_of.end(), std::greater<uint64_t>())) {
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return count_of[a] > count_of[b]; });
  }
  // Nodes 0 … n − 1 are the sorted words, n … 2n − 2 the inner nodes in the order they are made.
  // Two cursors walk the leaves from the rarest up (pos1) and the inner nodes in the order made
  // (pos2): both runs are sorted, so the two smallest are at the cursors. On equal counts the
  // inner node is taken first (word2vec compares with <).
  const uint64_t kUnmade = uint64_t{1} << 62;
  std::vector<uint64_t> weight(2 * n, kUnmade);
  std::vector<uint64_t> parent(2 * n, 0);
  std::vector<uint8_t> binary(2 * n, 0);
  for (uint64_t k = 0; k < n; ++k) weight[k] = count_of[order[k]];
  int64_t pos1 = static_cast<int64_t>(n) - 1;
  uint64_t pos2 = n;
  const auto smallest = [&]() -> uint64_t {
    if (pos1 >= 0 && weight[static_cast<uint64_t>(pos1)] < weight[pos2]) {
      return static_cast<uint64_t>(pos1--);
    }
    return pos2++;
  };
  for (uint64_t a = 0; a + 1 < n; ++a) {
    const uint64_t min1 = smallest();
    const uint64_t min2 = smallest();
    weight[n + a] = weight[min1] + weight[min2];
    parent[min1] = n + a;
    parent[min2] = n + a;
    binary[min2] = 1;
  }
  // Each word's path is read leaf-up and stored root-down. Inner node n + a is word2vec's point
  // a, and its row inner_node_row(a).
  const uint64_t root = 2 * n - 2;
  std::vector<uint32_t> length(n, 0);
  for (uint64_t k = 0; k < n; ++k) {
    uint32_t depth = 0;
    for (uint64_t b = k; b != root; b = parent[b]) ++depth;
    if (depth > kMaxCodeLength) {
      throw Error("hierarchical softmax: the Huffman tree of this vocabulary is " +
                  std::to_string(depth) + " levels deep, more than word2vec's " +
                  std::to_string(kMaxCodeLength) + "; use negative sampling (--negative)");
    }
    length[order[k]] = depth;
    tree.max_length = std::max(tree.max_length, depth);
  }
  for (uint64_t w = 0; w < n; ++w) tree.offsets[w + 1] = tree.offsets[w] + length[w];
  tree.rows.resize(tree.offsets[n]);
  tree.codes.resize(tree.offsets[n]);
  const uint32_t words = static_cast<uint32_t>(n);
  for (uint64_t k = 0; k < n; ++k) {
    const uint32_t w = order[k];
    uint64_t at = tree.offsets[w + 1];
    for (uint64_t b = k; b != root; b = parent[b]) {
      --at;
      tree.codes[at] = binary[b];
      tree.rows[at] = inner_node_row(static_cast<uint32_t>(parent[b] - n), words);
    }
  }
  return tree;
}

std::vector<uint32_t> huffman_links(const HuffmanTree& tree) {
  const uint64_t words = tree.words();
  if (words > uint64_t{kHuffmanLinkRow} + 1) {
    throw Error("hierarchical softmax: " + std::to_string(words) +
                " words are more than the GPU's tree can hold (2^31)");
  }
  std::vector<uint32_t> links(words + tree.inner_nodes(), kHuffmanRootLink);
  const auto link = [](uint32_t row, uint8_t code) { return row | uint32_t{code} << 31; };
  for (uint32_t w = 0; w < words; ++w) {
    const uint32_t n = tree.length(w);
    if (n == 0) continue;
    const uint32_t* rows = tree.path_rows(w);
    const uint8_t* codes = tree.path_codes(w);
    links[w] = link(rows[n - 1], codes[n - 1]);
    // Every path through a node reaches it from the same parent by the same branch.
    for (uint32_t d = 1; d < n; ++d) links[words + rows[d]] = link(rows[d - 1], codes[d - 1]);
  }
  return links;
}

}  // namespace pagedw2v
