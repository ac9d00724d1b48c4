#pragma once
/// @file training_set.hpp
/// The corpus side of a run, built once from the text: vocabulary, encoded corpus, work blocks
/// and the two sampling tables. The trainer and the benchmark both start from it.

#include <cstdint>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "config.hpp"
#include "corpus.hpp"
#include "sampler.hpp"
#include "vocab.hpp"

namespace pagedw2v {

struct TrainingSet {
  Vocab vocab;
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  std::vector<float> keep;
  AliasTable noise;

  uint64_t block_count() const { return blocks.size() - 1; }
  /// The backend's view of this set with `config`'s model parameters. Points into this object:
  /// keep the set where it is while the result is in use.
  TrainData train_data(const Config& config) const;
};

/// Counts the vocabulary of `text` with `config`'s limits (or takes `vocab` when it is not
/// empty, as a resumed run does), encodes the text and builds the samplers. Throws Error when no
/// word is left to train on.
TrainingSet make_training_set(std::string_view text, const Config& config, Vocab vocab = {});

/// The set of a vocabulary and a corpus encoded with it (a synthetic one, say): blocks and
/// samplers built as above, with `config`'s --sample.
TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, const Config& config);

}  // namespace pagedw2v
