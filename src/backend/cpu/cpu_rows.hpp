#pragma once
/// @file cpu_rows.hpp
/// Where the CPU backend finds the rows of a word: at its id in the model's whole tables (one
/// process, IdRows), or where a rank of a distributed run lays them out (SplitRows over
/// RankRows). The passes (cpu_sgd.hpp, cpu_gradients.hpp) are templates over these two.

#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_backend.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

/// Where the rows of a word lie: at its id in the whole tables (one process), or as a rank lays
/// them out (RankRows). Every pass below is a template over this, so the whole-table path
/// compiles as it did before ranks existed. node(row) is the vector of a Huffman tree's inner
/// node (hierarchical softmax): a row of the output table when negative sampling is off, of
/// Model::nodes beside it.
struct IdRows {
  float* in;
  float* out;
  float* nodes;
  uint32_t dim;
  float* input(uint32_t id) const { return in + static_cast<size_t>(id) * dim; }
  float* output(uint32_t id) const { return out + static_cast<size_t>(id) * dim; }
  float* node(uint32_t row) const { return nodes + static_cast<size_t>(row) * dim; }
};
struct SplitRows {
  RankRows r;
  uint32_t dim;
  float* input(uint32_t id) const {
    const uint32_t s = r.slot_of[id];
    return s < r.split ? r.owned_input + static_cast<size_t>(s) * dim
                       : r.copy_input + static_cast<size_t>(s - r.split) * dim;
  }
  float* output(uint32_t id) const {
    const uint32_t s = r.slot_of[id];
    return s < r.split ? r.owned_output + static_cast<size_t>(s) * dim
                       : r.copy_output + static_cast<size_t>(s - r.split) * dim;
  }
  // Ranks train negative sampling only (the CPU backend refuses hierarchical softmax over them):
  // were they to, the inner nodes would be the output rows of the same ids.
  float* node(uint32_t row) const { return output(row); }
};

/// The whole tables of `model`, which a pass only reads when `model` is const.
inline IdRows id_rows(const Model& model) {
  float* out = const_cast<float*>(model.output.data());
  float* nodes = model.nodes.rows() > 0 ? const_cast<float*>(model.nodes.data()) : out;
  return {const_cast<float*>(model.input.data()), out, nodes, model.input.dim()};
}

}  // namespace cpu
}  // namespace detail
}  // namespace pagedw2v
