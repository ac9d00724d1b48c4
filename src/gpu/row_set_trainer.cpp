#include "gpu/row_set_trainer.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "base/error.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/sgns_launcher.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/sgns.hpp"
#include "model/negative_pool.hpp"
#include "model/params.hpp"

namespace pagedw2v {

namespace {

/// A device buffer of at least `count` elements: reallocated (larger by a quarter) only when the
/// one held is too small, so spans of similar size reuse it.
template <typename T>
void reserve(DeviceBuffer<T>& b, size_t count, const char* what) {
  if (b.size() >= count) return;
  b = DeviceBuffer<T>(count + count / 4, what);
}

}  // namespace

struct RowSetTrainer::Impl {
  const TrainData& data;
  bool single_warp;
  uint32_t stride;
  std::string device_name;
  Stream stream;
  DeviceBuffer<float> keep;
  DeviceBuffer<NoiseColumn> noise;
  DeviceBuffer<SgnsCounters> counters;
  // The span's buffers.
  DeviceBuffer<float> input, output;  // rows × stride each, padding zero
  DeviceBuffer<uint32_t> tokens, token_rows, pool, pool_rows, sentence_pool;
  DeviceBuffer<uint64_t> starts;
  std::vector<uint32_t> host_token_rows, host_pool, host_pool_rows, host_sentence_pool;

