#pragma once
/// @file device_tables.hpp
/// The model's tables on the GPU: input and output vectors (and, when the model has them,
/// hierarchical softmax's inner-node vectors, Model::nodes), optimizer state and, for the dense
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
#include <utility>
#include <vector>

#include "gpu/device_buffer.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/pinned_region.hpp"
#include "kernels/paging.hpp"
#include "kernels/sgns.hpp"
#include "model/model.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {

class DeviceTables {
 public:
  /// The key (MoveArgs::round_seed) of the rounding bits of values written back to 16-bit host
  /// tables: fixed, so that the bits depend only on the value and its place.
  static constexpr uint64_t kRoundSeed = 0x5EED0F16B175ull;

  /// Allocates every table of `device_rows` rows (row stride `stride`) and zeroes them on
  /// `stream`: padding columns stay zero for the whole run, adding nothing to any dot product.
  /// Apart, the output vectors start `skew_bytes` (rounded up to 16) after the end of the input
  /// vectors (CudaBackendOptions::table_skew_bytes), the inner nodes right after them;
  /// interleaved, the skew is not used and a row holds one row of each (pitch 2 or 3 strides).
  DeviceTables(Model& model, OptimizerKind kind, uint32_t stride, uint64_t device_rows,
               TableLayout layout, size_t skew_bytes, cudaStream_t stream);

  /// Device bytes of every buffer.
  size_t bytes() const;

  /// Gradient rows and touched flags for the training launch (dense optimizers only).
  void set_gradient_args(SgnsArgs& a);
  float* input() { return pair_.data(); }
  float* output() { return pair_.data() + output_offset_; }
  /// The inner-node vectors of hierarchical softmax: their own table when the model has one
  /// (beside negative sampling), else the output table, whose rows they are (model.hpp).
  float* nodes() { return node_table_ ? pair_.data() + nodes_offset_ : output(); }
  /// Floats from one row to the next in every device table (SgnsArgs::pitch, MoveArgs::stride).
  uint32_t pitch() const { return pitch_; }

  /// Copies every row of every table (resident: row r of the host is device row r) to the host
  /// or from it, and waits. Host tables of 16-bit storage go through a device staging buffer,
  /// widened on the way in and rounded stochastically on the way out, the rounded values also
  /// written back to the device (as the row moves do, kernels/paging.hpp).
  void copy_all(cudaMemcpyKind kind, cudaStream_t stream);
  /// copy_all to the device right after construction: host tables that hold only zeros (the
  /// output vectors and the optimizer state of a run that starts) are not copied, since the
  /// device tables start zeroed.
  void upload_initial(cudaStream_t stream);

  /// With 16-bit host storage, rounds device rows 0 … rows − 1 of every table in place as a
  /// write-back would (launch_round_rows); nothing with fp32. Asynchronous on `stream`.
  void round_to_storage(uint64_t rows, cudaStream_t stream);

  /// How the host tables store values, and the bytes of one.
  Storage host_storage() const { return model_.input.storage(); }
  uint32_t host_value_bytes() const { return model_.input.value_bytes(); }

  /// Pins the host tables (each allocation once: interleaved tables share one), so that the
  /// row moves read and write them directly.
  void pin_host();

  /// The arguments of a row move over every table pair: host rows `host_rows` to or from device
  /// rows `dev_rows` (or `dev_base` + i), `n` of them.
  MoveArgs move_args(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n,
                     uint32_t dev_base);

  /// One optimizer step over the rows that training touched since the last step, in both
  /// tables; clears their gradients and touched flags (asynchronous on `stream`). With 16-bit
  /// host storage the stepped rows and their state are then rounded as a write-back would
  /// round them (launch_round_rows).
  void step_optimizer(const OptimizerParams& optimizer, uint64_t step, float lr,
                      cudaStream_t stream);

 private:
  /// Allocates and zeroes one table for each of input, output (and inner nodes) in the layout;
  /// returns their first rows (the third null without a node table).
  std::array<float*, 3> allocate_group(const std::string& what, cudaStream_t stream);
  /// Tables of vectors: 2, or 3 with the inner nodes.
  uint32_t vector_tables() const { return node_table_ ? 3 : 2; }
  /// Copies all rows of one table between its host layout (any row stride, pageable) and the
  /// device layout (rows `pitch_` floats apart).
  /// `index` is the table's place in move_args (input 0, output 1, state k 2 + 2k and 3 + 2k,
  /// inner nodes 2 + 2·states, their state k 3 + 2·states + k).
  void copy_rows(HostTable& host, float* dev, uint32_t index, cudaMemcpyKind kind,
                 cudaStream_t stream);
  /// copy_rows for a host table of 16-bit storage.
  void copy_half_rows(HostTable& host, float* dev, uint32_t index, cudaMemcpyKind kind,
                      cudaStream_t stream);

  Model& model_;
  uint32_t dim_ = 0, stride_ = 0, pitch_ = 0, nstate_ = 0;
  bool optimizer_ = false;
  bool interleaved_ = false;
  bool node_table_ = false;  ///< Model::nodes is a table of its own
  uint64_t device_rows_ = 0;
  /// The vectors: apart, the input vectors, a gap, the output vectors; interleaved, rows of both.
  DeviceBuffer<float> pair_;
  size_t output_offset_ = 0;  ///< floats from the input vectors to the output vectors
  size_t nodes_offset_ = 0;   ///< floats from the input vectors to the inner-node vectors
  std::vector<DeviceBuffer<float>> buffers_;  ///< the optimizer state and gradient tables
  float* input_grad_ = nullptr;
  float* output_grad_ = nullptr;
  float* nodes_grad_ = nullptr;
  std::vector<float*> input_state_, output_state_, nodes_state_;
  DeviceBuffer<uint8_t> touched_input_, touched_output_, touched_nodes_;
  std::array<DeviceBuffer<uint32_t>, 3> step_rows_;
  DeviceBuffer<uint32_t> step_count_;
  DeviceBuffer<unsigned char> step_temp_;
  size_t step_temp_bytes_ = 0;
  std::vector<PinnedRegion> pinned_;
  DeviceBuffer<uint16_t> staging_;  ///< resident copies of 16-bit tables, 8 MiB, while copying
};

/// Zeroes `b` on `stream` (asynchronous).
template <typename T>
void zero_async(DeviceBuffer<T>& b, cudaStream_t stream) {
  if (!b.empty()) PAGEDW2V_CUDA_TRY(cudaMemsetAsync(b.data(), 0, b.bytes(), stream));
}

}  // namespace pagedw2v
