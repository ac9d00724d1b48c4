/// @file epoch_loop.cpp
/// A run's epochs: the spans the backend trains at a time, the loop over epochs and spans with
/// its progress line, timed and end-of-epoch checkpoints (gathered over ranks), a stop by signal,
/// and the evaluation after each epoch.

#include <algorithm>
#include <cmath>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "dist/ranks.hpp"
#include "eval/analogy.hpp"
#include "eval/similarity.hpp"
#include "io/embeddings.hpp"
#include "model/sampler.hpp"
#include "train/run_record.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

namespace {

using run_steps::Clock;
using run_steps::finished_epochs;
using run_steps::kMaxBlockBytes;
using run_steps::seconds_since;
using run_steps::stream_span_blocks;
using run_steps::stream_window_bytes;

/// The input vectors as evaluation reads them.
LoadedEmbeddings as_embeddings(const Vocab& vocab, const HostTable& table) {
  LoadedEmbeddings e;
  e.words = vocab.word_strings();
  e.counts = vocab.counts().to_vector();
  e.rows = table.rows();
  e.dim = table.dim();
  e.vectors.resize(table.rows() * table.dim());
  table.copy_to(e.vectors.data());
  return e;
}

/// The rows the per-epoch evaluation reads: the analogies search the first 30,000, the
/// similarity pairs look words up among the first 300,000 (gensim's defaults).
constexpr uint64_t kAnalogyRows = 30000;
constexpr uint64_t kSimilarityRows = 300000;

uint64_t evaluated_rows(const Config& config, uint64_t words) {
  uint64_t rows = 0;
  if (!config.eval_analogies.empty()) rows = kAnalogyRows;
  if (!config.eval_similarity.empty()) rows = std::max(rows, kSimilarityRows);
  return std::min(rows, words);
}

/// Over ranks: the input vectors of the words [0, rows), gathered from their owners into rank 0
/// (empty on the others). Collective.
LoadedEmbeddings gathered_embeddings(dist::Ranks& ranks, const Vocab& vocab, const Model& model,
                                     uint64_t rows) {
  LoadedEmbeddings e;
  if (ranks.writes_files()) {
    e.words.reserve(rows);
    for (uint32_t i = 0; i < rows; ++i) e.words.emplace_back(vocab.word(i));
    e.counts = vocab.counts().to_vector(rows);
    e.rows = rows;
    e.dim = model.input.dim();
    e.vectors.resize(rows * e.dim);
  }
  ranks.gather_rows({&model.input}, rows, [&](const RowBlock& b) {
    std::copy_n(b.tables[0], b.rows * b.dim, e.vectors.data() + b.first * b.dim);
  });
  return e;
}

/// Evaluates `e` (the input vectors, or, over ranks, the rows evaluated_rows() says).
std::optional<EpochEvaluation> evaluate_epoch(const Config& config, const LoadedEmbeddings& e,
                                              uint32_t epoch, std::FILE* out) {
  if (config.eval_analogies.empty() && config.eval_similarity.empty()) return std::nullopt;
  EpochEvaluation result;
  result.epoch = epoch;
  std::string line = "epoch " + std::to_string(epoch) + " evaluation:";
  char buf[160];
  if (!config.eval_analogies.empty()) {
    const AnalogyReport r = evaluate_analogies(e, config.eval_analogies, kAnalogyRows);
    result.has_analogies = true;
    result.analogy_accuracy_pct = r.accuracy_pct();
    result.analogy_correct = r.correct;
    result.analogy_evaluated = r.evaluated();
    std::snprintf(buf, sizeof buf, " analogies %.2f%% (%llu/%llu)", r.accuracy_pct(),
                  static_cast<unsigned long long>(r.correct),
                  static_cast<unsigned long long>(r.evaluated()));
    line += buf;
  }
  if (!config.eval_similarity.empty()) {
    const SimilarityReport r = evaluate_similarity(e, config.eval_similarity, kSimilarityRows);
    result.has_similarity = true;
    result.similarity_spearman = r.spearman;
    std::snprintf(buf, sizeof buf, " similarity spearman %.4f", r.spearman);
    line += buf;
  }
  if (out != nullptr) {
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
  }
  return result;
}

}  // namespace

// Over ranks: the model's tables in a checkpoint's order (checkpoint_tables), the first `count`.
std::vector<const HostTable*> TrainingRun::rank_tables(uint32_t count) {
  std::vector<const HostTable*> all = {&model.input, &model.output};
  for (size_t k = 0; k < model.input_state.size(); ++k) {
    all.push_back(&model.input_state[k]);
    all.push_back(&model.output_state[k]);
  }
  all.resize(std::min<size_t>(all.size(), count));
  return all;
}

