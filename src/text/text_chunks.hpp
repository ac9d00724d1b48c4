#pragma once
/// @file text_chunks.hpp
/// How the ingest splits work between threads: the corpus (one or more parts, each a file's text)
/// is cut into contiguous chunks at space bytes, never inside a word, and each thread reads one
/// chunk. Because the chunks are contiguous and in corpus order, per-thread results concatenated
/// (or merged in chunk order) equal the result of one thread reading everything.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/mapped_file.hpp"  // run_guarded
#include "base/string_index.hpp"
#include "text/tokenizer.hpp"

namespace pagedw2v {

/// A contiguous run of one part. `ends_part`: it reaches the end of its part (a sentence end).
struct TextSegment {
  std::string_view text;
  bool ends_part = false;
};
/// What one thread reads, in corpus order.
using TextChunk = std::vector<TextSegment>;

/// Cuts `parts` into `n` chunks of about equal bytes (some may be empty), each cut just before a
/// space byte or at a part's end. Throws Error when a mapped file shrinks under the scan.
std::vector<TextChunk> split_text(const std::vector<std::string_view>& parts, size_t n);

/// Runs f(0) .. f(n-1) on n threads (f(0) on the caller's) and rethrows the first exception.
/// Reading a mapped file that was truncated meanwhile (SIGBUS) becomes an Error too.
void run_parallel(size_t n, const std::function<void(size_t)>& f);

namespace detail {

/// Tokenises `text` like tokenize(), handing words over in batches of up to 16 after calling
/// `prefetch(hash)` for each, so that the hash-table misses of a batch overlap. Calls
/// `on_word(word, hash)` and `on_newline()` in text order.
template <class Prefetch, class OnWord, class OnNewline>
void scan_words(std::string_view text, const TextOptions& options, Prefetch&& prefetch,
                OnWord&& on_word, OnNewline&& on_newline) {
  constexpr int kWords = 16, kEvents = 64;
  constexpr uint32_t kNewline = 0xFFFFFFFFu;
  struct Event {
    const char* p;
    uint32_t len;
    uint64_t hash;
  };
  Event ev[kEvents];
  char bufs[kWords][kMaxWordBytes];
  int n_ev = 0, n_words = 0;
  auto flush = [&] {
    for (int i = 0; i < n_ev; ++i) {
      if (ev[i].len == kNewline) {
        on_newline();
      } else {
        on_word(std::string_view(ev[i].p, ev[i].len), ev[i].hash);
      }
    }
    n_ev = n_words = 0;
  };
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (is_space_byte(c)) {
      if (c == '\n') {
        if (n_ev == 0) {
          on_newline();
        } else {
          ev[n_ev++] = {nullptr, kNewline, 0};
          if (n_ev == kEvents) flush();
        }
      }
      ++p;
      continue;
    }
    const char* start = p;
    while (p < end && !is_space_byte(static_cast<unsigned char>(*p))) ++p;
    const std::string_view w = normalize_word(
        std::string_view(start, static_cast<size_t>(p - start)), options, bufs[n_words]);
    const uint64_t h = hash_bytes(w);
    prefetch(h);
    ev[n_ev++] = {w.data(), static_cast<uint32_t>(w.size()), h};
    if (++n_words == kWords || n_ev == kEvents) flush();
  }
  flush();
}

}  // namespace detail
}  // namespace pagedw2v
