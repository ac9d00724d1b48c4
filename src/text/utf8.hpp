#pragma once
/// @file utf8.hpp
/// Checking and repairing UTF-8 text read from files (JSON reports must be UTF-8), and showing it
/// on a terminal.

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

/// `text` as it may be shown on a terminal: what could steer the terminal instead of being
/// shown (C0 control characters such as ESC, DEL, the C1 controls U+0080-U+009F, bytes that are
/// not UTF-8) becomes `\xNN`, one a byte; every other character is kept.
inline std::string terminal_safe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text[0]);
    const size_t len = utf8_sequence_length(text);
    const bool c1 = len == 2 && c == 0xC2 && static_cast<unsigned char>(text[1]) < 0xA0;
    if (len == 0 || c < 0x20 || c == 0x7F || c1) {
      const size_t n = len == 0 ? 1 : len;
      for (size_t i = 0; i < n; ++i) escape(static_cast<unsigned char>(text[i]));
      text.remove_prefix(n);
      continue;
    }
    out.append(text.substr(0, len));
    text.remove_prefix(len);
  }
  return out;
}

}  // namespace pagedw2v
