#include "gpu/sgns_launcher.hpp"

#include <algorithm>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/pool_draw.hpp"
#include "model/huffman.hpp"
#include "model/params.hpp"

namespace pagedw2v {

static_assert(sizeof(SgnsCounters) == kSgnsCounterBytes,
              "the GPU plan counts the training counters' bytes (gpu_plan.hpp)");

SgnsLauncher::SgnsLauncher(const TrainData& data, const GpuPlan& plan, bool single_warp,
                           uint32_t item_tokens, uint32_t hs_damp_warps, DeviceTables& tables,
                           cudaStream_t stream)
    : data_(data),
      tables_(tables),
      single_warp_(single_warp),
      item_tokens_(item_tokens),
      // One warp has no other writer to race with; word2vec's steps keep a deterministic run's
      // bytes.
      hs_damp_warps_(single_warp ? 0 : hs_damp_warps),
      max_warps_(single_warp ? 1 : 0),
      keep_count_(plan.keep_count),
      batch_blocks_(plan.batch_blocks),
      pool_blocks_(std::max<uint32_t>(1, data.params.pool_blocks)),
      max_pools_(plan.max_pools) {
  keep_ = DeviceBuffer<float>(keep_count_, "the subsampling table");
  counters_ = DeviceBuffer<SgnsCounters>(1, "training counters");
  if (keep_count_ > 0) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(keep_.data(), data_.keep->data(), keep_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  }
  // The noise table's columns, a run of ids of equal count each (sampler.hpp): a few thousand
  // for a vocabulary sorted by count, so both placements hold them on the GPU.
  const std::vector<NoiseColumn>& columns = data_.noise->columns();
  noise_ = DeviceBuffer<NoiseColumn>(columns.size(), "the negative-sampling table");
  if (!columns.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(noise_.data(), columns.data(), noise_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  }
  if (data_.params.hs) upload_tree(stream);
}

void SgnsLauncher::upload_tree(cudaStream_t stream) {
  const HuffmanTree* tree = data_.tree;
  if (tree == nullptr || tree->words() != data_.keep->words()) {
    throw Error("CUDA backend: hierarchical softmax needs the Huffman tree of the vocabulary");
  }
  // One link a node (2V − 1 of them) rather than every word's path (up to 40 entries a word,
  // 3.3 MB for mix5m's 34 k words): the kernels walk a path up the links (huffman.hpp).
  const std::vector<uint32_t> links = huffman_links(*tree);
  hs_words_ = tree->words();
  hs_links_ = DeviceBuffer<uint32_t>(std::max<size_t>(links.size(), 1), "the Huffman tree's links");
  if (!links.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(hs_links_.data(), links.data(),
                                      links.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                      stream));
  }
  // The links are a local copy: the copy is waited for before they go.
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

SgnsArgs run_args(const TrainData& data, uint32_t epoch, uint64_t keep_count) {
  const TrainParams& p = data.params;
  SgnsArgs a;
  a.model = p.model;
  a.kernel = p.kernel;
  a.stride = sgns_row_stride(p.dim);
  a.vocab = data.keep->words();
  a.keep_count = static_cast<uint32_t>(keep_count);
  a.noise_columns = data.noise->column_count();
  a.seed = p.seed;
  a.epoch = epoch;
  a.window = p.window;
  a.negative = p.negative;
  a.schedule = make_schedule(p);
  a.epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  return a;
}

SgnsArgs SgnsLauncher::base_args(uint32_t epoch) {
  SgnsArgs a = run_args(data_, epoch, keep_count_);
  a.input = tables_.input();
  a.output = tables_.output();
  a.pitch = tables_.pitch();
  a.keep = keep_.data();
  a.noise = noise_.data();
  a.counters = counters_.data();
  if (data_.params.hs) {
    a.hs_word_links = hs_word_links();
    a.hs_node_links = hs_node_links();
    a.hs_nodes = tables_.nodes();
    a.hs_damp_warps = hs_damp_warps_;
  }
  a.max_warps = max_warps_;
  a.item_tokens = item_tokens_;
  tables_.set_gradient_args(a);
  return a;
}

void SgnsLauncher::reset_counters(cudaStream_t stream) {
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters_.data(), 0, sizeof(SgnsCounters), stream));
}

