#include "train/training_set.hpp"

#include <algorithm>

#include "error.hpp"

namespace pagedw2v {

TrainData TrainingSet::train_data(const Config& config) const {
  TrainData data;
  data.corpus = &corpus;
  data.blocks = &blocks;
  data.keep = &keep;
  data.noise = &noise;
  TrainParams& p = data.params;
  p.model = config.model;
  p.dim = config.dim;
  p.window = config.window;
  p.negative = config.negative;
  p.epochs = config.epochs;
  p.seed = config.seed;
  p.alpha = config.effective_alpha();
  p.words_per_epoch = corpus.size();
  p.negative_pool = config.negative_pool;
  const uint64_t batch_blocks = (config.batch_words + kBlockWords - 1) / kBlockWords;
  p.batch_blocks = static_cast<uint32_t>(std::clamp<uint64_t>(batch_blocks, 1, UINT32_MAX));
  const uint64_t pool_blocks = (config.pool_words + kBlockWords - 1) / kBlockWords;
  p.pool_blocks = static_cast<uint32_t>(std::clamp<uint64_t>(pool_blocks, 1, UINT32_MAX));
  data.optimizer = config.optimizer_params();
  return data;
}

TrainingSet make_training_set(std::string_view text, const Config& config, Vocab vocab) {
  if (vocab.empty()) {
    VocabOptions options;
    options.min_count = config.min_count;
    options.max_vocab = config.max_vocab;
    vocab = Vocab::count(text, options);
    if (vocab.empty()) {
      throw Error(vocab.corpus_tokens() == 0
                      ? "corpus '" + config.corpus + "' holds no words"
                      : "no word of corpus '" + config.corpus + "' occurs at least --min-count (" +
                            std::to_string(config.min_count) + ") times; lower --min-count");
    }
  }
  EncodedCorpus corpus = encode_corpus(text, vocab);
  return make_training_set(std::move(vocab), std::move(corpus), config);
}

TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, const Config& config) {
  TrainingSet set;
  set.vocab = std::move(vocab);
  set.corpus = std::move(corpus);
  set.blocks = make_blocks(set.corpus, kBlockWords);
  set.keep = keep_probabilities(set.vocab.counts(), set.vocab.total_count(), config.sample);
  set.noise = AliasTable(unigram_weights(set.vocab.counts()));
  return set;
}

}  // namespace pagedw2v
