/// @file row_counts.cpp
/// What the corpus's pieces touch, counted for the plan (row_counts.hpp).

#include "gpu/row_counts.hpp"

#include <algorithm>
#include <thread>

namespace pagedw2v {

namespace {

/// The distinct ids in [first, rows) among the tokens [begin, end), marked in `seen` (a bit per
/// id from `first` on, all clear), which is left clear again.
uint64_t distinct_from(const uint32_t* begin, const uint32_t* end, uint64_t first, uint64_t rows,
                       std::vector<uint64_t>& seen) {
  const uint64_t span = rows - first;
  uint64_t distinct = 0;
  for (const uint32_t* t = begin; t != end; ++t) {
    const uint64_t k = uint64_t{*t} - first;  // an id below `first` wraps past `span`
    if (k >= span) continue;
    uint64_t& word = seen[k >> 6];
    const uint64_t bit = uint64_t{1} << (k & 63);
    distinct += (word & bit) == 0;
    word |= bit;
  }
  for (const uint32_t* t = begin; t != end; ++t) {
    const uint64_t k = uint64_t{*t} - first;
    if (k < span) seen[k >> 6] = 0;
  }
  return distinct;
}

/// Calls `range(rows)` with the distinct rows at or above `first` that each range [starts[s],
/// starts[s + 1]) of `tokens` reads under hierarchical softmax, sorted: its words' ids and the
/// inner-node rows of their paths in `tree`.
template <typename Range>
void for_each_hs_range(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                       const HuffmanTree& tree, uint64_t first, Range&& range) {
  // word[r], node[r] = 1 + the last range that read row r as a word, as an inner node: each
  // row is counted once a range without clearing anything between ranges. A node's ancestors
  // are the same on every path through it, and lie at smaller rows (a parent is made after its
  // children, huffman.hpp), so a path is walked from its deepest node up to the first one the
  // range has read already or the first below `first`: the pass costs about a token and a new
  // node each, not a whole path per token.
  const size_t n_rows = tree.words();
  std::vector<uint64_t> word(n_rows, 0), node(n_rows, 0);
  std::vector<uint32_t> rows;
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    const uint64_t mark = s + 1;
    rows.clear();
    for (uint64_t p = starts[s]; p < starts[s + 1]; ++p) {
      const uint32_t w = tokens[p];
      if (w >= n_rows) continue;
      if (w >= first && word[w] != mark) {
        word[w] = mark;
        rows.push_back(w);
      }
      const uint32_t* path = tree.path_rows(w);
      for (uint32_t d = tree.length(w); d-- > 0;) {
        if (path[d] < first || node[path[d]] == mark) break;
        node[path[d]] = mark;
        rows.push_back(path[d]);
      }
    }
    // A row read both as a word and as a node is one row (one id, model.hpp).
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    range(rows);
  }
}

}  // namespace

uint64_t hs_sentence_rows(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                          const HuffmanTree& tree, uint64_t first) {
  uint64_t most = 0;
  for_each_hs_range(tokens, starts, tree, first, [&](const std::vector<uint32_t>& rows) {
    most = std::max<uint64_t>(most, rows.size());
  });
  return most;
}

uint64_t HsRowsFrom::max_from(uint64_t first) const {
  const auto above = std::upper_bound(firsts.begin(), firsts.end(), first);
  return above == firsts.begin() ? 0 : most[static_cast<size_t>(above - firsts.begin()) - 1];
}

HsRowsFrom hs_rows_from(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                        const HuffmanTree& tree) {
  HsRowsFrom r;
  for (uint64_t f = 0; f < std::max<uint64_t>(1, tree.words()); f = std::max(f + 1, f + f / 16)) {
    r.firsts.push_back(f);
  }
  r.most.assign(r.firsts.size(), 0);
  for_each_hs_range(tokens, starts, tree, 0, [&](const std::vector<uint32_t>& rows) {
    // Both ascending: the rows below each first are counted in one walk, up to the last row.
    size_t below = 0;
    for (size_t k = 0; k < r.firsts.size() && below < rows.size(); ++k) {
      while (below < rows.size() && rows[below] < r.firsts[k]) ++below;
      r.most[k] = std::max<uint64_t>(r.most[k], rows.size() - below);
    }
  });
  return r;
}

