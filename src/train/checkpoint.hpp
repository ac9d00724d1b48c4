#pragma once
/// @file checkpoint.hpp
/// Checkpoints: everything a run needs to continue as if it had never stopped, in one HDF5 file.
///
/// The file is an embeddings file (see hdf5_io.hpp) with the output vectors always present:
///
///     /vectors, /context_vectors   [V, D] float32   input and output tables
///     /vocab/words, /vocab/counts                   the vocabulary, in row order
///     /optimizer/input_K, /optimizer/output_K
///                        [V, D] float32   state table K of each table (K < state_tables(kind);
///                                         none for sgd), in the order optimizer.hpp lists them
///
/// With hierarchical softmax alone (--hs --negative 0) /context_vectors holds the Huffman tree's
/// inner nodes (row V − 2 − i is word2vec's inner node i, huffman.hpp; the last row is unused):
/// the tree itself is not stored, it is rebuilt from /vocab/counts, which fix it exactly.
///
/// and root attributes: `format_version`, every training parameter (the optimizer's kind and
/// hyper-parameters among them, as `option.optimizer`, `option.lr`, …), the thread count and
/// --deterministic (a resumed run keeps them unless told otherwise), the corpus path and its
/// fingerprint, and the position (`epoch`, `block` — the next work block of that epoch —
/// `words_done`, `lr`); a run continued from another (--continue-from) adds where it started
/// (`continued_from.*`, checkpoint_file.hpp). Every random draw is Philox keyed by (seed, token
/// position, epoch), so the seed and the position are the complete random state of every thread and
/// stream. Files are written to a temporary name, fsync'ed and renamed: a crash at any moment
/// leaves the previous checkpoint intact. The last checkpoint of a run that ends normally is
/// written under an FsyncScope(false) unless --fsync-outputs (like the export files): still atomic,
/// not durable before the command returns.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "corpus/corpus.hpp"
#include "io/hdf5_io.hpp"
#include "io/row_block.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// Bumped whenever the layout changes; newer files are refused, older ones read. Version 2 added
/// the optimizer and its state tables (a version-1 file is an sgd run).
inline constexpr int64_t kCheckpointFormatVersion = 2;

/// Where training stands: the next block to train in `epoch`, and the words trained so far.
struct TrainPosition {
  uint32_t epoch = 0;
  uint64_t block = 0;
  uint64_t words_done = 0;
};

/// Whether a checkpoint records option `name` (a resumed run takes it from there).
bool checkpoint_records(const std::string& name);

/// What identifies the encoded corpus a run trains on.
struct CorpusFingerprint {
  uint64_t words = 0;
  uint64_t sentences = 0;
  uint64_t hash = 0;

  bool operator==(const CorpusFingerprint& o) const {
    return words == o.words && sentences == o.sentences && hash == o.hash;
  }
};

CorpusFingerprint fingerprint(const EncodedCorpus& corpus);

/// A checkpoint read back.
struct Checkpoint {
  Config config;  ///< the run's settings (corpus path, model parameters, epochs, seed, …)
  Vocab vocab;
  Model model;
  TrainPosition position;
  CorpusFingerprint corpus;
  float lr = 0.0f;
};

/// Writes a checkpoint to `path` atomically (temporary name, fsync as the calling thread's
/// FsyncScope says, rename). Safe to call from
/// any thread: HDF5 writes of the process are serialised.
void save_checkpoint(const std::string& path, const Config& config, const Vocab& vocab,
                     const Model& model, const TrainPosition& position,
                     const CorpusFingerprint& corpus, float lr);

/// A checkpoint's file made ahead of its values (hdf5_io.hpp): everything but the position and
/// the tables, for a model of `rows × dim` tables. A run prepares its last checkpoint while it
/// trains, so that its end writes only the tables.
PreparedH5 prepare_checkpoint(const std::string& path, const Config& config, const Vocab& vocab,
                              uint64_t rows, uint32_t dim, const CorpusFingerprint& corpus);
/// Whether `file` was prepared for the tables of `model` and the optimizer of `config`.
bool prepared_fits(const PreparedH5& file, const Config& config, const Model& model);
/// Writes the tables and the position into the prepared file and commits it, as save_checkpoint.
void finish_checkpoint(PreparedH5& file, const Config& config, const Model& model,
                       const TrainPosition& position, float lr);
