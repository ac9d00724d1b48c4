#pragma once
/// @file cpu_backend.hpp
/// The CPU backend: word2vec's Hogwild training over threads. Threads take work blocks in corpus
/// order from one counter, so the learning rate of a word depends only on its position; with one
/// thread a run is bit-identical for a given seed.

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"

namespace pagedw2v {

/// How a rank of a distributed run lays out the rows it trains a span on
/// (dist/working_set.hpp): the rows of word `id` are row s = slot_of[id] of the tables
/// `owned_*` (the rows it owns, trained in place) when s < split, else row s − split of the
/// tables `copy_*` (its copies of other ranks' rows). Tables are row-major with rows of dim
/// floats.
struct RankRows {
  const uint32_t* slot_of = nullptr;
  uint32_t split = 0;
  float* owned_input = nullptr;
  float* owned_output = nullptr;
  float* copy_input = nullptr;
  float* copy_output = nullptr;
};

/// The CPU backend over `model`. With `rank_rows` (sgd only), it trains the rows `*rank_rows`
/// lays out instead of `model`'s: every word the blocks handed to train() touch must have its
/// rows there then (the struct is read at each train()).
std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads,
                                          const RankRows* rank_rows = nullptr);

namespace detail {
/// Trains one sentence (tokens [first, last) of the corpus) in `epoch`; the CPU reference that
/// the CUDA kernels are compared with. With a negative pool (params.negative_pool > 0) the
/// negatives come from the pool of super-batch `super_batch` (negative_pool.hpp).
void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats, uint64_t super_batch = 0);

/// The partitioned form of train_sentence_cpu, the reference of the kernels' SgnsArgs::parts:
/// `input` and `output` (dim floats a row) hold the words id % parts == input_part and
/// output_part, word id at row id / parts. Only the pairs whose context is in the input part and
/// whose centre is in the output part train, with negatives drawn from `part_noise` (the output
/// part's NoiseTable::part, whose draws are local rows). No words are counted (the caller knows
/// them), and centres only when input_part == output_part (those in the part).
void train_sentence_part_cpu(const TrainData& data, const NoiseTable& part_noise, uint32_t parts,
                             uint32_t input_part, uint32_t output_part, float* input, float* output,
                             uint32_t epoch, uint64_t first, uint64_t last, SpanStats* stats);

/// The batched pass (non-sgd optimizers) without its step: the gradients of the examples of
/// sentences [first_sentence, last_sentence) in `epoch` against the model as it is (it is only
/// read), negatives from the pool of `super_batch` when there is one. Each gradient is added to
/// row `id` of input_grad / output_grad (dense, vocabulary × dim), and touched_input[id] /
/// touched_output[id] is set to 1 for every row that receives one (a zero gradient counts).
/// The reference of the CUDA kernels' gradient mode.
void accumulate_gradients_cpu(const TrainData& data, const Model& model, uint32_t epoch,
                              uint64_t super_batch, uint64_t first_sentence, uint64_t last_sentence,
                              float* input_grad, float* output_grad, uint8_t* touched_input,
                              uint8_t* touched_output, SpanStats* stats);

/// The gradients of one pass of accumulate_gradients_cpu, per row touched: the ids of the
/// input and of the output rows in first-touch order, and their gradients (dim floats each, in
/// the same order).
struct RowGradients {
  std::vector<uint32_t> input_ids, output_ids;
  std::vector<float> input, output;
};

/// accumulate_gradients_cpu over the rows `rows` lays out (a rank's), its gradients returned
/// per row touched, not added to tables of the vocabulary's size.
void accumulate_row_gradients_cpu(const TrainData& data, const RankRows& rows, uint32_t epoch,
                                  uint64_t super_batch, uint64_t first_sentence,
                                  uint64_t last_sentence, RowGradients* out, SpanStats* stats);

/// The targets (the centre, then the negatives) of every example of block `block` of `epoch`,
/// in the order the CPU backend trains them, with the pool of the block's super-batch when there
/// is one. Reads the model's input table (CBOW builds its hidden vector) and changes nothing.
std::vector<std::vector<uint32_t>> block_example_targets(const TrainData& data, const Model& model,
                                                         uint32_t epoch, uint64_t block);
}  // namespace detail

}  // namespace pagedw2v
