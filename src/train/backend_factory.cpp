#include "train/backend_factory.hpp"

#include <cstdio>
#include <system_error>

#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"

#ifdef PAGEDW2V_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#endif

namespace pagedw2v {

GpuOptions resolve_gpu_options(DeviceKind device, uint64_t rows, uint32_t dim, OptimizerKind kind,
                               const GpuOptions& gpu) {
#ifdef PAGEDW2V_HAVE_CUDA
  if ((device == DeviceKind::kCuda || device == DeviceKind::kAuto) && cuda_device_available()) {
    return resolve_cuda_gpu_options(rows, dim, kind, gpu);
  }
#else
  (void)device, (void)rows, (void)dim, (void)kind;
#endif
  // The CPU backend pages nothing: its tables are allocated apart, whatever --placement says.
  GpuOptions cpu = gpu;
  cpu.placement = Placement::kResident;
  return cpu;
}

Config plan_train_sizes(const Config& config, const TrainData& data, const GpuOptions& gpu) {
  Config planned = config;
#ifdef PAGEDW2V_HAVE_CUDA
  const bool cuda = config.device == DeviceKind::kCuda || config.device == DeviceKind::kAuto;
  if (cuda && gpu.placement == Placement::kPaged && cuda_device_available()) {
    const auto left = [&](const char* name) { return config.given.count(name) == 0; };
    const TrainParams p = plan_cuda_train_params(data, gpu, left("negative-pool"),
                                                 left("pool-words"), left("batch-words"));
    planned.negative_pool = p.negative_pool;
    planned.pool_words = uint64_t{p.pool_blocks} * kBlockWords;
    planned.batch_words = uint64_t{p.batch_blocks} * kBlockWords;
  }
#else
  (void)data, (void)gpu;
#endif
  return planned;
}

void check_device(DeviceKind device) {
  if (device != DeviceKind::kCuda) return;
#ifdef PAGEDW2V_HAVE_CUDA
  if (!cuda_device_available()) {
    throw Error("--device cuda: no CUDA device is available (use --device cpu)");
  }
#else
  throw UsageError("--device cuda: this build has no CUDA backend (use --device cpu)");
#endif
}

DeviceKind resolve_device(DeviceKind device) {
  if (device != DeviceKind::kAuto) return device;
#ifdef PAGEDW2V_HAVE_CUDA
  if (cuda_device_available()) return DeviceKind::kCuda;
#endif
  return DeviceKind::kCpu;
}

BackendWarmUp::BackendWarmUp(DeviceKind device) {
#ifdef PAGEDW2V_HAVE_CUDA
  if (device != DeviceKind::kCuda) return;
  try {
    thread_ = std::thread(start_cuda_context);
  } catch (const std::system_error&) {
    // No thread to be had: the first CUDA call creates the context, as without this.
  }
#else
  (void)device;
#endif
}

BackendWarmUp::~BackendWarmUp() { wait(); }

void BackendWarmUp::wait() {
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<Backend> make_backend(DeviceKind device, Model& model, const TrainData& data,
                                      uint32_t threads, const GpuOptions& gpu) {
#ifdef PAGEDW2V_HAVE_CUDA
  if (device == DeviceKind::kCuda || device == DeviceKind::kAuto) {
    if (cuda_device_available()) {
      CudaBackendOptions options;
      options.gpu = gpu;
      // Deterministic: one warp per launch, launches in order, but the streams, eviction depth
      // and sizes of a default run, so that a deterministic run checks the pipeline users run.
      options.ordered = gpu.deterministic;
      return make_cuda_backend(model, data, options);
    }
    if (device == DeviceKind::kCuda) {
      throw Error("--device cuda: no CUDA device is available (use --device cpu)");
    }
  }
#else
  (void)gpu;  // GPU settings mean nothing without the CUDA backend
  if (device == DeviceKind::kCuda) {
    throw UsageError("--device cuda: this build has no CUDA backend (use --device cpu)");
  }
#endif
  return make_cpu_backend(model, data, threads);
}

}  // namespace pagedw2v
