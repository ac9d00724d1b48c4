#pragma once
/// @file working_set.hpp
/// The rows a rank trains a span on: one slot for every word the span's examples touch
/// (needed_rows.hpp), its input and output rows at that slot of two compact tables, and the map
/// from word id to slot that the CPU backend reads the rows through (make_cpu_backend's
/// `slot_of`). The tables grow to the largest span's rows and are reused; the map costs 4 bytes
/// a word of the vocabulary, the tables 2 · 4 · dim bytes a slot.

#include <cstdint>
#include <vector>

#include "dist/needed_rows.hpp"
#include "model.hpp"

namespace pagedw2v::dist {

class WorkingSet {
 public:
  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;

  /// For a vocabulary of `words` words of dimension `dim`.
  WorkingSet(uint64_t words, uint32_t dim);

  /// Gives every row of `need` a slot (the output rows in their order, then any input row that
  /// is not among them); the previous span's rows lose theirs. The tables grow when the span
  /// needs more slots than they hold; the values of the slots are left to the caller.
  void assign(const NeededRows& need);

  /// The slot of word `id`, kNoSlot when the span does not touch it.
  uint32_t slot(uint32_t id) const { return slot_of_[id]; }
  /// slot() of every word, for make_cpu_backend; valid for the life of the working set.
  const uint32_t* slot_of() const { return slot_of_.data(); }
  /// The words that hold a slot, by slot.
  const std::vector<uint32_t>& words() const { return words_; }

  float* input(uint32_t id) { return tables_.input.row(slot_of_[id]); }
  float* output(uint32_t id) { return tables_.output.row(slot_of_[id]); }
  /// The tables, slot by slot (rows beyond words().size() are unused). The object stays the
  /// same when the tables grow, so a backend may keep a reference to it.
  Model& tables() { return tables_; }
  /// Rows the tables hold now (each of the two).
  uint64_t capacity() const { return tables_.input.rows(); }

 private:
  void grow(uint64_t slots);

  uint32_t dim_;
  std::vector<uint32_t> slot_of_;
  std::vector<uint32_t> words_;
  Model tables_;
};

}  // namespace pagedw2v::dist
