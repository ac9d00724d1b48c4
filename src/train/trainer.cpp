#include "train/trainer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "corpus.hpp"
#include "error.hpp"
#include "io/export.hpp"
#include "mapped_file.hpp"
#include "sampler.hpp"
#include "train/backend.hpp"
#include "train/progress.hpp"
#include "vocab.hpp"

namespace pagedw2v {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Creates `dir` (and its parents) and checks that it can be written, before any training.
void prepare_output_dir(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        throw Error("cannot create output directory '" + partial + "': " + std::strerror(errno));
      }
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("output '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Error("cannot write to output directory '" + dir + "': " + std::strerror(errno));
  }
}

/// Words per work block: small enough to balance threads, large enough to amortise a block.
constexpr uint64_t kBlockWords = 4096;

}  // namespace

TrainSummary run_training(const Config& config, std::FILE* log) {
  validate(config);
  std::FILE* out = config.quiet ? nullptr : log;
  const auto t0 = Clock::now();
  prepare_output_dir(config.output);

  MappedFile text(config.corpus);
  VocabOptions vocab_options;
  vocab_options.min_count = config.min_count;
  vocab_options.max_vocab = config.max_vocab;
  const Vocab vocab = Vocab::count(text.view(), vocab_options);
  if (vocab.empty()) {
    throw Error(vocab.corpus_tokens() == 0
                    ? "corpus '" + config.corpus + "' holds no words"
                    : "no word of corpus '" + config.corpus + "' occurs at least --min-count (" +
                          std::to_string(config.min_count) + ") times; lower --min-count");
  }
  const EncodedCorpus corpus = encode_corpus(text.view(), vocab);
  const std::vector<uint64_t> blocks = make_blocks(corpus, kBlockWords);
  const std::vector<float> keep = keep_probabilities(vocab.counts(), vocab.total_count(), config.sample);
  const AliasTable noise(unigram_weights(vocab.counts()));
  if (out) {
    std::fprintf(out, "vocabulary: %u words (min-count %llu) of %llu tokens; %llu words/epoch in %llu sentences (%.2f s)\n",
                 vocab.size(), static_cast<unsigned long long>(config.min_count),
                 static_cast<unsigned long long>(vocab.corpus_tokens()),
                 static_cast<unsigned long long>(corpus.size()),
                 static_cast<unsigned long long>(corpus.sentences()), seconds_since(t0));
  }

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

  const std::string hint = "lower --dim or --max-vocab";
  Model model{HostTable(vocab.size(), config.dim, "input vectors", hint),
              HostTable(vocab.size(), config.dim, "output vectors", hint)};
  init_model(model, config.seed);
  const uint32_t threads = config.effective_threads();
  std::unique_ptr<Backend> backend = make_backend(config.device, model, data, threads);

  const uint64_t total_words = static_cast<uint64_t>(p.epochs) * p.words_per_epoch;
  const LrSchedule schedule = make_schedule(p);
  Progress progress(out, total_words);
  const uint64_t nblocks = blocks.size() - 1;
  const uint64_t span_blocks = std::max<uint64_t>(1, backend->span_words() / kBlockWords);
  const auto t_train = Clock::now();
  uint64_t done = 0;
  for (uint32_t epoch = 0; epoch < p.epochs; ++epoch) {
    for (uint64_t b = 0; b < nblocks; b += span_blocks) {
      const uint64_t e = std::min(nblocks, b + span_blocks);
      const SpanStats s = backend->train(epoch, b, e);
      done += s.words;
      progress.update(done, s.loss, s.loss_terms, schedule.at(done), epoch);
    }
  }
  backend->sync_to_host();
  const double train_seconds = seconds_since(t_train);
  progress.finish();

  ExportOptions export_options;
  export_options.formats = config.formats;
  export_options.save_context = config.save_context;
  export_options.attributes = {
      {"model", to_string(config.model)},
      {"dim", static_cast<int64_t>(config.dim)},
      {"window", static_cast<int64_t>(config.window)},
      {"negative", static_cast<int64_t>(config.negative)},
      {"sample", config.sample},
      {"min_count", static_cast<int64_t>(config.min_count)},
      {"max_vocab", static_cast<int64_t>(config.max_vocab)},
      {"alpha", static_cast<double>(p.alpha)},
      {"epochs", static_cast<int64_t>(config.epochs)},
      {"seed", static_cast<int64_t>(config.seed)},
      {"device", backend->name()},
      {"corpus", config.corpus},
      {"words_trained", static_cast<int64_t>(done)},
  };
  export_model(config.output, vocab, model, export_options);

  TrainSummary summary;
  summary.vocab_size = vocab.size();
  summary.words = done;
  summary.train_seconds = train_seconds;
  summary.total_seconds = seconds_since(t0);
  summary.final_loss = progress.smoothed_loss();
  summary.device = backend->name();
  if (out) {
    std::fprintf(out, "trained %llu words in %.2f s on %s: %.0f words/s (%.2f s in all, loss %.4f)\n",
                 static_cast<unsigned long long>(done), train_seconds, summary.device.c_str(),
                 train_seconds > 0 ? static_cast<double>(done) / train_seconds : 0.0,
                 summary.total_seconds, summary.final_loss);
  }
  return summary;
}

}  // namespace pagedw2v
