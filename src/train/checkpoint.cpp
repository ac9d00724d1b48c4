/// @file checkpoint.cpp
/// Writing checkpoints: their attributes and tables, files prepared ahead and finished, row
/// blocks gathered over ranks, the checkpoint directory (names, pruning) and the background
/// writer. Reading one back is checkpoint_load.cpp's.

#include "train/checkpoint.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <system_error>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "base/seconds_since.hpp"
#include "base/string_index.hpp"
#include "io/hdf5_io.hpp"
#include "text/tokenizer.hpp"
#include "train/checkpoint_file.hpp"

namespace pagedw2v {
namespace {

using checkpoint_file::kNodesDataset;
using checkpoint_file::kOptionPrefix;
using checkpoint_file::recorded;
using checkpoint_file::state_dataset;

using Clock = std::chrono::steady_clock;

/// Bytes of the tables and optimizer state of `model`.
uint64_t model_bytes(const Model& model) {
  uint64_t bytes = model.input.bytes() + model.output.bytes();
  for (const HostTable& t : model.input_state) bytes += t.bytes();
  for (const HostTable& t : model.output_state) bytes += t.bytes();
  bytes += model.nodes.bytes();
  for (const HostTable& t : model.nodes_state) bytes += t.bytes();
  return bytes;
}

/// Memory the system could give without swapping (MemAvailable); 0 where it does not say.
uint64_t available_memory() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "MemAvailable:", 13) == 0) {
      kib = std::strtoull(line + 13, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

/// Whether a copy of `model` fits in available memory with a quarter to spare: Linux grants more
/// than it has, so an allocation that succeeds can still end in the OOM killer.
bool snapshot_fits(const Model& model) {
  const uint64_t need = model_bytes(model);
  const uint64_t available = available_memory();
  return available == 0 || need + need / 4 <= available;
}

}  // namespace

bool checkpoint_records(const std::string& name) {
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == name) return recorded(spec);
  }
  return false;
}

CorpusFingerprint fingerprint(const EncodedCorpus& corpus) {
  CorpusHasher h;
  h.add_tokens(corpus.tokens.data(), corpus.tokens.size());
  for (const uint64_t start : corpus.sentence_starts) h.add_start(start);
  CorpusFingerprint f;
  f.words = h.words();
  f.sentences = h.sentences();
  f.hash = h.hash();
  return f;
}

namespace {

// What a checkpoint records besides its position: the run's settings and the corpus.
std::vector<Attribute> run_attributes(const Config& config, const CorpusFingerprint& corpus) {
  std::vector<Attribute> attrs = {
      {"format", std::string("pagedw2v checkpoint")},
      {"format_version", kCheckpointFormatVersion},
      {"corpus_words", static_cast<int64_t>(corpus.words)},
      {"corpus_sentences", static_cast<int64_t>(corpus.sentences)},
      {"corpus_hash", static_cast<int64_t>(corpus.hash)},
      {"rng", std::string("philox4x32-10 keyed by (seed, token position, epoch)")},
  };
  for (const OptionSpec& spec : train_options()) {
    if (recorded(spec)) attrs.push_back({kOptionPrefix + spec.name, spec.get(config)});
  }
  if (!config.continue_from.empty()) {
    const ContinueOrigin& c = config.continued;
    attrs.push_back({checkpoint_file::kContinuedCheckpoint, c.checkpoint});
    attrs.push_back({checkpoint_file::kContinuedSet, c.output_set});
    attrs.push_back({checkpoint_file::kContinuedKept, static_cast<int64_t>(c.words_kept)});
    attrs.push_back({checkpoint_file::kContinuedAdded, static_cast<int64_t>(c.words_added)});
    attrs.push_back({checkpoint_file::kContinuedCounted, static_cast<int64_t>(c.counted_before)});
    attrs.push_back({checkpoint_file::kContinuedLeftOut, static_cast<int64_t>(c.words_left_out)});
    attrs.push_back(
        {checkpoint_file::kContinuedTokensLeftOut, static_cast<int64_t>(c.tokens_left_out)});
  }
  return attrs;
}

std::vector<Attribute> position_attributes(const TrainPosition& position, float lr) {
  return {{"epoch", static_cast<int64_t>(position.epoch)},
          {"block", static_cast<int64_t>(position.block)},
          {"words_done", static_cast<int64_t>(position.words_done)},
          {"lr", static_cast<double>(lr)}};
}

/// The state tables' datasets, in the file's order.
std::vector<std::string> state_datasets(OptimizerKind kind) {
  std::vector<std::string> names;
  for (uint32_t k = 0; k < state_tables(kind); ++k) {
    names.push_back(state_dataset("input", k));
    names.push_back(state_dataset("output", k));
  }
  return names;
}

/// The inner-node table of hierarchical softmax beside negative sampling (Model::nodes) and its
/// state tables' datasets, in the file's order; none when the run of `config` has no such table.
std::vector<std::string> node_datasets(const Config& config) {
  if (!needs_node_table(config.hs, config.negative)) return {};
  std::vector<std::string> names = {kNodesDataset};
  for (uint32_t k = 0; k < state_tables(config.optimizer); ++k) {
    names.push_back(state_dataset("nodes", k));
  }
  return names;
}

// The tables of a checkpoint, in the order the file holds them.
std::vector<TableShape> checkpoint_shapes(uint64_t rows, uint32_t dim, const Config& config) {
  std::vector<TableShape> shapes = {{"vectors", rows, dim}, {"context_vectors", rows, dim}};
  for (const std::string& name : state_datasets(config.optimizer)) {
    shapes.push_back({name, rows, dim});
  }
  for (const std::string& name : node_datasets(config)) shapes.push_back({name, rows, dim});
  return shapes;
}

std::vector<Attribute> checkpoint_attributes(const Config& config, const TrainPosition& position,
                                             const CorpusFingerprint& corpus, float lr) {
  std::vector<Attribute> attrs = run_attributes(config, corpus);
  for (Attribute& a : position_attributes(position, lr)) attrs.push_back(std::move(a));
  return attrs;
}

}  // namespace

