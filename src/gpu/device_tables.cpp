#include "gpu/device_tables.hpp"

#include <algorithm>
#include <thread>

#include "kernels/cuda_check.hpp"
#include "kernels/optimizer_step.hpp"

namespace pagedw2v {

DeviceTables::DeviceTables(Model& model, OptimizerKind kind, uint32_t stride, uint64_t device_rows,
                           TableLayout layout, size_t skew_bytes, cudaStream_t stream)
    : model_(model),
      dim_(model.input.dim()),
      stride_(stride),
      nstate_(state_tables(kind)),
      optimizer_(kind != OptimizerKind::kSgd),
      interleaved_(layout == TableLayout::kInterleaved),
      node_table_(model.nodes.rows() > 0),
      device_rows_(device_rows) {
  pitch_ = interleaved_ ? vector_tables() * stride : stride;
  const std::string shape =
      " (" + std::to_string(device_rows_) + " × " + std::to_string(dim_) + ")";
  const std::string vectors =
      node_table_ ? "the input, output and inner-node vectors" : "the input and output vectors";
  const size_t table = static_cast<size_t>(device_rows_) * stride_;
  if (interleaved_) {
    output_offset_ = stride_;
    nodes_offset_ = 2 * stride_;
    pair_ = DeviceBuffer<float>(vector_tables() * table, vectors + shape);
  } else {
    // In one allocation, the output vectors `skew` floats past the end of the input vectors,
    // the inner nodes right after them.
    const size_t skew = (skew_bytes / sizeof(float) + 3) & ~size_t{3};
    output_offset_ = table + skew;
    nodes_offset_ = output_offset_ + table;
    pair_ = DeviceBuffer<float>(output_offset_ + (vector_tables() - 1) * table, vectors + shape);
  }
  zero_async(pair_, stream);
  for (uint32_t k = 0; k < nstate_; ++k) {
    const std::array<float*, 3> t =
        allocate_group("optimizer state of the vectors" + shape, stream);
    input_state_.push_back(t[0]);
    output_state_.push_back(t[1]);
    if (node_table_) nodes_state_.push_back(t[2]);
  }
  if (optimizer_) {
    const std::array<float*, 3> g = allocate_group("gradients" + shape, stream);
    input_grad_ = g[0];
    output_grad_ = g[1];
    nodes_grad_ = g[2];
    touched_input_ = DeviceBuffer<uint8_t>(device_rows_, "touched rows");
    touched_output_ = DeviceBuffer<uint8_t>(device_rows_, "touched rows");
    if (node_table_) touched_nodes_ = DeviceBuffer<uint8_t>(device_rows_, "touched rows");
    for (uint32_t t = 0; t < vector_tables(); ++t) {
      step_rows_[t] = DeviceBuffer<uint32_t>(device_rows_, "optimizer step lists");
    }
    step_count_ = DeviceBuffer<uint32_t>(3, "optimizer step counts");
    step_temp_bytes_ = select_marked_ids_temp_bytes(device_rows_);
    step_temp_ = DeviceBuffer<unsigned char>(std::max<size_t>(step_temp_bytes_, 1), "scratch");
    zero_async(touched_input_, stream);
    zero_async(touched_output_, stream);
    zero_async(touched_nodes_, stream);
  }
}

std::array<float*, 3> DeviceTables::allocate_group(const std::string& what, cudaStream_t stream) {
  const size_t table = static_cast<size_t>(device_rows_) * stride_;
  const uint32_t n = vector_tables();
  std::array<float*, 3> first = {nullptr, nullptr, nullptr};
  if (interleaved_) {
    buffers_.emplace_back(n * table, what);
    zero_async(buffers_.back(), stream);
    for (uint32_t t = 0; t < n; ++t) first[t] = buffers_.back().data() + t * stride_;
    return first;
  }
  for (uint32_t t = 0; t < n; ++t) {
    buffers_.emplace_back(table, what);
    zero_async(buffers_.back(), stream);
    first[t] = buffers_.back().data();
  }
  return first;
}

size_t DeviceTables::bytes() const {
  size_t b = pair_.bytes();
  for (const auto& t : buffers_) b += t.bytes();
  if (optimizer_) {
    b += (touched_input_.bytes() + step_rows_[0].bytes()) * vector_tables() + step_temp_.bytes();
  }
  return b;
}

void DeviceTables::set_gradient_args(SgnsArgs& a) {
  if (!optimizer_) return;
  a.input_grad = input_grad_;
  a.output_grad = output_grad_;
  a.touched_input = touched_input_.data();
  a.touched_output = touched_output_.data();
  a.hs_nodes_grad = node_table_ ? nodes_grad_ : output_grad_;
  a.touched_nodes = node_table_ ? touched_nodes_.data() : touched_output_.data();
}

void DeviceTables::copy_all(cudaMemcpyKind kind, cudaStream_t stream) {
  // The table indices are those of move_args (the rounding of a value depends on it).
  copy_rows(model_.input, input(), 0, kind, stream);
  copy_rows(model_.output, output(), 1, kind, stream);
  for (uint32_t k = 0; k < nstate_; ++k) {
    copy_rows(model_.input_state[k], input_state_[k], 2 + 2 * k, kind, stream);
    copy_rows(model_.output_state[k], output_state_[k], 3 + 2 * k, kind, stream);
  }
  if (node_table_) {
    copy_rows(model_.nodes, nodes(), 2 + 2 * nstate_, kind, stream);
    for (uint32_t k = 0; k < nstate_; ++k) {
      copy_rows(model_.nodes_state[k], nodes_state_[k], 3 + 2 * nstate_ + k, kind, stream);
    }
  }
  staging_ = DeviceBuffer<uint16_t>();  // held only while copying
}

void DeviceTables::upload_initial(cudaStream_t stream) {
  const uint32_t threads = std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16);
  auto copy = [&](HostTable& host, float* dev, uint32_t index) {
    if (!host.all_zero(threads)) copy_rows(host, dev, index, cudaMemcpyHostToDevice, stream);
  };
  // The construction zeroed the device tables on `stream`; the copies follow it there.
  copy(model_.input, input(), 0);
  copy(model_.output, output(), 1);
  for (uint32_t k = 0; k < nstate_; ++k) {
    copy(model_.input_state[k], input_state_[k], 2 + 2 * k);
    copy(model_.output_state[k], output_state_[k], 3 + 2 * k);
  }
  if (node_table_) {
    copy(model_.nodes, nodes(), 2 + 2 * nstate_);
    for (uint32_t k = 0; k < nstate_; ++k) {
      copy(model_.nodes_state[k], nodes_state_[k], 3 + 2 * nstate_ + k);
    }
  }
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  staging_ = DeviceBuffer<uint16_t>();  // held only while copying
}

