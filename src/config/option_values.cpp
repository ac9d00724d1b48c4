/// @file option_values.cpp
/// Reading and printing an option's value (option_values.hpp).

#include "config/option_values.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "base/error.hpp"

namespace pagedw2v {
namespace detail {

[[noreturn]] void bad_value(const std::string& name, const std::string& expected,
                            const std::string& value) {
  throw UsageError("--" + name + ": expected " + expected + ", got '" + value + "'");
}

uint64_t parse_uint(const std::string& name, const std::string& value, uint64_t lo, uint64_t hi) {
  const std::string expected =
      "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    bad_value(name, expected, value);
  }
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi) bad_value(name, expected, value);
  return v;
}

double parse_double(const std::string& name, const std::string& value, double lo, double hi,
                    bool lo_open) {
  std::ostringstream expected;
  expected << "a number in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
  char* end = nullptr;
  errno = 0;
  const double v = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE ||
      !std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo)) {
    bad_value(name, expected.str(), value);
  }
  return v;
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (value == "true" || value == "1" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "no") return false;
  bad_value(name, "true or false", value);
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace detail
}  // namespace pagedw2v