uint32_t checkpoint_tables(OptimizerKind kind) { return 2 + 2 * state_tables(kind); }

bool prepared_fits(const PreparedH5& file, const Config& config, const Model& model) {
  const std::vector<TableShape> want =
      checkpoint_shapes(model.input.rows(), model.input.dim(), config);
  const std::vector<TableShape>& have = file.tables();
  if (want.size() != have.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].name != have[i].name || want[i].rows != have[i].rows || want[i].dim != have[i].dim)
      return false;
  }
  return true;
}

PreparedH5 prepare_checkpoint(const std::string& path, const Config& config, const Vocab& vocab,
                              uint64_t rows, uint32_t dim, const CorpusFingerprint& corpus) {
  return prepare_embeddings_h5(path, vocab, checkpoint_shapes(rows, dim, config),
                               run_attributes(config, corpus));
}

void finish_checkpoint(PreparedH5& file, const Config& config, const Model& model,
                       const TrainPosition& position, float lr) {
  // The recorded storage decides how a resumed run allocates its tables: it must be the model's.
  if (model.input.storage() != config.storage) {
    throw Error("checkpoint: the tables are stored as " + to_string(model.input.storage()) +
                " but the run's --storage is " + to_string(config.storage));
  }
  const uint32_t nstate = state_tables(config.optimizer);
  if (model.input_state.size() != nstate || model.output_state.size() != nstate) {
    throw Error("cannot write '" + file.path() + "': the model does not hold the state tables of " +
                to_string(config.optimizer));
  }
  const std::vector<std::string> nodes = node_datasets(config);
  const bool with_nodes = !nodes.empty();
  if ((model.nodes.rows() > 0) != with_nodes ||
      (with_nodes && model.nodes_state.size() != nstate)) {
    throw Error("cannot write '" + file.path() +
                "': the model's inner-node table does not match --hs and --negative");
  }
  std::vector<NamedTable> tables = {{"vectors", &model.input}, {"context_vectors", &model.output}};
  for (uint32_t k = 0; k < nstate; ++k) {
    tables.push_back({state_dataset("input", k), &model.input_state[k]});
    tables.push_back({state_dataset("output", k), &model.output_state[k]});
  }
  if (!nodes.empty()) {
    tables.push_back({nodes[0], &model.nodes});
    for (uint32_t k = 0; k < nstate; ++k) tables.push_back({nodes[1 + k], &model.nodes_state[k]});
  }
  finish_embeddings_h5(file, tables, position_attributes(position, lr));
}

void save_checkpoint(const std::string& path, const Config& config, const Vocab& vocab,
                     const Model& model, const TrainPosition& position,
                     const CorpusFingerprint& corpus, float lr) {
  if (model.input.storage() != config.storage) {
    throw Error("checkpoint: the tables are stored as " + to_string(model.input.storage()) +
                " but the run's --storage is " + to_string(config.storage));
  }
  PreparedH5 file =
      prepare_checkpoint(path, config, vocab, model.input.rows(), model.input.dim(), corpus);
  finish_checkpoint(file, config, model, position, lr);
}

CheckpointRowWriter::CheckpointRowWriter(CheckpointDir& dir, bool end_of_epoch,
                                         const Config& config, const Vocab& vocab,
                                         const TrainPosition& position,
                                         const CorpusFingerprint& corpus, float lr)
    : dir_(dir),
      name_(CheckpointDir::name_for(end_of_epoch, position)),
      position_(position),
      tables_(checkpoint_tables(config.optimizer)),
      out_(dir.path() + "/" + name_, vocab, config.dim, /*context=*/true,
           checkpoint_attributes(config, position, corpus, lr), state_datasets(config.optimizer)) {
  if (config.storage != Storage::kFp32) {
    throw Error("checkpoint: row blocks are float32, but the run's --storage is " +
                to_string(config.storage));
  }
}

