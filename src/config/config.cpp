/// @file config.cpp
/// `Config`'s derived values, and the one option table (option_table.hpp) as the library uses it:
/// `train_options`, `apply_option` and `option_value`.

#include "config/config.hpp"

#include <algorithm>
#include <sstream>
#include <thread>

#include "base/error.hpp"
#include "config/option_table.hpp"

namespace pagedw2v {
namespace {

std::string normalise_key(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

}  // namespace

OptimizerParams Config::optimizer_params() const {
  OptimizerParams p = default_optimizer_params(optimizer);
  if (lr) p.lr = *lr;
  if (beta1) p.beta1 = *beta1;
  if (beta2) p.beta2 = *beta2;
  if (eps) p.eps = *eps;
  if (weight_decay) p.weight_decay = *weight_decay;
  if (rho) p.rho = *rho;
  return p;
}

uint32_t Config::effective_threads() const {
  if (deterministic) return 1;
  if (threads > 0) return threads;
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

std::vector<std::string> corpus_paths(const Config& config) {
  std::vector<std::string> paths;
  std::stringstream ss(config.corpus);
  std::string path;
  while (std::getline(ss, path, '\n')) {
    if (!path.empty()) paths.push_back(path);
  }
  return paths;
}

const std::vector<OptionSpec>& train_options() {
  static const std::vector<OptionSpec> options = detail::make_train_options();
  return options;
}

void apply_option(Config& config, const std::string& name, const std::string& value) {
  const std::string key = normalise_key(name);
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == key) {
      spec.set(config, value);
      config.given.insert(key);
      return;
    }
  }
  throw UsageError("unknown option '" + name + "'");
}

std::string option_value(const Config& config, const std::string& name) {
  const std::string key = normalise_key(name);
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == key) return spec.get(config);
  }
  throw UsageError("unknown option '" + name + "'");
}

}  // namespace pagedw2v
