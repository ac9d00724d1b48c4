#include "train/run_record.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace pagedw2v {
namespace {

/// `text` as a JSON number when all of it is one (an integer, else a finite double).
bool as_number(const std::string& text, nlohmann::ordered_json* out) {
  if (text.empty()) return false;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

nlohmann::ordered_json settings_json(const Config& config) {
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  for (const OptionSpec& spec : train_options()) {
    const std::string text = spec.get(config);
    nlohmann::ordered_json value = text;
    if (spec.is_flag) {
      value = text == "true";
    } else if (!spec.default_text.empty()) {
      // Options without a default are paths, which stay text whatever they look like.
      as_number(text, &value);
    }
    settings[spec.name] = value;
  }
  return settings;
}

std::string run_record_path_of(const std::string& checkpoint) {
  const size_t slash = checkpoint.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : checkpoint.substr(0, slash);
  const size_t up = dir.find_last_of('/');
  const std::string run = up == std::string::npos ? (dir == "checkpoints" ? "." : dir + "/..")
                                                  : dir.substr(0, up == 0 ? 1 : up);
  return run + "/run.json";
}

std::vector<double> recorded_epoch_losses(const std::string& path, uint32_t epochs) {
  std::vector<double> losses(epochs, std::nan(""));
  std::ifstream in(path);
  if (!in) return losses;
  const nlohmann::json record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("loss_per_epoch") ||
      !record["loss_per_epoch"].is_array()) {
    return losses;
  }
  const nlohmann::json& recorded = record["loss_per_epoch"];
  for (size_t e = 0; e < epochs && e < recorded.size(); ++e) {
    if (recorded[e].is_number()) {
      losses[e] = recorded[e].get<double>();
    } else if (recorded[e].is_string()) {
      nlohmann::ordered_json v;
      if (as_number(recorded[e].get<std::string>(), &v)) losses[e] = v.get<double>();
    }
  }
  return losses;
}

}  // namespace pagedw2v
