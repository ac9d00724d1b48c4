#pragma once
/// @file trainer.hpp
/// A training run from a corpus file to the exported vectors: vocabulary, encoding, sampling
/// tables, model, backend, epochs with progress, export.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config.hpp"

namespace pagedw2v {

struct TrainSummary {
  uint64_t vocab_size = 0;
  uint64_t words = 0;        ///< in-vocabulary words trained over, all epochs
  double train_seconds = 0;  ///< the epochs alone
  double total_seconds = 0;  ///< vocabulary, encoding, training and export
  double final_loss = 0;     ///< smoothed loss per example at the end
  std::string device;
  std::string last_checkpoint;  ///< path of the newest checkpoint written
};

/// Runs `config` end to end (or continues `config.resume`); progress goes to `log` unless
/// config.quiet. When `*stop` becomes non-zero (a signal number, set by a signal handler), training
/// stops at the next safe point, writes a checkpoint and throws Interrupted.
TrainSummary run_training(const Config& config, std::FILE* log = stderr,
                          const std::atomic<int>* stop = nullptr);

}  // namespace pagedw2v
