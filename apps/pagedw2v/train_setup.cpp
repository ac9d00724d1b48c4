#include "train_setup.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "io/hdf5_io.hpp"
#include "io/isolated_call.hpp"
#include "train/continue_from.hpp"
#include "train/run_plan.hpp"
#include "train/trainer.hpp"

namespace pagedw2v::app {
namespace {

constexpr const char* kOptionPrefix = "option.";
constexpr const char* kEpochAttribute = "epoch";  ///< the epoch a checkpoint stands in

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

/// The options checkpoint `file` recorded, or nothing when they cannot be read (the trainer then
/// reports that with its own message). A file whose read crashed or ran out of time is damaged:
/// that error ends the command here, rather than after a second read as long.
std::vector<Attribute> recorded_options(const H5Source& file) {
  H5Request request;
  for (const OptionSpec& spec : train_options()) {
    request.attributes.push_back(kOptionPrefix + spec.name);
  }
  request.attributes.push_back(kEpochAttribute);
  try {
    return file.parse(request).attributes;
  } catch (const DamagedFile&) {
    throw;
  } catch (const Error&) {
    return {};
  }
}

/// The settings checkpoint attributes `recorded` hold, as the trainer's load reads them; a value
/// this version no longer accepts is left at its default (the trainer reports it).
Config recorded_config(const std::vector<Attribute>& recorded) {
  Config config;
  for (const Attribute& a : recorded) {
    const auto* value = std::get_if<std::string>(&a.value);
    if (value == nullptr || a.name.rfind(kOptionPrefix, 0) != 0) continue;
    try {
      apply_option(config, a.name.substr(std::strlen(kOptionPrefix)), *value);
    } catch (const UsageError&) {
    }
  }
  config.given.clear();
  return config;
}

}  // namespace

std::string settings_summary(const Config& config, const DeviceFacts& device_facts,
                             const std::string& config_file, bool resumed) {
  std::string s = "settings: " + to_string(config.model) + ", dim " + option_value(config, "dim") +
                  ", window " + option_value(config, "window") + ", negative " +
                  option_value(config, "negative") + ", sample " + option_value(config, "sample") +
                  ", min-count " + option_value(config, "min-count");
  if (config.hs) s += ", hs (hierarchical softmax)";
  if (config.max_vocab > 0) s += ", max-vocab " + option_value(config, "max-vocab");
  if (config.phrases > 0) {
    s += ", phrases " + option_value(config, "phrases") + " (threshold " +
         option_value(config, "phrase-threshold") + ", min-count " +
         option_value(config, "phrase-min-count") + ")";
  }
  if (!config.phrases_from.empty()) s += ", phrases-from " + config.phrases_from;
  if (config.optimizer == OptimizerKind::kSgd) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%g", static_cast<double>(config.effective_alpha()));
    s += std::string(", alpha ") + alpha + (config.alpha > 0 ? "" : " (auto)");
  } else {
    s += ", optimizer " + option_value(config, "optimizer") + ", lr " + option_value(config, "lr");
  }
  if (config.negative_pool > 0) s += ", negative-pool " + option_value(config, "negative-pool");
  s += ", epochs " + option_value(config, "epochs") + ", seed " + option_value(config, "seed");
  s += ", threads " + std::to_string(config.effective_threads());
  const std::string device = to_string(config.device);
  const DeviceKind kind = resolve_device(config.device, device_facts);
  const std::string resolved = to_string(kind);
  s += ", device " + (device == resolved ? device : device + " (" + resolved + ")");
  if (kind == DeviceKind::kCuda) {
    s += ", placement " + option_value(config, "placement") + ", gpu-memory " +
         option_value(config, "gpu-memory");
  }
  if (config.storage != Storage::kFp32) s += ", storage " + option_value(config, "storage");
  s += ", formats " + option_value(config, "format");
  std::string from = "defaults";
  if (!config_file.empty()) from += " < " + config_file;
  if (!config.given.empty()) from += " < flags";
  if (resumed) from += "; the model's from the checkpoint";
  return s + " [" + from + "]";
}

