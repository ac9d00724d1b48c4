#pragma once
/// @file word_list.hpp
/// A list of words stored end to end in one buffer, each followed by a NUL (so that a word is
/// also a C string, as HDF5 writes them), with each word's length in a byte (255 and a side list
/// for the rare longer ones) and where every 32nd word starts. A word costs its length + 2 bytes
/// and a quarter, where a std::string costs 32 (and a heap block of its own past 15 bytes);
/// finding word i adds the lengths of at most 31 words before it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedw2v {

class WordList {
 public:
  /// Yields each word as a std::string_view, in order (keeping its place in the buffer).
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;

    Iterator() = default;
    Iterator(const WordList* list, size_t i, uint64_t at) : list_(list), i_(i), at_(at) {}
    std::string_view operator*() const {
      return std::string_view(list_->chars_.data() + at_, list_->length(i_));
    }
    Iterator& operator++() {
      at_ += list_->length(i_) + 1;
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    const WordList* list_ = nullptr;
    size_t i_ = 0;
    uint64_t at_ = 0;
  };

  WordList() = default;

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
    list.lengths_.resize(n);
    list.marks_.resize((n + kMarkEvery - 1) / kMarkEvery);
    uint64_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i % kMarkEvery == 0) list.marks_[i / kMarkEvery] = at;
      const uint64_t len = static_cast<uint64_t>(length(i));
      list.set_length(i, len);
      at += len + 1;
    }
    list.chars_.resize(static_cast<size_t>(at));
    list.size_ = n;
    return list;
  }

  /// The list whose buffer (see buffer()) is `buffer`, `n` words: each word ends at its first
  /// NUL, except those `nul_words` names ({word, length}, ascending by word), which hold NULs.
  /// Throws std::invalid_argument when the bytes do not hold `n` such words exactly.
  static WordList of_buffer(std::vector<char> buffer, size_t n,
                            const std::vector<std::pair<uint64_t, uint64_t>>& nul_words = {}) {
    WordList list;
    list.lengths_.resize(n);
    list.marks_.resize((n + kMarkEvery - 1) / kMarkEvery);
    if (!list.find_words(buffer.data(), 0, buffer.size(), 0, n, nul_words, list.long_)) {
      throw std::invalid_argument("word list: the buffer does not hold its words");
    }
    list.chars_ = std::move(buffer);
    list.size_ = n;
    return list;
  }

  /// Room for `words` words of `bytes` bytes in all, NULs included.
  void reserve(size_t words, size_t bytes) {
    chars_.reserve(bytes);
    lengths_.reserve(words);
    marks_.reserve((words + kMarkEvery - 1) / kMarkEvery);
  }

  void push_back(std::string_view word) {
    if (size_ % kMarkEvery == 0) marks_.push_back(chars_.size());
    lengths_.push_back(0);
    set_length(size_, word.size());
    chars_.insert(chars_.end(), word.begin(), word.end());
    chars_.push_back('\0');
    ++size_;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view operator[](size_t i) const {
    return std::string_view(chars_.data() + start(i), length(i));
  }
  /// Word `i` as a C string (it ends at its first NUL, where a word holds one).
  const char* c_str(size_t i) const { return chars_.data() + start(i); }
  /// The buffer: every word followed by a NUL, in order (bytes() of them).
  std::string_view buffer() const { return std::string_view(chars_.data(), chars_.size()); }
  /// The words' bytes and their NULs.
  uint64_t bytes() const { return chars_.size(); }
  /// Where of_lengths()'s caller writes word `i`'s bytes (its length, as given).
  char* data(size_t i) { return chars_.data() + start(i); }

  Iterator begin() const { return Iterator(this, 0, 0); }
  Iterator end() const { return Iterator(this, size_, chars_.size()); }

  std::vector<std::string> to_strings() const { return std::vector<std::string>(begin(), end()); }

  /// The bytes its buffers hold (their capacities).
  size_t memory_bytes() const {
    return chars_.capacity() + lengths_.capacity() + marks_.capacity() * sizeof(uint64_t) +
           long_.capacity() * sizeof(std::pair<uint64_t, uint64_t>);
  }

  /// Gives back what the buffers hold beyond their size (after push_back()s).
  void shrink_to_fit() {
    chars_.shrink_to_fit();
    lengths_.shrink_to_fit();
    marks_.shrink_to_fit();
    long_.shrink_to_fit();
  }

  friend bool operator==(const WordList& a, const WordList& b) {
    if (a.size_ != b.size_) return false;
    auto x = a.begin();
    for (auto y = b.begin(); y != b.end(); ++x, ++y) {
      if (*x != *y) return false;
    }
    return true;
  }
  friend bool operator!=(const WordList& a, const WordList& b) { return !(a == b); }

 private:
  friend class PackedWords;  // unpacks its slices into a list's buffers on several threads

  /// Every this many words, where the word starts is kept.
  static constexpr size_t kMarkEvery = 32;
  /// A length byte of this value: the word's length is in long_.
  static constexpr uint8_t kLong = 255;

  uint64_t length(size_t i) const {
    if (lengths_[i] != kLong) return lengths_[i];
    const auto it =
        std::lower_bound(long_.begin(), long_.end(), std::make_pair(uint64_t{i}, uint64_t{0}));
    return it->second;
  }
  void set_length(size_t i, uint64_t len) {
    if (len < kLong) {
      lengths_[i] = static_cast<uint8_t>(len);
      return;
    }
    lengths_[i] = kLong;
    // Words are laid out in order, so long_ stays sorted by index.
    long_.emplace_back(i, len);
  }
  /// Finds words [first, first + n) in `chars`' bytes [at, end): each ends at its first NUL,
  /// except those `nul_words` names ({word − first, length}, ascending), which hold NULs. Writes
  /// their lengths and marks (lengths_ and marks_ already sized; `first` a multiple of kMarkEvery)
  /// and appends the {word, length} of those longer than a length byte to `longs`. Touches only
  /// these words' entries, so that slices of one list are found on several threads. False when
  /// the bytes do not hold exactly `n` such words.
  bool find_words(const char* chars, uint64_t at, uint64_t end, size_t first, size_t n,
                  const std::vector<std::pair<uint64_t, uint64_t>>& nul_words,
                  std::vector<std::pair<uint64_t, uint64_t>>& longs) {
    auto held = nul_words.begin();
    for (size_t j = 0; j < n; ++j) {
      const size_t i = first + j;
      if (i % kMarkEvery == 0) marks_[i / kMarkEvery] = at;
      uint64_t len = 0;
      if (held != nul_words.end() && held->first == j) {
        len = (held++)->second;
      } else if (at < end) {
        const void* nul = std::memchr(chars + at, '\0', static_cast<size_t>(end - at));
        len = nul == nullptr ? end - at
                             : static_cast<uint64_t>(static_cast<const char*>(nul) - chars) - at;
      }
      if (at + len >= end || chars[at + len] != '\0') return false;
      if (len < kLong) {
        lengths_[i] = static_cast<uint8_t>(len);
      } else {
        lengths_[i] = kLong;
        longs.emplace_back(i, len);
      }
      at += len + 1;
    }
    return at == end && held == nul_words.end();
  }
  uint64_t start(size_t i) const {
    const size_t first = i - i % kMarkEvery;
    uint64_t at = marks_[first / kMarkEvery];
    for (size_t j = first; j < i; ++j) at += length(j) + 1;
    return at;
  }

  std::vector<char> chars_;                          ///< every word and its NUL, in order
  std::vector<uint8_t> lengths_;                     ///< each word's length, or kLong
  std::vector<uint64_t> marks_;                      ///< where words 0, 32, 64, … start
  std::vector<std::pair<uint64_t, uint64_t>> long_;  ///< {word, length} of lengths ≥ kLong
  size_t size_ = 0;
};

}  // namespace pagedw2v