void DeviceTables::copy_rows(HostTable& host, float* dev, uint32_t index, cudaMemcpyKind kind,
                             cudaStream_t stream) {
  const uint64_t n = host.rows();
  if (n == 0) return;
  if (host.storage() != Storage::kFp32) {
    copy_half_rows(host, dev, index, kind, stream);
    return;
  }
  const size_t row = dim_ * sizeof(float), host_pitch = host.stride() * sizeof(float);
  const size_t dev_pitch = pitch_ * sizeof(float);
  const bool to_host = kind == cudaMemcpyDeviceToHost;
  const uint64_t rows_per_copy = std::max<uint64_t>(1, (uint64_t{256} << 20) / host_pitch);
  for (uint64_t r = 0; r < n; r += rows_per_copy) {
    const uint64_t m = std::min(rows_per_copy, n - r);
    float* h = host.row(r);
    float* d = dev + r * pitch_;
    if (to_host) {
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(h, host_pitch, d, dev_pitch, row, m, kind, stream));
    } else {
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(d, dev_pitch, h, host_pitch, row, m, kind, stream));
    }
  }
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

void DeviceTables::copy_half_rows(HostTable& host, float* dev, uint32_t index, cudaMemcpyKind kind,
                                  cudaStream_t stream) {
  const uint64_t n = host.rows();
  const size_t row = size_t{dim_} * sizeof(uint16_t), host_pitch = host.stride() * sizeof(uint16_t);
  // Small chunks: the staging buffer lies outside the plan's budget (gpu_plan.hpp).
  const uint64_t rows_per_copy = std::max<uint64_t>(1, (uint64_t{8} << 20) / row);
  const uint64_t staged = std::min(rows_per_copy, n);
  if (staging_.size() < staged * dim_) {
    staging_ = DeviceBuffer<uint16_t>(staged * dim_, "a staging buffer of 16-bit rows");
  }
  const bool to_host = kind == cudaMemcpyDeviceToHost;
  for (uint64_t r = 0; r < n; r += rows_per_copy) {
    const uint64_t m = std::min(rows_per_copy, n - r);
    // The row move between the staging buffer (the "host" side, dim values a row) and the
    // device rows r … r + m − 1.
    MoveArgs a;
    a.tables[0] = PagedTable{staging_.data(), dev + r * pitch_};
    a.table_count = 1;
    a.dim = dim_;
    a.stride = pitch_;
    a.host_stride = dim_;
    a.host_storage = host.storage();
    a.round_seed = kRoundSeed;
    a.round_table_base = index;
    a.n = static_cast<uint32_t>(m);
    if (to_host) {
      launch_move_rows(MoveKind::kToHost, a, stream);
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(host.raw_row(r), host_pitch, staging_.data(), row, row, m,
                                          kind, stream));
    } else {
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(staging_.data(), row, host.raw_row(r), host_pitch, row, m,
                                          kind, stream));
      launch_move_rows(MoveKind::kToDevice, a, stream);
    }
    // The staging buffer is reused by the next chunk.
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  }
}

