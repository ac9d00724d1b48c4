/// @file checkpoint_load.cpp
/// Reading a checkpoint back: its attributes checked, the settings it recorded applied, the
/// vocabulary and the tables (or a rank's rows of them) read, and where a resumed run starts.
/// Writing one is checkpoint.cpp's.

#include "train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "io/hdf5_io.hpp"
#include "train/checkpoint_file.hpp"

namespace pagedw2v {
namespace {

using checkpoint_file::kNodesDataset;
using checkpoint_file::kOptionPrefix;
using checkpoint_file::recorded;
using checkpoint_file::state_dataset;

const Attribute* find(const std::vector<Attribute>& attrs, const std::string& name) {
  for (const Attribute& a : attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

int64_t int_attr(const std::vector<Attribute>& attrs, const std::string& name,
                 const std::string& path) {
  const Attribute* a = find(attrs, name);
  if (a == nullptr || !std::holds_alternative<int64_t>(a->value)) {
    throw Error("checkpoint '" + path + "' is damaged: no integer '" + name + "'");
  }
  return std::get<int64_t>(a->value);
}

/// An integer attribute that must lie in [0, most].
uint64_t bounded_attr(const std::vector<Attribute>& attrs, const std::string& name, uint64_t most,
                      const std::string& path) {
  const int64_t v = int_attr(attrs, name, path);
  if (v < 0 || static_cast<uint64_t>(v) > most) {
    throw Error("checkpoint '" + path + "' is damaged: '" + name + "' is " + std::to_string(v) +
                ", outside 0.." + std::to_string(most));
  }
  return static_cast<uint64_t>(v);
}

/// Every state table a checkpoint of any optimizer may hold: "optimizer/input_0", ….
std::vector<std::string> any_state_datasets() {
  uint32_t most = 0;
  for (uint32_t k = 0; k <= static_cast<uint32_t>(OptimizerKind::kAdadelta); ++k) {
    most = std::max(most, state_tables(static_cast<OptimizerKind>(k)));
  }
  std::vector<std::string> names;
  for (uint32_t k = 0; k < most; ++k) {
    names.push_back(state_dataset("input", k));
    names.push_back(state_dataset("output", k));
    names.push_back(state_dataset("nodes", k));
  }
  return names;
}

}  // namespace

Checkpoint load_checkpoint(const H5Source& file, const TableLayoutChoice& interleave,
                           RowSelection rows) {
  const std::string& path = file.path();
  std::vector<std::string> names = {"format",       "format_version",   "epoch",
                                    "block",        "words_done",       "lr",
                                    "corpus_words", "corpus_sentences", "corpus_hash"};
  for (const OptionSpec& spec : train_options()) {
    if (recorded(spec)) names.push_back(kOptionPrefix + spec.name);
  }
  for (const char* name : {checkpoint_file::kContinuedCheckpoint, checkpoint_file::kContinuedSet,
                           checkpoint_file::kContinuedKept, checkpoint_file::kContinuedAdded,
                           checkpoint_file::kContinuedCounted, checkpoint_file::kContinuedLeftOut,
                           checkpoint_file::kContinuedTokensLeftOut}) {
    names.push_back(name);
  }
  // One parse of the file (in a child process, hdf5_read.hpp) finds every part; the tables'
  // values are then read from the same open file.
  H5Request request;
  request.attributes = names;
  request.tables = {"vectors", "context_vectors", kNodesDataset};
  for (const std::string& name : any_state_datasets()) request.tables.push_back(name);
  request.vocabulary = true;
  H5Contents contents = file.parse(request);
  const std::vector<Attribute>& attrs = contents.attributes;
  const Attribute* version = find(attrs, "format_version");
  if (version == nullptr || find(attrs, "format") == nullptr) {
    throw Error("'" + path + "' is not a pagedw2v checkpoint");
  }
  const int64_t v = int_attr(attrs, "format_version", path);
  if (v > kCheckpointFormatVersion || v < 1) {
    throw Error("checkpoint '" + path + "' has format version " + std::to_string(v) +
                "; this build reads version " + std::to_string(kCheckpointFormatVersion));
  }
  Checkpoint ck;
  for (const Attribute& a : attrs) {
    if (a.name.rfind(kOptionPrefix, 0) != 0) continue;
    const auto* text = std::get_if<std::string>(&a.value);
    if (text == nullptr) throw Error("checkpoint '" + path + "' is damaged: bad '" + a.name + "'");
    try {
      apply_option(ck.config, a.name.substr(std::strlen(kOptionPrefix)), *text);
    } catch (const UsageError& e) {
      throw Error("checkpoint '" + path + "' is damaged: " + e.what());
    }
  }
  ck.config.given.clear();
  // The settings must hold together as a run's did (a changed byte can make the optimizer one
  // that its recorded hyperparameters do not apply to).
  try {
    check_optimizer_settings(ck.config);
  } catch (const UsageError& e) {
    throw Error("checkpoint '" + path + "' is damaged: " + e.what());
  }
  // A continued run: where it started (its words' counts are those of both corpora).
  if (!ck.config.continue_from.empty()) {
    ContinueOrigin& c = ck.config.continued;
    constexpr uint64_t kMaxCount = std::numeric_limits<int64_t>::max();
    c.words_kept = bounded_attr(attrs, checkpoint_file::kContinuedKept, kMaxCount, path);
    c.words_added = bounded_attr(attrs, checkpoint_file::kContinuedAdded, kMaxCount, path);
    c.counted_before = bounded_attr(attrs, checkpoint_file::kContinuedCounted, kMaxCount, path);
    c.words_left_out = bounded_attr(attrs, checkpoint_file::kContinuedLeftOut, kMaxCount, path);
    c.tokens_left_out =
        bounded_attr(attrs, checkpoint_file::kContinuedTokensLeftOut, kMaxCount, path);
    for (auto [name, field] : {std::pair{checkpoint_file::kContinuedCheckpoint, &c.checkpoint},
                               std::pair{checkpoint_file::kContinuedSet, &c.output_set}}) {
      const Attribute* a = find(attrs, name);
      const auto* text = a ? std::get_if<std::string>(&a->value) : nullptr;
      if (text == nullptr) {
        throw Error("checkpoint '" + path + "' is damaged: no text '" + std::string(name) + "'");
      }
      *field = *text;
    }
  }
  // Every position is checked against what the run could have reached: a damaged number must
  // not skip epochs or reach the output.
  constexpr uint64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  ck.corpus.words = bounded_attr(attrs, "corpus_words", kMaxInt64, path);
  ck.corpus.sentences = bounded_attr(attrs, "corpus_sentences", ck.corpus.words, path);
  ck.corpus.hash = static_cast<uint64_t>(int_attr(attrs, "corpus_hash", path));
  ck.position.epoch = static_cast<uint32_t>(bounded_attr(attrs, "epoch", ck.config.epochs, path));
  ck.position.block = bounded_attr(
      attrs, "block", ck.position.epoch == ck.config.epochs ? 0 : ck.corpus.sentences, path);
  const unsigned __int128 most_words =
      static_cast<unsigned __int128>(ck.position.epoch + 1) * ck.corpus.words;
  ck.position.words_done =
      bounded_attr(attrs, "words_done",
                   most_words > kMaxInt64 ? kMaxInt64 : static_cast<uint64_t>(most_words), path);
  if (const Attribute* lr = find(attrs, "lr"); lr && std::holds_alternative<double>(lr->value)) {
    const double value = std::get<double>(lr->value);
    if (!std::isfinite(value) || value < 0 || value > std::numeric_limits<float>::max()) {
      throw Error("checkpoint '" + path + "' is damaged: 'lr' is " + std::to_string(value));
    }
    ck.lr = static_cast<float>(value);
  }

  // The tables are read straight into the model below, so that loading needs no more memory
  // than training: here, the vocabulary and the shape alone.
  const H5Table& vectors = require_table(contents, "vectors", path);
  if (!contents.has_words) throw Error("cannot read '" + path + "': no /vocab/words dataset");
  if (contents.words.size() != vectors.rows) {
    throw Error("cannot read '" + path + "': /vocab/words has " +
                std::to_string(contents.words.size()) + " words but /vectors " +
                std::to_string(vectors.rows) + " rows");
  }
  LoadedEmbeddings e;
  e.rows = vectors.rows;
  e.dim = vectors.dim;
  e.words = std::move(contents.words);
  e.counts = std::move(contents.counts);
  if (e.counts.size() != e.rows || e.dim != ck.config.dim || e.rows == 0) {
    throw Error("checkpoint '" + path + "' is damaged: vocabulary and tables disagree");
  }
  // The counts are those of the corpus's words: together no more than the corpus holds (a
  // damaged count must not size the corpus's buffers).
  unsigned __int128 counted = 0;
  for (const uint64_t c : e.counts) counted += c;
  // A continued run's counts hold those of the run it started from too.
  const unsigned __int128 most_counted =
      static_cast<unsigned __int128>(ck.corpus.words) + ck.config.continued.counted_before;
  if (counted > most_counted) {
    throw Error(
        "checkpoint '" + path + "' is damaged: its word counts add up to more than the " +
        std::to_string(ck.corpus.words) + " words of its corpus" +
        (ck.config.continued.counted_before > 0 ? " and those of the run it continued" : ""));
  }
  // Exports write one word per line and separate words with spaces: a word that holds neither
  // and is not empty is what the corpus reader makes.
  for (size_t i = 0; i < e.words.size(); ++i) {
    const std::string& w = e.words[i];
    bool bad = w.empty() || w.size() > kMaxWordBytes;
    for (const char c : w) bad = bad || is_space_byte(static_cast<unsigned char>(c));
    if (bad) {
      throw Error("checkpoint '" + path + "' is damaged: word " + std::to_string(i) +
                  " is empty, too long or holds whitespace");
    }
  }
  ck.vocab = Vocab::from_words(std::move(e.words), std::move(e.counts));
  const std::string hint = "this checkpoint needs more memory than is free";
  const OptimizerKind kind = ck.config.optimizer;
  const bool nodes = needs_node_table(ck.config.hs, ck.config.negative);
  ck.model =
      allocate_model(rows.count(e.rows), e.dim, kind, interleave && interleave(e.rows, ck.config),
                     hint, ck.config.storage, nodes);
  file.read_table(vectors, ck.model.input, rows);
  file.read_table(require_table(contents, "context_vectors", path), ck.model.output, rows);
  for (uint32_t k = 0; k < ck.model.input_state.size(); ++k) {
    file.read_table(require_table(contents, state_dataset("input", k), path),
                    ck.model.input_state[k], rows);
    file.read_table(require_table(contents, state_dataset("output", k), path),
                    ck.model.output_state[k], rows);
  }
  if (nodes) {
    file.read_table(require_table(contents, kNodesDataset, path), ck.model.nodes, rows);
    for (uint32_t k = 0; k < ck.model.nodes_state.size(); ++k) {
      file.read_table(require_table(contents, state_dataset("nodes", k), path),
                      ck.model.nodes_state[k], rows);
    }
  }
  return ck;
}

Checkpoint load_checkpoint(const std::string& path, const TableLayoutChoice& interleave,
                           RowSelection rows) {
  return load_checkpoint(H5Source(path), interleave, rows);
}

TrainPosition resume_position(const TrainPosition& position, uint64_t blocks,
                              const std::string& path) {
  if (position.block > 0 && position.block > blocks) {
    throw Error("checkpoint '" + path + "' is damaged: it stands at block " +
                std::to_string(position.block) + " of an epoch of " + std::to_string(blocks) +
                " blocks");
  }
  if (position.block > 0 && position.block == blocks) {
    return {position.epoch + 1, 0, position.words_done};
  }
  return position;
}

}  // namespace pagedw2v
