#include "dist/owner_steps.hpp"

#include <algorithm>

#include "backend/cpu/cpu_backend.hpp"
#include "model/negative_pool.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v::dist {

OwnerSteps::OwnerSteps(MpiComm& comm, uint32_t dim)
    : comm_(comm), owners_{comm.size()}, dim_(dim) {}

SpanStats OwnerSteps::train(const TrainData& data, const OwnedRows& owned, const WorkingSet& work,
                            uint32_t epoch, BlockRange mine) {
  const TrainParams& p = data.params;
  const auto& blocks = *data.blocks;
  const uint32_t n = comm_.size();
  // Per owner: for each block, a record [block, inputs, outputs, input ids…, output ids…], and
  // the gradient rows in the same order.
  std::vector<std::vector<uint32_t>> records(n);
  std::vector<std::vector<float>> grads(n);
  SpanStats stats;
  std::vector<uint32_t> count_at(n);
  detail::RowGradients block;
  for (uint64_t b = mine.first; b < mine.last; ++b) {
    detail::accumulate_row_gradients_cpu(data, work.rows(), epoch, super_batch_of(b, p.pool_blocks),
                                         blocks[b], blocks[b + 1], &block, &stats);
    for (uint32_t r = 0; r < n; ++r) {
      records[r].insert(records[r].end(), {static_cast<uint32_t>(b), 0u, 0u});
      count_at[r] = static_cast<uint32_t>(records[r].size());
    }
    // The touched rows' gradients, into their owners' messages.
    auto take = [&](const std::vector<uint32_t>& ids, const std::vector<float>& grad,
                    uint32_t field) {
      for (size_t k = 0; k < ids.size(); ++k) {
        const uint32_t r = owners_.owner(ids[k]);
        records[r].push_back(ids[k]);
        ++records[r][count_at[r] - 3 + field];
        grads[r].insert(grads[r].end(), grad.begin() + k * dim_, grad.begin() + (k + 1) * dim_);
      }
    };
    take(block.input_ids, block.input, 1);
    take(block.output_ids, block.output, 2);
  }

  std::vector<int> record_counts;
  std::vector<uint32_t> got = comm_.all_to_all(records, &record_counts);
  std::vector<int> send_floats(n), recv_floats(n, 0);
  std::vector<float> flat;
  for (uint32_t r = 0; r < n; ++r) {
    send_floats[r] = static_cast<int>(grads[r].size());
    flat.insert(flat.end(), grads[r].begin(), grads[r].end());
  }
  for (size_t at = 0, r = 0; r < n; ++r) {
    const size_t end = at + static_cast<size_t>(record_counts[r]);
    while (at < end) {
      recv_floats[r] += static_cast<int>((got[at + 1] + got[at + 2]) * dim_);
      at += 3 + got[at + 1] + got[at + 2];
    }
  }
  size_t total = 0;
  for (const int c : recv_floats) total += static_cast<size_t>(c);
  std::vector<float> received(total);
  comm_.all_to_all(flat.data(), send_floats, received.data(), recv_floats);

  // The blocks arrive in rank order, each rank's in order: block order, as the shares are
  // contiguous runs of the span in rank order.
  const uint64_t blocks_per_epoch = blocks.size() - 1;
  const LrSchedule schedule = make_schedule(p, data.optimizer);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const auto& starts = data.corpus->sentence_starts;
  Model& model = *owned.model;
  float* in_state[2] = {nullptr, nullptr};
  float* out_state[2] = {nullptr, nullptr};
  for (size_t k = 0; k < model.input_state.size() && k < 2; ++k) {
    in_state[k] = model.input_state[k].data();
    out_state[k] = model.output_state[k].data();
  }
  // The ids received are all this rank's: their rows in its tables.
  for (size_t at = 0; at < got.size();) {
    const uint32_t count = got[at + 1] + got[at + 2];
    for (uint32_t k = 0; k < count; ++k) {
      got[at + 3 + k] = static_cast<uint32_t>(owned.row(got[at + 3 + k]));
    }
    at += 3 + count;
  }
  const float* g = received.data();
  for (size_t at = 0; at < got.size();) {
    const uint64_t b = got[at];
    const uint32_t inputs = got[at + 1], outputs = got[at + 2];
    const uint64_t step = static_cast<uint64_t>(epoch) * blocks_per_epoch + b + 1;
    const float lr = schedule.at(epoch_base + starts[blocks[b]]);
    const uint32_t* ids = got.data() + at + 3;
    apply_sparse_step(data.optimizer, step, lr, ids, inputs, g, dim_, model.input.data(), in_state);
    g += static_cast<size_t>(inputs) * dim_;
    apply_sparse_step(data.optimizer, step, lr, ids + inputs, outputs, g, dim_, model.output.data(),
                      out_state);
    g += static_cast<size_t>(outputs) * dim_;
    at += 3 + inputs + outputs;
  }
  return stats;
}

}  // namespace pagedw2v::dist