uint64_t max_super_batch_rows(const std::vector<uint32_t>& tokens,
                              const std::vector<uint64_t>& sentence_starts,
                              const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                              uint64_t rows, uint64_t limit) {
  if (blocks.size() < 2 || rows == 0) return 0;
  const uint64_t nblocks = blocks.size() - 1;
  const uint64_t step = std::max<uint32_t>(1, batch_blocks);
  std::vector<uint64_t> seen((rows + 63) / 64, 0);
  uint64_t most = 0;
  for (uint64_t b = 0; b < nblocks; b += step) {
    const uint64_t e = std::min(nblocks, b + step);
    most = std::max(most, distinct_from(tokens.data() + sentence_starts[blocks[b]],
                                        tokens.data() + sentence_starts[blocks[e]], 0, rows, seen));
    if (most > limit) break;
  }
  return most;
}

/// What the bitmaps of max_run_rows_from's threads may take together.
constexpr uint64_t kCountBitmapBytes = uint64_t{4} << 20;

uint64_t max_run_rows_from(const std::vector<uint32_t>& tokens,
                           const std::vector<uint64_t>& sentence_starts,
                           const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                           uint64_t first, uint64_t rows, uint32_t threads) {
  if (blocks.size() < 2 || first >= rows) return 0;
  const uint64_t nblocks = blocks.size() - 1;
  const uint64_t step = std::max<uint32_t>(1, batch_blocks);
  const uint64_t runs = (nblocks + step - 1) / step;
  // The threads' bitmaps together take at most kCountBitmapBytes: the backend's plan counts
  // once the host tables are allocated, so its bitmaps add to the process's peak memory (16
  // bitmaps of a 10 M-word vocabulary were 19 MB), and a bitmap the caches hold counts fast on
  // few threads.
  const uint64_t bitmap_bytes = (rows - first + 63) / 64 * 8;
  const uint64_t workers =
      std::min<uint64_t>(std::clamp<uint64_t>(threads, 1, runs),
                         std::max<uint64_t>(1, kCountBitmapBytes / bitmap_bytes));
  std::vector<uint64_t> most(workers, 0);
  const auto count = [&](uint64_t w) {
    std::vector<uint64_t> seen((rows - first + 63) / 64, 0);
    for (uint64_t run = w; run < runs; run += workers) {
      const uint64_t b = run * step, e = std::min(nblocks, b + step);
      most[w] = std::max(
          most[w], distinct_from(tokens.data() + sentence_starts[blocks[b]],
                                 tokens.data() + sentence_starts[blocks[e]], first, rows, seen));
    }
  };
  std::vector<std::thread> pool;
  for (uint64_t w = 1; w < workers; ++w) pool.emplace_back(count, w);
  count(0);
  for (std::thread& t : pool) t.join();
  return *std::max_element(most.begin(), most.end());
}

uint64_t SuperBatchRows::max_from(uint64_t first) const {
  if (first >= rows) return 0;
  const uint64_t from = first / width;
  uint64_t most = 0;
  for (uint64_t at = 0; at < counts.size(); at += ranges) {
    uint64_t n = 0;
    for (uint64_t k = from; k < ranges; ++k) n += counts[at + k];
    most = std::max(most, n);
  }
  return most;
}

SuperBatchRows super_batch_rows(const std::vector<uint32_t>& tokens,
                                const std::vector<uint64_t>& sentence_starts,
                                const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                                uint64_t rows, uint64_t ranges) {
  SuperBatchRows r;
  if (blocks.size() < 2 || rows == 0) return r;
  r.rows = rows;
  r.width = (rows + std::max<uint64_t>(1, ranges) - 1) / std::max<uint64_t>(1, ranges);
  r.ranges = (rows + r.width - 1) / r.width;
  const uint64_t nblocks = blocks.size() - 1;
  const uint64_t step = std::max<uint32_t>(1, batch_blocks);
  r.counts.assign((nblocks + step - 1) / step * r.ranges, 0);
  std::vector<uint64_t> seen((rows + 63) / 64, 0);
  for (uint64_t b = 0, at = 0; b < nblocks; b += step, at += r.ranges) {
    const uint64_t e = std::min(nblocks, b + step);
    const uint32_t* first = tokens.data() + sentence_starts[blocks[b]];
    const uint32_t* last = tokens.data() + sentence_starts[blocks[e]];
    for (const uint32_t* t = first; t != last; ++t) {
      if (*t >= rows) continue;
      uint64_t& word = seen[*t >> 6];
      const uint64_t bit = uint64_t{1} << (*t & 63);
      r.counts[at + *t / r.width] += (word & bit) == 0;
      word |= bit;
    }
    for (const uint32_t* t = first; t != last; ++t) {
      if (*t < rows) seen[*t >> 6] = 0;
    }
  }
  return r;
}

}  // namespace pagedw2v
