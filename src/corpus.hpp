#pragma once
/// @file corpus.hpp
/// The corpus encoded once into vocabulary ids, with sentence boundaries. Epochs stream from this,
/// never from the text. Words not in the vocabulary are dropped (as word2vec does, so windows
/// span over them); a newline and the end of a part (a file) end a sentence; sentences are cut
/// into pieces of at most `max_sentence` ids.

#include <cstdint>
#include <string_view>
#include <vector>

#include "vocab.hpp"

namespace pagedw2v {

/// word2vec's MAX_SENTENCE_LENGTH.
inline constexpr uint32_t kMaxSentenceLength = 1000;

struct EncodedCorpus {
  std::vector<uint32_t> tokens;  ///< ids of every in-vocabulary word, in order
  std::vector<uint64_t>
      sentence_starts;  ///< n_sentences + 1 offsets into tokens (empty ones dropped)

  uint64_t size() const { return tokens.size(); }
  uint64_t sentences() const { return sentence_starts.empty() ? 0 : sentence_starts.size() - 1; }
};

struct EncodeOptions {
  TextOptions text;  ///< must be the options the vocabulary was counted with
  uint32_t max_sentence = kMaxSentenceLength;
  uint32_t threads = 1;  ///< threads that encode; the result does not depend on it
};

/// Encodes `parts` (files' texts, in order) with `vocab`: one chunk per thread, encoded in
/// parallel and concatenated, sentence cuts placed afterwards from the line ends each chunk saw.
EncodedCorpus encode_corpus(const std::vector<std::string_view>& parts, const Vocab& vocab,
                            const EncodeOptions& options);

/// encode_corpus() of one text.
EncodedCorpus encode_corpus(std::string_view text, const Vocab& vocab,
                            uint32_t max_sentence = kMaxSentenceLength);

/// The one-thread reference encoding of one text (what encode_corpus() must equal).
EncodedCorpus encode_corpus_serial(std::string_view text, const Vocab& vocab,
                                   const EncodeOptions& options);

/// Groups whole sentences into work blocks of at least `target_words` tokens (the last may be
/// shorter). Returns block boundaries as sentence indices: blocks + 1 entries, first 0, last
/// corpus.sentences(). Blocks are the unit of parallel work and of checkpoint positions.
std::vector<uint64_t> make_blocks(const EncodedCorpus& corpus, uint64_t target_words);

}  // namespace pagedw2v