void SgnsLauncher::launch_timed(const SgnsArgs& a, cudaStream_t stream) {
  if (timing_n_ == timing_.size()) timing_.emplace_back();
  std::pair<Event, Event>& t = timing_[timing_n_++];
  t.first.record(stream);
  launch_sgns(a, stream);
  t.second.record(stream);
}

void SgnsLauncher::train_piece(const SgnsArgs& a, uint32_t epoch, uint64_t super_batch,
                               uint64_t first_token, cudaStream_t stream) {
  launch_timed(a, stream);
  step(epoch, super_batch, first_token, stream);
}

void SgnsLauncher::step(uint32_t epoch, uint64_t super_batch, uint64_t first_token,
                        cudaStream_t stream) {
  if (data_.optimizer.kind == OptimizerKind::kSgd) return;
  const TrainParams& p = data_.params;
  const uint64_t blocks_per_epoch = data_.blocks->size() - 1;
  const uint64_t batches_per_epoch = (blocks_per_epoch + batch_blocks_ - 1) / batch_blocks_;
  const uint64_t number = uint64_t{epoch} * batches_per_epoch + super_batch + 1;
  const float lr = make_schedule(p, data_.optimizer)
                       .at(static_cast<uint64_t>(epoch) * p.words_per_epoch + first_token);
  tables_.step_optimizer(data_.optimizer, number, lr, stream);
}

void SgnsLauncher::draw_pools(uint32_t epoch, uint64_t first, uint64_t last, PoolBuffers& out,
                              cudaStream_t stream) {
  const auto& blocks = *data_.blocks;
  auto block_of = [&](uint64_t sentence) {
    return static_cast<uint64_t>(std::upper_bound(blocks.begin(), blocks.end(), sentence) -
                                 blocks.begin() - 1);
  };
  uint64_t block = block_of(first);
  const uint64_t first_period = block / pool_blocks_;
  const uint64_t last_period = block_of(last - 1) / pool_blocks_;
  out.pools = last_period - first_period + 1;
  if (out.pools > max_pools_) {
    throw Error("CUDA backend: a piece spans more pool periods than planned");
  }
  const uint32_t pool_size = data_.params.negative_pool;
  launch_draw_pools(data_.params.seed, epoch, first_period, out.pools, noise_.data(),
                    data_.noise->column_count(), pool_size, out.pool.data(), stream);
  out.wait_host_copies();
  if (last - first > out.host_sentence_pool.size()) {
    throw Error("CUDA backend: a piece has more sentences than planned");
  }
  uint32_t* numbers = out.host_sentence_pool.data();
  for (uint64_t t = first; t < last; ++t) {
    while (block + 1 < blocks.size() && blocks[block + 1] <= t) ++block;
    numbers[t - first] = static_cast<uint32_t>(block / pool_blocks_ - first_period);
  }
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(out.sentence_pool.data(), numbers, (last - first) * 4,
                                    cudaMemcpyHostToDevice, stream));
  out.host_copied.record(stream);
  out.host_copy_recorded = true;
}

SgnsCounters SgnsLauncher::read_counters(cudaStream_t stream) {
  SgnsCounters host{};
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(&host, counters_.data(), sizeof(SgnsCounters),
                                    cudaMemcpyDeviceToHost, stream));
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  return host;
}

double SgnsLauncher::kernel_seconds() const {
  double seconds = 0;
  for (size_t k = 0; k < timing_n_; ++k) {
    seconds += timing_[k].second.elapsed_ms_since(timing_[k].first) * 1e-3;
  }
  return seconds;
}

}  // namespace pagedw2v
