#pragma once
/// @file trainer.hpp
/// A training run from a corpus file to the exported vectors: vocabulary, encoding, sampling
/// tables, model, backend, epochs with progress, checkpoints, export and the run record.
///
/// What a run writes, and when:
///   - at the start it claims the output directory as every writing command does
///     (io/output_claim.hpp): a lock (a second writer of the same --output is refused), what
///     killed commands left there removed, and an output that holds another run's files refused
///     unless --overwrite, or one that would write over an input (the corpus, --vocab, the
///     evaluation files) or put --save-vocab over an input or the set, refused always;
///   - after each epoch (and each --checkpoint-interval) a checkpoint: the tables are copied and
///     the copy is written by a background thread while training goes on;
///   - at the end the last checkpoint is written from the tables while the export files are
///     written (no copy), then the export files and run.json are moved into the output directory
///     as one set, after its manifest (io/output_set.hpp).

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "dist/rank_memory.hpp"
#include "gpu/device_facts.hpp"

namespace pagedw2v {

namespace dist {
class Ranks;
}

/// Where the time of a `train` command went, in seconds.
struct StageTimes {
  double read = 0;         ///< opening and mapping the corpus (its pages are read while counting)
  double phrases = 0;      ///< --phrases: learning the phrases and joining them into the text
  double vocabulary = 0;   ///< counting words (or loading the checkpoint's)
  double encoding = 0;     ///< the corpus as word ids, blocks and sampling tables
  double setup = 0;        ///< checkpoint loading, tables, initial values, backend (GPU upload)
  double training = 0;     ///< the epochs alone
  double checkpoints = 0;  ///< training stopped for checkpoints (table copies, waits)
  double checkpoint_writing = 0;  ///< writing checkpoint files, mostly in the background
  double evaluation = 0;          ///< --eval-analogies / --eval-similarity after each epoch
  double export_files = 0;        ///< writing the export files (and the end of the last checkpoint)
  double total = 0;               ///< the whole run
};

/// One epoch's evaluation (--eval-analogies, --eval-similarity).
struct EpochEvaluation {
  uint32_t epoch = 0;
  bool has_analogies = false;
  double analogy_accuracy_pct = 0;
  uint64_t analogy_correct = 0;
  uint64_t analogy_evaluated = 0;
  bool has_similarity = false;
  double similarity_spearman = 0;
};

struct TrainSummary {
  uint64_t vocab_size = 0;
  uint64_t corpus_tokens = 0;      ///< tokens in the corpus, before --min-count
  uint64_t distinct_words = 0;     ///< distinct words counted, before --min-count/--max-vocab
  uint64_t kept_tokens = 0;        ///< tokens of the kept words (one epoch)
  uint64_t words_per_epoch = 0;    ///< in-vocabulary words of one epoch
  uint64_t words = 0;              ///< in-vocabulary words trained over, all epochs
  uint64_t words_trained_now = 0;  ///< by this command (less than `words` when resumed)
  double train_seconds = 0;        ///< the epochs alone
  double total_seconds = 0;        ///< vocabulary, encoding, training and export
  double final_loss = 0;           ///< smoothed loss per example at the end
  std::vector<double> epoch_loss;  ///< mean loss per example of each epoch trained now
  /// Resumed: the epochs' losses before this command, from the run's run.json (NaN where it
  /// holds none); one a finished epoch.
  std::vector<double> earlier_epoch_loss;
  std::vector<EpochEvaluation> evaluations;
  StageTimes times;
  std::string device;
  std::string last_checkpoint;          ///< path of the newest checkpoint written
  std::vector<std::string> files;       ///< the export files and run.json, as written
  std::vector<dist::RankMemory> ranks;  ///< over ranks, on rank 0: what each rank held
};

/// Runs `config` end to end (or continues `config.resume`); progress goes to `log` unless
/// config.quiet. When `*stop` becomes non-zero (a signal number, set by a signal handler), training
/// stops at the next safe point, writes a checkpoint and throws Interrupted, whose message ends
/// with the command that continues the run. With `ranks` (a run over several MPI ranks,
/// dist/ranks.hpp) every rank calls this with the same config; each holds and trains the rows it
/// owns, and rank 0 alone logs and writes the checkpoints and the export, from the rows every rank
/// sends it a block at a time when they all reach that point; the other ranks return a summary of
/// the training alone. `device`: the process's one device query (query_run_device, run_plan.hpp),
/// taken by the caller that printed the settings from it; null: taken here, at the run's start.
TrainSummary run_training(const Config& config, std::FILE* log = stderr,
                          const std::atomic<int>* stop = nullptr, dist::Ranks* ranks = nullptr,
                          const DeviceFacts* device = nullptr);

/// The command line that continues a run stopped at `checkpoint`: `pagedw2v train --output DIR`,
/// the options that `config` was given and a checkpoint does not record, and `--resume
/// CHECKPOINT` last. Arguments are quoted for a POSIX shell where they need it.
std::string resume_command(const Config& config, const std::string& checkpoint);

/// The settings of a resumed run: the model's, the corpus, the epochs, the thread count and
/// --deterministic from the checkpoint's `saved` settings unless `requested` gives them (model
/// settings cannot change: UsageError); the rest from `requested`.
Config merge_for_resume(const Config& saved, const Config& requested);

}  // namespace pagedw2v
