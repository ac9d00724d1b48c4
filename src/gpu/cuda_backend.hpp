#pragma once
/// @file cuda_backend.hpp
/// The CUDA backend: the tables resident in GPU memory or paged from pinned host memory, as
/// gpu/gpu_plan.hpp decides; the corpus resident or streamed (gpu/device_corpus.hpp); fused
/// training kernels (kernels/sgns.hpp). Host-only header: it names no CUDA type, so the trainer and
/// the factory compile without the CUDA headers.
///
/// Owns: the backend's checks of a run, the resolution of its GPU settings, and the choice
/// between resident and paged training, which it drives through the parts that own the state
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
#include "gpu/gpu_plan.hpp"

namespace pagedw2v {

/// `gpu` with its choices made for tables of `rows × dim` with optimizer `kind` on the current
/// device: a budget of 0 becomes what the device can give (one memory query), and placement
/// auto becomes resident or paged (gpu_plan.hpp's rule: paged when the tables and their state
/// do not fit the budget). Made once per run, before the model is allocated (paged tables are
/// best allocated interleaved, HostTable::interleaved); the backend then plans under it
/// without deciding or querying again. Settings already resolved come back unchanged.
GpuOptions resolve_cuda_gpu_options(uint64_t rows, uint32_t dim, OptimizerKind kind,
                                    const GpuOptions& gpu);

/// `data.params` with the training sizes that paged tables leave to the plan chosen by it
/// (gpu_plan.hpp's plan_gpu) under settings `gpu` resolved by resolve_cuda_gpu_options: the
/// negative pool (`choose_pool`), its period (`choose_pool_words`) and, with an optimizer, the
/// super-batch (`choose_batch`); the rest as given. Unchanged for resident tables. Throws what
/// make_cuda_backend would for sizes that do not fit.
TrainParams plan_cuda_train_params(const TrainData& data, const GpuOptions& gpu, bool choose_pool,
                                   bool choose_pool_words, bool choose_batch);

/// Creates the CUDA backend on the current device. Throws Error when no device can be used or
/// when the tables do not fit in GPU memory, UsageError for shapes the kernels cannot run.
std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data);
std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options);

/// The timing report of a backend made by make_cuda_backend; false for any other backend.
bool cuda_backend_report(const Backend& backend, CudaBackendReport* report);

}  // namespace pagedw2v
