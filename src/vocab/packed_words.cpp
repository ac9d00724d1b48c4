#include "vocab/packed_words.hpp"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <utility>

#include "base/error.hpp"
#include "base/worker_threads.hpp"

namespace pagedw2v {
namespace {

/// zlib's fastest level: the words are packed once per run and unpacked once or twice, and level 1
/// keeps about as much as level 6 on vocabularies (numbers, English, walks' node names).
constexpr int kLevel = 1;

/// Threads for `slices` slices: a thread a slice at most.
uint32_t threads_for(size_t slices, uint32_t threads) {
  return static_cast<uint32_t>(std::max<size_t>(1, std::min<size_t>(slices, threads)));
}

}  // namespace

PackedWords::PackedWords(const WordList& words, uint32_t threads) {
  size_ = words.size();
  bytes_ = words.bytes();
  const size_t n = (size_ + kSliceWords - 1) / kSliceWords;
  slices_.resize(n);
  // Where each slice's buffer begins in the list's (one pass over the words).
  std::vector<uint64_t> begin(n + 1, bytes_);
  {
    uint64_t at = 0;
    size_t i = 0;
    for (const std::string_view w : words) {
      if (i % kSliceWords == 0) begin[i / kSliceWords] = at;
      Slice& s = slices_[i / kSliceWords];
      ++s.words;
      if (w.find('\0') != std::string_view::npos) {
        s.nul_words.emplace_back(i % kSliceWords, w.size());
      }
      at += w.size() + 1;
      ++i;
    }
  }
  const std::string_view buffer = words.buffer();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  run_workers(threads_for(n, threads), [&](uint32_t) {
    std::vector<unsigned char> scratch;
    for (size_t k = next++; k < n && !failed; k = next++) {
      Slice& s = slices_[k];
      s.bytes = begin[k + 1] - begin[k];
      uLongf size = compressBound(static_cast<uLong>(s.bytes));
      scratch.resize(size);
      const int rc =
          compress2(scratch.data(), &size, reinterpret_cast<const Bytef*>(buffer.data() + begin[k]),
                    static_cast<uLong>(s.bytes), kLevel);
      if (rc != Z_OK) {
        failed = true;
        throw Error(std::string("cannot pack the vocabulary's words: zlib: ") +
                    (rc == Z_MEM_ERROR ? "not enough memory" : "error " + std::to_string(rc)));
      }
      s.packed.assign(scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(size));
    }
  });
}

void PackedWords::inflate_into(size_t k, char* out) const {
  const Slice& s = slices_.at(k);
  uLongf size = static_cast<uLongf>(s.bytes);
  const int rc = uncompress(reinterpret_cast<Bytef*>(out), &size, s.packed.data(),
                            static_cast<uLong>(s.packed.size()));
  if (rc != Z_OK || size != s.bytes) {
    throw Error("cannot unpack the vocabulary's words: zlib: " +
                std::string(rc == Z_MEM_ERROR ? "not enough memory" : "damaged slice"));
  }
}

WordList PackedWords::slice(size_t k) const {
  const Slice& s = slices_.at(k);
  std::vector<char> buffer(s.bytes);
  inflate_into(k, buffer.data());
  return WordList::of_buffer(std::move(buffer), s.words, s.nul_words);
}

WordList PackedWords::unpack(uint32_t threads) const {
  static_assert(kSliceWords % WordList::kMarkEvery == 0, "a slice starts at a mark");
  WordList list;
  list.chars_.resize(bytes_);
  list.lengths_.resize(size_);
  list.marks_.resize((size_ + WordList::kMarkEvery - 1) / WordList::kMarkEvery);
  std::vector<uint64_t> begin(slices_.size() + 1, 0);
  for (size_t k = 0; k < slices_.size(); ++k) begin[k + 1] = begin[k] + slices_[k].bytes;
  // Each slice's words longer than a length byte holds, found by its thread.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> longs(slices_.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  run_workers(threads_for(slices_.size(), threads), [&](uint32_t) {
    for (size_t k = next++; k < slices_.size() && !failed; k = next++) {
      try {
        char* const chars = list.chars_.data();
        inflate_into(k, chars + begin[k]);
        const Slice& s = slices_[k];
        if (!list.find_words(chars, begin[k], begin[k + 1], k * kSliceWords, s.words, s.nul_words,
                             longs[k])) {
          throw Error("cannot unpack the vocabulary's words: damaged slice");
        }
      } catch (...) {
        failed = true;
        throw;
      }
    }
  });
  for (const auto& l : longs) list.long_.insert(list.long_.end(), l.begin(), l.end());
  list.size_ = size_;
  return list;
}

size_t PackedWords::memory_bytes() const {
  size_t bytes = slices_.capacity() * sizeof(Slice);
  for (const Slice& s : slices_) {
    bytes += s.packed.capacity() + s.nul_words.capacity() * sizeof(s.nul_words[0]);
  }
  return bytes;
}

}  // namespace pagedw2v
