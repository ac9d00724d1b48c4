#include "dist/needed_rows.hpp"

#include <algorithm>

#include "backend/cpu/sgns_cpu.hpp"
#include "base/philox.hpp"
#include "model/negative_pool.hpp"

namespace pagedw2v::dist {

NeededRows::NeededRows(uint64_t rows) : marks_(rows, 0) {}

void NeededRows::add_input(uint32_t id) {
  if ((marks_[id] & 1) == 0) {
    marks_[id] |= 1;
    input_.push_back(id);
  }
}

void NeededRows::add_output(uint32_t id) {
  if ((marks_[id] & 2) == 0) {
    marks_[id] |= 2;
    output_.push_back(id);
  }
}

void NeededRows::collect(const TrainData& data, uint32_t epoch, uint64_t first, uint64_t last) {
  for (const uint32_t id : input_) marks_[id] = 0;
  for (const uint32_t id : output_) marks_[id] = 0;
  input_.clear();
  output_.clear();

  const TrainParams& p = data.params;
  const uint32_t* tokens = data.corpus->tokens.data();
  const KeepTable& keep = *data.keep;
  const auto& blocks = *data.blocks;
  const auto& starts = data.corpus->sentence_starts;
  const detail::NegativeSource noise{data.noise->columns().data(), data.noise->column_count()};
  struct Kept {
    uint32_t id, shrink;
    uint64_t pos;
  };
  std::vector<Kept> kept;
  std::vector<uint32_t> targets(p.negative + 1);
  std::vector<uint32_t> pool;
  uint64_t pool_batch = ~uint64_t{0};

  for (uint64_t b = first; b < last; ++b) {
    if (p.negative_pool > 0) {
      // Every negative of a block with a pool is a member of its super-batch's pool.
      const uint64_t sb = super_batch_of(b, p.pool_blocks);
      if (sb != pool_batch) {
        pool.resize(p.negative_pool);
        draw_pool(p.seed, epoch, sb, noise.noise, noise.columns, p.negative_pool, pool.data());
        for (const uint32_t id : pool) add_output(id);
        pool_batch = sb;
      }
    }
    for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
      // The same subsampling and window draws as the CPU backend's collect_kept.
      kept.clear();
      for (uint64_t pos = starts[sent]; pos < starts[sent + 1]; ++pos) {
        const uint32_t id = tokens[pos];
        const Philox4 r = draw(p.seed, pos, epoch, DrawKind::kSubsample);
        if (keep[id] < 1.0f && to_unit_float(r.v[0]) >= keep[id]) continue;
        kept.push_back({id, p.window > 0 ? r.v[1] % p.window : 0, pos});
      }
      const int64_t n = static_cast<int64_t>(kept.size());
      if (n < 2) continue;  // a lone token has no context: no example
      for (const Kept& k : kept) {
        add_input(k.id);
        add_output(k.id);
      }
      if (p.negative_pool > 0) continue;
      for (int64_t i = 0; i < n; ++i) {
        const Kept& c = kept[i];
        const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
        const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
        if (p.model == ModelKind::kSkipGram) {
          for (int64_t j = lo; j <= hi; ++j) {
            if (j == i) continue;
            const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
            const uint32_t nt = detail::draw_targets(c.id, c.pos, epoch, slot, p.seed, p.negative,
                                                     noise, targets.data());
            for (uint32_t t = 1; t < nt; ++t) add_output(targets[t]);
          }
        } else if (hi > lo) {
          const uint32_t nt = detail::draw_targets(c.id, c.pos, epoch, 0, p.seed, p.negative, noise,
                                                   targets.data());
          for (uint32_t t = 1; t < nt; ++t) add_output(targets[t]);
        }
      }
    }
  }
}

}  // namespace pagedw2v::dist
