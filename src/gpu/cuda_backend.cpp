#include "gpu/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "error.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_corpus.hpp"
#include "gpu/stream.hpp"
#include "sgns.cuh"

namespace pagedw2v {

bool cuda_device_available() {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return count > 0;
  } catch (...) {
    return false;
  }
}

namespace {

size_t device_used_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  PAGEDW2V_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(Model& model, const TrainData& data, const CudaBackendOptions& options)
      : model_(model), data_(data), device_(require_device()) {
    const TrainParams& p = data.params;
    check_sgns_shape(p.dim, p.window, p.negative);
    cudaDeviceProp prop{};
    PAGEDW2V_CUDA_TRY(cudaGetDeviceProperties(&prop, device_));
    report_.device_name = prop.name;
    const size_t used_before = device_used_bytes();

    dim_ = p.dim;
    stride_ = sgns_row_stride(p.dim);
    rows_ = model.input.rows();
    if (model.output.rows() != rows_ || model.input.dim() != dim_ || model.output.dim() != dim_ ||
        data.noise->size() != rows_ || data.keep->size() != rows_) {
      throw Error("CUDA backend: tables, vocabulary and samplers disagree in size");
    }
    const size_t table = static_cast<size_t>(rows_) * stride_;
    input_ = DeviceBuffer<float>(
        table, "the input vectors (" + std::to_string(rows_) + " × " + std::to_string(dim_) + ")");
    output_ = DeviceBuffer<float>(
        table, "the output vectors (" + std::to_string(rows_) + " × " + std::to_string(dim_) + ")");
    keep_ = DeviceBuffer<float>(rows_, "the subsampling table");
    noise_ = DeviceBuffer<AliasEntry>(rows_, "the negative-sampling table");
    counters_ = DeviceBuffer<SgnsCounters>(1, "training counters");
    // Everything goes through the compute stream, which is not ordered with the legacy one.
    const cudaStream_t st = compute_.get();
    if (rows_ > 0) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(keep_.data(), data.keep->data(), keep_.bytes(),
                                        cudaMemcpyHostToDevice, st));
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(noise_.data(), data.noise->entries().data(), noise_.bytes(),
                                        cudaMemcpyHostToDevice, st));
    }
    // Padding columns stay zero for the whole run: they add nothing to any dot product.
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(input_.data(), 0, input_.bytes(), st));
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(output_.data(), 0, output_.bytes(), st));
    sync_from_host();

    DeviceCorpusOptions co;
    co.resident_max_bytes = options.resident_corpus_max_bytes;
    co.force_stream = options.force_stream;
    co.chunk_tokens = options.chunk_tokens;
    corpus_ = std::make_unique<DeviceCorpus>(*data.corpus, co);
    report_.corpus_resident = corpus_->resident();
    const size_t used_after = device_used_bytes();
    report_.backend_bytes = input_.bytes() + output_.bytes() + keep_.bytes() + noise_.bytes() +
                            counters_.bytes() + corpus_->device_bytes();
    report_.device_used_bytes = std::max(used_before, used_after);
  }

  std::string name() const override { return "cuda"; }

  /// Large spans: a launch ends with a tail in which only the last sentences' warps run (a warp
  /// trains its sentence in order), so a span should be long against one sentence's time.
  uint64_t span_words() const override { return uint64_t{1} << 25; }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    const auto wall0 = std::chrono::steady_clock::now();
    const TrainParams& p = data_.params;
    const auto& blocks = *data_.blocks;
    const uint64_t first = blocks.at(first_block), last = blocks.at(last_block);
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters_.data(), 0, sizeof(SgnsCounters), compute_.get()));

    SgnsArgs a;
    a.model = p.model;
    a.input = input_.data();
    a.output = output_.data();
    a.stride = stride_;
    a.vocab = static_cast<uint32_t>(rows_);
    a.keep = keep_.data();
    a.noise = noise_.data();
    a.seed = p.seed;
    a.epoch = epoch;
    a.window = p.window;
    a.negative = p.negative;
    a.schedule = make_schedule(p);
    a.epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
    a.counters = counters_.data();

    std::vector<std::pair<Event, Event>> timing;
    corpus_->for_each_chunk(first, last, compute_.get(), [&](const CorpusChunk& c) {
      a.tokens = c.tokens;
      a.token_base = c.token_base;
      a.sentence_starts = c.sentence_starts;
      a.sentences = c.sentences;
      timing.emplace_back();
      timing.back().first.record(compute_.get());
      launch_sgns(a, compute_.get());
      timing.back().second.record(compute_.get());
    });
    SgnsCounters host{};
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(&host, counters_.data(), sizeof(SgnsCounters),
                                      cudaMemcpyDeviceToHost, compute_.get()));
    compute_.synchronize();
    for (const auto& t : timing)
      report_.kernel_seconds += t.second.elapsed_ms_since(t.first) * 1e-3;
    report_.launches += timing.size();
    report_.upload_seconds = corpus_->upload_seconds();
    report_.device_used_bytes = std::max(report_.device_used_bytes, device_used_bytes());
    report_.train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

    SpanStats s;
    s.words = host.words;
    s.trained = host.trained;
    s.loss = host.loss;
    s.loss_terms = host.loss_terms;
    return s;
  }

  void sync_to_host() override {
    copy_table(model_.input.data(), input_.data(), cudaMemcpyDeviceToHost);
    copy_table(model_.output.data(), output_.data(), cudaMemcpyDeviceToHost);
  }

  void sync_from_host() override {
    copy_table(input_.data(), model_.input.data(), cudaMemcpyHostToDevice);
    copy_table(output_.data(), model_.output.data(), cudaMemcpyHostToDevice);
  }

  const CudaBackendReport& report() const { return report_; }

 private:
  /// Copies a table between the host layout (pitch dim) and the device layout (pitch stride).
  void copy_table(float* dst, const float* src, cudaMemcpyKind kind) {
    if (rows_ == 0) return;
    const size_t host_pitch = dim_ * sizeof(float), dev_pitch = stride_ * sizeof(float);
    const bool to_host = kind == cudaMemcpyDeviceToHost;
    PAGEDW2V_CUDA_TRY(cudaMemcpy2DAsync(dst, to_host ? host_pitch : dev_pitch, src,
                                        to_host ? dev_pitch : host_pitch, host_pitch, rows_, kind,
                                        compute_.get()));
    compute_.synchronize();
  }

  static int require_device() {
    if (!cuda_device_available()) throw Error("--device cuda: no usable CUDA device found");
    int device = 0;
    PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
    return device;
  }

  Model& model_;
  const TrainData& data_;
  int device_ = 0;
  uint32_t dim_ = 0, stride_ = 0;
  uint64_t rows_ = 0;
  Stream compute_;
  DeviceBuffer<float> input_, output_, keep_;
  DeviceBuffer<AliasEntry> noise_;
  DeviceBuffer<SgnsCounters> counters_;
  std::unique_ptr<DeviceCorpus> corpus_;
  CudaBackendReport report_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(model, data, options);
}

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data) {
  return make_cuda_backend(model, data, CudaBackendOptions{});
}

bool cuda_backend_report(const Backend& backend, CudaBackendReport* report) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (cuda == nullptr) return false;
  *report = cuda->report();
  return true;
}

}  // namespace pagedw2v
