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
/// and root attributes: `format_version`, every training parameter (the optimizer's kind and
/// hyper-parameters among them, as `option.optimizer`, `option.lr`, …), the corpus path and its
/// fingerprint, and the position (`epoch`, `block` — the next work block of that epoch —
/// `words_done`, `lr`). Every random draw is Philox keyed by (seed, token position, epoch), so the
/// seed and the position are the complete random state of every thread and stream.
/// Files are written to a temporary name, fsync'ed and renamed: a crash at any moment leaves the
/// previous checkpoint intact.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config.hpp"
#include "corpus.hpp"
#include "train/backend.hpp"
#include "vocab.hpp"

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

/// Writes a checkpoint to `path` atomically (temporary name, fsync, rename).
void save_checkpoint(const std::string& path, const Config& config, const Vocab& vocab,
                     const Model& model, const TrainPosition& position,
                     const CorpusFingerprint& corpus, float lr);

/// Whether the tables of a model of `rows × dim` with optimizer `kind` are to be allocated
/// interleaved (allocate_model).
using TableLayoutChoice = std::function<bool(uint64_t rows, uint32_t dim, OptimizerKind kind)>;

/// Reads a checkpoint; throws Error with one clear line for a missing, truncated, damaged,
/// non-HDF5 or newer-format file, a position outside what its run could reach, and a word that is
/// empty or holds whitespace. The file is vetted first (hdf5_io.hpp: its checksum, or a trial
/// load in a child process). The tables are interleaved when `interleave` says so (default:
/// apart).
Checkpoint load_checkpoint(const std::string& path, const TableLayoutChoice& interleave = {});

/// Throws Error unless `position` (read from checkpoint `path`) lies inside an epoch of `blocks`
/// work blocks: the check that needs the corpus, which load_checkpoint does not read.
void check_resume_position(const TrainPosition& position, uint64_t blocks, const std::string& path);

/// The `checkpoints/` directory of a run: names files, keeps the newest `keep`, and points the
/// `latest.h5` link at the newest complete one.
class CheckpointDir {
 public:
  CheckpointDir(std::string run_dir, uint32_t keep);
  const std::string& path() const { return dir_; }
  /// Writes `epoch-N.h5` (after epoch N) or `step-WORDS.h5` and returns its path.
  std::string write(bool end_of_epoch, const Config& config, const Vocab& vocab, const Model& model,
                    const TrainPosition& position, const CorpusFingerprint& corpus, float lr);

 private:
  void prune();

  std::string dir_;
  uint32_t keep_;
};

}  // namespace pagedw2v
