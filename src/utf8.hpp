#pragma once
/// @file utf8.hpp
/// Checking and repairing UTF-8 text read from files (JSON reports must be UTF-8).

#include <cstddef>
#include <string>
#include <string_view>

namespace pagedw2v {

/// The length of the well-formed UTF-8 sequence at the start of `text`, or 0 when it does not
/// begin with one (overlong forms, surrogates and code points past U+10FFFF are not well-formed).
inline size_t utf8_sequence_length(std::string_view text) {
  if (text.empty()) return 0;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char c = s[0];
  size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c < 0x80) {
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < len) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (s[k] < 0x80 || s[k] > 0xBF) return 0;
  }
  return len;
}

/// Whether `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) {
  while (!text.empty()) {
    const size_t len = utf8_sequence_length(text);
    if (len == 0) return false;
    text.remove_prefix(len);
  }
  return true;
}

/// `text` with each byte that does not begin a well-formed UTF-8 sequence replaced by U+FFFD.
/// Valid text is returned unchanged.
inline std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t len = utf8_sequence_length(text);
    if (len > 0) {
      out.append(text.substr(0, len));
      text.remove_prefix(len);
    } else {
      out += "\xEF\xBF\xBD";
      text.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace pagedw2v
