#pragma once
/// @file model.hpp
/// The trained state as the host holds it: the two tables and their optimizer state, how they
/// are allocated and how word2vec initialises them. Layer model: the trainer, checkpoints,
/// export and every backend share it; it knows nothing of how a backend trains.

#include <cstdint>
#include <string>
#include <vector>

#include "model/host_table.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {

/// The trained state: input vectors (what users export) and output (context) vectors, and the
/// optimizer's state tables of each (state_tables(kind) apiece, shaped like their table; empty for
/// sgd).
///
/// Hierarchical softmax (huffman.hpp) trains the vectors of the Huffman tree's V − 1 inner
/// nodes, inner node i at row V − 2 − i. Alone (negative 0) they are rows of `output`, which
/// negative sampling does not use then (word2vec's syn1). Beside negative sampling, whose
/// context vectors `output` holds (word2vec's syn1neg), they are rows of `nodes`, a third table
/// of V rows (the last unused) with state tables of its own; `nodes` is empty otherwise
/// (needs_node_table).
struct Model {
  HostTable input;
  HostTable output;
  std::vector<HostTable> input_state = {};
  std::vector<HostTable> output_state = {};
  HostTable nodes = {};
  std::vector<HostTable> nodes_state = {};
};

/// Whether a model of a run with `hs` and `negative` negatives keeps the inner nodes of
/// hierarchical softmax in Model::nodes (both output layers at once).
inline bool needs_node_table(bool hs, uint32_t negative) { return hs && negative > 0; }

/// Allocates the zeroed tables of a model of `rows × dim` and the state tables optimizer `kind`
/// needs, with `node_table` the inner-node table and its state too: each apart, or, when
/// `interleaved`, all in one allocation with the rows of one id side by side (input, output,
/// input state…, output state…, then nodes, nodes state…), which paged training moves as one run
/// of host memory. Every table stores its values as `storage` (storage.hpp). Throws Error naming
/// what runs out of memory, with `hint` appended.
Model allocate_model(uint64_t rows, uint32_t dim, OptimizerKind kind, bool interleaved,
                     const std::string& hint, Storage storage = Storage::kFp32,
                     bool node_table = false);

/// Initial values as word2vec sets them: input uniform(−0.5/d, 0.5/d) drawn from Philox keyed by
/// (seed, word), output (and inner nodes) zero. `threads` threads share the rows; the values do not
/// depend on it. Row r holds word `first_word + r·word_step`: every word of the vocabulary (the
/// defaults), or the words one rank of a distributed run owns (dist/owned_rows.hpp), which get the
/// values the whole tables give them.
void init_model(Model& model, uint64_t seed, uint32_t threads = 1, uint64_t first_word = 0,
                uint64_t word_step = 1);

/// Allocates the zeroed state tables `kind` needs for every table of `model` (none for sgd), in
/// the storage of model.input.
/// Throws Error naming the tables and the memory they need when it runs out.
void init_optimizer_state(Model& model, OptimizerKind kind);

}  // namespace pagedw2v