// Over ranks, a checkpoint is written as every rank reaches it: rank 0 gathers the rows from
// their owners a block at a time, in id order, and writes each block into the file.
void TrainingRun::gathered_checkpoint(bool end_of_epoch, const TrainPosition& at, float lr) {
  std::unique_ptr<CheckpointRowWriter> rows;
  if (writes_files) rows = writer->open_rows(end_of_epoch, at, lr);
  ranks->gather_rows(rank_tables(checkpoint_tables(config.optimizer)), vocab.size(),
                     [&](const RowBlock& b) { rows->write(b); });
  if (writes_files) writer->commit_rows(*rows);
}

void TrainingRun::plan_spans() {
  const uint64_t total_words = static_cast<uint64_t>(p.epochs) * p.words_per_epoch;
  schedule = make_schedule(p, data.optimizer);
  progress.emplace(out, total_words, pos.words_done, p.epochs);
  // A streamed corpus's block count is known before training only when resuming (the pass above).
  nblocks = streamed ? stream_bounds.size() - 1 : set.block_count();
  if (!requested.resume.empty()) {
    pos = resume_position(pos, nblocks, requested.resume);
    if (pos.epoch >= p.epochs) throw UsageError(finished_epochs(pos));
  }
  if (streamed) stream.emplace(stream_window_bytes(corpus_memory));
  span_blocks = std::max<uint64_t>(1, backend->span_words() / kBlockWords);
  // The CPU backend's spans are only where its threads meet (a token's rate depends on its
  // position alone): on a corpus of less than fifty spans an epoch, they are cut to a fiftieth of
  // it, so that the progress line moves steadily, but to no less than eight blocks a thread, so
  // that the threads' wait for the last block of a span stays small.
  if (!ranks && !streamed && backend->name() == "cpu") {
    span_blocks = std::min(span_blocks, std::max<uint64_t>(uint64_t{8} * threads, nblocks / 50));
  }
  // Streamed spans of whole super-batches where the backend needs them (align > 1): at their
  // largest, they fit the quarter of the memory that training may hold, so the window hands
  // them over whole.
  align = 1;
  if (streamed) {
    span_blocks = stream_span_blocks(corpus_memory, span_blocks);
    align = backend->span_align_blocks();
    if (align > 1) {
      const uint64_t fit = corpus_memory / 4 / kMaxBlockBytes;
      if (fit < align) {
        throw UsageError("--max-corpus-memory " + format_byte_size(corpus_memory) +
                         " is too small to stream the corpus to the " + backend->name() +
                         " backend with --optimizer " + to_string(config.optimizer) +
                         ": a quarter of it must hold a super-batch of " +
                         std::to_string(align * kBlockWords) + " words at its largest; give " +
                         format_byte_size((4 * align * kMaxBlockBytes + 1023) >> 10 << 10) +
                         " or more, or lower --batch-words");
      }
      span_blocks = std::min(span_blocks, fit) / align * align;
      span_blocks = std::max(span_blocks, align);
    }
  }
  t_train = Clock::now();
  words_at_start = pos.words_done;
  last_checkpoint = Clock::now();
  keep_any = config.keep_checkpoints > 0;
  if (!requested.resume.empty()) {
    summary.earlier_epoch_loss =
        recorded_epoch_losses(run_record_path_of(requested.resume), pos.epoch);
  }
}

