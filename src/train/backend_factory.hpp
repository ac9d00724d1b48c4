#pragma once
/// @file backend_factory.hpp
/// The one place that knows every backend: creates the CPU or the CUDA backend of one process as
/// the run's plan (run_plan.hpp) says, deciding nothing itself.

#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "gpu/cuda_options.hpp"
#include "train/run_plan.hpp"

namespace pagedw2v {

/// Creates the backend `plan` chose for one process: the CPU backend on `threads` threads, or
/// the CUDA backend under the plan's GPU plan (plan_sizes made it) with `tuning` beside the
/// plan's settings (cuda_options). Throws UsageError for CUDA in a build without it.
std::unique_ptr<Backend> make_backend(const RunPlan& plan, Model& model, const TrainData& data,
                                      uint32_t threads, const CudaBackendOptions& tuning = {});

}  // namespace pagedw2v
