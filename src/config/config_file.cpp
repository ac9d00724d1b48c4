/// @file config_file.cpp
/// A run's settings from a TOML file (--config) and the checks of the settings as a whole
/// (`validate`, `check_optimizer_settings`); the option table they go through is config.cpp's.

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>

#include "base/error.hpp"
#include "config/config.hpp"
#include "io/export.hpp"
#include "model/negative_pool.hpp"

#ifdef PAGEDW2V_HAVE_TOML
#include <toml++/toml.h>
#endif

namespace pagedw2v {

void apply_toml_file(Config& config, const std::string& path) {
#ifdef PAGEDW2V_HAVE_TOML
  // A directory or a device (/dev/zero) would read as an empty file, a run of the defaults; a
  // pipe (`--config <(…)`) is read to its end.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw UsageError("config '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw UsageError("config '" + path + "' is a directory, not a file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    throw UsageError("config '" + path + "' is not a regular file");
  }
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "config '" << path << "'";
    if (e.source().begin.line > 0) msg << " line " << e.source().begin.line;
    msg << ": " << e.description();
    throw UsageError(msg.str());
  }
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    std::string value;
    if (auto s = node.value<std::string>(); s && node.is_string()) {
      value = *s;
    } else if (node.is_integer()) {
      value = std::to_string(*node.value<int64_t>());
    } else if (node.is_floating_point()) {
      std::ostringstream os;
      os.precision(17);
      os << *node.value<double>();
      value = os.str();
    } else if (node.is_boolean()) {
      value = *node.value<bool>() ? "true" : "false";
    } else if (node.is_array()) {
      const toml::array& arr = *node.as_array();
      for (size_t i = 0; i < arr.size(); ++i) {
        const auto s = arr[i].value<std::string>();
        if (!s) throw UsageError("config '" + path + "': '" + name + "' must list strings");
        value += (i ? (name == "corpus" ? "\n" : ",") : "") + *s;
      }
    } else {
      throw UsageError("config '" + path + "': unsupported value for '" + name + "'");
    }
    try {
      apply_option(config, name, value);
    } catch (const UsageError& e) {
      throw UsageError("config '" + path + "': " + e.what());
    }
  }
#else
  (void)config;
  throw UsageError("config '" + path + "': this build has no TOML support (install toml++)");
#endif
}

bool toml_configs_supported() {
#ifdef PAGEDW2V_HAVE_TOML
  return true;
#else
  return false;
#endif
}

void validate(const Config& config) {
  if (config.corpus.empty() && config.resume.empty()) {
    throw UsageError("--corpus is required (or --resume CHECKPOINT)");
  }
  if (config.output.empty()) throw UsageError("--output is required");
  check_output_directory_name(config.output);
  if (config.lr_schedule != LrResume::kRejoin && config.resume.empty()) {
    throw UsageError("--lr-schedule applies to a resumed run (--resume CHECKPOINT)");
  }
  check_continue_settings(config);
  // Left out, the pool of a paged run is chosen by the plan (gpu_plan.hpp); given as 0, it is
  // refused here.
  if (config.placement == Placement::kPaged && config.device != DeviceKind::kCpu &&
      config.given.count("negative-pool") > 0) {
    require_pool_for_paging(config.negative_pool, "--placement paged with --negative-pool 0",
                            "; or leave --negative-pool out to have one chosen");
  }
  if (config.negative == 0 && !config.hs) {
    throw UsageError(
        "--negative 0 leaves nothing to train the output layer; add --hs (hierarchical softmax) "
        "or give --negative 1 or more");
  }
  if (config.storage != Storage::kFp32 && config.device == DeviceKind::kCpu) {
    throw UsageError(storage_refusal(config.storage, StorageRefusal::kCpuBackend));
  }
  if (config.hs && config.kernel == SgnsKernel::kSharedNegatives) {
    throw UsageError(
        "--kernel shared-negatives shares negative samples across a window; hierarchical "
        "softmax (--hs) follows each word's own path: leave --kernel out");
  }
  if (config.hs && config.given.count("continue-from") > 0 && !config.continue_from.empty()) {
    throw UsageError(
        "--continue-from cannot grow a run with --hs: its Huffman tree, and so every inner "
        "node's row, changes with the vocabulary (train the run with negative sampling to "
        "continue it)");
  }
  if (config.kernel == SgnsKernel::kSharedNegatives && config.model != ModelKind::kSkipGram) {
    throw UsageError(
        "--kernel shared-negatives trains skip-gram; CBOW already draws one set of negatives "
        "per window (leave --kernel out)");
  }
  // Like gensim's workers=1: reproducible runs need one thread, so asking for more contradicts it.
  if (config.deterministic &&
      (config.threads > 1 || (config.threads == 0 && config.given.count("threads") > 0))) {
    throw UsageError("--deterministic trains on one CPU thread; leave out --threads " +
                     option_value(config, "threads") + " (or set it to 1)");
  }
  if (config.rank_tables == RankTables::kReplicated && config.optimizer != OptimizerKind::kSgd) {
    throw UsageError("--rank-tables replicated trains sgd; --optimizer " +
                     to_string(config.optimizer) +
                     " over ranks needs --rank-tables sharded (or "
                     "auto)");
  }
  check_optimizer_settings(config);
  check_phrase_settings(config);
}

void check_phrase_settings(const Config& config) {
  if (config.phrases > 0 && !config.phrases_from.empty()) {
    throw UsageError("--phrases learns phrases and --phrases-from reads them; give one");
  }
  if (config.phrases == 0) {
    for (const char* name : {"phrase-threshold", "phrase-min-count", "phrase-max-pairs"}) {
      if (config.given.count(name) > 0) {
        throw UsageError(std::string("--") + name + " applies to --phrases N (N passes)");
      }
    }
  }
}

void check_continue_settings(const Config& config) {
  // Checked on what was given: a resumed run of a continued one has its --continue-from from the
  // checkpoint.
  const bool continues = config.given.count("continue-from") > 0 && !config.continue_from.empty();
  if (continues && !config.resume.empty()) {
    throw UsageError(
        "--continue-from starts a new run from a finished one; --resume continues a stopped run: "
        "give one of them");
  }
  if (config.given.count("continue-count") > 0 && !continues) {
    throw UsageError("--continue-count applies to a continued run (--continue-from RUN)");
  }
  if (continues && !config.vocab_file.empty()) {
    throw UsageError(
        "--vocab cannot be given with --continue-from: the vocabulary is the run's, grown by "
        "the words of --corpus");
  }
}

void check_optimizer_settings(const Config& config) {
  const std::string optimizer = to_string(config.optimizer);
  if (config.optimizer == OptimizerKind::kSgd) {
    if (config.lr) throw UsageError("--lr applies to the other optimizers; sgd's rate is --alpha");
  } else if (config.alpha > 0.0f) {
    throw UsageError("--alpha is sgd's rate; set the rate of --optimizer " + optimizer +
                     " with --lr");
  }
  const std::pair<const char*, const std::optional<float>*> set[] = {
      {"beta1", &config.beta1},
      {"beta2", &config.beta2},
      {"eps", &config.eps},
      {"rho", &config.rho},
      {"weight-decay", &config.weight_decay}};
  for (const auto& [name, value] : set) {
    if (value->has_value() && !uses_hyperparameter(config.optimizer, name)) {
      throw UsageError(std::string("--") + name + " does not apply to --optimizer " + optimizer);
    }
  }
}

}  // namespace pagedw2v
