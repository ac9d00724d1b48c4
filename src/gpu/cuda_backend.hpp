#pragma once
/// @file cuda_backend.hpp
/// The CUDA backend: the tables resident in GPU memory or paged from pinned host memory, as
/// gpu/gpu_plan.hpp decides; the corpus resident or streamed (gpu/device_corpus.hpp); fused
/// training kernels (kernels/sgns.hpp). Host-only header: it names no CUDA type, so the trainer and
/// the factory compile without the CUDA headers.
///
/// Owns: the backend's checks of a run and resident or paged training as the run's plan says,
/// which it drives through the parts that own the state
/// (device_tables.hpp, sgns_launcher.hpp, paged_pipeline.hpp, device_corpus.hpp). May not
/// touch: kernels' internals, the trainer's order of spans, checkpoints.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "config/options.hpp"
#include "gpu/cuda_device.hpp"
#include "gpu/cuda_options.hpp"
#include "gpu/device_facts.hpp"
#include "gpu/gpu_plan.hpp"

namespace pagedw2v {

/// Creates the CUDA backend on the current device under the run's plan `plan` (made once, from
/// the run's one device query, before the model was allocated: train/run_plan.hpp) with
/// `options.gpu` resolved; `device_name` for its line. It asks the device nothing and decides
/// nothing again. Throws Error when the tables do not fit in GPU memory, UsageError for shapes
/// the kernels cannot run.
std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options, const GpuPlan& plan,
                                           const std::string& device_name);

/// The same for callers without a run plan (the tests of the backend): one device query, the
/// settings resolved (resolve_gpu_placement) and the plan made here, as a run's plan makes them.
/// Throws Error when no device can be used.
std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data);
std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options);

/// Scratch bytes of the paged kernels' selects and slot-order sort (GpuScratchBytes: what CUB
/// asks for; a size computation, no device memory).
uint64_t cuda_scratch_bytes(uint64_t select_n, uint32_t order_n, uint32_t key_bits);

/// The timing report of a backend made by make_cuda_backend; false for any other backend.
bool cuda_backend_report(const Backend& backend, CudaBackendReport* report);

}  // namespace pagedw2v
