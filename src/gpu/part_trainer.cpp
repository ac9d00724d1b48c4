#include "gpu/part_trainer.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/sgns_launcher.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/sgns.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {

struct PartTrainer::Impl {
  const TrainData& data;
  uint32_t parts, part;
  bool single_warp;
  uint32_t dim, stride;
  uint64_t vocab;
  std::string device_name;
  Stream stream;
  DeviceBuffer<float> input, output;  // part rows × stride each, padding zero
  DeviceBuffer<uint32_t> tokens;
  DeviceBuffer<uint64_t> starts;
  DeviceBuffer<float> keep;
  std::vector<NoiseTable> part_noise;            // the noise table of every output part
  std::vector<DeviceBuffer<NoiseColumn>> noise;  // their columns on the device
  DeviceBuffer<SgnsCounters> counters;

  uint64_t rows_of(uint32_t p) const { return vocab > p ? (vocab - p + parts - 1) / parts : 0; }

  Impl(const TrainData& d, uint32_t n, uint32_t r, bool serial, const GpuGrant& gpu)
      : data(d),
        parts(n),
        part(r),
        single_warp(serial),
        dim(d.params.dim),
        stride(sgns_row_stride(d.params.dim)),
        vocab(d.keep->words()),
        device_name(gpu.device.name) {
    const TrainParams& p = d.params;
    check_sgns_shape(p.dim, p.window, p.negative, p.kernel);
    if (!gpu_parts_train(d)) {
      throw UsageError("partitioned tables over GPU ranks train skip-gram with sgd and no pool");
    }
    if (d.streamed) throw Error("ranks hold the corpus whole; a streamed corpus cannot be trained");
    if (parts < 1 || part >= parts || vocab < parts) throw Error("partitioned tables: bad parts");
    const auto& all_tokens = d.corpus->tokens;
    const auto& all_starts = d.corpus->sentence_starts;
    // One part is the whole table: its noise table is the run's, drawn as one process draws.
    if (parts == 1) {
      part_noise.push_back(*d.noise);
    } else {
      for (uint32_t q = 0; q < parts; ++q) part_noise.push_back(d.noise->part(parts, q));
    }
    uint64_t noise_bytes = 0;
    for (const NoiseTable& t : part_noise) noise_bytes += t.columns().size() * sizeof(NoiseColumn);
    const uint64_t row_bytes = uint64_t{stride} * sizeof(float);
    const uint64_t need = (rows_of(part) + rows_of(0)) * row_bytes + all_tokens.size() * 4 +
                          all_starts.size() * 8 + uint64_t{d.keep->stored()} * 4 + noise_bytes;
    // The budget keeps the run's margin (gpu_memory_margin) for the kernels, the rotation's
    // staging and what CUDA allocates itself.
    if (need > gpu.budget) {
      throw Error("the rank's parts of the tables and the corpus need " + format_gib(need) +
                  " of GPU memory, the budget is " + format_gib(gpu.budget) + " (" +
                  format_gib(gpu.device.free_bytes) + " free on " + device_name +
                  "); run more ranks, or give --negative-pool N to train over ranks with the "
                  "rows in host memory");
    }
    cudaStream_t st = stream.get();
    input = DeviceBuffer<float>(std::max<uint64_t>(1, rows_of(part)) * stride, "the input part");
    output = DeviceBuffer<float>(std::max<uint64_t>(1, rows_of(0)) * stride, "the output part");
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(input.data(), 0, input.bytes(), st));
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(output.data(), 0, output.bytes(), st));
    tokens = DeviceBuffer<uint32_t>(std::max<size_t>(1, all_tokens.size()), "the corpus");
    starts = DeviceBuffer<uint64_t>(std::max<size_t>(1, all_starts.size()), "the sentences");
    if (!all_tokens.empty()) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(tokens.data(), all_tokens.data(), all_tokens.size() * 4,
                                        cudaMemcpyHostToDevice, st));
    }
    if (!all_starts.empty()) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(starts.data(), all_starts.data(), all_starts.size() * 8,
                                        cudaMemcpyHostToDevice, st));
    }
    const uint32_t keep_count = d.keep->stored();
    keep = DeviceBuffer<float>(std::max<uint32_t>(1, keep_count), "the subsampling table");
    if (keep_count > 0) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(keep.data(), d.keep->data(), uint64_t{keep_count} * 4,
                                        cudaMemcpyHostToDevice, st));
    }
    for (const NoiseTable& t : part_noise) {
      noise.emplace_back(t.columns().size(), "a part's negative-sampling table");
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(noise.back().data(), t.columns().data(),
                                        noise.back().bytes(), cudaMemcpyHostToDevice, st));
    }
    counters = DeviceBuffer<SgnsCounters>(1, "training counters");
    stream.synchronize();
  }

  void copy_rows(float* device_rows, const float* host_rows, uint64_t rows, bool up) {
    if (rows == 0) return;
    const size_t pitch = size_t{stride} * sizeof(float), width = size_t{dim} * sizeof(float);
    if (up) {
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(device_rows, pitch, host_rows, width, width, rows,
                                          cudaMemcpyHostToDevice, stream.get()));
    } else {
      PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(const_cast<float*>(host_rows), width, device_rows, pitch,
                                          width, rows, cudaMemcpyDeviceToHost, stream.get()));
    }
  }

  SpanStats train(uint32_t epoch, uint64_t s0, uint64_t s1, uint32_t output_part) {
    if (s1 <= s0) return {};
    const auto& all_starts = data.corpus->sentence_starts;
    const uint64_t base = data.corpus->sentence_base;
    SgnsArgs a = run_args(data, epoch, data.keep->stored());
    a.input = input.data();
    a.output = output.data();
    a.tokens = tokens.data();
    a.token_base = data.corpus->token_base;
    a.sentence_starts = starts.data() + (s0 - base);
    a.sentences = s1 - s0;
    a.keep = keep.data();
    a.noise = noise[output_part].data();
    a.noise_columns = part_noise[output_part].column_count();
    a.counters = counters.data();
    a.max_warps = single_warp ? 1 : 0;
    a.token_count = all_starts[s1 - base] - all_starts[s0 - base];
    a.parts = parts;
    a.input_part = part;
    a.output_part = output_part;
    cudaStream_t st = stream.get();
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters.data(), 0, sizeof(SgnsCounters), st));
    launch_sgns(a, st);
    SgnsCounters c{};
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(&c, counters.data(), sizeof c, cudaMemcpyDeviceToHost, st));
    stream.synchronize();
    // Over parts the caller counts the words (every rank reads the span); a whole table's
    // launch counts them itself.
    return {parts == 1 ? c.words : 0, c.trained, c.loss, c.loss_terms};
  }
};

