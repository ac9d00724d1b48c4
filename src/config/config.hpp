#pragma once
/// @file config.hpp
/// Every training setting in one struct, and the one table of options that fills it from the
/// command line and from TOML files, so both accept the same names, values and errors.
/// Precedence: built-in defaults < `--config FILE.toml` < flags on the command line.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/version.hpp"
#include "config/options.hpp"
#include "model/optimizer.hpp"
#include "model/params.hpp"
#include "model/storage.hpp"
#include "text/tokenizer.hpp"
#include "vocab/vocab_file.hpp"

namespace pagedw2v {

class H5Source;  // io/hdf5_read.hpp

/// The run a continued run (--continue-from) started from: the checkpoint it read, the id of
/// that run's output set when its run.json gives one, the words it had and those added, the sum
/// of its words' counts (part of the continued run's counts), and what the new text lost.
struct ContinueOrigin {
  std::string checkpoint;
  std::string output_set;
  uint64_t words_kept = 0;
  uint64_t words_added = 0;
  uint64_t counted_before = 0;
  /// The new text's words not added, and their tokens in it.
  uint64_t words_left_out = 0;
  uint64_t tokens_left_out = 0;
};

struct Config {
  /// The corpus inputs: one path, or several separated by newlines (text_source.hpp says what
  /// each may be). corpus_paths() splits them.
  std::string corpus;
  std::string vocab_file;  ///< --vocab: train with this vocabulary instead of counting one
  std::string save_vocab;  ///< --save-vocab: also write the vocabulary here
  /// --save-vocab-format: ours (word<TAB>count) or word2vec.c's (word count).
  VocabFileFormat save_vocab_format = VocabFileFormat::kTsv;
  /// --max-corpus-memory: bytes of encoded corpus a run may hold; 0 = auto (a quarter of RAM).
  uint64_t max_corpus_memory = 0;
  std::string cache_dir;  ///< --cache-dir: keep the encoded corpus here for later epochs and runs
  std::string output;
  ModelKind model = ModelKind::kSkipGram;
  uint32_t dim = 100;
  uint32_t window = 5;
  /// Negative samples per example; 0 (with --hs only) trains hierarchical softmax alone.
  uint32_t negative = 5;
  SgnsKernel kernel = SgnsKernel::kPerPair;  ///< TrainParams::kernel
  /// --hs: train hierarchical softmax (a Huffman tree's inner nodes, huffman.hpp), alone with
  /// --negative 0 or beside negative sampling.
  bool hs = false;
  double sample = 1e-3;
  uint64_t min_count = 5;
  uint64_t max_vocab = 0;
  bool lowercase = false;  ///< read words in lower case (tokenizer.hpp says which letters)
  /// --phrases: word2phrase's passes applied to the corpus before counting (0 = none), with
  /// their score threshold, least count and pair table size (text/phrases.hpp).
  uint32_t phrases = 0;
  double phrase_threshold = 100;
  uint64_t phrase_min_count = 5;
  uint64_t phrase_max_pairs = 20'000'000;
  std::string phrases_from;  ///< --phrases-from: apply these saved phrases instead
  float alpha = 0.0f;        ///< 0 = the model's default (0.025 skip-gram, 0.05 CBOW)
  OptimizerKind optimizer = OptimizerKind::kSgd;
  /// Hyper-parameters of a non-sgd optimizer; unset = that optimizer's default (optimizer.hpp).
  std::optional<float> lr, beta1, beta2, eps, weight_decay, rho;
  uint32_t epochs = 5;
  uint32_t threads = 0;  ///< 0 = not set: every core
  uint64_t seed = 1;
  DeviceKind device = DeviceKind::kAuto;
  Placement placement = Placement::kAuto;
  uint64_t gpu_memory = 0;          ///< bytes; 0 = what the GPU has free minus a margin
  uint32_t negative_pool = 0;       ///< TrainParams::negative_pool
  uint64_t batch_words = 1u << 20;  ///< words per super-batch (rounded to whole work blocks)
  uint64_t pool_words = 4096;       ///< words per negative-pool period (whole work blocks)
  /// How the host tables and optimizer state store values (storage.hpp).
  Storage storage = Storage::kFp32;
  /// Bit-identical runs: one CPU thread, or one warp per launch on CUDA (far slower).
  bool deterministic = false;
  /// Over MPI ranks on the CPU: how the ranks hold the tables (options.hpp).
  RankTables rank_tables = RankTables::kAuto;
  std::vector<std::string> formats = {"npy", "h5", "bin", "txt"};
  bool save_context = false;
  bool quiet = false;
  std::string resume;                        ///< checkpoint to continue from
  LrResume lr_schedule = LrResume::kRejoin;  ///< a resumed run's learning rate (options.hpp)
  /// `resume` opened once, when it could be (prepare_training): every read of the checkpoint is
  /// of this open file, whatever the path names by then (hdf5_read.hpp).
  std::shared_ptr<const H5Source> resume_file;
  /// --continue-from: a finished run's directory or a checkpoint whose tables this run starts
  /// from, on a new corpus, its vocabulary grown (train/continue_from.hpp).
  std::string continue_from;
  ContinueCount continue_count = ContinueCount::kNew;  ///< --continue-count (options.hpp)
  /// Where a continued run started, as its checkpoints and run.json record it (not an option).
  ContinueOrigin continued;
  uint32_t checkpoint_interval = 0;  ///< seconds between timed checkpoints; 0 = epoch ends only
  /// 0 = no epoch or timed checkpoints.
  uint32_t keep_checkpoints = 3;
  /// Replace another run's files in `output`.
  bool overwrite = false;
  /// fsync the files written at the end of a run (exports, the last checkpoint) before returning.
  bool fsync_outputs = false;
  std::string eval_analogies;  ///< evaluate at the end of each epoch when set
  std::string eval_similarity;

