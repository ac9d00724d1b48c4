#pragma once
/// @file cpu_gradients.hpp
/// The CPU backend's batched pass (optimizers other than sgd): the gradients of a block's
/// examples against the tables as they were when it started, summed per row (row_grads.hpp),
/// then one optimizer step on the rows it touched (optimizer.hpp).

#include <cstdint>

#include "backend/cpu/cpu_examples.hpp"
#include "backend/cpu/row_grads.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

/// Trains block `b` of `epoch` as one batch: gradients of all its examples against the tables as
/// they were when it started, then one optimizer step on the rows it touched (optimizer.hpp).
void train_block_batched(const TrainData& data, Model& model, uint32_t epoch, uint64_t b,
                         Scratch& s, BatchGrads& g, SpanStats* stats);

}  // namespace cpu
}  // namespace detail
}  // namespace pagedw2v
