#pragma once
/// @file cpu_backend.hpp
/// The CPU backend: word2vec's Hogwild training over threads. Threads take work blocks in corpus
/// order from one counter, so the learning rate of a word depends only on its position; with one
/// thread a run is bit-identical for a given seed.

#include <memory>

#include "train/backend.hpp"

namespace pagedw2v {

std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads);

namespace detail {
/// Trains one sentence (tokens [first, last) of the corpus) in `epoch`; the CPU reference that
/// the CUDA kernels are compared with.
void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats);
}  // namespace detail

}  // namespace pagedw2v
