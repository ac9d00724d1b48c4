#pragma once
/// @file tokenizer.hpp
/// word2vec's tokenisation over raw bytes, made UTF-8 safe.
///
/// - Words are maximal runs of bytes other than space, tab, CR, LF, VT, FF and NUL; a LF ends a
///   sentence. NUL separates words because no word may hold one: the HDF5 files (checkpoints
///   included) store words as C strings, as word2vec.c holds them.
/// - Every word is valid UTF-8: a byte sequence that is not (Latin-1 text, a cut character) is
///   repaired, each maximal invalid subpart becoming U+FFFD, as Python's
///   `bytes.decode("utf-8", "replace")` does. So every file written from the words loads in Python.
/// - A word longer than kMaxWordBytes is cut to its longest prefix of whole characters that fits.
/// - Case is kept unless TextOptions::lowercase: then ASCII A-Z and the upper-case letters of
///   Latin-1, Latin Extended-A, Greek (those with tonos too) and Cyrillic become lower case
///   (one-to-one mappings that keep a character's length; other scripts are unchanged).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace pagedw2v {

/// word2vec's MAX_STRING is 100 bytes.
inline constexpr size_t kMaxWordBytes = 100;

/// How words are read from text; part of a vocabulary's identity (a checkpoint records it).
struct TextOptions {
  bool lowercase = false;
};

namespace detail {

struct SpaceTable {
  bool space[256] = {};
  constexpr SpaceTable() {
    for (unsigned char c : {'\0', ' ', '\t', '\n', '\r', '\v', '\f'}) space[c] = true;
  }
};
inline constexpr SpaceTable kSpaces{};

/// Length of the valid UTF-8 character at p[0..n), or 0 when it is invalid; `*valid_prefix` is
/// then the length of its maximal valid subpart (at least 1 byte is skipped by the caller).
inline size_t utf8_char(const unsigned char* p, size_t n, size_t* valid_prefix) {
  const unsigned char c = p[0];
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    *valid_prefix = 1;
    return 0;
  }
  size_t k = 1;
  for (; k < len; ++k) {
    if (k >= n) break;
    const unsigned char b = p[k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  if (k == len) return len;
  *valid_prefix = k;
  return 0;
}

/// The lower-case form of the 2-byte character b0 b1 (same length), or b0 b1 unchanged.
inline void lower_utf8_2(unsigned char* b0, unsigned char* b1) {
  const uint32_t cp = ((*b0 & 0x1Fu) << 6) | (*b1 & 0x3Fu);
  uint32_t lower = cp;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) ||
      (cp >= 0x410 && cp <= 0x42F)) {
    lower = cp + 0x20;
  } else if (cp >= 0x400 && cp <= 0x40F) {
    lower = cp + 0x50;
  } else if (cp == 0x386) {
    lower = 0x3AC;  // Greek capitals with tonos: Ά Έ Ή Ί Ό Ύ Ώ
  } else if (cp >= 0x388 && cp <= 0x38A) {
    lower = cp + 0x25;
  } else if (cp == 0x38C) {
    lower = 0x3CC;
  } else if (cp == 0x38E || cp == 0x38F) {
    lower = cp + 0x3F;
  } else if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 &&
             cp != 0x149 && cp != 0x17F) {
    // Latin Extended-A pairs: even code points are upper case, except in 0x139-0x148 and
    // 0x179-0x17E, where odd ones are.
    const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if ((cp & 1u) == (odd_upper ? 1u : 0u)) lower = cp + 1;
    if (cp == 0x178) lower = 0xFF;  // Ÿ
  }
  if (lower == cp || lower > 0x7FF) return;
  *b0 = static_cast<unsigned char>(0xC0 | (lower >> 6));
  *b1 = static_cast<unsigned char>(0x80 | (lower & 0x3F));
}

/// Whether the word needs normalize_word's slow path: a byte past ASCII, an upper-case ASCII
/// letter when lowering, or more than kMaxWordBytes bytes.
inline bool plain_word(const char* p, size_t n, bool lowercase) {
  if (n > kMaxWordBytes) return false;
  uint64_t high = 0, upper = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    high |= w;
    // Bytes 'A'..'Z' (0x41..0x5A) of ASCII words: (b + 0x3F) has bit 7 when b >= 0x41,
    // (b + 0x25) when b >= 0x5B.
    upper |= ((w & 0x7F7F7F7F7F7F7F7Full) + 0x3F3F3F3F3F3F3F3Full) &
             ~((w & 0x7F7F7F7F7F7F7F7Full) + 0x2525252525252525ull);
  }
  for (; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    high |= c;
    upper |= (c >= 'A' && c <= 'Z') ? 0x80 : 0;
  }
  if (high & 0x8080808080808080ull) return false;
  return !lowercase || (upper & 0x8080808080808080ull) == 0;
}

}  // namespace detail

inline bool is_space_byte(unsigned char c) { return detail::kSpaces.space[c]; }

/// Why `word` cannot be stored as one word in vocab.tsv, the word2vec formats or an HDF5 file
/// (empty, or holding a byte at which the tokenizer splits words: space, tab, CR, LF, VT, FF,
/// NUL), or nullptr when it can.
inline const char* unstorable_word(std::string_view word) {
  if (word.empty()) return "is empty";
  for (const char c : word) {
    if (c == '\n') return "holds a line break";
    if (c == '\0') return "holds a NUL byte";
    if (is_space_byte(static_cast<unsigned char>(c))) return "holds a space, tab, CR, VT or FF";
  }
  return nullptr;
}

/// The word as the vocabulary holds it: `raw` (a run of non-space bytes) repaired to valid UTF-8,
/// lower-cased if asked, and cut to at most kMaxWordBytes bytes at a character boundary. Returns
/// a view of `raw` when nothing changes, else of `buf` (kMaxWordBytes bytes at least).
inline std::string_view normalize_word(std::string_view raw, const TextOptions& options,
                                       char* buf) {
  if (detail::plain_word(raw.data(), raw.size(), options.lowercase)) return raw;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(raw.data());
  const size_t n = raw.size();
  unsigned char* out = reinterpret_cast<unsigned char*>(buf);
  size_t len = 0, i = 0;
  while (i < n) {
    size_t bad = 0;
    const size_t k = detail::utf8_char(p + i, n - i, &bad);
    const size_t need = k > 0 ? k : 3;
    if (len + need > kMaxWordBytes) break;
    if (k == 0) {
      out[len++] = 0xEF;
      out[len++] = 0xBF;
      out[len++] = 0xBD;
      i += bad;
      continue;
    }
    std::memcpy(out + len, p + i, k);
    if (options.lowercase) {
      if (k == 1 && out[len] >= 'A' && out[len] <= 'Z') out[len] += 'a' - 'A';
      if (k == 2) detail::lower_utf8_2(out + len, out + len + 1);
    }
    len += k;
    i += k;
  }
  return std::string_view(buf, len);
}

/// Calls `on_word(std::string_view)` for every word (normalised as above; the view lives until
/// the next call) and `on_newline()` for every LF.
template <class OnWord, class OnNewline>
void tokenize(std::string_view text, const TextOptions& options, OnWord&& on_word,
              OnNewline&& on_newline) {
  char buf[kMaxWordBytes];
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
    on_word(normalize_word(std::string_view(start, static_cast<size_t>(p - start)), options, buf));
  }
}

/// tokenize() with the default options (case kept).
template <class OnWord, class OnNewline>
void tokenize(std::string_view text, OnWord&& on_word, OnNewline&& on_newline) {
  tokenize(text, TextOptions{}, on_word, on_newline);
}

}  // namespace pagedw2v
