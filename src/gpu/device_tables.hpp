#pragma once
/// @file device_tables.hpp
/// The model's tables on the GPU: input and output vectors, optimizer state and, for the dense
/// optimizers, gradient rows, touched flags and the step lists, `device_rows` rows each (every
/// row when resident, hot rows and cache slots when paged). Owns their allocation, the copies
/// of whole tables to and from the host, the pinning of the host tables that paged moves read,
/// the row-move arguments naming every table pair, and the optimizer step.
///
/// May not touch: which rows the slots hold (row_cache.hpp), the corpus, the streams' order
/// (the caller passes the stream each call runs on).

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/device_buffer.hpp"
#include "gpu/pinned_region.hpp"
#include "kernels/paging.hpp"
#include "kernels/sgns.hpp"
#include "model.hpp"
#include "optimizer.hpp"

namespace pagedw2v {

class DeviceTables {
 public:
  /// Allocates every table of `device_rows` rows (row stride `stride`) and zeroes them on
  /// `stream`: padding columns stay zero for the whole run, adding nothing to any dot product.
  DeviceTables(Model& model, OptimizerKind kind, uint32_t stride, uint64_t device_rows,
               cudaStream_t stream);

  /// Device bytes of every buffer.
  size_t bytes() const;

  /// Gradient rows and touched flags for the training launch (dense optimizers only).
  void set_gradient_args(SgnsArgs& a);
  float* input() { return input_.data(); }
  float* output() { return output_.data(); }

  /// Copies every row of every table (resident: row r of the host is device row r) to the host
  /// or from it, and waits.
  void copy_all(cudaMemcpyKind kind, cudaStream_t stream);

  /// Pins the host tables (each allocation once: interleaved tables share one), so that the
  /// row moves read and write them directly.
  void pin_host();

  /// The arguments of a row move over every table pair: host rows `host_rows` to or from device
  /// rows `dev_rows` (or `dev_base` + i), `n` of them.
  MoveArgs move_args(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n,
                     uint32_t dev_base);

  /// One optimizer step over the rows that training touched since the last step, in both
  /// tables; clears their gradients and touched flags (asynchronous on `stream`).
  void step_optimizer(const OptimizerParams& optimizer, uint64_t step, float lr,
                      cudaStream_t stream);

 private:
  /// Copies all rows of one table between its host layout (any row stride, pageable) and the
  /// device layout (pitch stride).
  void copy_rows(HostTable& host, float* dev, cudaMemcpyKind kind, cudaStream_t stream);

  Model& model_;
  uint32_t dim_ = 0, stride_ = 0, nstate_ = 0;
  bool optimizer_ = false;
  uint64_t device_rows_ = 0;
  DeviceBuffer<float> input_, output_, input_grad_, output_grad_;
  std::vector<DeviceBuffer<float>> input_state_, output_state_;
  DeviceBuffer<uint8_t> touched_input_, touched_output_;
  std::array<DeviceBuffer<uint32_t>, 2> step_rows_;
  DeviceBuffer<uint32_t> step_count_;
  DeviceBuffer<unsigned char> step_temp_;
  size_t step_temp_bytes_ = 0;
  std::vector<PinnedRegion> pinned_;
};

/// Zeroes `b` on `stream` (asynchronous).
template <typename T>
void zero_async(DeviceBuffer<T>& b, cudaStream_t stream) {
  if (!b.empty()) PAGEDW2V_CUDA_TRY(cudaMemsetAsync(b.data(), 0, b.bytes(), stream));
}

}  // namespace pagedw2v
