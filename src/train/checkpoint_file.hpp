#pragma once
/// @file checkpoint_file.hpp
/// What checkpoint.cpp (writing) and checkpoint_load.cpp (reading) agree on about a checkpoint
/// file: the prefix of the options it records, which options those are, and the names of the
/// optimizer's state datasets.

#include <cstdint>
#include <string>

#include "config/config.hpp"

namespace pagedw2v {
namespace checkpoint_file {

inline constexpr const char* kOptionPrefix = "option.";

/// Options a checkpoint records: the model's, the schedule's, and how the run used the CPU (a
/// resumed run keeps its thread count and determinism).
inline bool recorded(const OptionSpec& spec) {
  return spec.is_model || spec.name == "corpus" || spec.name == "epochs" ||
         spec.name == "threads" || spec.name == "deterministic" || spec.name == "rank-tables" ||
         spec.name == "device" || spec.name == "placement" || spec.name == "continue-from" ||
         spec.name == "continue-count";
}

/// The attributes of a continued run's checkpoints that record where it started
/// (Config::continued), in ContinueOrigin's order.
inline constexpr const char* kContinuedCheckpoint = "continued_from.checkpoint";
inline constexpr const char* kContinuedSet = "continued_from.output_set";
inline constexpr const char* kContinuedKept = "continued_from.words_kept";
inline constexpr const char* kContinuedAdded = "continued_from.words_added";
inline constexpr const char* kContinuedCounted = "continued_from.counted_before";
inline constexpr const char* kContinuedLeftOut = "continued_from.new_words_left_out";
inline constexpr const char* kContinuedTokensLeftOut = "continued_from.new_tokens_left_out";

/// The dataset of hierarchical softmax's inner-node table beside negative sampling
/// (Model::nodes).
inline constexpr const char* kNodesDataset = "hs_nodes";

/// The dataset of state table `k` of the input, output or inner-node ("nodes") table.
inline std::string state_dataset(const char* table, uint32_t k) {
  return std::string("optimizer/") + table + "_" + std::to_string(k);
}

}  // namespace checkpoint_file
}  // namespace pagedw2v