void TrainingRun::train_epochs() {
  for (uint32_t epoch = pos.epoch; epoch < p.epochs; ++epoch) {
    double epoch_loss = 0;
    uint64_t epoch_terms = 0;
    if (stream) stream->start(open_pass(), pos.block);
    for (uint64_t b = pos.block, e = 0;; b = e) {
      e = std::min(nblocks, b + span_blocks);
      if (stream) {
        e = b + stream->take(span_blocks - b % align, window, stream_bounds);
        if (e == b) break;
      } else if (b >= nblocks) {
        break;
      }
      const SpanStats s = backend->train(epoch, b, e);
      pos = {epoch, e, pos.words_done + s.words};
      examples += s.loss_terms;
      epoch_loss += s.loss;
      epoch_terms += s.loss_terms;
      progress->update(pos.words_done, s.loss, s.loss_terms, schedule.at(pos.words_done), epoch);
      if (!std::isfinite(s.loss)) {
        progress->finish();
        throw Error("training diverged (the loss is not finite after " +
                    std::to_string(pos.words_done) + " words); lower --" +
                    (config.optimizer == OptimizerKind::kSgd ? "alpha" : "lr"));
      }
      const int sig = stop != nullptr ? stop->load() : 0;
      if (sig != 0) {
        progress->finish();
        // Nothing trains after this checkpoint: it is written from the tables, here. After an
        // epoch's last block it stands where the next epoch starts.
        const bool epoch_done = !stream && e >= nblocks;
        const TrainPosition at = epoch_done ? TrainPosition{epoch + 1, 0, pos.words_done} : pos;
        backend->sync_to_host();
        if (ranks) {
          gathered_checkpoint(epoch_done, at, schedule.at(at.words_done));
        } else if (writes_files) {
          ensure_writer();
          writer->write_now(epoch_done, model, at, schedule.at(at.words_done));
        }
        const std::string path =
            writes_files ? writer->wait() : config.output + "/checkpoints/latest.h5";
        throw Interrupted(
            sig, "stopped by signal " + std::to_string(sig) + " after " +
                     std::to_string(pos.words_done) + " words; resume with: " +
                     (ranks ? "mpirun -np " + std::to_string(ranks->size()) + " " : std::string()) +
                     resume_command(config, path));
      }
      // A timed checkpoint waits while the previous one is still being written.
      // Not after an epoch's last block (its end writes one), nor in a streamed corpus's first
      // pass (its fingerprint is not known yet); blocks known beyond e say e is not the last.
      const bool timed = config.checkpoint_interval > 0 && e + 1 < data.blocks->size() && writer &&
                         !writer->busy() &&
                         seconds_since(last_checkpoint) >= config.checkpoint_interval;
      if (ranks ? ranks->rank0_decides(timed) : timed) {
        const auto tc = Clock::now();
        backend->sync_to_host();
        if (ranks) {
          gathered_checkpoint(false, pos, schedule.at(pos.words_done));
        } else if (writes_files) {
          writer->write_snapshot(false, model, pos, schedule.at(pos.words_done));
        }
        last_checkpoint = Clock::now();
        side_seconds += seconds_since(tc);
      }
    }
    if (stream) {
      const StreamSummary& f = stream->summary();
      const CorpusFingerprint read{f.words, f.sentences, f.hash};
      if (f.words != p.words_per_epoch || (corpus_id && !(read == *corpus_id))) {
        throw Error("corpus '" + config.corpus + "' changed while it was trained on (" +
                    std::to_string(f.words) + " words of the vocabulary in this pass, " +
                    std::to_string(p.words_per_epoch) + " expected)");
      }
      if (!writer) {
        corpus_id = read;
        writer.emplace(*checkpoints, config, vocab, *corpus_id);
      }
    }
    pos = {epoch + 1, 0, pos.words_done};
    progress->end_epoch(epoch, schedule.at(pos.words_done));
    summary.epoch_loss.push_back(epoch_terms > 0 ? epoch_loss / static_cast<double>(epoch_terms)
                                                 : 0.0);
    const bool last = epoch + 1 == p.epochs;
    const bool evaluate = !config.eval_analogies.empty() || !config.eval_similarity.empty();
    if (keep_any || last) {
      const auto tc = Clock::now();
      backend->sync_to_host();
      if (ranks && keep_any && !last) {
        gathered_checkpoint(true, pos, schedule.at(pos.words_done));
      } else if (writes_files && keep_any && !last) {
        writer->write_snapshot(true, model, pos, schedule.at(pos.words_done));
      }
      last_checkpoint = Clock::now();
      side_seconds += seconds_since(tc);
    }
    if (evaluate && (writes_files || ranks)) {
      progress->finish();
      const auto te = Clock::now();
      // Over ranks, every rank sends its rows of those the evaluation reads; rank 0 evaluates.
      const LoadedEmbeddings e =
          ranks ? gathered_embeddings(*ranks, vocab, model, evaluated_rows(config, vocab.size()))
                : as_embeddings(vocab, model.input);
      if (writes_files) {
        if (auto r = evaluate_epoch(config, e, epoch + 1, out)) summary.evaluations.push_back(*r);
      }
      times.evaluation += seconds_since(te);
      side_seconds += seconds_since(te);
    }
  }
  times.training = seconds_since(t_train) - side_seconds;
  progress->finish();
}

}  // namespace pagedw2v
