#include "gpu/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "error.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_corpus.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/pinned_region.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/optimizer_step.hpp"
#include "kernels/paging.hpp"
#include "kernels/pool_draw.hpp"
#include "kernels/sgns.hpp"
#include "params.hpp"

namespace pagedw2v {

bool cuda_device_available() {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return count > 0;
  } catch (...) {
    return false;
  }
}

namespace {

size_t device_used_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  PAGEDW2V_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1u << 30));
  return buf;
}

/// The budget of `gpu`: --gpu-memory, or what the device has free minus a margin.
uint64_t query_budget(const GpuOptions& gpu) {
  size_t free_bytes = 0, total_bytes = 0;
  PAGEDW2V_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return gpu_budget(gpu.memory_budget, free_bytes);
}

/// What the plan needs of the current device, queried once per backend.
GpuDeviceFacts query_device_facts(const cudaDeviceProp& prop, const GpuOptions& gpu) {
  GpuDeviceFacts facts;
  facts.name = prop.name;
  facts.budget = query_budget(gpu);
  facts.host_pointers = gpu_uses_host_pointers();
  facts.scratch_bytes = [](uint64_t select_n, uint32_t order_n, uint32_t key_bits) -> uint64_t {
    return std::max(select_marked_ids_temp_bytes(select_n),
                    order_free_slots_temp_bytes(order_n, key_bits));
  };
  return facts;
}

/// Statistics the paging kernels count on the device.
struct PagingCounters {
  unsigned long long refs_cold;  ///< token and pool references to cold rows
  unsigned long long to_host;    ///< rows written back (evicted, or flushed at a span's end)
};

/// Pieces in flight at once (each with its own buffers), and how far behind the newest piece
/// one may still be training: a cache slot is evicted only once every piece up to kDepth behind
/// the one that evicts it has trained (kernels/paging.hpp). With two launches sharing the GPU
/// each lasts about two pieces' time, so a depth of 2 would make every row move wait for the
/// launch just before it. With one training stream (an optimizer, or serial runs) pieces train
/// one after the other, and a depth of 2 lets a piece's moves run while the piece before it
/// trains: the cache then holds two pieces' rows instead of three, which for an optimizer's
/// whole super-batches decides whether they overlap at all.
constexpr uint64_t kStages = kPagedStages;
constexpr uint32_t kDepth = 3;
constexpr uint32_t kDepthOneStream = 2;

