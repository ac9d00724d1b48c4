#pragma once
/// @file count_list.hpp
/// The corpus count of every word of a vocabulary, held as runs of equal counts. A vocabulary
/// sorted by count (every counted one) has a run per distinct count: a few thousand runs where a
/// count per word took 8 bytes a word (80 MB at 10 M words). Any order works; counts in no order
/// cost 12 bytes a word.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

namespace pagedw2v {

class CountList {
 public:
  CountList() = default;
  /// The counts of words 0 … counts.size() − 1, fewer than 2³² of them (implicit: a vector of
  /// counts is one).
  CountList(const std::vector<uint64_t>& counts) {  // NOLINT(google-explicit-constructor)
    for (size_t i = 0; i < counts.size(); ++i) {
      if (i == 0 || counts[i] != counts[i - 1]) {
        starts_.push_back(static_cast<uint32_t>(i));
        values_.push_back(counts[i]);
      }
    }
    size_ = counts.size();
    starts_.shrink_to_fit();
    values_.shrink_to_fit();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The count of word `i` (< size()): a binary search over the runs.
  uint64_t operator[](size_t i) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), static_cast<uint32_t>(i));
    return values_[static_cast<size_t>(it - starts_.begin()) - 1];
  }

  /// Runs of equal counts: run k holds words [run_start(k), run_start(k + 1)) (run_start(runs())
  /// is size()), each counted run_count(k) times.
  size_t runs() const { return values_.size(); }
  size_t run_start(size_t k) const { return k < starts_.size() ? starts_[k] : size_; }
  uint64_t run_count(size_t k) const { return values_[k]; }

  /// Every count in word order, or the first `n` of them.
  std::vector<uint64_t> to_vector(size_t n = SIZE_MAX) const {
    std::vector<uint64_t> out(std::min(n, size_));
    for (size_t k = 0; k < runs() && run_start(k) < out.size(); ++k) {
      std::fill(out.begin() + static_cast<ptrdiff_t>(run_start(k)),
                out.begin() + static_cast<ptrdiff_t>(std::min(run_start(k + 1), out.size())),
                values_[k]);
    }
    return out;
  }

  /// Heap bytes held (the runs' capacities).
  size_t memory_bytes() const {
    return starts_.capacity() * sizeof(uint32_t) + values_.capacity() * sizeof(uint64_t);
  }

  /// The counts in word order, one by one (a forward iterator).
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = const uint64_t*;
    using reference = const uint64_t&;

    Iterator() = default;
    Iterator(const CountList* list, size_t i, size_t run) : list_(list), i_(i), run_(run) {}
    reference operator*() const { return list_->values_[run_]; }
    Iterator& operator++() {
      ++i_;
      if (i_ == list_->run_start(run_ + 1) && run_ + 1 < list_->runs()) ++run_;
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
    const CountList* list_ = nullptr;
    size_t i_ = 0, run_ = 0;
  };
  Iterator begin() const { return Iterator(this, 0, 0); }
  Iterator end() const { return Iterator(this, size_, runs() > 0 ? runs() - 1 : 0); }

  bool operator==(const CountList& o) const {
    return size_ == o.size_ && starts_ == o.starts_ && values_ == o.values_;
  }
  bool operator!=(const CountList& o) const { return !(*this == o); }
  friend bool operator==(const CountList& a, const std::vector<uint64_t>& b) {
    return a == CountList(b);
  }
  friend bool operator==(const std::vector<uint64_t>& a, const CountList& b) { return b == a; }

 private:
  std::vector<uint32_t> starts_;  ///< each run's first word
  std::vector<uint64_t> values_;  ///< each run's count
  size_t size_ = 0;
};

}  // namespace pagedw2v