  /// Names of the options that a flag or the config file set (the rest are defaults).
  std::set<std::string> given;

  /// The learning rate actually used.
  float effective_alpha() const {
    return alpha > 0.0f ? alpha : (model == ModelKind::kCbow ? 0.05f : 0.025f);
  }
  /// The optimizer with its defaults and the hyper-parameters that were set.
  OptimizerParams optimizer_params() const;
  /// The GPU settings as the backend takes them.
  GpuOptions gpu_options() const { return GpuOptions{placement, gpu_memory, deterministic}; }
  /// The thread count actually used: 1 with --deterministic.
  uint32_t effective_threads() const;
  /// How the corpus text is read into words.
  TextOptions text_options() const {
    TextOptions t;
    t.lowercase = lowercase;
    return t;
  }
};

/// A flag of another tool that means one of ours: word2vec.c's `-size`, fastText's `-dim`.
struct ForeignFlag {
  std::string tool;  ///< "word2vec", "fastText", or "word2vec/fastText" for a flag of both
  std::string flag;  ///< with its dash: "-size"
};

/// One option: its flag name (without "--"), help, default as shown, and how it sets a Config.
struct OptionSpec {
  std::string name;
  std::string help;
  std::string default_text;
  bool is_flag = false;  ///< takes no value on the command line (`--quiet`)
  /// Part of the model a checkpoint fixes (a resumed run cannot change it).
  bool is_model = false;
  std::function<void(Config&, const std::string&)> set;
  std::function<std::string(const Config&)> get;  ///< the value as text `set` accepts
  /// The flags of word2vec.c and fastText read as this option, their value as it is
  /// (translate_foreign_flags).
  std::vector<ForeignFlag> foreign = {};
  /// Fixes what the tables hold (their shape, storage, optimizer state, the words' spelling): a
  /// run continued from another (--continue-from) takes it from there and cannot change it.
  /// The other model options a continued run takes from the run unless given.
  bool fixes_tables = false;
};

/// The corpus inputs of `config`, in order.
std::vector<std::string> corpus_paths(const Config& config);

/// The options of `pagedw2v train`, in the order --help lists them.
const std::vector<OptionSpec>& train_options();

/// Sets option `name` from its text; throws UsageError ("--dim: expected …, got 'x'") when the
/// name is unknown or the value is out of range.
void apply_option(Config& config, const std::string& name, const std::string& value);

/// The text of option `name` in `config` (what apply_option would accept).
std::string option_value(const Config& config, const std::string& name);

/// Applies every key of a TOML file (keys are option names; '_' and '-' are the same). Throws
/// UsageError naming the file on a syntax error, an unknown key or a bad value.
void apply_toml_file(Config& config, const std::string& path);

/// Whether this build reads TOML files (built with toml++).
bool toml_configs_supported();

/// Checks combinations that no single option can (e.g. a corpus is required).
void validate(const Config& config);
/// The part of validate that concerns --continue-from: not with --resume nor --vocab, and
/// --continue-count only with it (checked on what was given: a resumed continued run has it
/// from its checkpoint).
void check_continue_settings(const Config& config);
/// The part of validate that concerns the optimizer: its rate and hyperparameters given only to
/// the optimizer that uses them (a checkpoint's recorded settings must pass it too).
void check_optimizer_settings(const Config& config);
/// The part of validate that concerns --phrases: learned or read, not both, and its settings
/// given only with it.
void check_phrase_settings(const Config& config);

}  // namespace pagedw2v
