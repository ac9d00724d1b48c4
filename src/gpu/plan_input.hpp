#pragma once
/// @file plan_input.hpp
/// What the GPU plan (gpu_plan.hpp) is given of a run: its data and the CUDA backend's tuning as
/// a GpuPlanInput, and the device's facts of the run's one query as GpuDeviceFacts. Plain C++,
/// so that the run plan (train/run_plan.hpp) makes the GPU plan, once, in a build and on a
/// machine without CUDA too.

#include <cstdint>

#include "backend/backend.hpp"
#include "gpu/cuda_options.hpp"
#include "gpu/device_facts.hpp"
#include "gpu/gpu_plan.hpp"

namespace pagedw2v {

/// The run `data` as the plan sees it under `options` (sizes as `data.params` has them; the
/// choices a run leaves to the plan are the caller's to set).
GpuPlanInput make_plan_input(const TrainData& data, const CudaBackendOptions& options);

/// The device as the plan sees it: the facts of the run's one query, the budget the run
/// resolved, and `scratch` (GpuDeviceFacts::scratch_bytes: CUB's sizes, or a test's).
/// `gpu` with its choices made for tables of `rows × dim` with optimizer `kind` on `device`: the
/// budget (gpu_budget: --gpu-memory, else the free memory less gpu_memory_margin) and placement
/// auto made resident or paged (plan_pages_tables: paged when the tables and their state do not
/// fit the budget). The one rule: the run plan takes it before the model is allocated (paged
/// tables are allocated interleaved), the backend's plan after under the same settings.
GpuOptions resolve_gpu_placement(const GpuOptions& gpu, uint64_t rows, uint32_t dim,
                                 OptimizerKind kind, const DeviceFacts& device);

GpuDeviceFacts plan_device_facts(const DeviceFacts& device, uint64_t budget,
                                 const GpuScratchBytes& scratch);

}  // namespace pagedw2v