PartTrainer::PartTrainer(const TrainData& data, uint32_t parts, uint32_t part, bool single_warp,
                         const GpuGrant& gpu)
    : impl_(std::make_unique<Impl>(data, parts, part, single_warp, gpu)) {}

PartTrainer::~PartTrainer() = default;

uint64_t PartTrainer::part_rows(uint32_t p) const { return impl_->rows_of(p); }

uint64_t PartTrainer::part_bytes(uint32_t p) const {
  return impl_->rows_of(p) * impl_->stride * sizeof(float);
}

void* PartTrainer::output_rows() { return impl_->output.data(); }

void* PartTrainer::input_rows() { return impl_->input.data(); }

uint32_t PartTrainer::row_stride() const { return impl_->stride; }

void PartTrainer::upload(const float* input, const float* output, uint32_t output_part) {
  impl_->copy_rows(impl_->input.data(), input, impl_->rows_of(impl_->part), true);
  impl_->copy_rows(impl_->output.data(), output, impl_->rows_of(output_part), true);
  impl_->stream.synchronize();
}

void PartTrainer::download(float* input, float* output, uint32_t output_part) {
  impl_->copy_rows(impl_->input.data(), input, impl_->rows_of(impl_->part), false);
  impl_->copy_rows(impl_->output.data(), output, impl_->rows_of(output_part), false);
  impl_->stream.synchronize();
}

SpanStats PartTrainer::train(uint32_t epoch, uint64_t first_sentence, uint64_t last_sentence,
                             uint32_t output_part) {
  return impl_->train(epoch, first_sentence, last_sentence, output_part);
}

uint64_t PartTrainer::device_bytes() const {
  uint64_t b = impl_->input.bytes() + impl_->output.bytes() + impl_->tokens.bytes() +
               impl_->starts.bytes() + impl_->keep.bytes() + impl_->counters.bytes();
  for (const auto& n : impl_->noise) b += n.bytes();
  return b;
}

std::string PartTrainer::device_name() const { return impl_->device_name; }

}  // namespace pagedw2v
