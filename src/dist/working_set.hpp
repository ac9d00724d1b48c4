#pragma once
/// @file working_set.hpp
/// Where a rank finds the rows it trains a span on (needed_rows.hpp): the rows it holds — its
/// own rows (owned_rows.hpp), trained in place (with whole tables, step 1, every row) — and, for
/// the other rows, copies fetched from their owners in two compact tables of
/// one row per copy. A map from word id to slot says where each row lies (RankRows, which the
/// CPU backend trains through): slots below `split` are rows of the owned tables, the others
/// rows of the copy tables. The copy tables grow to the largest span's copies and are reused;
/// the map costs 4 bytes a word of the vocabulary, the copies 2 · 4 · dim bytes a row.

#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "dist/needed_rows.hpp"
#include "dist/owned_rows.hpp"
#include "dist/row_owners.hpp"
#include "model/model.hpp"

namespace pagedw2v::dist {

class WorkingSet {
 public:
  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;

  /// For rank `rank` of `owners`, a vocabulary of `words` words of dimension `dim`, and the rows
  /// `owned` that the rank holds (step N: its own rows, compact; step 1: the whole tables).
  WorkingSet(const OwnedRows& owned, RowOwners owners, uint32_t rank, uint64_t words, uint32_t dim);

  /// Gives every row of `need` its slot: a row this rank holds keeps its row of the owned
  /// tables; any other takes the next row of the copy tables (the copies of the previous span
  /// are dropped). The copy tables grow when the span needs more copies than they hold; the
  /// values of the copies are left to the caller.
  void assign(const NeededRows& need);

  /// The slot of word `id`, kNoSlot when the span does not touch it.
  uint32_t slot(uint32_t id) const { return slot_of_[id]; }
  /// Whether the span's rows of word `id` are copies (not rows this rank holds).
  bool is_copy(uint32_t id) const { return slot_of_[id] >= rows_.split; }
  /// The words whose rows are copies, by row of the copy tables.
  const std::vector<uint32_t>& copies() const { return copies_; }
  /// The words that have a slot, in the order they got it.
  const std::vector<uint32_t>& words() const { return words_; }

  float* input(uint32_t id) const;
  float* output(uint32_t id) const;
  /// The layout, for make_cpu_backend and accumulate_row_gradients_cpu: the object stays the same
  /// (its pointers follow the copy tables when they grow), so a backend may keep its address.
  const RankRows& rows() const { return rows_; }
  /// Rows each copy table holds now.
  uint64_t capacity() const { return copy_input_.rows(); }

 private:
  void grow(uint64_t rows);

  OwnedRows owned_;
  RowOwners owners_;
  uint32_t rank_;
  uint32_t dim_;
  std::vector<uint32_t> slot_of_;
  std::vector<uint32_t> words_;
  std::vector<uint32_t> copies_;
  HostTable copy_input_, copy_output_;
  RankRows rows_;
};

}  // namespace pagedw2v::dist
