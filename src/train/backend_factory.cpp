#include "error.hpp"
#include "train/backend.hpp"
#include "train/cpu_backend.hpp"

#ifdef PAGEDW2V_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#endif

namespace pagedw2v {

std::unique_ptr<Backend> make_backend(DeviceKind device, Model& model, const TrainData& data,
                                      uint32_t threads, const GpuOptions& gpu) {
#ifdef PAGEDW2V_HAVE_CUDA
  if (device == DeviceKind::kCuda || device == DeviceKind::kAuto) {
    if (cuda_device_available()) {
      CudaBackendOptions options;
      options.gpu = gpu;
      options.serial = gpu.deterministic;
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
