#pragma once
/// @file cpu_sgd.hpp
/// The CPU backend's per-example pass (sgd, word2vec's Hogwild update): each example of a
/// sentence updates the rows it reads at once, hierarchical softmax (hs_cpu.hpp) then negative
/// sampling (sgns_cpu.hpp) into one err, or one shared-negatives window at a time.

#include <cstdint>

#include "backend/cpu/cpu_examples.hpp"
#include "backend/cpu/cpu_rows.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

/// Trains the examples of tokens [first, last) (one sentence) of `epoch` in place on the rows
/// `rows` finds, negatives from s.pool when there is one (use_pool first).
template <class Rows>
void train_sentence(const TrainData& data, const Rows& rows, uint32_t epoch, uint64_t first,
                    uint64_t last, Scratch& s, SpanStats* stats);

extern template void train_sentence<IdRows>(const TrainData&, const IdRows&, uint32_t, uint64_t,
                                            uint64_t, Scratch&, SpanStats*);
extern template void train_sentence<SplitRows>(const TrainData&, const SplitRows&, uint32_t,
                                               uint64_t, uint64_t, Scratch&, SpanStats*);

}  // namespace cpu
}  // namespace detail
}  // namespace pagedw2v
