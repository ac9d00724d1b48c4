#include "dist/working_set.hpp"

#include <algorithm>

namespace pagedw2v::dist {

WorkingSet::WorkingSet(uint64_t words, uint32_t dim) : dim_(dim), slot_of_(words, kNoSlot) {}

void WorkingSet::assign(const NeededRows& need) {
  for (const uint32_t id : words_) slot_of_[id] = kNoSlot;
  words_.clear();
  auto add = [&](uint32_t id) {
    if (slot_of_[id] != kNoSlot) return;
    slot_of_[id] = static_cast<uint32_t>(words_.size());
    words_.push_back(id);
  };
  for (const uint32_t id : need.output()) add(id);
  for (const uint32_t id : need.input()) add(id);
  if (words_.size() > capacity()) grow(words_.size());
}

void WorkingSet::grow(uint64_t slots) {
  // A quarter to spare, so that spans a little larger than the largest so far do not each
  // allocate anew; never more than the vocabulary.
  const uint64_t rows = std::min<uint64_t>(slot_of_.size(), std::max(slots, slots + slots / 4));
  const std::string hint = "lower --dim, or train on more ranks";
  tables_.input = HostTable();
  tables_.output = HostTable();
  tables_.input = HostTable(rows, dim_, "working copies of input vectors", hint);
  tables_.output = HostTable(rows, dim_, "working copies of output vectors", hint);
}

}  // namespace pagedw2v::dist
