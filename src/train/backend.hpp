#pragma once
/// @file backend.hpp
/// The interface between the trainer and whatever runs the training step (CPU threads, a GPU).
/// The trainer owns the model in host tables and hands the backend whole work blocks; the backend
/// owns how they are computed. Every random draw is Philox keyed by (seed, token position, epoch),
/// so the result of a block does not depend on which thread or stream ran it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "host_table.hpp"
#include "sampler.hpp"
#include "train/optimizer.hpp"
#include "train/params.hpp"

namespace pagedw2v {

/// The trained state: input vectors (what users export) and output (context) vectors, and the
/// optimizer's state tables of each (state_tables(kind) apiece, shaped like their table; empty for
/// sgd).
struct Model {
  HostTable input;
  HostTable output;
  std::vector<HostTable> input_state = {};
  std::vector<HostTable> output_state = {};
};

/// Everything fixed for a run that a backend reads.
struct TrainData {
  const EncodedCorpus* corpus = nullptr;
  const std::vector<uint64_t>* blocks = nullptr;  ///< block boundaries (sentence indices)
  const std::vector<float>* keep = nullptr;       ///< subsampling keep probability per word
  const AliasTable* noise = nullptr;              ///< negative-sampling distribution
  TrainParams params;
  OptimizerParams optimizer;  ///< sgd: word2vec's per-example update; else one step per block
};

/// What training a range of blocks did.
struct SpanStats {
  uint64_t words = 0;       ///< in-vocabulary tokens read (before subsampling), word2vec's count
  uint64_t trained = 0;     ///< tokens kept after subsampling
  double loss = 0.0;        ///< sum of SGNS losses (accumulated in double)
  uint64_t loss_terms = 0;  ///< number of (centre, context) examples the loss sums over

  SpanStats& operator+=(const SpanStats& o) {
    words += o.words;
    trained += o.trained;
    loss += o.loss;
    loss_terms += o.loss_terms;
    return *this;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda", …
  virtual std::string name() const = 0;
  /// One line on how it runs (placement, cache sizes); name() when there is nothing to add.
  virtual std::string describe() const { return name(); }
  /// How many words the trainer should hand over per train() call: large enough to keep the
  /// backend busy, small enough for progress and timed checkpoints.
  virtual uint64_t span_words() const = 0;
  /// Trains blocks [first, last) of `epoch` and returns when their updates are done.
  virtual SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) = 0;
  /// Makes the host tables of the model hold the current values (a no-op for the CPU).
  virtual void sync_to_host() = 0;
  /// Reloads the backend's copy from the host tables (after a checkpoint is loaded).
  virtual void sync_from_host() = 0;
};

/// Allocates the zeroed tables of a model of `rows × dim` and the state tables optimizer `kind`
/// needs: each apart, or, when `interleaved`, all in one allocation with the rows of one id side
/// by side (input, output, input state…, output state…), which paged training moves as one run
/// of host memory. Throws Error naming what runs out of memory, with `hint` appended.
Model allocate_model(uint64_t rows, uint32_t dim, OptimizerKind kind, bool interleaved,
                     const std::string& hint);

/// Initial values as word2vec sets them: input uniform(−0.5/d, 0.5/d) drawn from Philox keyed by
/// (seed, row), output zero. `threads` threads share the rows; the values do not depend on it.
void init_model(Model& model, uint64_t seed, uint32_t threads = 1);

/// Allocates the zeroed state tables `kind` needs for both tables of `model` (none for sgd).
/// Throws Error naming the tables and the memory they need when it runs out.
void init_optimizer_state(Model& model, OptimizerKind kind);

/// How `--device` chose.
enum class DeviceKind { kCpu, kCuda, kAuto };

/// Where the CUDA backend keeps the tables: `resident` holds both tables (and the optimizer
/// state) in GPU memory; `paged` keeps them in pinned host memory and moves each super-batch's
/// rows to the GPU, the most frequent rows cached there for the whole run; `auto` is resident
/// when everything fits the GPU memory budget, else paged.
enum class Placement { kAuto, kResident, kPaged };

/// GPU settings of a run (ignored by the CPU backend).
struct GpuOptions {
  Placement placement = Placement::kAuto;
  /// GPU memory the backend may use, in bytes; 0 = what is free minus a margin.
  uint64_t memory_budget = 0;
  /// One warp per launch, so that a run repeats bit for bit (CudaBackendOptions::serial): for
  /// reproducibility checks and tests, far slower than the default.
  bool deterministic = false;
};

/// True when make_backend with these settings will page the tables (the CUDA backend, a device
/// present, paged placement or auto placement with tables beyond the budget): the model is then
/// best allocated interleaved.
bool backend_pages_tables(DeviceKind device, uint64_t rows, uint32_t dim, OptimizerKind kind,
                          const GpuOptions& gpu);

/// Checks, before any work, that `device` can be used: throws what make_backend() would throw
/// for --device cuda in a build without CUDA or on a machine without a GPU.
void check_device(DeviceKind device);

/// The device `device` resolves to on this machine: kAuto becomes kCuda or kCpu.
DeviceKind resolve_device(DeviceKind device);

/// Creates the backend for `device`. Throws UsageError when CUDA is asked for and cannot be used.
std::unique_ptr<Backend> make_backend(DeviceKind device, Model& model, const TrainData& data,
                                      uint32_t threads, const GpuOptions& gpu = {});

}  // namespace pagedw2v
