#include "train/backend_factory.hpp"

#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"

#ifdef PAGEDW2V_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#endif

namespace pagedw2v {

std::unique_ptr<Backend> make_backend(const RunPlan& plan, Model& model, const TrainData& data,
                                      uint32_t threads, const CudaBackendOptions& tuning) {
  if (plan.kind == DeviceKind::kCuda) {
    check_device(plan.kind, plan.device);  // no device, or no CUDA in this build
#ifdef PAGEDW2V_HAVE_CUDA
    if (!plan.gpu_plan) throw Error("the CUDA backend needs the run's GPU plan (plan_sizes)");
    return make_cuda_backend(model, data, cuda_options(plan, tuning), *plan.gpu_plan,
                             plan.device.name);
#else
    (void)tuning;
    throw UsageError("--device cuda: this build has no CUDA backend (use --device cpu)");
#endif
  }
  return make_cpu_backend(model, data, threads);
}

}  // namespace pagedw2v
