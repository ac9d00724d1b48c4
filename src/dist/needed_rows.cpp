#include "dist/needed_rows.hpp"

#include "backend/cpu/cpu_examples.hpp"

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

  // The CPU backend's walk (backend/cpu/cpu_examples.hpp): the same subsampling, windows and
  // negative draws, so these sets hold the rows its examples read and write.
  namespace cpu = detail::cpu;
  const TrainParams& p = data.params;
  const auto& blocks = *data.blocks;
  const uint64_t* starts = cpu::sentence_starts(data);
  cpu::Scratch s;  // its h and err stay empty: nothing here reads a row
  SpanStats stats;

  for (uint64_t b = first; b < last; ++b) {
    if (p.negative_pool > 0) {
      // Every negative of a block with a pool is a member of its super-batch's pool.
      const uint64_t pool_batch = s.pool_batch;
      cpu::use_pool_of_block(data, epoch, b, s);
      if (s.pool_batch != pool_batch) {
        for (const uint32_t id : s.pool) add_output(id);
      }
    }
    for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
      cpu::collect_kept(data, epoch, starts[sent], starts[sent + 1], s.kept, &stats);
      // A lone token has no context: no example. Of two or more, every kept token is a context
      // of its neighbour (a window is at least one wide) and a centre.
      if (s.kept.size() < 2) continue;
      for (const cpu::Kept& k : s.kept) {
        add_input(k.id);
        add_output(k.id);
      }
      if (p.negative_pool > 0) continue;
      cpu::for_each_example_targets(data, epoch, s, [&](const cpu::Example& e) {
        for (uint32_t t = 1; t < e.n_targets; ++t) add_output(e.targets[t]);
      });
    }
  }
}

}  // namespace pagedw2v::dist