void CheckpointRowWriter::write(const RowBlock& block) {
  if (block.tables.size() != tables_) {
    throw Error("checkpoint: a block of " + std::to_string(block.tables.size()) +
                " tables, not the " + std::to_string(tables_) + " the optimizer has");
  }
  for (uint32_t t = 0; t < tables_; ++t) {
    out_.write_rows(t, block.first, block.rows, block.tables[t]);
  }
}

std::string CheckpointRowWriter::commit() {
  out_.commit();
  dir_.written(name_, position_);
  return dir_.path() + "/" + name_;
}

std::optional<uint64_t> checkpoint_words(const std::string& name, uint64_t words_per_epoch) {
  const bool epoch = name.rfind("epoch-", 0) == 0;
  const size_t prefix = epoch ? 6 : name.rfind("step-", 0) == 0 ? 5 : 0;
  if (prefix == 0 || name.size() <= prefix + 3 || name.compare(name.size() - 3, 3, ".h5") != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix, name.size() - prefix - 3);
  if (digits.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return epoch ? value * words_per_epoch : value;
}

CheckpointDir::CheckpointDir(std::string run_dir, uint32_t keep, uint64_t words_per_epoch)
    : dir_(std::move(run_dir) + "/checkpoints"),
      keep_(std::max<uint32_t>(1, keep)),
      words_per_epoch_(words_per_epoch) {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    throw Error("cannot create '" + dir_ + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("cannot create '" + dir_ + "': a file of that name exists");
  }
}

std::string CheckpointDir::name_for(bool end_of_epoch, const TrainPosition& position) {
  return end_of_epoch ? "epoch-" + std::to_string(position.epoch) + ".h5"
                      : "step-" + std::to_string(position.words_done) + ".h5";
}

std::string CheckpointDir::path_for(bool end_of_epoch, const TrainPosition& position) const {
  return dir_ + "/" + name_for(end_of_epoch, position);
}

std::string CheckpointDir::write(bool end_of_epoch, const Config& config, const Vocab& vocab,
                                 const Model& model, const TrainPosition& position,
                                 const CorpusFingerprint& corpus, float lr, PreparedH5* prepared) {
  const std::string name = name_for(end_of_epoch, position);
  const std::string path = dir_ + "/" + name;
  if (prepared != nullptr && prepared->ready() && prepared->path() == path &&
      prepared_fits(*prepared, config, model)) {
    finish_checkpoint(*prepared, config, model, position, lr);
  } else {
    save_checkpoint(path, config, vocab, model, position, corpus, lr);
  }
  written(name, position);
  return path;
}

void CheckpointDir::written(const std::string& name, const TrainPosition& position) {
  // latest.h5 is a relative link, replaced atomically by renaming a new link over it.
  replace_symlink(name, dir_ + "/latest.h5");
  prune(name, position.words_done);
}

void CheckpointDir::prune(const std::string& written, uint64_t words) {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  // By the position each file holds, never by file times (clocks and copies lie). Files of a
  // position past the one just written belong to a continuation that this run replaces.
  std::vector<std::pair<uint64_t, std::string>> older;
  std::vector<std::string> ahead;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == written) continue;
    const std::optional<uint64_t> at = checkpoint_words(name, words_per_epoch_);
    if (!at) continue;
    struct stat st {};
    if (::lstat((dir_ + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (*at > words) {
      ahead.push_back(name);
    } else {
      older.push_back({*at, name});
    }
  }
  ::closedir(d);
  // Furthest first; at one position an epoch file before a step file.
  std::sort(older.begin(), older.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second < b.second;
  });
  for (size_t i = keep_ - 1; i < older.size(); ++i) {
    std::remove((dir_ + "/" + older[i].second).c_str());
  }
  for (const std::string& name : ahead) std::remove((dir_ + "/" + name).c_str());
}

CheckpointWriter::CheckpointWriter(CheckpointDir& dir, const Config& config, const Vocab& vocab,
                                   const CorpusFingerprint& corpus)
    : dir_(dir), config_(config), vocab_(vocab), corpus_(corpus) {}

CheckpointWriter::~CheckpointWriter() {
  if (worker_.joinable()) worker_.join();
  if (preparing_.joinable()) preparing_.join();
}

const std::string& CheckpointWriter::wait() {
  if (worker_.joinable()) {
    const auto t = Clock::now();
    worker_.join();
    caller_seconds_ += seconds_since(t);
  }
  if (error_) {
    const std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return last_path_;
}

void CheckpointWriter::prepare(const TrainPosition& position, uint64_t rows, uint32_t dim) {
  if (preparing_.joinable()) return;
  const std::string path = dir_.path_for(true, position);
  prepared_path_ = path;
  try {
    preparing_ = std::thread([this, path, rows, dim] {
      try {
        prepared_ = prepare_checkpoint(path, config_, vocab_, rows, dim, corpus_);
      } catch (const Error&) {
        // The checkpoint is then written whole when its time comes, and fails there if it must.
      }
      // Writing the vocabulary took buffers of its size from this thread's malloc arena, which
      // would hold them for the rest of the run.
      release_free_heap();
    });
  } catch (const std::system_error&) {
  }
}

std::unique_ptr<CheckpointRowWriter> CheckpointWriter::open_rows(bool end_of_epoch,
                                                                 const TrainPosition& position,
                                                                 float lr) {
  wait();
  rows_opened_ = Clock::now();
  return std::make_unique<CheckpointRowWriter>(dir_, end_of_epoch, config_, vocab_, position,
                                               corpus_, lr);
}

void CheckpointWriter::commit_rows(CheckpointRowWriter& rows, bool beside_other_files) {
  last_path_ = rows.commit();
  const double seconds = seconds_since(rows_opened_);
  write_seconds_ += seconds;
  if (!beside_other_files) caller_seconds_ += seconds;
  ++written_;
}

void CheckpointWriter::write_file(bool end_of_epoch, const Model& model,
                                  const TrainPosition& position, float lr) {
  const auto t = Clock::now();
  PreparedH5* prepared = nullptr;
  if (end_of_epoch && preparing_.joinable() &&
      dir_.path_for(end_of_epoch, position) == prepared_path_) {
    preparing_.join();
    prepared = &prepared_;
  }
  last_path_ = dir_.write(end_of_epoch, config_, vocab_, model, position, corpus_, lr, prepared);
  // Prepared for other tables (unused): its temporary file goes now.
  if (prepared != nullptr) prepared_ = PreparedH5();
  write_seconds_ += seconds_since(t);
  ++written_;
}

void CheckpointWriter::start(bool end_of_epoch, const Model& model, const TrainPosition& position,
                             float lr) {
  done_ = false;
  try {
    worker_ = std::thread([this, end_of_epoch, &model, position, lr, fsync = fsync_on_commit()] {
      const FsyncScope scope(fsync);
      try {
        write_file(end_of_epoch, model, position, lr);
      } catch (...) {
        error_ = std::current_exception();
      }
      done_ = true;
    });
  } catch (const std::system_error&) {
    // No thread to be had: write here.
    done_ = true;
    write_now(end_of_epoch, model, position, lr);
  }
}

void CheckpointWriter::write_now(bool end_of_epoch, const Model& model,
                                 const TrainPosition& position, float lr) {
  wait();
  const auto t = Clock::now();
  write_file(end_of_epoch, model, position, lr);
  caller_seconds_ += seconds_since(t);
}

void CheckpointWriter::write_in_place(bool end_of_epoch, const Model& model,
                                      const TrainPosition& position, float lr) {
  wait();
  start(end_of_epoch, model, position, lr);
}

void CheckpointWriter::write_snapshot(bool end_of_epoch, const Model& model,
                                      const TrainPosition& position, float lr) {
  wait();
  const auto t = Clock::now();
  if (snapshot_.input.rows() != model.input.rows()) {
    if (!snapshot_fits(model)) {
      caller_seconds_ += seconds_since(t);
      write_now(end_of_epoch, model, position, lr);
      return;
    }
    try {
      snapshot_ =
          allocate_model(model.input.rows(), model.input.dim(), config_.optimizer, false,
                         "the checkpoint snapshot", model.input.storage(), model.nodes.rows() > 0);
    } catch (const Error&) {
      // Not enough memory for a copy: this checkpoint is written from the tables, here.
      caller_seconds_ += seconds_since(t);
      write_now(end_of_epoch, model, position, lr);
      return;
    }
  }
  model.input.copy_values_to(snapshot_.input);
  model.output.copy_values_to(snapshot_.output);
  for (size_t k = 0; k < model.input_state.size(); ++k) {
    model.input_state[k].copy_values_to(snapshot_.input_state[k]);
    model.output_state[k].copy_values_to(snapshot_.output_state[k]);
  }
  if (model.nodes.rows() > 0) model.nodes.copy_values_to(snapshot_.nodes);
  for (size_t k = 0; k < model.nodes_state.size(); ++k) {
    model.nodes_state[k].copy_values_to(snapshot_.nodes_state[k]);
  }
  caller_seconds_ += seconds_since(t);
  start(end_of_epoch, snapshot_, position, lr);
}

}  // namespace pagedw2v