/// The tables of a checkpoint of a run with optimizer `kind`, in the order its file holds them and
/// a RowBlock of CheckpointRowWriter gives them: input, output, then input state 0, output state
/// 0, input state 1, … (the model's tables, Model::input_state[k] and output_state[k]).
uint32_t checkpoint_tables(OptimizerKind kind);

/// Whether the tables of a model of `rows` rows, of a run with the recorded settings `recorded`
/// (dim, optimizer, device, placement), are to be allocated interleaved (allocate_model).
using TableLayoutChoice = std::function<bool(uint64_t rows, const Config& recorded)>;

/// Reads a checkpoint; throws Error with one clear line for a missing, truncated, damaged,
/// non-HDF5 or newer-format file, a position outside what its run could reach, and a word that is
/// empty or holds whitespace. The file is opened once and every part is read from that open file
/// (hdf5_read.hpp: libhdf5 parses it in a child process only). The tables are interleaved when
/// `interleave` says so (default: apart). The model holds the rows `rows` selects of every table
/// (all by default; one rank's owned rows, compact, in a distributed run), and only those are
/// read.
Checkpoint load_checkpoint(const std::string& path, const TableLayoutChoice& interleave = {},
                           RowSelection rows = {});
/// The same, of a file already open: whatever its path names by now.
Checkpoint load_checkpoint(const H5Source& file, const TableLayoutChoice& interleave = {},
                           RowSelection rows = {});

/// Where a run resumes from `position` (read from checkpoint `path`) in a corpus of `blocks` work
/// blocks an epoch: the position itself inside the epoch, the start of the next epoch at its end
/// (block = blocks: a stop written after an epoch's last block, as runs before this rule wrote
/// it, or a streamed run's stop at the end of a pass). Throws Error beyond the end: the check
/// that needs the corpus, which load_checkpoint does not read.
TrainPosition resume_position(const TrainPosition& position, uint64_t blocks,
                              const std::string& path);

/// The `checkpoints/` directory of a run: names files, keeps the `keep` that hold the furthest
/// positions, and points the `latest.h5` link at the newest complete one.
class CheckpointDir {
 public:
  /// `words_per_epoch` orders `epoch-N.h5` (N epochs done) against `step-WORDS.h5` by position.
  CheckpointDir(std::string run_dir, uint32_t keep, uint64_t words_per_epoch);
  const std::string& path() const { return dir_; }
  /// The file a checkpoint at `position` goes to: `epoch-N.h5` (after epoch N) or `step-WORDS.h5`.
  std::string path_for(bool end_of_epoch, const TrainPosition& position) const;
  /// Writes the checkpoint at path_for(…) and returns its path; into `prepared` when that file was
  /// prepared for this path and model.
  std::string write(bool end_of_epoch, const Config& config, const Vocab& vocab, const Model& model,
                    const TrainPosition& position, const CorpusFingerprint& corpus, float lr,
                    PreparedH5* prepared = nullptr);
  /// The name write() gives the checkpoint of `position`.
  static std::string name_for(bool end_of_epoch, const TrainPosition& position);
  /// After the checkpoint `name` (of `position`) is written in the directory: points latest.h5 at
  /// it and removes the files past the newest `keep`, as write() does.
  void written(const std::string& name, const TrainPosition& position);

 private:
  void prune(const std::string& written, uint64_t words);

  std::string dir_;
  uint32_t keep_;
  uint64_t words_per_epoch_;
};

/// The words trained at the position a checkpoint file name stands for (`epoch-N.h5` →
/// N × words_per_epoch, `step-W.h5` → W); nothing for any other name.
std::optional<uint64_t> checkpoint_words(const std::string& name, uint64_t words_per_epoch);

