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

#include "string_index.hpp"
#include "tokenizer.hpp"

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

/// Runs `f` so that a SIGBUS from reading a truncated mapped file throws Error (naming `what`)
/// instead of ending the process. `f` must not own anything that needs destroying on that path.
void run_guarded(const std::function<void()>& f, const char* what);

namespace detail {

/// Tokenises `text` like tokenize(), calling `prefetch(hash)` for each word as it is read and
/// handing the words over in batches of up to 16, one batch behind: a batch is handed over once
/// the next one has been read and prefetched, so that the hash-table misses of one batch overlap
/// with the reading of the next. Calls `on_word(word, hash)` and `on_newline()` in text order.
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
  struct Batch {
    Event ev[kEvents];
    int n_ev = 0, n_words = 0;
    char bufs[kWords][kMaxWordBytes];  // words that normalising changed
  };
  Batch batches[2];
  int cur = 0;  // the batch being read; the other waits to be handed over
  auto hand_over = [&](Batch& b) {
    for (int i = 0; i < b.n_ev; ++i) {
      if (b.ev[i].len == kNewline) {
        on_newline();
      } else {
        on_word(std::string_view(b.ev[i].p, b.ev[i].len), b.ev[i].hash);
      }
    }
    b.n_ev = b.n_words = 0;
  };
  // The batch read is full: the one before it goes, and it waits in its place.
  auto next_batch = [&] {
    hand_over(batches[cur ^ 1]);
    cur ^= 1;
  };
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    Batch& b = batches[cur];
    const unsigned char c = static_cast<unsigned char>(*p);
    if (is_space_byte(c)) {
      if (c == '\n') {
        if (b.n_ev == 0 && batches[cur ^ 1].n_ev == 0) {
          on_newline();
        } else {
          b.ev[b.n_ev++] = {nullptr, kNewline, 0};
          if (b.n_ev == kEvents) next_batch();
        }
      }
      ++p;
      continue;
    }
    const char* start = p;
    while (p < end && !is_space_byte(static_cast<unsigned char>(*p))) ++p;
    const std::string_view w = normalize_word(
        std::string_view(start, static_cast<size_t>(p - start)), options, b.bufs[b.n_words]);
    const uint64_t h = hash_bytes(w);
    prefetch(h);
    b.ev[b.n_ev++] = {w.data(), static_cast<uint32_t>(w.size()), h};
    if (++b.n_words == kWords || b.n_ev == kEvents) next_batch();
  }
  hand_over(batches[cur ^ 1]);
  hand_over(batches[cur]);
}

}  // namespace detail
}  // namespace pagedw2v