  Impl(const TrainData& d, bool serial, const GpuGrant& gpu)
      : data(d),
        single_warp(serial),
        stride(sgns_row_stride(d.params.dim)),
        device_name(gpu.device.name) {
    const TrainParams& p = d.params;
    check_sgns_shape(p.dim, p.window, p.negative, p.kernel);
    if (d.optimizer.kind != OptimizerKind::kSgd) {
      throw UsageError("--device cuda over ranks trains with sgd; --optimizer " +
                       to_string(d.optimizer.kind) + " over ranks runs with --device cpu");
    }
    if (p.negative_pool == 0) {
      throw UsageError("--device cuda over ranks needs a negative pool (--negative-pool N)");
    }
    if (d.streamed) throw Error("ranks hold the corpus whole; a streamed corpus cannot be trained");
    const uint32_t keep_count = d.keep->stored();
    keep = DeviceBuffer<float>(keep_count, "the subsampling table");
    if (keep_count > 0) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(keep.data(), d.keep->data(), keep.bytes(),
                                        cudaMemcpyHostToDevice, stream.get()));
    }
    const std::vector<NoiseColumn>& columns = d.noise->columns();
    noise = DeviceBuffer<NoiseColumn>(columns.size(), "the negative-sampling table");
    if (!columns.empty()) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(noise.data(), columns.data(), noise.bytes(),
                                        cudaMemcpyHostToDevice, stream.get()));
    }
    counters = DeviceBuffer<SgnsCounters>(1, "training counters");
    stream.synchronize();
  }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block, const uint32_t* row_of,
                  float* host_input, float* host_output, uint64_t rows) {
    if (first_block >= last_block) return {};
    const TrainParams& p = data.params;
    const auto& blocks = *data.blocks;
    const auto& all_starts = data.corpus->sentence_starts;
    const uint64_t s0 = blocks[first_block], s1 = blocks[last_block];
    const uint64_t t0 = all_starts[s0], t1 = all_starts[s1];
    const uint64_t sentences = s1 - s0, ntokens = t1 - t0;
    if (sentences == 0 || rows == 0) return {};
    if (rows >= 0xFFFFFFF0ull) throw Error("a span touches more than 2^32 rows");
    cudaStream_t st = stream.get();

    // The rows, padded on the device from dim to stride floats (the padding stays zero).
    if (input.size() < rows * stride) {
      reserve(input, rows * stride, "the span's input rows");
      reserve(output, rows * stride, "the span's output rows");
      PAGEDW2V_CUDA_TRY(cudaMemsetAsync(input.data(), 0, input.bytes(), st));
      PAGEDW2V_CUDA_TRY(cudaMemsetAsync(output.data(), 0, output.bytes(), st));
    }
    const size_t pitch = size_t{stride} * sizeof(float), width = size_t{p.dim} * sizeof(float);
    PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(input.data(), pitch, host_input, width, width, rows,
                                        cudaMemcpyHostToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(output.data(), pitch, host_output, width, width, rows,
                                        cudaMemcpyHostToDevice, st));

    // The tokens, the row of each (a token subsampling drops is never read: row 0), the
    // sentences' starts (corpus positions).
    host_token_rows.resize(ntokens);
    const uint32_t* ids = data.corpus->tokens.data() + t0;
    for (uint64_t k = 0; k < ntokens; ++k) {
      const uint32_t r = row_of[ids[k]];
      host_token_rows[k] = r < rows ? r : 0;
    }
    reserve(tokens, ntokens, "the span's tokens");
    reserve(token_rows, ntokens, "the span's token rows");
    reserve(starts, sentences + 1, "the span's sentences");
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(tokens.data(), ids, ntokens * 4, cudaMemcpyHostToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(token_rows.data(), host_token_rows.data(), ntokens * 4,
                                      cudaMemcpyHostToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(starts.data(), all_starts.data() + s0, (sentences + 1) * 8,
                                      cudaMemcpyHostToDevice, st));

    // The pools of the periods the blocks span, one after the other, their rows, and each
    // sentence's pool.
    const uint32_t pool_size = p.negative_pool;
    const uint32_t pool_blocks = std::max<uint32_t>(1, p.pool_blocks);
    const uint64_t first_period = super_batch_of(first_block, pool_blocks);
    const uint64_t periods = super_batch_of(last_block - 1, pool_blocks) - first_period + 1;
    host_pool.resize(periods * pool_size);
    host_pool_rows.resize(periods * pool_size);
    for (uint64_t k = 0; k < periods; ++k) {
      draw_pool(p.seed, epoch, first_period + k, data.noise->columns().data(),
                data.noise->column_count(), pool_size, host_pool.data() + k * pool_size);
    }
    for (size_t k = 0; k < host_pool.size(); ++k) {
      const uint32_t r = row_of[host_pool[k]];
      if (r >= rows) throw Error("a pool entry of the span has no row in its row set");
      host_pool_rows[k] = r;
    }
    host_sentence_pool.resize(sentences);
    for (uint64_t b = first_block; b < last_block; ++b) {
      const uint32_t number = static_cast<uint32_t>(super_batch_of(b, pool_blocks) - first_period);
      for (uint64_t s = blocks[b]; s < blocks[b + 1]; ++s) host_sentence_pool[s - s0] = number;
    }
    reserve(pool, host_pool.size(), "the span's negative pools");
    reserve(pool_rows, host_pool.size(), "the span's pool rows");
    reserve(sentence_pool, sentences, "the span's sentence pools");
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(pool.data(), host_pool.data(), host_pool.size() * 4,
                                      cudaMemcpyHostToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(pool_rows.data(), host_pool_rows.data(),
                                      host_pool_rows.size() * 4, cudaMemcpyHostToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(sentence_pool.data(), host_sentence_pool.data(),
                                      sentences * 4, cudaMemcpyHostToDevice, st));

    SgnsArgs a = run_args(data, epoch, data.keep->stored());
    a.input = input.data();
    a.output = output.data();
    a.tokens = tokens.data();
    a.token_base = t0;
    a.sentence_starts = starts.data();
    a.sentences = sentences;
    a.keep = keep.data();
    a.noise = noise.data();
    a.counters = counters.data();
    a.token_rows = token_rows.data();
    a.pool = pool.data();
    a.pool_size = pool_size;
    a.pool_rows = pool_rows.data();
    a.sentence_pool = sentence_pool.data();
    a.max_warps = single_warp ? 1 : 0;
    a.token_count = ntokens;
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters.data(), 0, sizeof(SgnsCounters), st));
    launch_sgns(a, st);

    PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(host_input, width, input.data(), pitch, width, rows,
                                        cudaMemcpyDeviceToHost, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(host_output, width, output.data(), pitch, width, rows,
                                        cudaMemcpyDeviceToHost, st));
    SgnsCounters c{};
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(&c, counters.data(), sizeof c, cudaMemcpyDeviceToHost, st));
    stream.synchronize();
    return {c.words, c.trained, c.loss, c.loss_terms};
  }
};

RowSetTrainer::RowSetTrainer(const TrainData& data, bool single_warp, const GpuGrant& gpu)
    : impl_(std::make_unique<Impl>(data, single_warp, gpu)) {}

RowSetTrainer::~RowSetTrainer() = default;

SpanStats RowSetTrainer::train(uint32_t epoch, uint64_t first_block, uint64_t last_block,
                               const uint32_t* row_of, float* input, float* output, uint64_t rows) {
  return impl_->train(epoch, first_block, last_block, row_of, input, output, rows);
}

std::string RowSetTrainer::device_name() const { return impl_->device_name; }

}  // namespace pagedw2v
