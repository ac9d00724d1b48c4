#include "base/byte_size.hpp"

#include <cctype>
#include <cstdio>

namespace pagedw2v {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The multiplier of `unit` (already lower case), or 0 when it is not a unit.
uint64_t unit_multiplier(const std::string& unit) {
  struct Unit {
    const char* name;
    uint64_t multiplier;
  };
  static const Unit kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", uint64_t{1} << 10},
      {"kib", uint64_t{1} << 10},
      {"kb", 1000},
      {"m", uint64_t{1} << 20},
      {"mib", uint64_t{1} << 20},
      {"mb", 1000000},
      {"g", uint64_t{1} << 30},
      {"gib", uint64_t{1} << 30},
      {"gb", 1000000000},
      {"t", uint64_t{1} << 40},
      {"tib", uint64_t{1} << 40},
      {"tb", 1000000000000},
  };
  for (const Unit& u : kUnits) {
    if (unit == u.name) return u.multiplier;
  }
  return 0;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  // Exact arithmetic in 128 bits: digits beyond 2^64 bytes are caught, not wrapped.
  using U128 = unsigned __int128;
  constexpr U128 kMax = ~uint64_t{0};
  size_t i = 0;
  U128 whole = 0;
  size_t whole_digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i, ++whole_digits) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > kMax) return std::nullopt;
  }
  U128 fraction = 0, scale = 1;
  size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && is_digit(text[i]); ++i, ++fraction_digits) {
      // Digits past the 18th move the result by less than a millionth of a byte (the largest
      // unit is 2^40): they are read but not kept.
      if (fraction_digits < 18) {
        fraction = fraction * 10 + static_cast<unsigned>(text[i] - '0');
        scale *= 10;
      }
    }
    if (fraction_digits == 0) return std::nullopt;
  }
  if (whole_digits == 0) return std::nullopt;
  const size_t number_end = i;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string unit = lower(text.substr(i));
  if (unit.empty() && i > number_end) return std::nullopt;  // spaces, then nothing
  const uint64_t multiplier = unit_multiplier(unit);
  if (multiplier == 0) return std::nullopt;
  if (multiplier == 1 && fraction != 0) return std::nullopt;
  const U128 bytes = whole * multiplier + (fraction * multiplier + scale / 2) / scale;
  if (bytes > kMax) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::string format_byte_size(uint64_t bytes) {
  static const char* const kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int k = 0; k < 4; ++k) {
    const uint64_t unit = uint64_t{1} << (10 * (4 - k));
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[k];
  }
  return std::to_string(bytes);
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (uint64_t{1} << 30); }

std::string format_gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", gib(bytes));
  return buf;
}

std::string format_bytes_rounded(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace pagedw2v
