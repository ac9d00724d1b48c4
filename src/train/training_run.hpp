#pragma once
/// @file training_run.hpp
/// One `train` run's state between its steps, and the steps themselves: run_training
/// (trainer.cpp) makes a TrainingRun and calls its steps in order. Internal to the train layer.
///
///   settle_settings         resume_merge.cpp   the checkpoint loaded (of a resumed run, or of
///                                              the run a run continues), settings merged and
///                                              checked, the output directory claimed
///   read_corpus, encode_corpus, prepare_stream, report_vocabulary
///                           run_corpus.cpp     the corpus text, the vocabulary, the training
///                                              set held whole or streamed
///     join_phrases          run_phrases.cpp    (from read_corpus) --phrases joined into the text
///   make_model_and_backend  trainer.cpp        the model, the backend, the checkpoint writer
///   plan_spans, train_epochs
///                           epoch_loop.cpp     spans, the epochs, checkpoints and evaluation
///   write_outputs, record_run
///                           run_outputs.cpp    the last checkpoint, the export, run.json, the
///                                              closing lines of the log

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "base/atomic_file.hpp"
#include "base/seconds_since.hpp"
#include "config/config.hpp"
#include "corpus/corpus.hpp"
#include "corpus/corpus_stream.hpp"
#include "io/export.hpp"
#include "io/output_claim.hpp"
#include "io/output_set.hpp"
#include "text/phrases.hpp"
#include "text/text_source.hpp"
#include "train/backend_factory.hpp"
#include "train/checkpoint.hpp"
#include "train/progress.hpp"
#include "train/run_plan.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

namespace dist {
class Ranks;
}

/// What a run's phrases were (--phrases, --phrases-from): the text of their file, the phrases
/// and the words counted of each pass (none counted when read), and the tokens joined.
struct PhraseSummary {
  std::string file_text;
  std::vector<uint64_t> phrases, words;
  uint64_t joined = 0;
};

namespace run_steps {

using Clock = std::chrono::steady_clock;

using pagedw2v::seconds_since;

// A streamed corpus's share of --max-corpus-memory (docs/usage.md, host memory): half for the
// blocks that wait, a quarter for the blocks being trained, a quarter for their sentence offsets
// and the encoder's slice.
inline uint64_t stream_window_bytes(uint64_t cap) { return cap / 2; }
inline uint64_t stream_span_blocks(uint64_t cap, uint64_t backend_blocks) {
  return std::clamp<uint64_t>(cap / 4 / (kBlockWords * sizeof(uint32_t)), 1, backend_blocks);
}
// Beside it, the CUDA backend's two pinned chunk buffers (12 bytes a token) take an eighth more.
inline uint64_t stream_stage_tokens(uint64_t cap) {
  return std::max<uint64_t>(kMaxSentenceLength, cap / 8 / 24);
}
// A block's bytes in the window at most (CorpusStream counts 4 a token, 8 a sentence start).
constexpr uint64_t kMaxBlockBytes = kMaxBlockTokens * 4 + (kMaxBlockSentences + 1) * 8;

/// Creates `dir` (and its parents) and checks that it can be written (run_outputs.cpp).
void prepare_output_dir(const std::string& dir);

/// Claims the output directory for this run (run_outputs.cpp).
OutputLock claim_run_output(const Config& config, const std::string& resume_from);

/// Why a checkpoint that has trained every epoch asked for does not resume (resume_merge.cpp).
std::string finished_epochs(const TrainPosition& position);

/// The learning rate of a resumed run (resume_merge.cpp).
void resume_rate(const Config& config, const Checkpoint& ck, TrainData& data, std::FILE* out);

}  // namespace run_steps

/// The state of one run, in the order run_training made it (and the order it goes in).
class TrainingRun {
 public:
  TrainingRun(const Config& requested, std::FILE* log, const std::atomic<int>* stop,
              dist::Ranks* ranks, const DeviceFacts& device);

  void settle_settings();
  void read_corpus();
  void encode_corpus();
  void prepare_stream();
  void report_vocabulary();
  void make_model_and_backend();
  void plan_spans();
  void train_epochs();
  /// False on a rank that writes no file: its part ends here.
  bool write_outputs();
  void record_run();

  TrainSummary summary;

 private:
  using Clock = run_steps::Clock;