void DeviceTables::round_to_storage(uint64_t rows, cudaStream_t stream) {
  if (host_storage() == Storage::kFp32) return;
  rows = std::min(rows, device_rows_);
  auto round = [&](float* table, uint32_t index) {
    launch_round_rows(host_storage(), kRoundSeed, index, table, pitch_, dim_, nullptr, nullptr,
                      rows, stream);
  };
  round(input(), 0);
  round(output(), 1);
  for (uint32_t k = 0; k < nstate_; ++k) {
    round(input_state_[k], 2 + 2 * k);
    round(output_state_[k], 3 + 2 * k);
  }
  if (node_table_) {
    round(nodes(), 2 + 2 * nstate_);
    for (uint32_t k = 0; k < nstate_; ++k) round(nodes_state_[k], 3 + 2 * nstate_ + k);
  }
}

void DeviceTables::pin_host() {
  const std::string hint =
      "free host memory or raise the locked-memory limit (ulimit -l), or use "
      "--placement resident";
  std::vector<void*> blocks;
  auto pin = [&](const HostTable& t, const char* what) {
    if (std::find(blocks.begin(), blocks.end(), t.block()) != blocks.end()) return;
    blocks.push_back(t.block());
    pinned_.emplace_back(t.block(), t.block_bytes(), what, hint);
  };
  pin(model_.input, "input vectors");
  pin(model_.output, "output vectors");
  for (uint32_t k = 0; k < nstate_; ++k) {
    pin(model_.input_state[k], "optimizer state");
    pin(model_.output_state[k], "optimizer state");
  }
  if (node_table_) {
    pin(model_.nodes, "inner-node vectors");
    for (uint32_t k = 0; k < nstate_; ++k) pin(model_.nodes_state[k], "optimizer state");
  }
}

MoveArgs DeviceTables::move_args(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n,
                                 uint32_t dev_base) {
  MoveArgs m;
  auto add = [&](HostTable& host, float* dev) {
    m.tables[m.table_count++] = PagedTable{host.raw(), dev};
  };
  add(model_.input, input());
  add(model_.output, output());
  for (uint32_t k = 0; k < nstate_; ++k) {
    add(model_.input_state[k], input_state_[k]);
    add(model_.output_state[k], output_state_[k]);
  }
  if (node_table_) {
    add(model_.nodes, nodes());
    for (uint32_t k = 0; k < nstate_; ++k) add(model_.nodes_state[k], nodes_state_[k]);
  }
  m.dim = dim_;
  m.stride = pitch_;
  m.host_stride = static_cast<uint32_t>(model_.input.stride());
  m.host_storage = model_.input.storage();
  m.round_seed = kRoundSeed;
  m.host_rows = host_rows;
  m.dev_rows = dev_rows;
  m.dev_base = dev_base;
  m.n = n;
  return m;
}

void DeviceTables::step_optimizer(const OptimizerParams& optimizer, uint64_t step, float lr,
                                  cudaStream_t stream) {
  // Input, output and (with their own table) the inner nodes; index t as in move_args.
  for (uint32_t t = 0; t < vector_tables(); ++t) {
    uint8_t* touched = t == 0   ? touched_input_.data()
                       : t == 1 ? touched_output_.data()
                                : touched_nodes_.data();
    launch_select_marked_ids(touched, device_rows_, step_rows_[t].data(), step_count_.data() + t,
                             step_temp_.data(), step_temp_bytes_, stream);
    OptimizerStepArgs s;
    s.table = t == 0 ? input() : t == 1 ? output() : nodes();
    for (uint32_t k = 0; k < nstate_; ++k) {
      s.state[k] = t == 0 ? input_state_[k] : t == 1 ? output_state_[k] : nodes_state_[k];
    }
    s.stride = pitch_;
    s.dim = dim_;
    s.rows = step_rows_[t].data();
    s.grads = t == 0 ? input_grad_ : t == 1 ? output_grad_ : nodes_grad_;
    s.grad_stride = pitch_;
    s.count = device_rows_;
    s.d_count = step_count_.data() + t;
    s.grads_by_row = true;
    s.zero_grads = true;
    launch_optimizer_step(optimizer, step, lr, s, stream);
    if (host_storage() != Storage::kFp32) {
      // The stepped rows take values the 16-bit host tables hold (table indices as in
      // move_args), so that they move to the host and back unchanged: a run's values then do
      // not depend on when rows are paged, and paged equals resident. The step is part of the
      // key: a row that gets the same small update from the same value at every step still
      // moves by it on average instead of rounding back the same way each time.
      const uint64_t key = kRoundSeed + (step + 1) * 0x9E3779B97F4A7C15ull;
      const uint32_t index = t < 2 ? t : 2 + 2 * nstate_;
      launch_round_rows(host_storage(), key, index, s.table, pitch_, dim_, step_rows_[t].data(),
                        step_count_.data() + t, device_rows_, stream);
      for (uint32_t k = 0; k < nstate_; ++k) {
        const uint32_t state_index = t < 2 ? 2 + 2 * k + t : 3 + 2 * nstate_ + k;
        launch_round_rows(host_storage(), key, state_index, s.state[k], pitch_, dim_,
                          step_rows_[t].data(), step_count_.data() + t, device_rows_, stream);
      }
    }
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(touched, 0, device_rows_, stream));
  }
}

}  // namespace pagedw2v
