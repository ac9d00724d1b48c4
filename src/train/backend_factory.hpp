#pragma once
/// @file backend_factory.hpp
/// The one place that knows every backend: creates the CPU or the CUDA backend for a run, and
/// says before the model is allocated whether the chosen one will page its tables.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "config/options.hpp"

namespace pagedw2v {

/// The GPU settings of a run resolved once, before the model is allocated: with the CUDA
/// backend (`device` cuda, or auto with a GPU present), the budget from one memory query and
/// placement auto decided for tables of `rows × dim` with optimizer `kind`
/// (resolve_cuda_gpu_options); for the CPU backend, placement resident (it pages nothing). Allocate
/// the model interleaved when the placement is paged, and hand the same settings to make_backend,
/// which then plans under them without deciding again.
GpuOptions resolve_gpu_options(DeviceKind device, uint64_t rows, uint32_t dim, OptimizerKind kind,
                               const GpuOptions& gpu);

/// `config` with the training sizes that paged tables leave to the plan chosen, once, before
/// the model is allocated: with the CUDA backend and settings `gpu` (resolve_gpu_options) that
/// page the tables, a negative pool when --negative-pool was not given, its period when
/// --pool-words was not, and with an optimizer the super-batch when --batch-words was not
/// (plan_cuda_train_params; `data` is the run's data under `config`). Given settings are kept
/// and checked. A checkpoint of the run records the values chosen. Unchanged for the CPU
/// backend and resident tables.
Config plan_train_sizes(const Config& config, const TrainData& data, const GpuOptions& gpu);

/// Checks, before any work, that `device` can be used: throws what make_backend() would throw
/// for --device cuda in a build without CUDA or on a machine without a GPU.
void check_device(DeviceKind device);

/// The device `device` resolves to on this machine: kAuto becomes kCuda or kCpu.
DeviceKind resolve_device(DeviceKind device);

/// Starts what the backend for `device` needs before its first use and costs time of its own
/// (with CUDA: the device's context) on a thread, while the caller goes on (counting and
/// encoding the corpus); the destructor waits for it. Nothing to do for the CPU backend.
class BackendWarmUp {
 public:
  explicit BackendWarmUp(DeviceKind device);
  ~BackendWarmUp();
  BackendWarmUp(const BackendWarmUp&) = delete;
  BackendWarmUp& operator=(const BackendWarmUp&) = delete;
  /// Waits for the work started (once; later calls return at once).
  void wait();

 private:
  std::thread thread_;
};

/// Creates the backend for `device`. Throws UsageError when CUDA is asked for and cannot be used.
std::unique_ptr<Backend> make_backend(DeviceKind device, Model& model, const TrainData& data,
                                      uint32_t threads, const GpuOptions& gpu = {});

}  // namespace pagedw2v
