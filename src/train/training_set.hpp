#pragma once
/// @file training_set.hpp
/// The corpus side of a run, built once from the text: vocabulary, encoded corpus, work blocks
/// and the two sampling tables. The trainer and the benchmark both start from it.

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "corpus/corpus.hpp"
#include "model/huffman.hpp"
#include "model/sampler.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

struct TrainingSet {
  Vocab vocab;
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  KeepTable keep;
  NoiseTable noise;
  /// Hierarchical softmax's tree of the vocabulary's counts (--hs; empty without it).
  HuffmanTree tree;

  uint64_t block_count() const { return blocks.size() - 1; }
  /// The backend's view of this set with `config`'s model parameters. Points into this object:
  /// keep the set where it is while the result is in use.
  TrainData train_data(const Config& config) const;
};

/// The vocabulary of `parts` (the corpus files' texts, in order) with `config`'s limits, text
/// options and threads. `keep_tokens`: keep what the count read, for a faster encoding of the
/// whole corpus (4 bytes a word until it is encoded). `read_done`: VocabOptions::read_done.
/// Throws Error when no word is left to train on.
Vocab count_vocabulary(const std::vector<std::string_view>& parts, const Config& config,
                       bool keep_tokens = true,
                       std::function<void(std::string_view)> read_done = nullptr);

/// The vocabulary of `config.vocab_file` (word<TAB>count lines, rows in file order) less the words
/// below --min-count, at most --max-vocab of them. Throws Error when none is left.
Vocab read_vocabulary(const Config& config);

/// Counts the vocabulary of `parts` (or takes `vocab` when it is not empty, as a resumed run
/// does), encodes the text with `config`'s threads and builds the samplers.
TrainingSet make_training_set(const std::vector<std::string_view>& parts, const Config& config,
                              Vocab vocab = {});

/// make_training_set() of one text.
TrainingSet make_training_set(std::string_view text, const Config& config, Vocab vocab = {});

/// The set of a vocabulary and a corpus encoded with it (a synthetic one, say): blocks and
/// samplers built as above, with `config`'s --sample.
TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, const Config& config);

/// What the samplers of a vocabulary are: the subsampling keep probability of each word (with
/// --sample `sample`), the negative-sampling table, and with `hs` the Huffman tree of
/// hierarchical softmax. They depend on the counts only: a resumed run rebuilds them exactly
/// from its checkpoint's vocabulary.
struct Samplers {
  KeepTable keep;
  NoiseTable noise;
  HuffmanTree tree;
};
Samplers make_samplers(const Vocab& vocab, double sample, bool hs = false);

/// The set of `vocab`, `corpus` and the samplers made of them (make_samplers).
TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, Samplers samplers);

}  // namespace pagedw2v