  /// --phrases or --phrases-from: the text replaced by the text with the phrases joined.
  void join_phrases();
  /// A pass over a streamed corpus: from the cache when it holds it, else from the text.
  std::unique_ptr<BlockReader> open_pass();
  /// What the backend reads: a streamed corpus is a window that each span refills.
  TrainData run_data(TrainData d);
  /// The checkpoint writer, made now where it is not yet (a streamed corpus's first pass).
  void ensure_writer();
  std::vector<const HostTable*> rank_tables(uint32_t count);
  void gathered_checkpoint(bool end_of_epoch, const TrainPosition& at, float lr);

  const Config& requested;
  std::FILE* log;
  const std::atomic<int>* stop;
  dist::Ranks* ranks;
  // Over several ranks, rank 0 alone writes files and logs.
  const bool writes_files;
  const Clock::time_point t0 = Clock::now();
  StageTimes times;
  std::optional<Checkpoint> ck;
  // A run continued from a finished one (continue_from.hpp): that run's checkpoint, until its
  // tables are carried into the model; and where each of its words' rows goes.
  std::optional<Checkpoint> start;
  std::vector<uint32_t> row_of_old;
  // The process's one device query, and every decision of the run made from it once
  // (run_plan.hpp): before the model's layout (a resumed run: before its checkpoint is read),
  // then its sizes.
  const DeviceFacts device_facts;
  std::optional<RunPlan> plan;
  // Over ranks, every rank holds only the rows it owns (dist/owned_rows.hpp), and reads only those
  // from a checkpoint.
  const bool owned_rows_only = ranks != nullptr;
  Config config;
  std::FILE* out = nullptr;
  std::optional<OutputLock> lock;
  Clock::time_point t;
  CorpusText text;
  // --phrases: what the passes did (their file's text for phrases.tsv and the cache key). The
  // count reads the joined text in `text`; a streamed run then joins each pass anew from the
  // inputs (`phrase_source`) with the tables, which go, with the inputs, from a run held whole.
  PhraseSummary phrase_summary;
  CorpusText phrase_source;
  std::vector<PhraseTable> phrase_tables;
  PhraseOptions phrase_options;
  // Whether the encoded corpus is held whole or streamed (corpus_stream.hpp): streamed when it
  // would take more than --max-corpus-memory.
  uint64_t corpus_memory = 0;
  Vocab counted;
  bool counted_here = false;
  // Ranks each hold the corpus whole (they train their share of its blocks): no stream.
  bool streamed = false;
  TrainingSet set;
  const Vocab& vocab = set.vocab;
  std::optional<CorpusFingerprint> corpus_id;
  // A corpus held whole is hashed on a thread of its own while the model and the backend are
  // set up, unless a checkpoint or other ranks need its fingerprint now.
  std::future<CorpusFingerprint> hashing;
  // A streamed corpus: its words per epoch come from the count (or a pass over it), its
  // fingerprint at the end of the first pass (or from a pass before training, when resuming).
  EncodeOptions encode_options;
  detail::ShardedWordTable built_table;
  const detail::ShardedWordTable* table = nullptr;
  std::optional<uint64_t> cache_key;
  std::string cache_file;
  std::vector<uint64_t> stream_bounds{0};
  uint64_t stream_words = 0;
  bool cache_checked = false;  // a cache read this run has been verified whole
  EncodedCorpus window;        // the blocks a streamed run trains now
  TrainData data;
  const TrainParams& p = data.params;
  Model model;
  TrainPosition pos;
  uint32_t threads = 1;
  std::unique_ptr<Backend> backend;
  std::optional<CheckpointDir> checkpoints;
  // Made once the corpus's fingerprint is known (a streamed corpus: after its first pass).
  std::optional<CheckpointWriter> writer;
  LrSchedule schedule;
  std::optional<Progress> progress;
  uint64_t nblocks = 0;
  std::optional<CorpusStream> stream;
  uint64_t span_blocks = 1;
  uint64_t align = 1;
  Clock::time_point t_train;
  uint64_t words_at_start = 0;
  uint64_t examples = 0;
  Clock::time_point last_checkpoint;
  double side_seconds = 0;  // checkpoints and evaluation, not counted as training time
  bool keep_any = false;
  std::string device_name;
  std::string backend_description;
  std::optional<FsyncScope> final_writes;
  std::optional<StagedFiles> staged;
};

}  // namespace pagedw2v