void prepare_training(Config& config, const DeviceFacts& device, const std::string& config_file,
                      std::FILE* log) {
  if (!config.corpus.empty()) {
    // Every input absolute, so a checkpoint resumes from anywhere; standard input stays "-".
    std::string paths;
    for (const std::string& path : corpus_paths(config)) {
      paths += (paths.empty() ? "" : "\n") + (path == "-" ? path : absolute_path(path));
    }
    config.corpus = paths;
  }
  // A checkpoint resumes from anywhere with the phrases it was trained on.
  if (!config.phrases_from.empty()) config.phrases_from = absolute_path(config.phrases_from);
  check_device(config.device, device);
  // Before a checkpoint is opened: what --continue-from cannot go with.
  check_continue_settings(config);

  Config shown = config;
  if (!config.resume.empty()) {
    // Opened once here: the trainer reads the checkpoint from this open file, so the settings
    // shown are those of the file it resumes, whatever the path names by then. A file that
    // cannot be opened is left to the trainer to report.
    try {
      config.resume_file = std::make_shared<const H5Source>(config.resume);
    } catch (const Error&) {
      config.resume_file.reset();
    }
    const std::vector<Attribute> recorded =
        config.resume_file ? recorded_options(*config.resume_file) : std::vector<Attribute>();
    // What the checkpoint recorded must hold together on its own, as checkpoint.cpp checks when
    // the trainer loads it: a damaged file's settings are its fault, not a usage error.
    const Config recorded_alone = recorded_config(recorded);
    // The settings shown are the run's: the trainer's one rule of what a resume keeps.
    if (!recorded.empty()) shown = merge_for_resume(recorded_alone, config);
    try {
      check_optimizer_settings(recorded_alone);
    } catch (const UsageError& e) {
      throw Error("checkpoint '" + config.resume + "' is damaged: " + e.what());
    }
    // Said before anything reads the corpus: these need only the checkpoint.
    for (const Attribute& a : recorded) {
      const auto* epoch = std::get_if<int64_t>(&a.value);
      if (a.name != kEpochAttribute || epoch == nullptr || *epoch < 0) continue;
      // Past the epochs its own run asked for, the file is damaged (as the trainer's load
      // says), whatever this command asks for.
      if (static_cast<uint64_t>(*epoch) > recorded_alone.epochs) {
        throw Error("checkpoint '" + config.resume + "' is damaged: 'epoch' is " +
                    std::to_string(*epoch) + ", outside 0.." +
                    std::to_string(recorded_alone.epochs));
      }
      if (static_cast<uint64_t>(*epoch) >= shown.epochs) {
        throw UsageError("the checkpoint has finished " + std::to_string(*epoch) +
                         " epochs; raise --epochs to train longer");
      }
    }
    if (config.given.count("corpus") == 0 && !recorded.empty() && !shown.corpus.empty()) {
      for (const std::string& path : corpus_paths(shown)) {
        if (path == "-") {
          throw UsageError("checkpoint '" + config.resume +
                           "' was trained on standard input, which cannot be read again: give "
                           "the same text with --corpus FILE, or pipe it again with --corpus - "
                           "(its words are checked against the checkpoint's)");
        }
        // Checkpoints of earlier versions hold the corpus path as it was typed.
        if (::access(path.c_str(), R_OK) != 0) {
          throw Error("cannot open '" + path + "', the corpus path that checkpoint '" +
                      config.resume + "' recorded: " + std::strerror(errno) +
                      "; --corpus FILE gives its path here");
        }
      }
    }
  }

  if (!config.continue_from.empty() && config.resume.empty()) {
    // Absolute, as run.json and the checkpoints record it; the settings shown are the run's.
    config.continue_from = absolute_path(config.continue_from);
    const std::string checkpoint = continue_checkpoint(config.continue_from);
    std::vector<Attribute> recorded;
    try {
      recorded = recorded_options(H5Source(checkpoint));
    } catch (const DamagedFile&) {
      throw;
    } catch (const Error&) {
      // Not readable as a checkpoint: the trainer says so with its own message.
    }
    if (!recorded.empty()) shown = merge_for_continue(recorded_config(recorded), shown);
  }

  const unsigned cores = std::thread::hardware_concurrency();
  if (config.threads > 0 && cores > 0 && config.threads > cores) {
    std::fprintf(stderr,
                 "pagedw2v: warning: --threads %u is more than the %u cores of this machine; "
                 "training is not faster for it\n",
                 config.threads, cores);
  }
  // The settings are printed only when they make a run (the trainer validates them again).
  validate(shown);
  if (!config.quiet && log != nullptr) {
    std::fprintf(log, "%s\n",
                 settings_summary(shown, device, config_file,
                                  !config.resume.empty() || !config.continue_from.empty())
                     .c_str());
    std::fflush(log);
  }
}

}  // namespace pagedw2v::app
