#pragma once
/// @file word_list.hpp
/// A list of words stored end to end in one buffer, each followed by a NUL (so that a word is
/// also a C string, as HDF5 writes them), and where each word starts: 4 bytes a word while the
/// buffer holds less than 4 GiB, 8 beyond. A word costs its length + 1 + 4 bytes, where a
/// std::string costs 32 (and a heap block of its own past 15 bytes).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace pagedw2v {

class WordList {
 public:
  /// Yields each word as a std::string_view, in order.
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;

    Iterator() = default;
    Iterator(const WordList* list, size_t i) : list_(list), i_(i) {}
    std::string_view operator*() const { return (*list_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    const WordList* list_ = nullptr;
    size_t i_ = 0;
  };

  WordList() = default;

  /// An empty list that moves to 8-byte starts once its buffer passes `bytes` rather than
  /// 4 GiB (tests run the 8-byte path with a small one).
  static WordList with_narrow_limit(uint64_t bytes) {
    WordList list;
    list.narrow_limit_ = std::min(bytes, kNarrowLimit);
    return list;
  }

  /// The list of `words`, its buffers exactly their size.
  explicit WordList(const std::vector<std::string>& words) {
    size_t bytes = 0;
    for (const std::string& w : words) bytes += w.size() + 1;
    reserve(words.size(), bytes);
    for (const std::string& w : words) push_back(w);
  }

  /// `n` words, word i `length(i)` bytes long, all NUL bytes until the caller writes them in
  /// place through data(i) (from several threads, say: each word is its own range).
  template <class Length>
  static WordList of_lengths(size_t n, Length&& length) {
    WordList list;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += static_cast<uint64_t>(length(i)) + 1;
    if (bytes <= kNarrowLimit) {
      list.narrow_.resize(n + 1);
    } else {
      list.wide_.resize(n + 1);
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      list.set_start(i, at);
      at += static_cast<uint64_t>(length(i)) + 1;
    }
    list.set_start(n, at);
    list.chars_.resize(static_cast<size_t>(bytes));
    list.size_ = n;
    return list;
  }

  /// Room for `words` words of `bytes` bytes in all, NULs included.
  void reserve(size_t words, size_t bytes) {
    chars_.reserve(bytes);
    if (wide_.empty() && bytes <= narrow_limit_) {
      narrow_.reserve(words + 1);
    } else {
      widen();
      wide_.reserve(words + 1);
    }
  }

  void push_back(std::string_view word) {
    const uint64_t end = chars_.size() + word.size() + 1;
    if (wide_.empty() && end > narrow_limit_) widen();
    if (size_ == 0) {
      if (wide_.empty()) {
        narrow_.assign(1, 0);
      } else {
        wide_.assign(1, 0);
      }
    }
    chars_.insert(chars_.end(), word.begin(), word.end());
    chars_.push_back('\0');
    if (wide_.empty()) {
      narrow_.push_back(static_cast<uint32_t>(end));
    } else {
      wide_.push_back(end);
    }
    ++size_;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view operator[](size_t i) const {
    const uint64_t begin = start(i);
    return std::string_view(chars_.data() + begin, start(i + 1) - begin - 1);
  }
  /// Word `i` as a C string (it ends at its first NUL, where a word holds one).
  const char* c_str(size_t i) const { return chars_.data() + start(i); }
  /// Where of_lengths()'s caller writes word `i`'s bytes (its length, as given).
  char* data(size_t i) { return chars_.data() + start(i); }

  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size_); }

  std::vector<std::string> to_strings() const { return std::vector<std::string>(begin(), end()); }

  /// The bytes its buffers hold (their capacities).
  size_t memory_bytes() const {
    return chars_.capacity() + narrow_.capacity() * sizeof(uint32_t) +
           wide_.capacity() * sizeof(uint64_t);
  }

  /// Gives back what the buffers hold beyond their size (after push_back()s).
  void shrink_to_fit() {
    chars_.shrink_to_fit();
    narrow_.shrink_to_fit();
    wide_.shrink_to_fit();
  }

  friend bool operator==(const WordList& a, const WordList& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  friend bool operator!=(const WordList& a, const WordList& b) { return !(a == b); }

 private:
  static constexpr uint64_t kNarrowLimit = std::numeric_limits<uint32_t>::max();

  uint64_t start(size_t i) const { return wide_.empty() ? narrow_[i] : wide_[i]; }
  void set_start(size_t i, uint64_t at) {
    if (wide_.empty()) {
      narrow_[i] = static_cast<uint32_t>(at);
    } else {
      wide_[i] = at;
    }
  }
  /// From 4-byte starts to 8-byte ones, once the buffer may pass 4 GiB.
  void widen() {
    if (!wide_.empty()) return;
    wide_.assign(narrow_.begin(), narrow_.end());
    if (wide_.empty()) wide_.push_back(0);
    narrow_ = {};
  }

  std::vector<char> chars_;       ///< every word and its NUL, in order
  std::vector<uint32_t> narrow_;  ///< size_ + 1 starts, while chars_ holds under 4 GiB
  std::vector<uint64_t> wide_;    ///< size_ + 1 starts, once it may hold more
  size_t size_ = 0;
  uint64_t narrow_limit_ = kNarrowLimit;
};

}  // namespace pagedw2v