/// Both tables and the optimizer state on the device, all rows or — paged — the hot rows and a
/// row cache (kernels/paging.hpp describes the layout and the rules that keep rows fresh).
/// Training runs in pieces: a whole chunk of the corpus at once when nothing needs super-batch
/// boundaries (sgd, no negative pool, resident), else one super-batch at a time, each split
/// further when its new rows find no free cache slots (paged). Paged pieces run in a pipeline:
/// collecting piece n + 1 and moving its rows overlap the training of n, n − 1 (and with sgd the
/// launches of consecutive pieces overlap too, on two streams).
class CudaBackend final : public Backend {
 public:
  CudaBackend(Model& model, const TrainData& data, const CudaBackendOptions& options)
      : model_(model), data_(data), options_(options), device_(require_device()) {
    const TrainParams& p = data.params;
    check_sgns_shape(p.dim, p.window, p.negative);
    cudaDeviceProp prop{};
    PAGEDW2V_CUDA_TRY(cudaGetDeviceProperties(&prop, device_));
    report_.device_name = prop.name;
    const size_t used_before = device_used_bytes();

    dim_ = p.dim;
    stride_ = sgns_row_stride(p.dim);
    rows_ = model.input.rows();
    if (model.output.rows() != rows_ || model.input.dim() != dim_ || model.output.dim() != dim_ ||
        data.noise->size() != rows_ || data.keep->size() != rows_) {
      throw Error("CUDA backend: tables, vocabulary and samplers disagree in size");
    }
    if (rows_ >= 0xFFFFFFF0ull) throw Error("CUDA backend: more than 2^32 rows");
    optimizer_ = data.optimizer.kind != OptimizerKind::kSgd;
    nstate_ = state_tables(data.optimizer.kind);
    if (model.input_state.size() != nstate_ || model.output_state.size() != nstate_) {
      throw Error("CUDA backend: the optimizer state tables are missing");
    }
    // The row moves address every table with one row stride: all apart or all interleaved.
    auto same_shape = [&](const HostTable& t) {
      return t.rows() == rows_ && t.dim() == dim_ && t.stride() == model.input.stride();
    };
    bool shapes = same_shape(model.output);
    for (uint32_t k = 0; k < nstate_; ++k) {
      shapes = shapes && same_shape(model.input_state[k]) && same_shape(model.output_state[k]);
    }
    if (!shapes || model.input.stride() > 0xFFFFFFFFull) {
      throw Error("CUDA backend: the host tables differ in shape or layout");
    }
    pool_ = p.negative_pool;
    batch_blocks_ = std::max<uint32_t>(1, p.batch_blocks);
    pool_blocks_ = std::max<uint32_t>(1, p.pool_blocks);
    per_super_batch_ = pool_ > 0 || optimizer_;

    plan(prop);
    try {
      allocate();
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; lower --gpu-memory" +
                  (paged_ ? std::string() : std::string(" or use --placement paged")));
    }
    sync_from_host();
    const size_t used_after = device_used_bytes();
    report_.device_used_bytes = std::max(used_before, used_after);
  }

  ~CudaBackend() override {
    // Streams must be idle before the pinned host memory they address is unlocked.
    cudaDeviceSynchronize();
    cudaGetLastError();
  }

  std::string name() const override { return "cuda"; }

  std::string describe() const override {
    std::string d = "cuda on " + report_.device_name + ", ";
    if (!paged_) return d + "tables resident (" + std::to_string(rows_) + " rows)";
    const uint64_t on_gpu = hot_ + cache_;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%",
                  100.0 * double(on_gpu) / double(std::max<uint64_t>(rows_, 1)));
    return d + "tables paged: " + std::to_string(hot_) + " hot rows + a cache of " +
           std::to_string(cache_) + " rows on the GPU (" + pct + " of " + std::to_string(rows_) +
           "), GPU memory budget " + gib(double(budget_));
  }

  /// Large spans: a launch ends with a tail in which only the last sentences' warps run (a warp
  /// trains its sentence in order), so a span should be long against one sentence's time.
  uint64_t span_words() const override { return uint64_t{1} << 25; }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    const auto wall0 = std::chrono::steady_clock::now();
    const auto& blocks = *data_.blocks;
    const uint64_t first = blocks.at(first_block), last = blocks.at(last_block);
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters_.data(), 0, sizeof(SgnsCounters), compute_.get()));
    if (paged_) compute_.synchronize();  // the second training stream adds to the counters too
    timing_.clear();
    if (paged_) {
      train_paged(epoch, first_block, last_block);
    } else if (!per_super_batch_) {
      corpus_->for_each_chunk(first, last, compute_.get(), [&](const CorpusChunk& c) {
        SgnsArgs a = base_args(epoch);
        a.tokens = c.tokens;
        a.token_base = c.token_base;
        a.sentence_starts = c.sentence_starts;
        a.sentences = c.sentences;
        launch_timed(a, compute_.get());
      });
    } else {
      for (uint64_t b = first_block; b < last_block;) {
        const uint64_t sb = b / batch_blocks_;
        const uint64_t end = std::min<uint64_t>((sb + 1) * batch_blocks_, last_block);
        uint64_t chunk_first = blocks[b];  // the first sentence of the next chunk
        corpus_->for_each_chunk(blocks[b], blocks[end], compute_.get(), [&](const CorpusChunk& c) {
          SgnsArgs a = base_args(epoch);
          a.tokens = c.tokens;
          a.token_base = c.token_base;
          a.sentence_starts = c.sentence_starts;
          a.sentences = c.sentences;
          if (pool_ > 0) {
            const uint64_t s0 = chunk_first, s1 = s0 + c.sentences;
            draw_pools(epoch, s0, s1, stage_[0], compute_.get());
            a.pool = stage_[0].pool.data();
            a.pool_size = pool_;
            a.sentence_pool = stage_[0].sentence_pool.data();
          }
          train_piece(a, epoch, sb, data_.corpus->sentence_starts[blocks[b]], compute_.get());
          chunk_first += c.sentences;
        });
        b = end;
      }
    }
    SgnsCounters host{};
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(&host, counters_.data(), sizeof(SgnsCounters),
                                      cudaMemcpyDeviceToHost, compute_.get()));
    compute_.synchronize();
    for (const auto& t : timing_)
      report_.kernel_seconds += t.second.elapsed_ms_since(t.first) * 1e-3;
    if (paged_) read_paging_times();
    report_.launches += timing_.size();
    timing_.clear();
    if (corpus_) report_.upload_seconds = corpus_->upload_seconds();
    if (paged_) read_paging_counters();
    report_.device_used_bytes = std::max(report_.device_used_bytes, device_used_bytes());
    report_.train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

    SpanStats s;
    s.words = host.words;
    s.trained = host.trained;
    s.loss = host.loss;
    s.loss_terms = host.loss_terms;
    return s;
  }

  void sync_to_host() override {
    if (paged_) {
      // The hot rows, by the move kernel: pinned tables are registered slab by slab, and a
      // copy-engine copy must not span two registrations.
      launch_move_rows(MoveKind::kToHost,
                       move_args(nullptr, nullptr, static_cast<uint32_t>(hot_), 0, kMoveOnCompute),
                       compute_.get());
      compute_.synchronize();
      return;
    }
    copy_rows(model_.input, input_.data(), cudaMemcpyDeviceToHost);
    copy_rows(model_.output, output_.data(), cudaMemcpyDeviceToHost);
    for (uint32_t k = 0; k < nstate_; ++k) {
      copy_rows(model_.input_state[k], input_state_[k].data(), cudaMemcpyDeviceToHost);
      copy_rows(model_.output_state[k], output_state_[k].data(), cudaMemcpyDeviceToHost);
    }
  }

  void sync_from_host() override {
    if (paged_) {
      launch_move_rows(MoveKind::kToDevice,
                       move_args(nullptr, nullptr, static_cast<uint32_t>(hot_), 0, kMoveOnCompute),
                       compute_.get());
      compute_.synchronize();
      // Cached rows are stale now: the next piece reads every cold row from the host.
      invalidate_cache();
      return;
    }
    copy_rows(model_.input, input_.data(), cudaMemcpyHostToDevice);
    copy_rows(model_.output, output_.data(), cudaMemcpyHostToDevice);
    for (uint32_t k = 0; k < nstate_; ++k) {
      copy_rows(model_.input_state[k], input_state_[k].data(), cudaMemcpyHostToDevice);
      copy_rows(model_.output_state[k], output_state_[k].data(), cudaMemcpyHostToDevice);
    }
  }

  const CudaBackendReport& report() const { return report_; }

 private:
  /// The streams that launch row moves, each with its own claim counter (MoveArgs::claim):
  /// moves on one stream run one after the other, moves on different streams may overlap.
  enum MoveStream { kMoveOnCompute, kMoveOnGather, kMoveOnPrep, kMoveStreams };

  /// The buffers of one piece in flight; pieces rotate through kStages of them.
  struct Stage {
    DeviceBuffer<uint32_t> tokens, rows, list, fresh, evicted, fresh_rows, pool, pool_rows, counts,
        sentence_pool;
    DeviceBuffer<unsigned long long> next_sentence;  ///< the launch's work counter
    // Pinned host staging of what is copied to the device per piece; written again only once
    // the copies that read it have finished (host_copied).
    PinnedBuffer<uint32_t> host_tokens, host_sentence_pool;
    PinnedBuffer<uint64_t> host_starts;
    Event host_copied{false};
    bool host_copy_recorded = false;
    uint64_t pools = 0;  ///< pool periods the piece spans
    DeviceBuffer<uint64_t> starts;
    Event prepped{false}, gathered{false}, trained{false};
    bool trained_recorded = false;
    // The piece it holds.
    uint64_t number = 0;
    uint64_t first_sentence = 0, last_sentence = 0;
    uint64_t super_batch = 0;
    uint64_t token_base = 0, tokens_n = 0;
    uint32_t cold = 0;     ///< distinct cold rows
    uint32_t fresh_n = 0;  ///< of those, rows read from the host
  };

  /// Takes placement and sizes from the plan (gpu/gpu_plan.hpp).
  void plan(const cudaDeviceProp& prop) {
    GpuPlanInput in;
    in.rows = rows_;
    in.dim = dim_;
    in.row_stride = stride_;
    in.optimizer = data_.optimizer.kind;
    in.negative_pool = pool_;
    in.batch_blocks = batch_blocks_;
    in.pool_blocks = static_cast<uint32_t>(pool_blocks_);
    in.placement = options_.gpu.placement;
    in.hot_rows = options_.hot_rows;
    in.cache_rows = options_.cache_rows;
    in.sgd_piece_words = options_.sgd_piece_words;
    in.blocks = data_.blocks;
    in.sentence_starts = &data_.corpus->sentence_starts;
    in.keep = data_.keep;
    const GpuPlan plan = plan_gpu(in, query_device_facts(prop, options_.gpu));
    budget_ = plan.budget;
    report_.budget_bytes = budget_;
    keep_count_ = plan.keep_count;
    batch_blocks_ = plan.batch_blocks;
    max_piece_tokens_ = plan.max_piece_tokens;
    max_piece_sentences_ = plan.max_piece_sentences;
    max_pools_ = plan.max_pools;
    max_list_ = plan.max_list;
    paged_ = plan.paged;
    hot_ = plan.hot_rows;
    cache_ = plan.cache_rows;
    device_rows_ = plan.device_rows;
    select_temp_bytes_ = plan.scratch_bytes;
    if (paged_) {
      report_.paged = true;
      report_.hot_rows = hot_;
      report_.cache_rows = cache_;
    }
  }

  void allocate() {
    const std::string shape =
        " (" + std::to_string(device_rows_) + " × " + std::to_string(dim_) + ")";
    const size_t table = static_cast<size_t>(device_rows_) * stride_;
    input_ = DeviceBuffer<float>(table, "the input vectors" + shape);
    output_ = DeviceBuffer<float>(table, "the output vectors" + shape);
    for (uint32_t k = 0; k < nstate_; ++k) {
      input_state_.emplace_back(table, "optimizer state of the input vectors" + shape);
      output_state_.emplace_back(table, "optimizer state of the output vectors" + shape);
    }
    if (optimizer_) {
      input_grad_ = DeviceBuffer<float>(table, "input gradients" + shape);
      output_grad_ = DeviceBuffer<float>(table, "output gradients" + shape);
      touched_input_ = DeviceBuffer<uint8_t>(device_rows_, "touched rows");
      touched_output_ = DeviceBuffer<uint8_t>(device_rows_, "touched rows");
      step_rows_[0] = DeviceBuffer<uint32_t>(device_rows_, "optimizer step lists");
      step_rows_[1] = DeviceBuffer<uint32_t>(device_rows_, "optimizer step lists");
      step_count_ = DeviceBuffer<uint32_t>(2, "optimizer step counts");
      step_temp_bytes_ = select_marked_ids_temp_bytes(device_rows_);
      step_temp_ = DeviceBuffer<unsigned char>(std::max<size_t>(step_temp_bytes_, 1), "scratch");
    }
    keep_ = DeviceBuffer<float>(keep_count_, "the subsampling table");
    counters_ = DeviceBuffer<SgnsCounters>(1, "training counters");
    const cudaStream_t st = compute_.get();
    if (keep_count_ > 0) {
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(keep_.data(), data_.keep->data(), keep_.bytes(),
                                        cudaMemcpyHostToDevice, st));
    }
    if (paged_) {
      // Only the pools draw from the noise table: few draws a piece, read from pinned host
      // memory, leave its GPU memory to table rows.
      host_noise_ = PinnedBuffer<AliasEntry>(rows_, "the negative-sampling table");
      std::copy(data_.noise->entries().begin(), data_.noise->entries().end(), host_noise_.data());
    } else {
      noise_ = DeviceBuffer<AliasEntry>(rows_, "the negative-sampling table");
      if (rows_ > 0) {
        PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(noise_.data(), data_.noise->entries().data(),
                                          noise_.bytes(), cudaMemcpyHostToDevice, st));
      }
    }
    // Padding columns stay zero for the whole run: they add nothing to any dot product.
    zero(input_);
    zero(output_);
    for (auto& t : input_state_) zero(t);
    for (auto& t : output_state_) zero(t);
    if (optimizer_) {
      zero(input_grad_);
      zero(output_grad_);
      zero(touched_input_);
      zero(touched_output_);
    }
    size_t bytes =
        input_.bytes() * (2 + 2 * nstate_ + (optimizer_ ? 2 : 0)) + keep_.bytes() + noise_.bytes() +
        counters_.bytes() +
        (optimizer_ ? touched_input_.bytes() * 2 + step_rows_[0].bytes() * 2 + step_temp_.bytes()
                    : 0);

    if (paged_) {
      allocate_paging();
      bytes += paging_bytes_;
    } else {
      DeviceCorpusOptions co;
      const uint64_t left = budget_ > bytes ? budget_ - bytes : 0;
      co.resident_max_bytes = options_.resident_corpus_max_bytes > 0
                                  ? options_.resident_corpus_max_bytes
                                  : std::max<uint64_t>(left / 2, 1);
      co.force_stream = options_.force_stream;
      co.chunk_tokens = options_.chunk_tokens;
      if (!co.force_stream && left / 2 < co.chunk_tokens * 24) {
        co.chunk_tokens = std::max<size_t>(left / 48, size_t{1} << 20);
      }
      corpus_ = std::make_unique<DeviceCorpus>(*data_.corpus, co);
      report_.corpus_resident = corpus_->resident();
      bytes += corpus_->device_bytes();
      if (per_super_batch_ && pool_ > 0) {
        stage_[0].pool = DeviceBuffer<uint32_t>(max_pools_ * pool_, "the negative pools");
        stage_[0].sentence_pool =
            DeviceBuffer<uint32_t>(std::max<uint64_t>(max_piece_sentences_, 1), "pool numbers");
        stage_[0].host_sentence_pool =
            PinnedBuffer<uint32_t>(std::max<uint64_t>(max_piece_sentences_, 1), "pool numbers");
        bytes += stage_[0].pool.bytes() + stage_[0].sentence_pool.bytes();
      }
    }
    report_.backend_bytes = bytes;
  }

  void allocate_paging() {
    where_ = DeviceBuffer<uint32_t>(rows_, "the row slots");
    marks_ = DeviceBuffer<uint8_t>(rows_, "the row marks");
    slot_id_ = DeviceBuffer<uint32_t>(cache_, "the cache's ids");
    slot_use_ = DeviceBuffer<uint32_t>(cache_, "the cache's use");
    flags_ = DeviceBuffer<uint8_t>(std::max(cache_, max_list_), "cache flags");
    free_ = DeviceBuffer<uint32_t>(cache_, "free cache slots");
    hand_ = DeviceBuffer<uint32_t>(2, "the cache's clock hand");
    zero(marks_);
    order_keys_ = DeviceBuffer<uint32_t>(max_list_, "the slot order");
    order_slots_ = DeviceBuffer<uint32_t>(max_list_, "the slot order");
    select_temp_ = DeviceBuffer<unsigned char>(std::max<size_t>(select_temp_bytes_, 1), "scratch");
    paging_counters_ = DeviceBuffer<PagingCounters>(1, "paging counters");
    move_claims_ = DeviceBuffer<unsigned long long>(kMoveStreams, "the moves' claim counters");
    PAGEDW2V_CUDA_TRY(
        cudaMemsetAsync(paging_counters_.data(), 0, sizeof(PagingCounters), compute_.get()));
    paging_bytes_ = where_.bytes() + marks_.bytes() + slot_id_.bytes() + slot_use_.bytes() +
                    flags_.bytes() + free_.bytes() + hand_.bytes() + order_keys_.bytes() +
                    order_slots_.bytes() + select_temp_.bytes() + paging_counters_.bytes() +
                    move_claims_.bytes();
    for (Stage& s : stage_) {
      s.tokens = DeviceBuffer<uint32_t>(max_piece_tokens_, "super-batch tokens");
      s.rows = DeviceBuffer<uint32_t>(max_piece_tokens_, "super-batch rows");
      s.starts = DeviceBuffer<uint64_t>(max_piece_sentences_ + 1, "super-batch sentences");
      s.list = DeviceBuffer<uint32_t>(max_list_, "super-batch row lists");
      s.fresh = DeviceBuffer<uint32_t>(max_list_, "super-batch row lists");
      s.evicted = DeviceBuffer<uint32_t>(max_list_, "super-batch row lists");
      s.fresh_rows = DeviceBuffer<uint32_t>(max_list_, "super-batch row lists");
      s.pool = DeviceBuffer<uint32_t>(max_pools_ * pool_, "the negative pools");
      s.pool_rows = DeviceBuffer<uint32_t>(max_pools_ * pool_, "the negative pool rows");
      s.sentence_pool =
          DeviceBuffer<uint32_t>(std::max<uint64_t>(max_piece_sentences_, 1), "pool numbers");
      s.counts = DeviceBuffer<uint32_t>(3, "row counts");
      s.next_sentence = DeviceBuffer<unsigned long long>(1, "a work counter");
      // The corpus is copied a piece at a time through pinned staging, so the copies are
      // asynchronous (the corpus itself stays pageable: registering part of a page of the heap
      // would make copies of its neighbours fail).
      s.host_tokens = PinnedBuffer<uint32_t>(max_piece_tokens_, "super-batch tokens");
      s.host_starts = PinnedBuffer<uint64_t>(max_piece_sentences_ + 1, "super-batch sentences");
      s.host_sentence_pool =
          PinnedBuffer<uint32_t>(std::max<uint64_t>(max_piece_sentences_, 1), "pool numbers");
      paging_bytes_ += s.tokens.bytes() + s.rows.bytes() + s.starts.bytes() + s.list.bytes() * 4 +
                       s.pool.bytes() + s.pool_rows.bytes() + s.sentence_pool.bytes() +
                       s.counts.bytes();
    }
    host_counts_ = PinnedBuffer<uint32_t>(3, "row counts");
    const std::string hint =
        "free host memory or raise the locked-memory limit (ulimit -l), or use "
        "--placement resident";
    // Each allocation once: interleaved tables share one.
    std::vector<void*> blocks;
    auto pin = [&](const HostTable& t, const char* what) {
      if (std::find(blocks.begin(), blocks.end(), t.block()) != blocks.end()) return;
      blocks.push_back(t.block());
      pinned_.emplace_back(t.block(), t.block_bytes(), what, hint);
    };
    pin(model_.input, "input vectors");
    pin(model_.output, "output vectors");
    for (uint32_t k = 0; k < nstate_; ++k) {
      pin(model_.input_state[k], "optimizer state");
      pin(model_.output_state[k], "optimizer state");
    }
  }

  template <typename T>
  void zero(DeviceBuffer<T>& b) {
    if (!b.empty()) PAGEDW2V_CUDA_TRY(cudaMemsetAsync(b.data(), 0, b.bytes(), compute_.get()));
  }

  SgnsArgs base_args(uint32_t epoch) {
    const TrainParams& p = data_.params;
    SgnsArgs a;
    a.model = p.model;
    a.input = input_.data();
    a.output = output_.data();
    a.stride = stride_;
    a.vocab = static_cast<uint32_t>(rows_);
    a.keep = keep_.data();
    a.keep_count = static_cast<uint32_t>(keep_count_);
    a.noise = noise_.data();
    a.seed = p.seed;
    a.epoch = epoch;
    a.window = p.window;
    a.negative = p.negative;
    a.schedule = make_schedule(p);
    a.epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
    a.counters = counters_.data();
    a.max_warps = options_.serial || options_.ordered ? 1 : 0;
    if (optimizer_) {
      a.input_grad = input_grad_.data();
      a.output_grad = output_grad_.data();
      a.touched_input = touched_input_.data();
      a.touched_output = touched_output_.data();
    }
    return a;
  }

  void launch_timed(const SgnsArgs& a, cudaStream_t stream) {
    timing_.emplace_back();
    timing_.back().first.record(stream);
    launch_sgns(a, stream);
    timing_.back().second.record(stream);
  }

  /// Trains one piece of super-batch `sb` and, with an optimizer, applies its step.
  void train_piece(const SgnsArgs& a, uint32_t epoch, uint64_t sb, uint64_t first_token,
                   cudaStream_t stream) {
    launch_timed(a, stream);
    if (!optimizer_) return;
    const TrainParams& p = data_.params;
    const uint64_t blocks_per_epoch = data_.blocks->size() - 1;
    const uint64_t batches_per_epoch = (blocks_per_epoch + batch_blocks_ - 1) / batch_blocks_;
    const uint64_t step = uint64_t{epoch} * batches_per_epoch + sb + 1;
    const float lr = make_schedule(p, data_.optimizer)
                         .at(static_cast<uint64_t>(epoch) * p.words_per_epoch + first_token);
    for (int t = 0; t < 2; ++t) {
      uint8_t* touched = t == 0 ? touched_input_.data() : touched_output_.data();
      launch_select_marked_ids(touched, device_rows_, step_rows_[t].data(), step_count_.data() + t,
                               step_temp_.data(), step_temp_bytes_, stream);
      OptimizerStepArgs s;
      s.table = t == 0 ? input_.data() : output_.data();
      for (uint32_t k = 0; k < nstate_; ++k) {
        s.state[k] = t == 0 ? input_state_[k].data() : output_state_[k].data();
      }
      s.stride = stride_;
      s.dim = dim_;
      s.rows = step_rows_[t].data();
      s.grads = t == 0 ? input_grad_.data() : output_grad_.data();
      s.grad_stride = stride_;
      s.count = device_rows_;
      s.d_count = step_count_.data() + t;
      s.grads_by_row = true;
      s.zero_grads = true;
      launch_optimizer_step(data_.optimizer, step, lr, s, stream);
      PAGEDW2V_CUDA_TRY(cudaMemsetAsync(touched, 0, device_rows_, stream));
    }
  }

  /// Draws the pools of every period that sentences [first, last) touch into s.pool, one after
  /// the other, and gives each sentence its pool's number (s.sentence_pool) on `stream`.
  void draw_pools(uint32_t epoch, uint64_t first, uint64_t last, Stage& s, cudaStream_t stream) {
    const auto& blocks = *data_.blocks;
    auto block_of = [&](uint64_t sentence) {
      return static_cast<uint64_t>(std::upper_bound(blocks.begin(), blocks.end(), sentence) -
                                   blocks.begin() - 1);
    };
    uint64_t b = block_of(first);
    const uint64_t q0 = b / pool_blocks_, q1 = block_of(last - 1) / pool_blocks_;
    s.pools = q1 - q0 + 1;
    if (s.pools > max_pools_)
      throw Error("CUDA backend: a piece spans more pool periods than planned");
    launch_draw_pools(data_.params.seed, epoch, q0, s.pools,
                      paged_ ? host_noise_.data() : noise_.data(), static_cast<uint32_t>(rows_),
                      pool_, s.pool.data(), stream);
    wait_host_copies(s);
    uint32_t* numbers = s.host_sentence_pool.data();
    for (uint64_t t = first; t < last; ++t) {
      while (b + 1 < blocks.size() && blocks[b + 1] <= t) ++b;
      numbers[t - first] = static_cast<uint32_t>(b / pool_blocks_ - q0);
    }
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.sentence_pool.data(), numbers, (last - first) * 4,
                                      cudaMemcpyHostToDevice, stream));
    s.host_copied.record(stream);
    s.host_copy_recorded = true;
  }

  /// Waits until the copies from the stage's pinned host staging have finished.
  static void wait_host_copies(Stage& s) {
    if (s.host_copy_recorded) s.host_copied.synchronize();
    s.host_copy_recorded = false;
  }

  // ---- paged training -------------------------------------------------------------------

  Stage& stage_of(uint64_t number) { return stage_[number % kStages]; }

  /// Training streams: two, so that a piece's launch can start while the previous one drains,
  /// when nothing orders the pieces (sgd, not serial); else one.
  cudaStream_t compute_of(uint64_t number) {
    return two_training_streams() && number % 2 == 1 ? compute2_.get() : compute_.get();
  }

  bool two_training_streams() const { return !optimizer_ && !options_.serial; }

  MoveArgs move_args(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n) {
    return move_args(host_rows, dev_rows, n, static_cast<uint32_t>(hot_));
  }

  MoveArgs move_args(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n,
                     uint32_t dev_base, MoveStream claim = kMoveStreams) {
    MoveArgs m;
    if (claim != kMoveStreams) m.claim = move_claims_.data() + claim;
    auto add = [&](HostTable& host, DeviceBuffer<float>& dev) {
      m.tables[m.table_count++] = PagedTable{host.data(), dev.data()};
    };
    add(model_.input, input_);
    add(model_.output, output_);
    for (uint32_t k = 0; k < nstate_; ++k) {
      add(model_.input_state[k], input_state_[k]);
      add(model_.output_state[k], output_state_[k]);
    }
    m.dim = dim_;
    m.stride = stride_;
    m.host_stride = static_cast<uint32_t>(model_.input.stride());
    m.host_rows = host_rows;
    m.dev_rows = dev_rows;
    m.dev_base = dev_base;
    m.n = n;
    return m;
  }

  /// Forgets every cached row (the host holds the current values).
  void invalidate_cache() {
    const cudaStream_t st = compute_.get();
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(where_.data(), 0xFF, where_.bytes(), st));
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(slot_id_.data(), 0xFF, slot_id_.bytes(), st));
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(slot_use_.data(), 0, slot_use_.bytes(), st));
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(hand_.data(), 0, hand_.bytes(), st));
    compute_.synchronize();
  }

  /// Collects the next piece (from sentence cursor_) as piece `number` on the prep stream:
  /// its cold rows, the cache slots they take, and its tokens and pools mapped to device rows;
  /// then, on the gather stream, writes back the rows it evicts and reads its new ones. Returns
  /// false when the span is done.
  bool prepare(uint32_t epoch, uint64_t number) {
    if (cursor_ >= span_end_) return false;
    const cudaStream_t st = prep_.get();
    Stage& s = stage_of(number);
    // The buffers of this stage were last used by number − kStages.
    if (s.trained_recorded) PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(st, s.trained.get(), 0));
    const auto host0 = std::chrono::steady_clock::now();
    piece_times_.emplace_back();
    PieceTimes& times = piece_times_.back();
    times.prep0.record(st);
    const auto& blocks = *data_.blocks;
    const auto& starts = data_.corpus->sentence_starts;
    const uint64_t block = static_cast<uint64_t>(
        std::upper_bound(blocks.begin(), blocks.end(), cursor_) - blocks.begin() - 1);
    const uint64_t sb = block / batch_blocks_;
    const uint64_t sb_end_block = std::min<uint64_t>((sb + 1) * batch_blocks_, span_last_block_);
    uint64_t last = std::min<uint64_t>(blocks[sb_end_block], span_end_);
    const uint64_t whole = last;
    if (fit_sentences_ > 0) last = std::min(last, cursor_ + fit_sentences_);
    bool split = false;
    uint32_t depth = two_training_streams() ? kDepth : kDepthOneStream;
    const uint32_t hot = static_cast<uint32_t>(hot_), slots = static_cast<uint32_t>(cache_);
    const uint32_t* hand = hand_.data() + number % 2;
    uint32_t* counts = s.counts.data();
    uint32_t* hc = host_counts_.data();
    for (;;) {
      const uint64_t t0 = starts[cursor_], t1 = starts[last];
      const uint64_t nt = t1 - t0, ns = last - cursor_;
      wait_host_copies(s);
      std::copy_n(data_.corpus->tokens.data() + t0, nt, s.host_tokens.data());
      std::copy_n(starts.data() + cursor_, ns + 1, s.host_starts.data());
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.tokens.data(), s.host_tokens.data(), nt * 4,
                                        cudaMemcpyHostToDevice, st));
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.starts.data(), s.host_starts.data(), (ns + 1) * 8,
                                        cudaMemcpyHostToDevice, st));
      launch_mark_cold_ids(s.tokens.data(), nt, hot, marks_.data(), nullptr, st);
      draw_pools(epoch, cursor_, last, s, st);
      launch_mark_cold_ids(s.pool.data(), s.pools * pool_, hot, marks_.data(), nullptr, st);
      launch_select_marked_ids(marks_.data(), rows_, s.list.data(), counts, select_temp_.data(),
                               select_temp_bytes_, st);
      launch_flag_new_ids(s.list.data(), counts, static_cast<uint32_t>(max_list_), where_.data(),
                          flags_.data(), st);
      launch_select_flagged(s.list.data(), flags_.data(), max_list_, s.fresh.data(), counts + 1,
                            select_temp_.data(), select_temp_bytes_, st);
      launch_flag_free_slots(slot_id_.data(), slot_use_.data(), marks_.data(), slots, hand, number,
                             depth, flags_.data(), st);
      launch_select_marked_ids(flags_.data(), slots, free_.data(), counts + 2, select_temp_.data(),
                               select_temp_bytes_, st);
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(hc, counts, 12, cudaMemcpyDeviceToHost, st));
      const auto wait0 = std::chrono::steady_clock::now();
      prep_.synchronize();
      prepare_blocked_seconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wait0).count();
      const uint32_t n = hc[0], fresh = hc[1], free = hc[2];
      // The piece fits when its new rows find free slots.
      if (fresh <= free) {
        s.cold = n;
        s.fresh_n = fresh;
        s.token_base = t0;
        s.tokens_n = nt;
        refs_ += nt + s.pools * pool_;
        // A piece that fit at the size of the last split: try a little more next time.
        if (!split && fit_sentences_ > 0 && last < whole) fit_sentences_ += fit_sentences_ / 8 + 1;
        pcie_corpus_bytes_ += nt * 4 + (ns + 1) * 8;
        break;
      }
      launch_clear_marks(s.list.data(), n, marks_.data(), st);
      // An optimizer steps once per piece, so its pieces are whole super-batches, as resident
      // training steps: one is never split. A piece that cannot be split (that, or a single
      // sentence) which the slots of the pieces still training leave no room for waits until
      // they have trained, and every slot but its own is free.
      if ((ns <= 1 || optimizer_) && depth > 1) {
        compute_.synchronize();
        compute2_.synchronize();
        depth = 1;
        ++report_.drains;
        continue;
      }
      if (optimizer_) {
        throw Error("paged tables with --optimizer " + to_string(data_.optimizer.kind) +
                    ": a super-batch touches " + std::to_string(n) +
                    " rows, more than the GPU row cache can take (" + std::to_string(free) +
                    " of " + std::to_string(cache_) +
                    " slots); raise --gpu-memory or lower --batch-words");
      }
      if (ns <= 1) {
        throw Error("paged tables: one sentence and the negative pool touch " + std::to_string(n) +
                    " rows, more than the GPU row cache can take now (" + std::to_string(free) +
                    " of " + std::to_string(cache_) +
                    " slots); raise --gpu-memory or lower --negative-pool");
      }
      // Rows grow about linearly with the sentences at this size: aim at 90 % of what fits,
      // and start the next pieces at that size too.
      const double fit = 0.9 * double(free) / std::max(1.0, double(fresh));
      const uint64_t take =
          std::max<uint64_t>(1, std::min<uint64_t>(ns - 1, uint64_t(double(ns) * fit)));
      last = cursor_ + take;
      fit_sentences_ = take;
      split = true;
      ++report_.splits;
    }
    s.number = number;
    s.first_sentence = cursor_;
    s.last_sentence = last;
    s.super_batch = sb;
    PagingCounters* pc = paging_counters_.data();
    // The slots the new rows take, by the ids they hold, so that the rows written back ascend
    // as the new ones do; its lists live in the stage's evicted and fresh_rows until install.
    const uint32_t* taken = launch_order_free_slots(
        free_.data(), s.fresh_n, slots, hand, hand_.data() + (number + 1) % 2, slot_id_.data(),
        static_cast<uint32_t>(rows_), order_key_bits(rows_), s.evicted.data(), order_keys_.data(),
        s.fresh_rows.data(), order_slots_.data(), select_temp_.data(), select_temp_bytes_, st);
    launch_install_rows(s.fresh.data(), s.fresh_n, taken, hot, slot_id_.data(), where_.data(),
                        s.evicted.data(), s.fresh_rows.data(), &pc->to_host, st);
    launch_claim_rows(s.list.data(), s.cold, where_.data(), hot, number, slot_use_.data(),
                      marks_.data(), st);
    launch_map_rows(s.tokens.data(), s.tokens_n, hot, where_.data(), s.rows.data(), &pc->refs_cold,
                    st);
    launch_map_rows(s.pool.data(), s.pools * pool_, hot, where_.data(), s.pool_rows.data(),
                    &pc->refs_cold, st);
    s.prepped.record(st);
    times.prep1.record(st);
    // Move the rows on their own stream, once every piece that may have used the evicted slots
    // (up to number − depth, on either training stream) has trained: each evicted row goes back
    // as its slot's new row comes in.
    const cudaStream_t gs = gather_.get();
    PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(gs, s.prepped.get(), 0));
    for (uint64_t back = depth; back <= depth + 1; ++back) {
      if (number >= first_number_ + back) {
        PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(gs, stage_of(number - back).trained.get(), 0));
      }
    }
    MoveArgs swap = move_args(s.fresh.data(), s.fresh_rows.data(), s.fresh_n);
    swap.claim = move_claims_.data() + kMoveOnGather;
    swap.out_rows = s.evicted.data();
    // About three blocks of 8 warps fit beside training on each multiprocessor it leaves free.
    swap.max_blocks = 3 * std::max<uint32_t>(1, options_.paging_sms);
    times.move0.record(gs);
    launch_move_rows(MoveKind::kSwap, swap, gs);
    times.move1.record(gs);
    s.gathered.record(gs);
    prepare_host_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host0).count();
    cursor_ = last;
    ++report_.super_batches;
    report_.cold_rows += s.cold;
    report_.rows_from_host += s.fresh_n;
    return true;
  }

  void train_paged(uint32_t epoch, uint64_t first_block, uint64_t last_block) {
    const auto& blocks = *data_.blocks;
    cursor_ = blocks[first_block];
    span_end_ = blocks[last_block];
    span_last_block_ = last_block;
    first_number_ = next_number_;
    for (Stage& s : stage_) s.trained_recorded = false;
    piece_times_.clear();
    span_start_.record(compute_.get());
    uint64_t n = first_number_;
    for (bool more = prepare(epoch, n); more; more = prepare(epoch, ++n)) {
      Stage& s = stage_of(n);
      const cudaStream_t cs = compute_of(n);
      PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(cs, s.gathered.get(), 0));
      if (options_.ordered && n > first_number_) {
        PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(cs, stage_of(n - 1).trained.get(), 0));
      }
      SgnsArgs a = base_args(epoch);
      a.tokens = s.tokens.data();
      a.token_rows = s.rows.data();
      a.token_base = s.token_base;
      a.sentence_starts = s.starts.data();
      a.sentences = s.last_sentence - s.first_sentence;
      a.pool = s.pool.data();
      a.pool_rows = s.pool_rows.data();
      a.pool_size = pool_;
      a.sentence_pool = s.sentence_pool.data();
      a.reserved_sms = options_.paging_sms;
      a.next_sentence = s.next_sentence.data();
      train_piece(a, epoch, s.super_batch, s.token_base, cs);
      s.trained.record(cs);
      s.trained_recorded = true;
    }
    next_number_ = n;
    // Flush: every cached row a piece of this span may have changed goes back to the host, so
    // that checkpoints and exports read current tables; the rows stay cached.
    PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
    if (next_number_ > first_number_) {
      const cudaStream_t st = prep_.get();
      launch_flag_used_slots(slot_id_.data(), slot_use_.data(), static_cast<uint32_t>(cache_),
                             first_number_, free_.data(), &paging_counters_.data()->to_host, st);
      MoveArgs flush = move_args(free_.data(), nullptr, static_cast<uint32_t>(cache_));
      flush.claim = move_claims_.data() + kMoveOnPrep;
      launch_move_rows(MoveKind::kToHost, flush, st);
      prep_.synchronize();
    }
  }

  /// Adds the span's paging times to the report: device time collecting pieces and moving
  /// rows, and how long at least one training launch was in flight.
  void read_paging_times() {
    std::vector<std::pair<double, double>> busy;
    for (const auto& t : timing_) {
      busy.emplace_back(t.first.elapsed_ms_since(span_start_),
                        t.second.elapsed_ms_since(span_start_));
    }
    std::sort(busy.begin(), busy.end());
    double covered = 0, end = -1e300;
    for (const auto& [a, b] : busy) {
      if (a > end) {
        covered += b - a;
        end = b;
      } else if (b > end) {
        covered += b - end;
        end = b;
      }
    }
    report_.kernel_busy_seconds += covered * 1e-3;
    for (const PieceTimes& t : piece_times_) {
      report_.prep_seconds += t.prep1.elapsed_ms_since(t.prep0) * 1e-3;
      report_.move_seconds += t.move1.elapsed_ms_since(t.move0) * 1e-3;
    }
    piece_times_.clear();
    report_.prepare_host_seconds = prepare_host_seconds_;
    report_.prepare_blocked_seconds = prepare_blocked_seconds_;
  }

  void read_paging_counters() {
    PagingCounters c{};
    PAGEDW2V_CUDA_TRY(cudaMemcpy(&c, paging_counters_.data(), sizeof c, cudaMemcpyDeviceToHost));
    report_.row_lookups = refs_;
    report_.cold_lookups = c.refs_cold;
    report_.rows_to_host = c.to_host;
    const uint64_t row_bytes = uint64_t{dim_} * sizeof(float) * (2 + 2 * nstate_);
    report_.pcie_bytes = (report_.rows_from_host + c.to_host) * row_bytes + pcie_corpus_bytes_;
  }

  /// Copies all rows of a resident table between its host layout (any row stride, pageable)
  /// and the device layout (pitch stride).
  void copy_rows(HostTable& host, float* dev, cudaMemcpyKind kind) {
    const uint64_t n = host.rows();
    if (n == 0) return;
    const size_t row = dim_ * sizeof(float), host_pitch = host.stride() * sizeof(float);
    const size_t dev_pitch = stride_ * sizeof(float);
    const bool to_host = kind == cudaMemcpyDeviceToHost;
    const uint64_t rows_per_copy = std::max<uint64_t>(1, (uint64_t{256} << 20) / host_pitch);
    for (uint64_t r = 0; r < n; r += rows_per_copy) {
      const uint64_t m = std::min(rows_per_copy, n - r);
      float* h = host.row(r);
      float* d = dev + r * stride_;
      if (to_host) {
        PAGEDW2V_CUDA_TRY(
            cudaMemcpy2DAsync(h, host_pitch, d, dev_pitch, row, m, kind, compute_.get()));
      } else {
        PAGEDW2V_CUDA_TRY(
            cudaMemcpy2DAsync(d, dev_pitch, h, host_pitch, row, m, kind, compute_.get()));
      }
    }
    compute_.synchronize();
  }

  static int require_device() {
    if (!cuda_device_available()) throw Error("--device cuda: no usable CUDA device found");
    int device = 0;
    PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
    return device;
  }

  Model& model_;
  const TrainData& data_;
  CudaBackendOptions options_;
  int device_ = 0;
  uint32_t dim_ = 0, stride_ = 0;
  uint64_t rows_ = 0;
  bool optimizer_ = false;
  uint32_t nstate_ = 0;
  uint32_t pool_ = 0;
  uint32_t batch_blocks_ = 1;
  bool per_super_batch_ = false;
  uint64_t budget_ = 0;
  bool paged_ = false;
  uint64_t hot_ = 0, cache_ = 0, device_rows_ = 0;
  uint64_t max_piece_tokens_ = 0, max_piece_sentences_ = 0, max_list_ = 0, max_pools_ = 1;
  uint64_t pool_blocks_ = 1;

  Stream compute_, compute2_, prep_, gather_;
  /// When a piece's collection and its row moves ran on the device (paged).
  struct PieceTimes {
    Event prep0, prep1, move0, move1;
  };
  std::vector<PieceTimes> piece_times_;
  Event span_start_;
  double prepare_host_seconds_ = 0, prepare_blocked_seconds_ = 0;
  DeviceBuffer<float> input_, output_, input_grad_, output_grad_, keep_;
  std::vector<DeviceBuffer<float>> input_state_, output_state_;
  DeviceBuffer<uint8_t> touched_input_, touched_output_;
  std::array<DeviceBuffer<uint32_t>, 2> step_rows_;
  DeviceBuffer<uint32_t> step_count_;
  DeviceBuffer<unsigned char> step_temp_;
  size_t step_temp_bytes_ = 0;
  DeviceBuffer<AliasEntry> noise_;
  PinnedBuffer<AliasEntry> host_noise_;  ///< paged: the noise table, read by the pool draws
  uint64_t keep_count_ = 0;              ///< words whose keep probability is below 1, and before
  DeviceBuffer<SgnsCounters> counters_;
  std::unique_ptr<DeviceCorpus> corpus_;
  std::vector<std::pair<Event, Event>> timing_;

  // Paged.
  DeviceBuffer<uint32_t> where_, slot_id_, slot_use_, free_, hand_, order_keys_, order_slots_;
  DeviceBuffer<uint8_t> marks_, flags_;
  DeviceBuffer<unsigned char> select_temp_;
  size_t select_temp_bytes_ = 0;
  DeviceBuffer<PagingCounters> paging_counters_;
  DeviceBuffer<unsigned long long> move_claims_;  ///< one claim counter per MoveStream
  PinnedBuffer<uint32_t> host_counts_;
  std::array<Stage, kStages> stage_;
  std::vector<PinnedRegion> pinned_;
  size_t paging_bytes_ = 0;
  uint64_t next_number_ = 0, first_number_ = 0;
  uint64_t cursor_ = 0, span_end_ = 0, span_last_block_ = 0;
  uint64_t refs_ = 0, pcie_corpus_bytes_ = 0;
  uint64_t fit_sentences_ = 0;  ///< sentences a piece took when one last had to be split

  CudaBackendReport report_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(model, data, options);
}

bool cuda_tables_paged(uint64_t rows, uint32_t dim, OptimizerKind kind, const GpuOptions& gpu) {
  switch (gpu.placement) {
    case Placement::kResident:
      return false;
    case Placement::kPaged:
      return true;
    case Placement::kAuto:
      break;
  }
  return plan_pages_tables(rows, sgns_row_stride(dim), kind, gpu.placement, query_budget(gpu));
}

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data) {
  return make_cuda_backend(model, data, CudaBackendOptions{});
}

bool cuda_backend_report(const Backend& backend, CudaBackendReport* report) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (cuda == nullptr) return false;
  *report = cuda->report();
  return true;
}

}  // namespace pagedw2v
