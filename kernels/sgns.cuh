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
