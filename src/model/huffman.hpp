#pragma once
/// @file huffman.hpp
/// The Huffman tree of hierarchical softmax (--hs), built from the vocabulary's counts exactly as
/// word2vec.c's CreateBinaryTree builds it. Layer model: a pure function of the counts, read by
/// every backend.
///
/// The tree of V words has V − 1 inner nodes. word2vec numbers them 0 … V − 2 in the order it
/// makes them (two least frequent first; the root is V − 2). Each inner node has a vector (its
/// syn1 row); here inner node i is row V − 2 − i of its table (inner_node_row), so the root, the
/// node every word's path passes through, is row 0, beside the most frequent word's row: the
/// hottest rows share ids, and what keeps hot ids cached keeps the top of the tree cached too.
///
/// The path of word w, from the root down, is the nodes path_rows(w)[0 … length(w)) with the
/// branches path_codes(w)[0 … length(w)): at node d the path goes to the child with code c, and
/// training pushes σ(h · node) towards 1 − c (word2vec's `g = (1 − code − f) · alpha`).

#include <cstdint>
#include <vector>

#include "vocab/count_list.hpp"

namespace pagedw2v {

/// word2vec.c's MAX_CODE_LENGTH: the longest path (codes and points) a word may have. A tree
/// deeper than this needs counts that grow like the Fibonacci numbers over 40 words; it is
/// refused rather than truncated.
inline constexpr uint32_t kMaxCodeLength = 40;

/// The row of inner node `node` (word2vec's numbering, 0 … words − 2) in a tree of `words`
/// leaves: the root (node words − 2) is row 0.
inline uint32_t inner_node_row(uint32_t node, uint32_t words) { return words - 2 - node; }

/// Every word's path through the Huffman tree, packed: the path of word w is entries
/// [offsets[w], offsets[w + 1]) of `rows` and `codes`. Host arrays that a backend copies as they
/// are (the CUDA kernels take the same three arrays).
struct HuffmanTree {
  /// words() + 1 entries; offsets[0] = 0.
  std::vector<uint64_t> offsets;
  /// The inner nodes of each path, root first, as rows of the inner-node table
  /// (inner_node_row).
  std::vector<uint32_t> rows;
  /// The branch taken at each node of `rows`: 0 or 1.
  std::vector<uint8_t> codes;
  /// The longest path (≤ kMaxCodeLength).
  uint32_t max_length = 0;

  uint32_t words() const { return offsets.empty() ? 0 : static_cast<uint32_t>(offsets.size() - 1); }
  /// How many inner nodes (rows of the inner-node table) the tree has: words() − 1, or 0.
  uint32_t inner_nodes() const { return words() > 1 ? words() - 1 : 0; }
  uint32_t length(uint32_t word) const {
    return static_cast<uint32_t>(offsets[word + 1] - offsets[word]);
  }
  const uint32_t* path_rows(uint32_t word) const { return rows.data() + offsets[word]; }
  const uint8_t* path_codes(uint32_t word) const { return codes.data() + offsets[word]; }
  bool empty() const { return offsets.empty(); }
};

/// A node's link in huffman_links: the row of its parent inner node in the low 31 bits, the
/// branch from the parent to it (its code) in the top bit; the root's link is kHuffmanRootLink.
inline constexpr uint32_t kHuffmanLinkRow = 0x7FFFFFFFu;
inline constexpr uint32_t kHuffmanRootLink = 0xFFFFFFFFu;

/// The tree as one link a node, as the GPU holds it (a tenth of the paths' bytes, which grow
/// with the words times their depth): entry w < words() is word w's link, entry words() + r
/// inner-node row r's. Word w's path is its link's row and the links from there up to the root,
/// read backwards: the rows and codes of path_rows(w) and path_codes(w), root first. A parent's
/// row is below its children's (it is made after them), so the rows fall towards the root.
/// Empty for an empty tree; throws Error for more than 2^31 words (a row takes 31 bits).
std::vector<uint32_t> huffman_links(const HuffmanTree& tree);

/// The tree of a vocabulary with `counts` (word w has count counts[w]), as word2vec's
/// CreateBinaryTree makes it from the same counts in descending order. word2vec's vocabulary is
/// sorted by count; ours is too when counted, so the tree is word2vec's; the words of a --vocab
/// file in another order are taken in descending count, ties in row order. One word: no inner
/// node, an empty path (nothing to train). Throws Error when a path would pass kMaxCodeLength.
HuffmanTree build_huffman_tree(const CountList& counts);

}  // namespace pagedw2v