/// A checkpoint of the directory written from row blocks handed in id order, each holding every
/// table (checkpoint_tables(): the input, output and state tables in the file's order): how a
/// distributed run's rank 0 writes the rows it gathers from their owners without holding the
/// tables. The file is the one save_checkpoint() writes for the same values.
class CheckpointRowWriter {
 public:
  CheckpointRowWriter(CheckpointDir& dir, bool end_of_epoch, const Config& config,
                      const Vocab& vocab, const TrainPosition& position,
                      const CorpusFingerprint& corpus, float lr);
  void write(const RowBlock& block);
  /// Completes the file, points latest.h5 at it and prunes (CheckpointDir::written); returns its
  /// path.
  std::string commit();

 private:
  CheckpointDir& dir_;
  std::string name_;
  TrainPosition position_;
  uint32_t tables_;
  H5RowWriter out_;
};

/// Writes a run's checkpoints off the training thread. One write runs at a time: a new request
/// first waits for the one in progress. A snapshot write copies the tables (and optimizer state)
/// into a second model kept for the run, which costs the tables' size in host memory once, and
/// writes the copy while training goes on; when that memory cannot be had, it writes on the
/// calling thread instead. An error of a background write is thrown by the next call.
class CheckpointWriter {
 public:
  CheckpointWriter(CheckpointDir& dir, const Config& config, const Vocab& vocab,
                   const CorpusFingerprint& corpus);
  /// Waits for the write in progress (its error is dropped: call wait() to see it).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  /// Copies `model` and writes the copy in the background; `model` may change once this returns.
  void write_snapshot(bool end_of_epoch, const Model& model, const TrainPosition& position,
                      float lr);
  /// Writes `model` itself in the background: it must not change until wait() returns. For the
  /// last checkpoint of a run, which then overlaps with the export. Background writes fsync as
  /// the thread that asked for them (FsyncScope).
  void write_in_place(bool end_of_epoch, const Model& model, const TrainPosition& position,
                      float lr);
  /// Prepares the file of the end-of-epoch checkpoint at `position` (its vocabulary, settings
  /// and storage for tables of `rows × dim`) on a thread of its own, now; the write of that
  /// checkpoint then writes only the tables and the position.
  void prepare(const TrainPosition& position, uint64_t rows, uint32_t dim);
  /// Writes `model` on this thread.
  void write_now(bool end_of_epoch, const Model& model, const TrainPosition& position, float lr);
  /// Starts a checkpoint written from row blocks on this thread (CheckpointRowWriter); once every
  /// block was handed to it, commit_rows() completes it and counts it as this writer's newest.
  /// Its time counts as the caller's unless `beside_other_files` (the last checkpoint, written
  /// block by block with the export, whose time it is part of).
  std::unique_ptr<CheckpointRowWriter> open_rows(bool end_of_epoch, const TrainPosition& position,
                                                 float lr);
  void commit_rows(CheckpointRowWriter& rows, bool beside_other_files = false);

  /// Waits for the write in progress and throws its error; returns the newest checkpoint's path
  /// (empty before the first).
  const std::string& wait();
  /// Whether a background write is in progress.
  bool busy() const { return worker_.joinable() && !done_.load(); }
  /// Waits for the write in progress (as wait()), then frees the snapshot's memory.
  void release_snapshot() {
    wait();
    snapshot_ = Model();
  }

  /// Seconds the caller spent on checkpoints (copies, waits and writes on its thread).
  double caller_seconds() const { return caller_seconds_; }
  /// Seconds spent writing checkpoint files, on any thread.
  double write_seconds() const { return write_seconds_; }
  uint32_t written() const { return written_; }

 private:
  void start(bool end_of_epoch, const Model& model, const TrainPosition& position, float lr);
  void write_file(bool end_of_epoch, const Model& model, const TrainPosition& position, float lr);

  CheckpointDir& dir_;
  const Config& config_;
  const Vocab& vocab_;
  CorpusFingerprint corpus_;
  Model snapshot_;
  std::thread worker_;
  std::thread preparing_;  ///< prepare()'s, joined by the write it prepared for
  std::string prepared_path_;
  PreparedH5 prepared_;
  std::chrono::steady_clock::time_point rows_opened_;
  std::atomic<bool> done_{true};
  std::exception_ptr error_;
  std::string last_path_;
  double caller_seconds_ = 0;
  double write_seconds_ = 0;
  uint32_t written_ = 0;
};

}  // namespace pagedw2v
