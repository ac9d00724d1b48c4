#pragma once
/// @file cpu_backend.hpp
/// The CPU backend: word2vec's Hogwild training over threads. Threads take work blocks in corpus
/// order from one counter, so the learning rate of a word depends only on its position; with one
/// thread a run is bit-identical for a given seed.

#include <cstdint>
#include <memory>
#include <vector>

#include "backend.hpp"

namespace pagedw2v {

/// The CPU backend over `model`. With `slot_of` (sgd only), the model's tables are a working set
/// of rows (dist/working_set.hpp): the rows of word `id` are row slot_of[id] of each table, for
/// every word the blocks handed to train() touch; the array must hold those slots then.
std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads,
                                          const uint32_t* slot_of = nullptr);

namespace detail {
/// Trains one sentence (tokens [first, last) of the corpus) in `epoch`; the CPU reference that
/// the CUDA kernels are compared with. With a negative pool (params.negative_pool > 0) the
/// negatives come from the pool of super-batch `super_batch` (negative_pool.hpp).
void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats, uint64_t super_batch = 0);

/// The batched pass (non-sgd optimizers) without its step: the gradients of the examples of
/// sentences [first_sentence, last_sentence) in `epoch` against the model as it is (it is only
/// read), negatives from the pool of `super_batch` when there is one. Each gradient is added to
/// row `id` of input_grad / output_grad (dense, vocabulary × dim), and touched_input[id] /
/// touched_output[id] is set to 1 for every row that receives one (a zero gradient counts).
/// The reference of the CUDA kernels' gradient mode. With `slot_of`, the model's tables are a
/// working set (as make_cpu_backend says) and rows, gradients and marks are all at slot_of[id].
void accumulate_gradients_cpu(const TrainData& data, const Model& model, uint32_t epoch,
                              uint64_t super_batch, uint64_t first_sentence, uint64_t last_sentence,
                              float* input_grad, float* output_grad, uint8_t* touched_input,
                              uint8_t* touched_output, SpanStats* stats,
                              const uint32_t* slot_of = nullptr);

/// The targets (the centre, then the negatives) of every example of block `block` of `epoch`,
/// in the order the CPU backend trains them, with the pool of the block's super-batch when there
/// is one. Reads the model's input table (CBOW builds its hidden vector) and changes nothing.
std::vector<std::vector<uint32_t>> block_example_targets(const TrainData& data, const Model& model,
                                                         uint32_t epoch, uint64_t block);
}  // namespace detail

}  // namespace pagedw2v
