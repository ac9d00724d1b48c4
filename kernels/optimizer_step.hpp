#pragma once
/// @file optimizer_step.hpp
/// Host launcher of the fused optimizer step: one kernel per table applies a dense optimizer to
/// the rows a batch touched and to their state, in a single pass over table, state and gradient,
/// with the semantics and per-element arithmetic of src/model/optimizer.hpp (its CPU reference,
/// apply_sparse_step, is what the kernel is tested against).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "model/optimizer.hpp"

namespace pagedw2v {

/// One table's step. All pointers are device pointers.
struct OptimizerStepArgs {
  float* table = nullptr;  ///< rows × stride; only the first `dim` floats of a row are updated
  float* state[2] = {nullptr, nullptr};  ///< state_tables(kind) tables shaped like `table`
  uint32_t stride = 0;                   ///< floats per row of the table and state (≥ dim)
  uint32_t dim = 0;
  const uint32_t* rows = nullptr;  ///< `count` unique row ids (a row index of `table`)
  float* grads = nullptr;          ///< count × grad_stride: the summed gradient of rows[i]
  uint32_t grad_stride = 0;        ///< floats per gradient row (≥ dim)
  uint64_t count = 0;
  /// When not null, the number of rows is min(*d_count, count): the list was compacted on the
  /// device (`count` is then its capacity) and no host synchronisation is needed.
  const uint32_t* d_count = nullptr;
  /// The gradient of rows[i] is grads[rows[i] · grad_stride …] (a gradient table shaped like the
  /// table) instead of grads[i · grad_stride …] (a dense list).
  bool grads_by_row = false;
  /// Sets each gradient element to zero once it is read, so a gradient table is clean for the
  /// next batch without a pass of its own (needs a writable `grads`).
  bool zero_grads = false;
};

/// Applies step `step` (1-based, global) at learning rate `lr` on `stream` (asynchronous).
/// Throws Error on a launch failure or when `args` lacks the state tables `params.kind` needs.
void launch_optimizer_step(const OptimizerParams& params, uint64_t step, float lr,
                           const OptimizerStepArgs& args, cudaStream_t stream);

}  // namespace pagedw2v
