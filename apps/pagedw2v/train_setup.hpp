#pragma once
/// @file train_setup.hpp
/// What `pagedw2v train` checks and prints before the library trains: the checks that need no
/// corpus (the device, the thread count, a resumed run's corpus path) and the settings in force.

#include <cstdio>
#include <string>

#include "config/config.hpp"
#include "gpu/device_facts.hpp"

namespace pagedw2v::app {

/// Makes the corpus path absolute (so that a checkpoint can be resumed from any directory),
/// checks that --device cuda can be used, warns when --threads is above the core count, checks
/// that a resumed run's recorded corpus can be opened (the error says where the path came from
/// and that --corpus overrides it), and prints the settings to `log` unless --quiet.
/// `config_file` is the TOML file that was applied, or "".
/// `device`: the process's one device query (query_run_device), which the run takes too.
void prepare_training(Config& config, const DeviceFacts& device, const std::string& config_file,
                      std::FILE* log);

/// The settings line: every model setting, the run's, and where they came from; the device as
/// the run's plan resolves it with `device` (resolve_device).
std::string settings_summary(const Config& config, const DeviceFacts& device,
                             const std::string& config_file, bool resumed);

}  // namespace pagedw2v::app
