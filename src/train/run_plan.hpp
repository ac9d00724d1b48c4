#pragma once
/// @file run_plan.hpp
/// Every decision of a run about where and how it trains, made once, as plain functions of the
/// Config, the data's facts and the device's (DeviceFacts, taken once per process by
/// query_run_device), so that tests pin each decision without a GPU: the device (CPU or CUDA),
/// the placement and the GPU memory budget, the negative pool and super-batch a run left to the
/// plan, the GPU plan of one process (gpu/gpu_plan.hpp: hot rows, cache, pieces, stages, the
/// resident corpus's sizes), and over MPI ranks which backend trains (dist/rank_backend_kind.hpp)
/// and with what memory. The CLI's `train`, `bench train` and the backends take the plan and
/// never ask the device or decide again; the settings and backend lines print from it.
///
/// Two steps, as a run learns its sizes: plan_device before the model's tables are allocated
/// (their layout follows the placement; a resumed run reads its checkpoint under it), then
/// plan_sizes once the training set is known.

#include <cstdint>
#include <optional>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "config/options.hpp"
#include "dist/rank_backend_kind.hpp"
#include "gpu/cuda_options.hpp"
#include "gpu/device_facts.hpp"
#include "gpu/gpu_plan.hpp"

namespace pagedw2v {

/// What a run decided.
struct RunPlan {
  DeviceFacts device;                  ///< the process's one device query
  DeviceKind kind = DeviceKind::kCpu;  ///< where it trains: kCpu or kCuda, never kAuto
  /// Placement (resident or paged; resident on the CPU, which pages nothing) and the GPU memory
  /// budget (0 on the CPU).
  GpuOptions gpu;
  bool over_ranks = false;
  uint32_t ranks = 1;  ///< the ranks the run trains over (1: one process)
  /// Over ranks: whether the ranks train on their GPUs, and whether they keep the rows there
  /// (gpu_parts_train: skip-gram sgd with no pool), else through host memory with a pool.
  bool rank_gpus = false, on_parts = false;
  /// Over ranks: the backend each rank trains with (dist/rank_backend_kind.hpp), chosen once
  /// by plan_sizes; on GPU ranks a GPU kind exactly when on_parts.
  dist::RankBackendKind rank_backend = dist::RankBackendKind::kRankRows;
  /// One process on CUDA: the backend's plan, made once by plan_sizes.
  std::optional<GpuPlan> gpu_plan;

  bool paged() const { return gpu.placement == Placement::kPaged; }
  /// The GPU the ranks train on, with the run's budget (over ranks with rank_gpus).
  GpuGrant grant() const { return {device, gpu.memory_budget}; }
};

/// The process's one device query (gpu/cuda_device.hpp's query_device) for the run `requested`;
/// none where it trains on the CPU whatever a checkpoint says (--device cpu, given or not
/// resuming: the driver is not touched) or in a build without CUDA.
DeviceFacts query_run_device(const Config& requested);

/// The device `device` resolves to with `facts`: kAuto becomes kCuda or kCpu.
DeviceKind resolve_device(DeviceKind device, const DeviceFacts& facts);

/// Throws what a run on `device` would: --device cuda in a build without CUDA (UsageError) or
/// without a usable device (Error).
void check_device(DeviceKind device, const DeviceFacts& facts);

/// The placement and budget of tables of `rows × dim` with optimizer `kind` on `device`
/// (resolved): on CUDA, gpu/plan_input.hpp's resolve_gpu_placement; on the CPU, resident.
GpuOptions resolve_gpu_options(DeviceKind device, uint64_t rows, uint32_t dim, OptimizerKind kind,
                               const GpuOptions& gpu, const DeviceFacts& facts);

/// The first step, before the tables are allocated: the device, placement and budget of a run
/// under `config` with a vocabulary of `rows` words over `ranks` ranks (1: one process);
/// `resumed`: the settings are a checkpoint's merged with the command's. Over ranks: GPU ranks
/// for --device cuda, and for --device auto with sgd when the run trains on parts or with a pool
/// (a resumed run: as its checkpoint did); --placement is refused there (the ranks place their
/// tables by --rank-tables) and --gpu-memory bounds the rows kept on each GPU (refused where the
/// ranks keep none there). Throws UsageError for what cannot go together.
RunPlan plan_device(const Config& config, uint64_t rows, const DeviceFacts& facts, uint32_t ranks,
                    bool resumed);

/// The second step, once the training set is known: the sizes the run left to the plan written
/// to `config` (a fresh run only: a resumed run keeps its checkpoint's), and on CUDA in one
/// process the GPU plan under `tuning` (the CUDA backend's options; `tuning.gpu` is the plan's)
/// over `data` (the backend's view of the set under `config`). Over GPU ranks: no pool for parts,
/// else kAutoNegativePool when none was given; over ranks, the backend of every rank
/// (choose_rank_backend, under --rank-tables and the pool settled; throws its UsageError). Paged
/// tables: the pool, its period and an optimizer's super-batch as gpu_plan.hpp chooses them
/// where not given. Resident tables on CUDA: the corpus's sizes on the GPU (GpuPlan::corpus).
/// `scratch`: the kernels' scratch sizes (null: the CUDA build's, cuda_scratch_bytes).
void plan_sizes(RunPlan& plan, Config& config, const TrainData& data, bool resumed,
                const CudaBackendOptions& tuning = {}, const GpuScratchBytes& scratch = nullptr);

/// The CUDA backend's options of a run under `plan`: `tuning` with the plan's GPU settings and,
/// with --deterministic, one warp a launch in order (CudaBackendOptions::ordered).
CudaBackendOptions cuda_options(const RunPlan& plan, const CudaBackendOptions& tuning = {});

}  // namespace pagedw2v
