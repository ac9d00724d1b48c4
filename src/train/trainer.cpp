#include "train/trainer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>

#include "corpus.hpp"
#include "error.hpp"
#include "eval/analogy.hpp"
#include "eval/similarity.hpp"
#include "io/embeddings.hpp"
#include "io/export.hpp"
#include "mapped_file.hpp"
#include "sampler.hpp"
#include "text_source.hpp"
#include "train/backend.hpp"
#include "train/checkpoint.hpp"
#include "train/progress.hpp"
#include "train/training_set.hpp"
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

/// The settings of a resumed run: the model's from the checkpoint, the rest from the request.
Config merge_for_resume(const Config& saved, const Config& requested) {
  Config merged = requested;
  for (const OptionSpec& spec : train_options()) {
    const bool given = requested.given.count(spec.name) > 0;
    if (spec.is_model) {
      const std::string have = spec.get(saved);
      if (given && spec.get(requested) != have) {
        throw UsageError("--" + spec.name + " cannot change when resuming (the checkpoint has " +
                         have + ")");
      }
      spec.set(merged, have);
    } else if ((spec.name == "corpus" || spec.name == "epochs") && !given) {
      spec.set(merged, spec.get(saved));
    }
  }
  merged.given = requested.given;
  return merged;
}

bool same_vocabulary(const Vocab& a, const Vocab& b) {
  return a.words() == b.words() && a.counts() == b.counts();
}

/// The input vectors as evaluation reads them.
LoadedEmbeddings as_embeddings(const Vocab& vocab, const HostTable& table) {
  LoadedEmbeddings e;
  e.words = vocab.words();
  e.counts = vocab.counts();
  e.rows = table.rows();
  e.dim = table.dim();
  e.vectors.resize(table.rows() * table.dim());
  table.copy_to(e.vectors.data());
  return e;
}

void evaluate_epoch(const Config& config, const Vocab& vocab, const Model& model, uint32_t epoch,
                    std::FILE* out) {
  if (out == nullptr || (config.eval_analogies.empty() && config.eval_similarity.empty())) return;
  const LoadedEmbeddings e = as_embeddings(vocab, model.input);
  std::string line = "epoch " + std::to_string(epoch) + " evaluation:";
  char buf[160];
  if (!config.eval_analogies.empty()) {
    const AnalogyReport r = evaluate_analogies(e, config.eval_analogies, 30000);
    std::snprintf(buf, sizeof buf, " analogies %.2f%% (%llu/%llu)", r.accuracy_pct(),
                  static_cast<unsigned long long>(r.correct),
                  static_cast<unsigned long long>(r.evaluated()));
    line += buf;
  }
  if (!config.eval_similarity.empty()) {
    const SimilarityReport r = evaluate_similarity(e, config.eval_similarity);
    std::snprintf(buf, sizeof buf, " similarity spearman %.4f", r.spearman);
    line += buf;
  }
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

}  // namespace

