/// @file cpu_sgd.cpp
/// The per-example pass of the CPU backend (cpu_sgd.hpp), and the references built on it:
/// train_sentence_cpu and the partitioned train_sentence_part_cpu (cpu_backend.hpp).

#include "backend/cpu/cpu_sgd.hpp"

#include <algorithm>
#include <vector>

#include "backend/cpu/hs_cpu.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {
namespace detail {
namespace cpu {

template <class Rows>
void train_sentence(const TrainData& data, const Rows& rows, uint32_t epoch, uint64_t first,
                    uint64_t last, Scratch& s, SpanStats* stats) {
  const TrainParams& p = data.params;
  const LrSchedule schedule = make_schedule(p);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const uint32_t dim = p.dim;
  const auto output_row = [&rows](uint32_t id) { return rows.output(id); };
  const auto node_row = [&rows](uint32_t row) { return rows.node(row); };
  const HuffmanTree* tree = p.hs ? data.tree : nullptr;

  collect_kept(data, epoch, first, last, s.kept, stats);
  if (shares_negatives(p)) {
    s.window_out.resize(static_cast<size_t>(p.negative + 1) * dim);
    s.window_delta.resize(s.window_out.size());
    for_each_window(data, epoch, s, [&](const Window& w) {
      const float lr = schedule.at(epoch_base + w.centre->pos);
      s.contexts.clear();
      for (int64_t j = w.lo; j <= w.hi; ++j) {
        if (j != w.i) s.contexts.push_back(rows.input(s.kept[j].id));
      }
      const uint32_t k = static_cast<uint32_t>(s.contexts.size());
      stats->loss +=
          shared_window_update(s.contexts.data(), k, output_row, w.targets, w.n_targets, dim, lr,
                               s.window_out.data(), s.window_delta.data(), s.err.data());
      stats->loss_terms += k;
    });
    return;
  }
  for_each_example(data, epoch, rows, s, [&](const Example& e) {
    const float lr = schedule.at(epoch_base + e.centre->pos);
    s.err.setZero();
    // Hierarchical softmax first, then negative sampling, into one err (word2vec's order).
    if (tree != nullptr) {
      const uint32_t w = e.centre->id;
      stats->loss += hs_update_rows(e.h, s.err.data(), node_row, tree->path_rows(w),
                                    tree->path_codes(w), tree->length(w), dim, lr, true);
    }
    if (p.negative > 0) {
      stats->loss +=
          sgns_update_rows(e.h, s.err.data(), output_row, e.targets, e.n_targets, dim, lr, true);
    }
    ++stats->loss_terms;
    for_each_context_row(e, s.kept, [&](uint32_t id) { VecMap(rows.input(id), dim) += s.err; });
  });
}

template void train_sentence<IdRows>(const TrainData&, const IdRows&, uint32_t, uint64_t, uint64_t,
                                     Scratch&, SpanStats*);
template void train_sentence<SplitRows>(const TrainData&, const SplitRows&, uint32_t, uint64_t,
                                        uint64_t, Scratch&, SpanStats*);

}  // namespace cpu

using cpu::collect_kept;
using cpu::id_rows;
using cpu::Kept;
using cpu::make_scratch;
using cpu::Scratch;
using cpu::use_pool;

void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats, uint64_t super_batch) {
  Scratch s = make_scratch(data.params.dim);
  use_pool(data, epoch, super_batch, s);
  train_sentence(data, id_rows(model), epoch, first, last, s, stats);
}

void train_sentence_part_cpu(const TrainData& data, const NoiseTable& part_noise, uint32_t parts,
                             uint32_t input_part, uint32_t output_part, float* input, float* output,
                             uint32_t epoch, uint64_t first, uint64_t last, SpanStats* stats) {
  const TrainParams& p = data.params;
  const uint32_t dim = p.dim;
  const LrSchedule schedule = make_schedule(p);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const auto row = [parts, dim](float* table, uint32_t id) {
    return table + static_cast<size_t>(id / parts) * dim;
  };
  Scratch s = make_scratch(dim);
  SpanStats read;
  collect_kept(data, epoch, first, last, s.kept, &read);
  const bool counts = input_part == output_part;
  const NegativeSource src{part_noise.columns().data(), part_noise.column_count()};
  std::vector<uint32_t> targets(p.negative + 1);
  const int64_t n = static_cast<int64_t>(s.kept.size());
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    if (c.id % parts != output_part) continue;
    if (counts) ++stats->trained;
    const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    const float lr = schedule.at(epoch_base + c.pos);
    for (int64_t j = lo; j <= hi; ++j) {
      if (j == i || s.kept[j].id % parts != input_part) continue;
      const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
      // The part's table draws local rows; a negative is the centre when its id is.
      uint32_t nt = 0;
      targets[nt++] = c.id / parts;
      for (uint32_t k = 0; k < p.negative; k += 2) {
        const Philox4 r = draw(p.seed, c.pos, epoch, DrawKind::kNegative, (slot << 8) | (k >> 1));
        const uint32_t a = noise_draw(src.noise, src.columns, r.v[0], r.v[1]);
        if (output_part + a * parts != c.id) targets[nt++] = a;
        if (k + 1 < p.negative) {
          const uint32_t b = noise_draw(src.noise, src.columns, r.v[2], r.v[3]);
          if (output_part + b * parts != c.id) targets[nt++] = b;
        }
      }
      float* h = row(input, s.kept[j].id);
      s.err.setZero();
      stats->loss += sgns_update(h, s.err.data(), output, targets.data(), nt, dim, lr, true);
      ++stats->loss_terms;
      VecMap(h, dim) += s.err;
    }
  }
}

}  // namespace detail
}  // namespace pagedw2v
