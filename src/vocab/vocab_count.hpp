#pragma once
/// @file vocab_count.hpp
/// The parallel count behind Vocab::count: the text cut into a chunk per thread, its words read
/// in rounds into one table sharded by hash (each shard inserted by its owner thread), the words
/// kept sorted by count and first occurrence and merged into rows, and with keep_tokens the
/// codes of what was read kept for the encoder. Vocab (vocab.hpp) makes the vocabulary of it.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "vocab/vocab.hpp"
#include "vocab/word_list.hpp"

namespace pagedw2v::detail {

/// What the count of a text found, by row: the words and their counts, and beside them every
/// distinct word counted in a sharded table whose values are rows (WordTable::kNone for a word
/// not kept).
struct WordCount {
  WordList words;
  std::vector<uint64_t> counts;
  uint64_t corpus_tokens = 0;  ///< tokens read, before --min-count
  std::shared_ptr<ShardedWordTable> lookup;
  /// With keep_tokens, and when every code fits: the text as codes (else null; the encoder then
  /// reads the text again).
  std::shared_ptr<CountedText> text;
};

/// Counts the words of `parts` with `options` (VocabOptions) on up to options.threads threads.
/// The result does not depend on the thread count.
WordCount count_words(const std::vector<std::string_view>& parts, const VocabOptions& options);

}  // namespace pagedw2v::detail
