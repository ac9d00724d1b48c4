#pragma once
/// @file sgns.cuh
/// Host launcher of the fused negative-sampling training kernels (skip-gram and CBOW): one
/// launch trains a range of sentences — subsampling, dynamic window, negative draws, forward,
/// backward and the SGD update of both tables — with the same draws and arithmetic as the CPU
/// reference (train/sgns_cpu.hpp, train/cpu_backend.cpp). A warp trains one sentence in the
/// CPU's order, so a sentence alone gives the CPU's result; sentences run concurrently and add
/// their changes to the tables atomically (no update is lost, reads may be stale: Hogwild).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "sampler.hpp"
#include "train/params.hpp"

namespace pagedw2v {

/// Device-side counters of one training span. `next_sentence` hands out work inside a launch and
/// is reset by every launch; the statistics accumulate until the caller zeroes them.
struct SgnsCounters {
  unsigned long long next_sentence;
  unsigned long long words;
  unsigned long long trained;
  unsigned long long loss_terms;
  double loss;
};

/// Everything one launch reads. All pointers are device pointers.
struct SgnsArgs {
  ModelKind model = ModelKind::kSkipGram;
  float* input = nullptr;   ///< rows × stride, rows padded with zeros from dim to stride
  float* output = nullptr;  ///< rows × stride
  uint32_t stride = 0;      ///< floats per row on the device: sgns_row_stride(dim)
  uint32_t vocab = 0;
  const uint32_t* tokens = nullptr;  ///< tokens[p − token_base] is corpus token p
  uint64_t token_base = 0;
  const uint64_t* sentence_starts = nullptr;  ///< sentences + 1 global token positions
  uint64_t sentences = 0;
  const float* keep = nullptr;        ///< keep probability per word
  const AliasEntry* noise = nullptr;  ///< alias table of the noise distribution, vocab entries
  uint64_t seed = 1;
  uint32_t epoch = 0;
  uint32_t window = 5;
  uint32_t negative = 5;
  LrSchedule schedule;
  uint64_t epoch_base = 0;  ///< epoch × words_per_epoch: the schedule's position of token 0
  SgnsCounters* counters = nullptr;

  /// Paged tables: the table row of token p is token_rows[p − token_base] (the tables hold a
  /// subset of the vocabulary, see gpu/cuda_backend.cpp); nullptr: the row is the token's id.
  const uint32_t* token_rows = nullptr;
  /// Negative pool (TrainParams::negative_pool): when not null, negatives are pool[k] for k
  /// drawn uniformly (detail::pool_negative_pair), instead of alias draws from `noise`.
  const uint32_t* pool = nullptr;
  uint32_t pool_size = 0;
  /// The table row of pool[k]; nullptr: the row is the id.
  const uint32_t* pool_rows = nullptr;

  /// Gradient mode (non-sgd optimizers): when not null, the tables are only read, and each
  /// example adds its gradient of the loss (no learning rate, the CPU's batched pass) to the
  /// row of the same index in these rows × stride tables; touched[row] is set to 1 for every
  /// row of either table that receives a gradient (touched_input / touched_output).
  float* input_grad = nullptr;
  float* output_grad = nullptr;
  uint8_t* touched_input = nullptr;
  uint8_t* touched_output = nullptr;

  /// 0: fill the GPU. 1: a single warp trains the sentences in order, so a launch is
  /// deterministic (no races): what the paged-versus-resident equivalence test runs.
  uint32_t max_warps = 0;
};

/// Row length on the device for `dim`: a multiple of 4 floats so every lane moves 16 bytes.
inline uint32_t sgns_row_stride(uint32_t dim) { return (dim + 3u) & ~3u; }

/// The largest dimension the kernels keep in registers (32 lanes × 8 float4).
inline constexpr uint32_t kSgnsMaxDim = 1024;

/// Throws UsageError when the kernels cannot run this shape (dim, window, negative too large).
void check_sgns_shape(uint32_t dim, uint32_t window, uint32_t negative);

/// Trains args.sentences sentences on `stream` (asynchronous). Throws Error on a launch failure.
void launch_sgns(const SgnsArgs& args, cudaStream_t stream);

}  // namespace pagedw2v
