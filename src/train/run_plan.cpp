/// @file run_plan.cpp
/// Every decision of a run, made once (run_plan.hpp).

#include "train/run_plan.hpp"

#include <algorithm>
#include <string>

#include "base/error.hpp"
#include "gpu/part_trainer.hpp"
#include "gpu/plan_input.hpp"

#ifdef PAGEDW2V_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_device.hpp"
#endif

namespace pagedw2v {

DeviceFacts query_run_device(const Config& requested) {
#ifdef PAGEDW2V_HAVE_CUDA
  const bool cpu = requested.device == DeviceKind::kCpu &&
                   (requested.resume.empty() || requested.given.count("device") > 0);
  if (!cpu) return query_device();
#else
  (void)requested;
#endif
  return DeviceFacts{};
}

DeviceKind resolve_device(DeviceKind device, const DeviceFacts& facts) {
  if (device != DeviceKind::kAuto) return device;
#ifdef PAGEDW2V_HAVE_CUDA
  if (facts.usable) return DeviceKind::kCuda;
#else
  (void)facts;
#endif
  return DeviceKind::kCpu;
}

void check_device(DeviceKind device, const DeviceFacts& facts) {
  if (device != DeviceKind::kCuda) return;
#ifdef PAGEDW2V_HAVE_CUDA
  if (!facts.usable) throw Error("--device cuda: no CUDA device is available (use --device cpu)");
#else
  (void)facts;
  throw UsageError("--device cuda: this build has no CUDA backend (use --device cpu)");
#endif
}

GpuOptions resolve_gpu_options(DeviceKind device, uint64_t rows, uint32_t dim, OptimizerKind kind,
                               const GpuOptions& gpu, const DeviceFacts& facts) {
  if (device == DeviceKind::kCuda && facts.usable) {
    return resolve_gpu_placement(gpu, rows, dim, kind, facts);
  }
  // The CPU backend pages nothing: its tables are allocated apart, whatever --placement says.
  GpuOptions cpu = gpu;
  cpu.placement = Placement::kResident;
  return cpu;
}

namespace {

/// Over ranks: CPU or GPU ranks, the rows kept on the GPUs or not, and the GPU memory
/// (plan_device; plan_sizes chooses the backend).
void plan_ranks(RunPlan& plan, const Config& config, bool resumed) {
  // Skip-gram sgd keeps its rows on the GPUs in parts and draws its negatives from each part's
  // noise table (dist/part_backend.hpp); other sgd runs train each span's rows on the GPU with
  // negatives from a pool, as for paged tables (an explicit --negative-pool asks skip-gram for
  // that way too). --device auto takes the GPUs for sgd (a resumed run: when its checkpoint was
  // trained on parts or with a pool), else the CPU. A pool is asked for by a --negative-pool
  // above 0 (a resumed run: its checkpoint's); 0 asks for none, as the option's default does.
  plan.on_parts = gpu_parts_train(config.model, config.optimizer, config.negative_pool);
  plan.rank_gpus =
      plan.kind == DeviceKind::kCuda && (config.device == DeviceKind::kCuda ||
                                         (config.optimizer == OptimizerKind::kSgd &&
                                          (!resumed || config.negative_pool > 0 || plan.on_parts)));
  if (config.given.count("placement") > 0 && config.placement != Placement::kAuto) {
    throw UsageError("--placement " + to_string(config.placement) +
                     ": over MPI ranks the tables are placed by --rank-tables; leave --placement "
                     "out");
  }
  if (config.given.count("gpu-memory") > 0 && config.gpu_memory > 0 &&
      !(plan.rank_gpus && plan.on_parts)) {
    throw UsageError(
        "--gpu-memory over MPI ranks bounds the rows each GPU keeps (skip-gram with sgd and no "
        "--negative-pool, --device cuda or auto); " +
        std::string(plan.rank_gpus ? "these ranks train each span's rows through host memory"
                                   : "these ranks train on the CPU") +
        ": leave --gpu-memory out");
  }
  // The ranks page nothing: their tables are the rows each owns, held apart.
  plan.gpu = config.gpu_options();
  plan.gpu.placement = Placement::kResident;
  plan.gpu.memory_budget =
      plan.rank_gpus ? gpu_budget(config.gpu_memory, plan.device.free_bytes) : 0;
}

}  // namespace

RunPlan plan_device(const Config& config, uint64_t rows, const DeviceFacts& facts, uint32_t ranks,
                    bool resumed) {
  RunPlan plan;
  plan.device = facts;
  plan.kind = resolve_device(config.device, facts);
  plan.ranks = std::max<uint32_t>(ranks, 1);
  plan.over_ranks = plan.ranks > 1;
  if (plan.over_ranks) {
    plan_ranks(plan, config, resumed);
    return plan;
  }
  plan.gpu = resolve_gpu_options(plan.kind, rows, config.dim, config.optimizer,
                                 config.gpu_options(), facts);
  return plan;
}

CudaBackendOptions cuda_options(const RunPlan& plan, const CudaBackendOptions& tuning) {
  CudaBackendOptions options = tuning;
  options.gpu = plan.gpu;
  // Deterministic: one warp per launch, launches in order, but the streams, eviction depth and
  // sizes of a default run, so that a deterministic run checks the pipeline users run.
  options.ordered = options.ordered || plan.gpu.deterministic;
  return options;
}

void plan_sizes(RunPlan& plan, Config& config, const TrainData& data, bool resumed,
                const CudaBackendOptions& tuning, const GpuScratchBytes& scratch) {
  if (plan.over_ranks) {
    if (!resumed && plan.rank_gpus) {
      if (plan.on_parts) {
        config.negative_pool = 0;
      } else if (config.negative_pool == 0 && config.given.count("negative-pool") == 0) {
        config.negative_pool = auto_negative_pool(config.negative_pool);
        if (config.given.count("pool-words") == 0) {
          config.pool_words = auto_pool_words(config.negative_pool);
        }
      }
    }
    // The backend of every rank, for the run as it trains: with the pool settled above.
    TrainData trained = data;
    trained.params.negative_pool = config.negative_pool;
    plan.rank_backend = dist::choose_rank_backend(trained, config.rank_tables, plan.ranks,
                                                  config.effective_threads(), plan.rank_gpus);
    const bool gpu_rows = plan.rank_backend == dist::RankBackendKind::kGpuReplica ||
                          plan.rank_backend == dist::RankBackendKind::kGpuParts;
    if (plan.rank_gpus && gpu_rows != plan.on_parts) {
      throw Error("the run's plan: GPU ranks chose the " + to_string(plan.rank_backend) +
                  " backend but " + (plan.on_parts ? "keep" : "do not keep") +
                  " their rows on the GPUs");
    }
    return;
  }
  if (plan.kind != DeviceKind::kCuda || !plan.device.usable) return;
  GpuScratchBytes sizes = scratch;
#ifdef PAGEDW2V_HAVE_CUDA
  if (!sizes) sizes = cuda_scratch_bytes;
#endif
  if (!sizes) throw Error("--device cuda: this build has no CUDA backend (use --device cpu)");
  GpuPlanInput in = make_plan_input(data, cuda_options(plan, tuning));
  // Paged tables leave to the plan the sizes the run did not give (a checkpoint fixes them).
  const bool choose = !resumed && plan.paged();
  const auto left = [&](const char* name) { return choose && config.given.count(name) == 0; };
  in.choose_pool = left("negative-pool");
  in.choose_pool_blocks = left("pool-words");
  in.choose_batch = left("batch-words");
  plan.gpu_plan = plan_gpu(in, plan_device_facts(plan.device, plan.gpu.memory_budget, sizes));
  if (choose) {
    config.negative_pool = plan.gpu_plan->negative_pool;
    config.pool_words = uint64_t{plan.gpu_plan->pool_blocks} * kBlockWords;
    config.batch_words = uint64_t{plan.gpu_plan->super_batch_blocks} * kBlockWords;
  }
}

}  // namespace pagedw2v
