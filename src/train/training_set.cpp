#include "train/training_set.hpp"

#include <algorithm>
#include <future>
#include <system_error>
#include <utility>

#include "base/error.hpp"
#include "base/free_heap.hpp"

namespace pagedw2v {

TrainData TrainingSet::train_data(const Config& config) const {
  TrainData data;
  data.corpus = &corpus;
  data.blocks = &blocks;
  data.keep = &keep;
  data.noise = &noise;
  data.tree = config.hs ? &tree : nullptr;
  TrainParams& p = data.params;
  p.model = config.model;
  p.dim = config.dim;
  p.window = config.window;
  p.negative = config.negative;
  p.kernel = config.kernel;
  p.hs = config.hs;
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

Vocab count_vocabulary(const std::vector<std::string_view>& parts, const Config& config,
                       bool keep_tokens, std::function<void(std::string_view)> read_done) {
  VocabOptions options;
  options.min_count = config.min_count;
  options.max_vocab = config.max_vocab;
  options.text = config.text_options();
  options.threads = config.effective_threads();
  options.keep_tokens = keep_tokens;
  options.read_done = std::move(read_done);
  Vocab vocab = Vocab::count(parts, options);
  if (vocab.empty()) {
    throw Error(vocab.corpus_tokens() == 0
                    ? "corpus '" + config.corpus + "' holds no words"
                    : "no word of corpus '" + config.corpus + "' occurs at least --min-count (" +
                          std::to_string(config.min_count) + ") times; lower --min-count");
  }
  return vocab;
}

Vocab read_vocabulary(const Config& config) {
  const Vocab file = load_vocab_file(config.vocab_file, true);
  WordList words;
  std::vector<uint64_t> counts;
  for (uint32_t i = 0; i < file.size(); ++i) {
    if (config.max_vocab > 0 && words.size() >= config.max_vocab) break;
    if (file.count(i) < config.min_count) continue;
    words.push_back(file.word(i));
    counts.push_back(file.count(i));
  }
  if (words.empty()) {
    throw Error("vocabulary '" + config.vocab_file +
                "' holds no word counted at least --min-count (" +
                std::to_string(config.min_count) + ") times");
  }
  return Vocab::from_word_list(std::move(words), std::move(counts));
}

TrainingSet make_training_set(const std::vector<std::string_view>& parts, const Config& config,
                              Vocab vocab) {
  if (vocab.empty()) vocab = count_vocabulary(parts, config);
  EncodeOptions options;
  options.text = config.text_options();
  options.threads = config.effective_threads();
  // The samplers need the counts only: they are made on a thread of their own while the corpus
  // is encoded (or here, after it, when no thread can be had).
  Samplers samplers;
  std::future<void> making;
  try {
    making = std::async(std::launch::async,
                        [&] { samplers = make_samplers(vocab, config.sample, config.hs); });
  } catch (const std::system_error&) {
  }
  EncodedCorpus corpus = encode_corpus(parts, vocab, options);
  if (making.valid()) {
    making.get();
  } else {
    samplers = make_samplers(vocab, config.sample, config.hs);
  }
  vocab.drop_lookup();
  return make_training_set(std::move(vocab), std::move(corpus), std::move(samplers));
}

TrainingSet make_training_set(std::string_view text, const Config& config, Vocab vocab) {
  return make_training_set(std::vector<std::string_view>{text}, config, std::move(vocab));
}

Samplers make_samplers(const Vocab& vocab, double sample, bool hs) {
  Samplers s;
  s.keep = keep_probabilities(vocab.counts(), vocab.total_count(), sample);
  s.noise = NoiseTable::of_counts(vocab.counts());
  if (hs) s.tree = build_huffman_tree(vocab.counts());
  return s;
}

TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, Samplers samplers) {
  TrainingSet set;
  set.vocab = std::move(vocab);
  // The corpus is encoded: nothing looks a word up in the vocabulary any more, so its index
  // (two slots a word, as much as a third of the vocabulary's memory) goes.
  set.vocab.drop_index();
  set.corpus = std::move(corpus);
  set.blocks = make_blocks(set.corpus, kBlockWords);
  set.keep = std::move(samplers.keep);
  set.noise = std::move(samplers.noise);
  set.tree = std::move(samplers.tree);
  // What the count, the encoder and the samplers freed on their threads goes back to the
  // system before the tables are allocated beside the set.
  release_free_heap();
  return set;
}

TrainingSet make_training_set(Vocab vocab, EncodedCorpus corpus, const Config& config) {
  Samplers samplers = make_samplers(vocab, config.sample, config.hs);
  return make_training_set(std::move(vocab), std::move(corpus), std::move(samplers));
}

}  // namespace pagedw2v
