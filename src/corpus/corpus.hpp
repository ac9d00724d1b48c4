#pragma once
/// @file corpus.hpp
/// The corpus encoded once into vocabulary ids, with sentence boundaries. Epochs stream from this,
/// never from the text. Words not in the vocabulary are dropped (as word2vec does, so windows
/// span over them); a newline and the end of a part (a file) end a sentence; sentences are cut
/// into pieces of at most `max_sentence` ids.

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/params.hpp"
#include "text/text_chunks.hpp"
#include "text/word_table.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// word2vec's MAX_SENTENCE_LENGTH.
inline constexpr uint32_t kMaxSentenceLength = 1000;

/// The encoded corpus, or a window of it (a run of whole sentences) when the corpus is streamed:
/// tokens[i] is corpus token token_base + i, and sentence_starts[j] is where sentence
/// sentence_base + j starts, as a corpus token position. Both bases are 0 for a whole corpus.
struct EncodedCorpus {
  std::vector<uint32_t> tokens;  ///< ids of every in-vocabulary word, in order
  std::vector<uint64_t>
      sentence_starts;  ///< n_sentences + 1 offsets into tokens (empty ones dropped)
  uint64_t token_base = 0;
  uint64_t sentence_base = 0;

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

/// The most tokens and sentences a work block of make_blocks(…, kBlockWords) holds: whole
/// sentences of at most kMaxSentenceLength tokens, closed by the first that reaches kBlockWords.
inline constexpr uint64_t kMaxBlockTokens = kBlockWords - 1 + kMaxSentenceLength;
inline constexpr uint64_t kMaxBlockSentences = kBlockWords;

/// Groups whole sentences into work blocks of at least `target_words` tokens (the last may be
/// shorter). Returns block boundaries as sentence indices: blocks + 1 entries, first 0, last
/// corpus.sentences(). Blocks are the unit of parallel work and of checkpoint positions.
std::vector<uint64_t> make_blocks(const EncodedCorpus& corpus, uint64_t target_words);

/// The hash that identifies an encoded corpus (checkpoints record it), fed in order: all tokens,
/// and every sentence start (0 first, then each sentence's end). It does not need the sizes in
/// advance, so a corpus streamed block by block hashes to what it hashes to whole.
class CorpusHasher {
 public:
  void add_tokens(const uint32_t* tokens, size_t n);
  void add_start(uint64_t start);
  uint64_t words() const { return words_; }
  /// Sentences so far: starts added less one.
  uint64_t sentences() const { return starts_ == 0 ? 0 : starts_ - 1; }
  uint64_t hash() const;

 private:
  static uint64_t step(uint64_t h, uint64_t w);
  uint64_t token_hash_ = 0x243F6A8885A308D3ull, start_hash_ = 0x13198A2E03707344ull;
  uint64_t words_ = 0, starts_ = 0;
  uint32_t pending_ = 0;  ///< a token waiting for its pair (hashes take 8 bytes a step)
};

namespace detail {

/// Encodes `chunk` (segments in corpus order) on the calling thread: the ids of its words that
/// `table` holds, and the token counts at which a line ended (a newline or a part's end),
/// repeated counts dropped. Appends to `tokens` and `line_ends` (counts relative to the size
/// `tokens` had on entry).
void encode_chunk(const TextChunk& chunk, const ShardedWordTable& table, const TextOptions& text,
                  std::vector<uint32_t>& tokens, std::vector<uint64_t>& line_ends);

/// The vocabulary as one lookup table, word -> row, built by `threads` threads.
ShardedWordTable lookup_table(const Vocab& vocab, uint32_t threads);

/// Places sentence cuts as the one-thread encoder does, from line ends met in order: at every
/// line end that closes a non-empty sentence, and every `max_sentence` tokens within a line.
class SentenceCutter {
 public:
  explicit SentenceCutter(uint32_t max_sentence) : max_(max_sentence) {}
  /// A line ended after corpus token `end` - 1: appends the sentence ends this makes.
  void line_end(uint64_t end, std::vector<uint64_t>& ends) {
    cut_full(end, ends);
    if (end > start_) {
      start_ = end;
      ends.push_back(end);
    }
  }
  /// `available` tokens are known, their line still open: appends the cuts of the full
  /// max_sentence pieces (they are certain whatever comes next).
  void cut_full(uint64_t available, std::vector<uint64_t>& ends) {
    while (available - start_ >= max_) {
      start_ += max_;
      ends.push_back(start_);
    }
  }

 private:
  uint32_t max_;
  uint64_t start_ = 0;
};

}  // namespace detail

}  // namespace pagedw2v
