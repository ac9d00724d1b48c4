#include "dist/working_set.hpp"

#include <algorithm>
#include <string>

namespace pagedw2v::dist {

WorkingSet::WorkingSet(const OwnedRows& owned, RowOwners owners, uint32_t rank, uint64_t words,
                       uint32_t dim)
    : owned_(owned), owners_(owners), rank_(rank), dim_(dim), slot_of_(words, kNoSlot) {
  rows_.slot_of = slot_of_.data();
  // Whole tables (step 1): every word has its row there, and nothing is a copy.
  rows_.split = static_cast<uint32_t>(owned.step == 1 ? words : owned.model->input.rows());
  rows_.owned_input = owned.model->input.data();
  rows_.owned_output = owned.model->output.data();
}

float* WorkingSet::input(uint32_t id) const {
  const uint32_t s = slot_of_[id];
  return s < rows_.split ? rows_.owned_input + static_cast<size_t>(s) * dim_
                         : rows_.copy_input + static_cast<size_t>(s - rows_.split) * dim_;
}

float* WorkingSet::output(uint32_t id) const {
  const uint32_t s = slot_of_[id];
  return s < rows_.split ? rows_.owned_output + static_cast<size_t>(s) * dim_
                         : rows_.copy_output + static_cast<size_t>(s - rows_.split) * dim_;
}

void WorkingSet::assign(const NeededRows& need) {
  for (const uint32_t id : words_) slot_of_[id] = kNoSlot;
  words_.clear();
  copies_.clear();
  auto add = [&](uint32_t id) {
    if (slot_of_[id] != kNoSlot) return;
    words_.push_back(id);
    // The rows this rank holds: its own, or every row when the tables are whole.
    if (owned_.step == 1 || owners_.owner(id) == rank_) {
      slot_of_[id] = static_cast<uint32_t>(owned_.row(id));
    } else {
      slot_of_[id] = rows_.split + static_cast<uint32_t>(copies_.size());
      copies_.push_back(id);
    }
  };
  for (const uint32_t id : need.output()) add(id);
  for (const uint32_t id : need.input()) add(id);
  if (copies_.size() > capacity()) grow(copies_.size());
}

void WorkingSet::grow(uint64_t rows) {
  // A quarter to spare, so that spans a little larger than the largest so far do not each
  // allocate anew; never more than the rows other ranks own.
  const uint64_t n = std::min<uint64_t>(slot_of_.size() - rows_.split, rows + rows / 4);
  const std::string hint = "lower --dim, or train on more ranks";
  copy_input_ = HostTable();
  copy_output_ = HostTable();
  copy_input_ = HostTable(n, dim_, "copies of other ranks' input vectors", hint);
  copy_output_ = HostTable(n, dim_, "copies of other ranks' output vectors", hint);
  rows_.copy_input = copy_input_.data();
  rows_.copy_output = copy_output_.data();
}

}  // namespace pagedw2v::dist
