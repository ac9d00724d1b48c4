#pragma once
/// @file row_set_trainer.hpp
/// Training a span of work blocks on the GPU over a set of rows the caller holds in host memory,
/// rather than over the model's tables as the CUDA backend does: what a rank of a distributed run
/// trains its share on (its own rows and the copies of other ranks' rows that the share touches,
/// dist/working_set.hpp). For each span the caller lays the rows the blocks touch out as one
/// compact pair of tables (row k of each: the vectors of one word, `dim` floats) and says which
/// row each word is in; train() copies them to the GPU, trains the blocks with the fused kernel
/// through row maps (kernels/sgns.hpp: token_rows and pool_rows; the negatives come from the
/// blocks' pools, drawn on the host exactly as negative_pool.hpp draws them for every backend),
/// and copies the rows back into the same host tables.
///
/// Owns: the device copies of the samplers, the span's device buffers, its stream. May not
/// touch: which rows a span needs (dist/needed_rows.hpp finds them), where the caller keeps
/// them, the order of spans. Host-only header: it names no CUDA type.

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "gpu/device_facts.hpp"

namespace pagedw2v {

class RowSetTrainer {
 public:
  /// For the run `data` (sgd with a negative pool: a negative's row is found through the pool),
  /// on the current CUDA device. `single_warp`: one warp trains the blocks in order
  /// (SgnsArgs::max_warps = 1), so that a span is deterministic. `gpu`: the device as the run's
  /// one query found it (the run plan decided it can be used). Throws UsageError for runs it
  /// cannot train.
  RowSetTrainer(const TrainData& data, bool single_warp, const GpuGrant& gpu);
  ~RowSetTrainer();
  RowSetTrainer(const RowSetTrainer&) = delete;
  RowSetTrainer& operator=(const RowSetTrainer&) = delete;

  /// Trains blocks [first_block, last_block) of `epoch` over `rows` rows of `dim` floats at
  /// `input` and `output` (host memory, row-major), word `id` in row `row_of[id]`; every word
  /// whose rows the blocks read or write must have one (any value for the others). The rows are
  /// updated in place when it returns.
  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block, const uint32_t* row_of,
                  float* input, float* output, uint64_t rows);

  /// The device's name.
  std::string device_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedw2v
