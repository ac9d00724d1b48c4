#pragma once
/// @file tokenizer.hpp
/// word2vec's tokenisation over raw bytes: words are maximal runs of bytes other than space, tab,
/// CR, LF, VT, FF and NUL; a LF ends a sentence; words longer than kMaxWordBytes are truncated.
/// Any byte sequence is valid input: invalid UTF-8 is kept as word bytes. NUL separates words
/// because no word may hold one: the HDF5 files (checkpoints included) store words as C strings,
/// as word2vec.c holds them, so a word with a NUL would not read back.

#include <cstddef>
#include <string_view>

namespace pagedw2v {

/// word2vec's MAX_STRING is 100 bytes.
inline constexpr size_t kMaxWordBytes = 100;

inline bool is_space_byte(unsigned char c) {
  return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/// Calls `on_word(std::string_view)` for every word and `on_newline()` for every LF.
template <class OnWord, class OnNewline>
void tokenize(std::string_view text, OnWord&& on_word, OnNewline&& on_newline) {
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (is_space_byte(c)) {
      if (c == '\n') on_newline();
      ++p;
      continue;
    }
    const char* start = p;
    while (p < end && !is_space_byte(static_cast<unsigned char>(*p))) ++p;
    const size_t len = static_cast<size_t>(p - start);
    on_word(std::string_view(start, len < kMaxWordBytes ? len : kMaxWordBytes));
  }
}

}  // namespace pagedw2v