TrainSummary run_training(const Config& requested, std::FILE* log, const std::atomic<int>* stop) {
  const auto t0 = Clock::now();
  std::optional<Checkpoint> ck;
  if (!requested.resume.empty()) {
    if (requested.output.empty()) throw UsageError("--output is required");
    ck = load_checkpoint(requested.resume, [&](uint64_t rows, uint32_t dim, OptimizerKind kind) {
      return backend_pages_tables(requested.device, rows, dim, kind, requested.gpu_options());
    });
  }
  const Config config = ck ? merge_for_resume(ck->config, requested) : requested;
  validate(config);
  std::FILE* out = config.quiet ? nullptr : log;
  prepare_output_dir(config.output);
  if (!config.eval_analogies.empty()) MappedFile check(config.eval_analogies);
  if (!config.eval_similarity.empty()) MappedFile check(config.eval_similarity);

  const CorpusText text = CorpusText::open(corpus_paths(config));
  Vocab saved_vocab;
  if (ck) {
    if (requested.given.count("corpus")) {
      if (!same_vocabulary(count_vocabulary(text.parts(), config), ck->vocab)) {
        throw Error("corpus '" + config.corpus +
                    "' does not give the vocabulary of the checkpoint; resume with the corpus it "
                    "was trained on");
      }
    }
    saved_vocab = std::move(ck->vocab);
  } else if (!config.vocab_file.empty()) {
    saved_vocab = read_vocabulary(config);
  }
  const TrainingSet set = make_training_set(text.parts(), config, std::move(saved_vocab));
  const Vocab& vocab = set.vocab;
  if (!config.save_vocab.empty()) vocab.save_tsv(config.save_vocab);
  const CorpusFingerprint corpus_id = fingerprint(set.corpus);
  if (ck && !(corpus_id == ck->corpus)) {
    throw Error("corpus '" + config.corpus + "' is not the corpus the checkpoint was trained on");
  }
  if (out) {
    std::fprintf(out,
                 "vocabulary: %u words (min-count %llu); %llu words/epoch in %llu sentences "
                 "(%.2f s)\n",
                 vocab.size(), static_cast<unsigned long long>(config.min_count),
                 static_cast<unsigned long long>(set.corpus.size()),
                 static_cast<unsigned long long>(set.corpus.sentences()), seconds_since(t0));
  }
  const TrainData data = set.train_data(config);
  const TrainParams& p = data.params;

  Model model;
  TrainPosition pos;
  if (ck) {
    model = std::move(ck->model);
    pos = ck->position;
    if (pos.epoch >= config.epochs) {
      throw UsageError("the checkpoint has finished " + std::to_string(pos.epoch) +
                       " epochs; raise --epochs to train longer");
    }
    ck.reset();
  } else {
    const std::string hint = "lower --dim or --max-vocab";
    model = allocate_model(vocab.size(), config.dim, config.optimizer,
                           backend_pages_tables(config.device, vocab.size(), config.dim,
                                                config.optimizer, config.gpu_options()),
                           hint);
    init_model(model, config.seed);
  }
  std::unique_ptr<Backend> backend =
      make_backend(config.device, model, data, config.effective_threads(), config.gpu_options());
  if (out) std::fprintf(out, "backend: %s\n", backend->describe().c_str());
  CheckpointDir checkpoints(config.output, config.keep_checkpoints);

  const uint64_t total_words = static_cast<uint64_t>(p.epochs) * p.words_per_epoch;
  const LrSchedule schedule = make_schedule(p, data.optimizer);
  Progress progress(out, total_words, pos.words_done);
  const uint64_t nblocks = set.block_count();
  const uint64_t span_blocks = std::max<uint64_t>(1, backend->span_words() / kBlockWords);
  const auto t_train = Clock::now();
  const uint64_t words_at_start = pos.words_done;
  auto last_checkpoint = Clock::now();
  std::string last_path;
  double side_seconds = 0;  // checkpoints and evaluation, not counted as training time
  auto write_checkpoint = [&](bool end_of_epoch) {
    const auto t = Clock::now();
    backend->sync_to_host();
    last_path = checkpoints.write(end_of_epoch, config, vocab, model, pos, corpus_id,
                                  schedule.at(pos.words_done));
    last_checkpoint = Clock::now();
    side_seconds += seconds_since(t);
  };

  for (uint32_t epoch = pos.epoch; epoch < p.epochs; ++epoch) {
    for (uint64_t b = pos.block; b < nblocks; b += span_blocks) {
      const uint64_t e = std::min(nblocks, b + span_blocks);
      const SpanStats s = backend->train(epoch, b, e);
      pos = {epoch, e, pos.words_done + s.words};
      progress.update(pos.words_done, s.loss, s.loss_terms, schedule.at(pos.words_done), epoch);
      if (!std::isfinite(s.loss)) {
        progress.finish();
        throw Error("training diverged (the loss is not finite after " +
                    std::to_string(pos.words_done) + " words); lower --" +
                    (config.optimizer == OptimizerKind::kSgd ? "alpha" : "lr"));
      }
      const int sig = stop != nullptr ? stop->load() : 0;
      if (sig != 0) {
        progress.finish();
        write_checkpoint(false);
        throw Interrupted(sig, "stopped by signal " + std::to_string(sig) + " after " +
                                   std::to_string(pos.words_done) +
                                   " words; resume with --resume " + last_path);
      }
      if (config.checkpoint_interval > 0 && e < nblocks &&
          seconds_since(last_checkpoint) >= config.checkpoint_interval) {
        write_checkpoint(false);
      }
    }
    pos = {epoch + 1, 0, pos.words_done};
    write_checkpoint(true);
    if (!config.eval_analogies.empty() || !config.eval_similarity.empty()) {
      progress.finish();
      const auto t = Clock::now();
      evaluate_epoch(config, vocab, model, epoch + 1, out);
      side_seconds += seconds_since(t);
    }
  }
  const double train_seconds = seconds_since(t_train) - side_seconds;
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
      {"words_trained", static_cast<int64_t>(pos.words_done)},
      {"optimizer", to_string(config.optimizer)},
  };
  if (config.optimizer != OptimizerKind::kSgd) {
    const OptimizerParams& o = data.optimizer;
    const std::tuple<const char*, const char*, float> hyper[] = {
        {"lr", "lr", o.lr},
        {"beta1", "beta1", o.beta1},
        {"beta2", "beta2", o.beta2},
        {"eps", "eps", o.eps},
        {"weight-decay", "weight_decay", o.weight_decay},
        {"rho", "rho", o.rho}};
    for (const auto& [option, attribute, value] : hyper) {
      if (uses_hyperparameter(config.optimizer, option)) {
        export_options.attributes.push_back({attribute, static_cast<double>(value)});
      }
    }
  }
  export_model(config.output, vocab, model, export_options);

  TrainSummary summary;
  summary.vocab_size = vocab.size();
  summary.words = pos.words_done;
  summary.train_seconds = train_seconds;
  summary.total_seconds = seconds_since(t0);
  summary.final_loss = progress.smoothed_loss();
  summary.device = backend->name();
  summary.last_checkpoint = last_path;
  if (out) {
    const uint64_t trained = pos.words_done - words_at_start;
    std::fprintf(out,
                 "trained %llu words in %.2f s on %s: %.0f words/s (%.2f s in all, loss %.4f)\n",
                 static_cast<unsigned long long>(trained), train_seconds, summary.device.c_str(),
                 train_seconds > 0 ? static_cast<double>(trained) / train_seconds : 0.0,
                 summary.total_seconds, summary.final_loss);
    if (words_at_start > 0) {
      std::fprintf(out, "resumed at word %llu: %llu words trained in all\n",
                   static_cast<unsigned long long>(words_at_start),
                   static_cast<unsigned long long>(pos.words_done));
    }
  }
  return summary;
}

}  // namespace pagedw2v
