#pragma once
/// @file run_record.hpp
/// What run.json holds beside the figures of the run: its settings as JSON values, and the loss
/// of the epochs that earlier commands of a resumed run trained.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace pagedw2v {

/// Every option of `config` (config.hpp's table) as JSON: flags as booleans, numbers as numbers,
/// the rest ("auto", "all", paths, names) as strings.
nlohmann::ordered_json settings_json(const Config& config);

/// The run.json that holds the record of the run whose checkpoint is `checkpoint`: the file
/// beside the checkpoints' directory (`DIR/checkpoints/epoch-2.h5` → `DIR/run.json`).
std::string run_record_path_of(const std::string& checkpoint);

/// The mean losses of the first `epochs` epochs as the run.json at `path` records them
/// (`loss_per_epoch`, in the form of this version or of earlier ones), NaN for an epoch it does
/// not hold or when it cannot be read; always `epochs` values.
std::vector<double> recorded_epoch_losses(const std::string& path, uint32_t epochs);

}  // namespace pagedw2v
