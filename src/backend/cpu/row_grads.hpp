#pragma once
/// @file row_grads.hpp
/// The gradients one batch of the batched pass (cpu_gradients.hpp) sums per row: RowGrads, a map
/// from row id to a dense gradient row in first-touch order, and BatchGrads, one such map for the
/// input rows, one for the output rows and one for the inner nodes of hierarchical softmax.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/params.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

/// The summed gradients of the rows one batch touches, in first-touch order. An open-addressing
/// map (linear probing) from row id to a dense gradient row; clear() costs the rows touched, not
/// the vocabulary, so a thread's map stays small.
class RowGrads {
 public:
  explicit RowGrads(uint32_t dim) : dim_(dim) { rehash(1024); }

  /// The gradient of row `id`, zero on its first touch. Valid until the next call.
  float* row(uint32_t id) {
    size_t h = home(id);
    for (; keys_[h] != kEmpty; h = (h + 1) & mask_) {
      if (keys_[h] == id) return grads_.data() + static_cast<size_t>(slots_[h]) * dim_;
    }
    if ((ids_.size() + 1) * 2 > keys_.size()) {
      rehash(keys_.size() * 2);
      return row(id);
    }
    keys_[h] = id;
    slots_[h] = static_cast<uint32_t>(ids_.size());
    ids_.push_back(id);
    where_.push_back(h);
    grads_.resize(grads_.size() + dim_, 0.0f);
    return grads_.data() + grads_.size() - dim_;
  }

  const std::vector<uint32_t>& ids() const { return ids_; }
  const float* grads() const { return grads_.data(); }

  void clear() {
    for (const size_t h : where_) keys_[h] = kEmpty;
    ids_.clear();
    where_.clear();
    grads_.clear();
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;  // max-vocab keeps ids below this

  size_t home(uint32_t id) const { return (id * 2654435761u) & mask_; }

  void rehash(size_t capacity) {
    keys_.assign(capacity, kEmpty);
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    for (size_t i = 0; i < ids_.size(); ++i) {
      size_t h = home(ids_[i]);
      while (keys_[h] != kEmpty) h = (h + 1) & mask_;
      keys_[h] = ids_[i];
      slots_[h] = static_cast<uint32_t>(i);
      where_[i] = h;
    }
  }

  uint32_t dim_;
  size_t mask_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> slots_;
  std::vector<uint32_t> ids_;
  std::vector<size_t> where_;  ///< the map position of each id, for clear()
  std::vector<float> grads_;   ///< ids_.size() × dim_
};

/// One batch's gradients: input rows, output rows and inner-node rows apart (the nodes' are
/// kept in `output` when they are output rows: hierarchical softmax without negative sampling).
struct BatchGrads {
  explicit BatchGrads(uint32_t dim) : input(dim), output(dim), nodes(dim) {}
  RowGrads input;
  RowGrads output;
  RowGrads nodes;
};

/// Where the gradients of the inner nodes go: their own rows beside negative sampling, else the
/// output rows they are.
inline RowGrads& node_grads(const TrainParams& p, BatchGrads& g) {
  return p.negative > 0 ? g.nodes : g.output;
}

}  // namespace cpu
}  // namespace detail
}  // namespace pagedw2v
