#include "text/text_chunks.hpp"

#include <exception>
#include <string>
#include <thread>

#include "base/error.hpp"

namespace pagedw2v {

std::vector<TextChunk> split_text(const std::vector<std::string_view>& parts, size_t n) {
  if (n == 0) n = 1;
  uint64_t total = 0;
  for (std::string_view p : parts) total += p.size();
  // Cut points as (part, offset), non-decreasing; cut k starts chunk k.
  std::vector<std::pair<size_t, size_t>> cuts(n + 1, {0, 0});
  cuts[n] = {parts.size(), 0};
  run_guarded(
      [&] {
        size_t part = 0;
        uint64_t part_start = 0;  // corpus offset of parts[part]
        for (size_t k = 1; k < n; ++k) {
          const uint64_t target = total * k / n;
          while (part < parts.size() && part_start + parts[part].size() <= target) {
            part_start += parts[part].size();
            ++part;
          }
          if (part == parts.size()) {
            cuts[k] = {parts.size(), 0};
            continue;
          }
          size_t off = static_cast<size_t>(target - part_start);
          if (std::make_pair(part, off) < cuts[k - 1]) {
            cuts[k] = cuts[k - 1];  // the previous chunk ran past this target: this one is empty
            continue;
          }
          const std::string_view text = parts[part];
          while (off < text.size() && !is_space_byte(static_cast<unsigned char>(text[off]))) ++off;
          // A cut at a part's end is the next part's start, so that every part end (a
          // sentence end) belongs to exactly one chunk.
          cuts[k] =
              off == text.size() ? std::make_pair(part + 1, size_t{0}) : std::make_pair(part, off);
        }
      },
      "the corpus");
  std::vector<TextChunk> chunks(n);
  for (size_t k = 0; k < n; ++k) {
    auto [part, off] = cuts[k];
    const auto [end_part, end_off] = cuts[k + 1];
    while (part < parts.size() && std::make_pair(part, off) < std::make_pair(end_part, end_off)) {
      const size_t stop = part == end_part ? end_off : parts[part].size();
      if (stop > off || stop == parts[part].size()) {
        chunks[k].push_back({parts[part].substr(off, stop - off), stop == parts[part].size()});
      }
      ++part;
      off = 0;
    }
  }
  return chunks;
}

void run_parallel(size_t n, const std::function<void(size_t)>& f) {
  if (n == 0) return;
  std::vector<std::exception_ptr> errors(n);
  auto work = [&](size_t i) {
    try {
      run_guarded([&] { f(i); }, "a corpus file");
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (size_t i = 1; i < n; ++i) threads.emplace_back(work, i);
  work(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace pagedw2v
