#pragma once
/// @file options.hpp
/// The choices of device and table placement a run makes, and the GPU settings as the CUDA
/// backend takes them. Layer config: config, the factory and the CUDA backend share them.

#include <cstdint>
#include <string>

namespace pagedw2v {

/// How `--device` chose.
enum class DeviceKind { kCpu, kCuda, kAuto };

inline std::string to_string(DeviceKind device) {
  switch (device) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
    default:
      return "auto";
  }
}

/// How CPU ranks of a run over MPI hold the tables (dist/): `sharded`, each rank 1/N of the rows
/// and copies of the others' for a span (sharded_backend.hpp); `replicated`, whole copies on
/// every rank whose changes the ranks sum (replica_backend.hpp, sgd only); `auto`, replicated
/// for sgd over a vocabulary of at most 131,072 words, else sharded.
enum class RankTables { kAuto, kSharded, kReplicated };

inline std::string to_string(RankTables tables) {
  switch (tables) {
    case RankTables::kSharded:
      return "sharded";
    case RankTables::kReplicated:
      return "replicated";
    default:
      return "auto";
  }
}

/// How a resumed run's learning rate goes on (--lr-schedule): `rejoin`, the rate a run of
/// --epochs has at this point (a resume of the same epochs continues exactly; raised epochs raise
/// the rate); `continue`, from the rate the checkpoint stopped at, linearly to the floor at the
/// new end; `restart`, from the starting rate again, linearly to the floor at the new end.
enum class LrResume { kRejoin, kContinue, kRestart };

/// Which count lets a word that a continued run (--continue-from) does not have join it
/// (--continue-count): `new`, its count in the new text alone (gensim's build_vocab(update=True));
/// `merged`, its count in the new text and in the corpus the run trained on, counted again.
enum class ContinueCount { kNew, kMerged };

inline std::string to_string(ContinueCount count) {
  return count == ContinueCount::kMerged ? "merged" : "new";
}

/// Where the CUDA backend keeps the tables: `resident` holds both tables (and the optimizer
/// state) in GPU memory; `paged` keeps them in pinned host memory and moves each super-batch's
/// rows to the GPU, the most frequent rows cached there for the whole run; `auto` is resident
/// when everything fits the GPU memory budget, else paged.
enum class Placement { kAuto, kResident, kPaged };

inline std::string to_string(Placement placement) {
  switch (placement) {
    case Placement::kResident:
      return "resident";
    case Placement::kPaged:
      return "paged";
    default:
      return "auto";
  }
}

/// GPU settings of a run (ignored by the CPU backend).
struct GpuOptions {
  Placement placement = Placement::kAuto;
  /// GPU memory the backend may use, in bytes; 0 = what is free minus a margin.
  uint64_t memory_budget = 0;
  /// One warp per launch, so that a run repeats bit for bit (CudaBackendOptions::serial): for
  /// reproducibility checks and tests, far slower than the default.
  bool deterministic = false;
};

}  // namespace pagedw2v
