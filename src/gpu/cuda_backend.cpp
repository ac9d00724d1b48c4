#include "gpu/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_corpus.hpp"
#include "gpu/device_tables.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/paged_pipeline.hpp"
#include "gpu/plan_input.hpp"
#include "gpu/sgns_launcher.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"
#include "kernels/sgns.hpp"
#include "model/params.hpp"

namespace pagedw2v {

namespace {

/// A decimal number below 2^32 (`text` from `at` to its end), or false.
bool parse_u32(const std::string& text, size_t at, uint32_t* out) {
  if (at >= text.size() || text.find_first_not_of("0123456789", at) != std::string::npos) {
    return false;
  }
  errno = 0;
  const unsigned long long n = std::strtoull(text.c_str() + at, nullptr, 10);
  if (errno == ERANGE || n > std::numeric_limits<uint32_t>::max()) return false;
  *out = static_cast<uint32_t>(n);
  return true;
}

/// CudaBackendOptions::hs_damp_warps as kHsTopVariable sets it (cuda_options.hpp), else
/// `given`. Throws UsageError for a value it does not know.
uint32_t hs_damp_warps_from_env(uint32_t given) {
  const char* v = std::getenv(kHsTopVariable);
  if (v == nullptr || *v == '\0') return given;
  const std::string text(v);
  uint32_t warps = 0;
  if (text == "add") return 0;
  if (text == "damp") return kHsDampLaunchWarps;
  if (text.rfind("damp:", 0) == 0 && parse_u32(text, 5, &warps) && warps != kHsDampLaunchWarps &&
      warps != kHsDampByModel) {
    return warps;
  }
  throw UsageError(std::string(kHsTopVariable) + "=" + text + ": expected add, damp or damp:WARPS");
}

/// CudaBackendOptions::hs_max_warps as kHsWarpsVariable sets it, else `given`. Throws
/// UsageError for a value that is not a number.
uint32_t hs_max_warps_from_env(uint32_t given) {
  const char* v = std::getenv(kHsWarpsVariable);
  if (v == nullptr || *v == '\0') return given;
  const std::string text(v);
  uint32_t warps = 0;
  if (parse_u32(text, 0, &warps)) return warps;
  throw UsageError(std::string(kHsWarpsVariable) + "=" + text + ": expected a number of warps");
}

/// Training on the GPU: picks resident or paged tables by the plan (gpu/gpu_plan.hpp) and drives
/// the parts that own them: the device tables (gpu/device_tables.hpp), the launches
/// (gpu/sgns_launcher.hpp) and, paged, the pipeline with its row cache
/// (gpu/paged_pipeline.hpp). Resident training runs in pieces: a whole chunk of the corpus at
/// once when nothing needs super-batch boundaries (sgd, no negative pool), else one super-batch
/// at a time.
class CudaBackend final : public Backend {
 public:
  CudaBackend(Model& model, const TrainData& data, const CudaBackendOptions& options,
              const GpuPlan& plan, const std::string& device_name)
      : model_(model), data_(data), options_(options), plan_(plan) {
    options_.hs_damp_warps =
        hs_damp_warps_for(hs_damp_warps_from_env(options.hs_damp_warps), data.params.model);
    options_.hs_max_warps =
        data.params.hs
            ? hs_max_warps_for(hs_max_warps_from_env(options.hs_max_warps), data.params.model)
            : 0;
    const TrainParams& p = data.params;
    check_sgns_shape(p.dim, p.window, p.negative, p.kernel);
    report_.device_name = device_name;
    const uint64_t used_before = device_used_bytes();

    rows_ = model.input.rows();
    const uint32_t dim = p.dim;
    if (model.output.rows() != rows_ || model.input.dim() != dim || model.output.dim() != dim ||
        data.noise->words() != rows_ || data.keep->words() != rows_) {
      throw Error("CUDA backend: tables, vocabulary and samplers disagree in size");
    }
    if (rows_ >= 0xFFFFFFF0ull) throw Error("CUDA backend: more than 2^32 rows");
    const uint32_t nstate = state_tables(data.optimizer.kind);
    if (model.input_state.size() != nstate || model.output_state.size() != nstate) {
      throw Error("CUDA backend: the optimizer state tables are missing");
    }
    // The row moves address every table with one row stride: all apart or all interleaved.
    auto same_shape = [&](const HostTable& t) {
      return t.rows() == rows_ && t.dim() == dim && t.stride() == model.input.stride();
    };
    bool shapes = same_shape(model.output);
    for (uint32_t k = 0; k < nstate; ++k) {
      shapes = shapes && same_shape(model.input_state[k]) && same_shape(model.output_state[k]);
    }
    // Hierarchical softmax beside negative sampling: the inner nodes' table and its state.
    const bool node_table = needs_node_table(p.hs, p.negative);
    if ((model.nodes.rows() > 0) != node_table ||
        model.nodes_state.size() != (node_table ? nstate : 0)) {
      throw Error(node_table ? "CUDA backend: --hs beside --negative needs the inner-node table"
                             : "CUDA backend: the model has an inner-node table it does not train");
    }
    if (node_table) {
      shapes = shapes && same_shape(model.nodes);
      for (uint32_t k = 0; k < nstate; ++k) shapes = shapes && same_shape(model.nodes_state[k]);
    }
    if (!shapes || model.input.stride() > 0xFFFFFFFFull) {
      throw Error("CUDA backend: the host tables differ in shape or layout");
    }
    per_super_batch_ = p.negative_pool > 0 || data.optimizer.kind != OptimizerKind::kSgd;
    // The run's plan, made once before the model was allocated, with the sizes it chose.
    if (plan_.hot_rows > rows_ || plan_.negative_pool != p.negative_pool ||
        plan_.pool_blocks != std::max<uint32_t>(1, p.pool_blocks) ||
        plan_.super_batch_blocks != std::max<uint32_t>(1, p.batch_blocks)) {
      throw Error("CUDA backend: the plan was made for other training sizes");
    }
    report_.budget_bytes = plan_.budget;
    if (plan_.paged) {
      report_.paged = true;
      report_.hot_rows = plan_.hot_rows;
      report_.cache_rows = plan_.cache_rows;
    }
    try {
      allocate();
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; lower --gpu-memory" +
                  (plan_.paged ? std::string() : std::string(" or use --placement paged")));
    }
    // Resident: the plan sized the corpus for the bytes it counted the tables and samplers to
    // take (the GPU tests check that they took those: test_cuda_paged).
    if (!plan_.paged) {
      report_.table_bytes = tables_->bytes() + launcher_->bytes();
      report_.planned_table_bytes = plan_.table_bytes;
    }
    if (paged_) {
      paged_->reload_from_host();
    } else {
      tables_->upload_initial(compute_.get());
    }
    const uint64_t used_after = device_used_bytes();
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
    if (!plan_.paged) return d + "tables resident (" + std::to_string(rows_) + " rows)";
    const uint64_t on_gpu = plan_.device_rows;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%",
                  100.0 * double(on_gpu) / double(std::max<uint64_t>(rows_, 1)));
    const uint64_t super_batch = uint64_t{plan_.super_batch_blocks} * kBlockWords;
    const uint64_t piece = uint64_t{plan_.batch_blocks} * kBlockWords;
    return d + "tables paged: " + std::to_string(plan_.hot_rows) + " hot rows + a cache of " +
           std::to_string(plan_.cache_rows) + " rows on the GPU (" + pct + " of " +
           std::to_string(rows_) + "), GPU memory budget " + format_gib(plan_.budget) + "; " +
           pool_words() + "super-batch " + std::to_string(super_batch) + " words" +
           (piece < super_batch ? ", pieces of at most " + std::to_string(piece) : std::string());
  }

  /// The negative pool's part of the backend line ("negative pool N per M words, "); none for
  /// hierarchical softmax alone, which draws no negatives.
  std::string pool_words() const {
    if (data_.params.negative == 0) return {};
    return "negative pool " + std::to_string(plan_.negative_pool) + " per " +
           std::to_string(uint64_t{plan_.pool_blocks} * kBlockWords) + " words, ";
  }

  /// Large spans: a launch ends with a tail in which only the warps of its last work items run
  /// (a warp trains its item in order), so a span should be long against one item's time.
  uint64_t span_words() const override { return uint64_t{1} << 25; }

  /// An optimizer steps once per piece, and a span's end ends a piece: spans of whole
  /// super-batches step once per super-batch.
  uint64_t span_align_blocks() const override {
    return data_.optimizer.kind == OptimizerKind::kSgd ? 1 : plan_.batch_blocks;
  }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    const auto wall_start = std::chrono::steady_clock::now();
    (void)data_.blocks->at(first_block), (void)data_.blocks->at(last_block);  // in range
    launcher_->reset_counters(compute_.get());
    if (paged_) {
      compute_.synchronize();  // the second training stream adds to the counters too
      launcher_->clear_timing();
      paged_->train_span(epoch, first_block, last_block);
    } else {
      launcher_->clear_timing();
      train_resident(epoch, first_block, last_block);
    }
    if (data_.optimizer.kind == OptimizerKind::kSgd) {
      // 16-bit host storage: a span ends with the device rows holding values the host tables
      // can hold (the paged flush rounded the cached rows), so that a run resumed from any span
      // end goes on to the same bits (optimizer steps round the rows they step).
      tables_->round_to_storage(paged_ ? plan_.hot_rows : rows_, compute_.get());
    }
    const SgnsCounters host = launcher_->read_counters(compute_.get());
    report_.launches += launcher_->launches();
    if (paged_) {
      paged_->report_span();
      report_.kernel_seconds += paged_->span_kernel_seconds();
    } else {
      report_.kernel_seconds += launcher_->kernel_seconds();
    }
    launcher_->clear_timing();
    if (corpus_) report_.upload_seconds = corpus_->upload_seconds();
    report_.device_used_bytes = std::max(report_.device_used_bytes, device_used_bytes());
    report_.train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    SpanStats s;
    s.words = host.words;
    s.trained = host.trained;
    s.loss = host.loss;
    s.loss_terms = host.loss_terms;
    return s;
  }

  void sync_to_host() override {
    if (paged_) {
      paged_->hot_rows_to_host();
    } else {
      tables_->copy_all(cudaMemcpyDeviceToHost, compute_.get());
    }
  }

  void sync_from_host() override {
    if (paged_) {
      paged_->reload_from_host();
    } else {
      tables_->copy_all(cudaMemcpyHostToDevice, compute_.get());
    }
  }

  const CudaBackendReport& report() const { return report_; }

 private:
  void allocate() {
    const cudaStream_t st = compute_.get();
    tables_ = std::make_unique<DeviceTables>(model_, data_.optimizer.kind,
                                             sgns_row_stride(data_.params.dim), plan_.device_rows,
                                             options_.table_layout, options_.table_skew_bytes, st);
    launcher_ =
        std::make_unique<SgnsLauncher>(data_, plan_, options_.serial || options_.ordered,
                                       options_.item_tokens, options_.hs_damp_warps, *tables_, st);
    launcher_->cap_warps(options_.hs_max_warps);
    size_t bytes = tables_->bytes() + launcher_->bytes();
    if (plan_.paged) {
      paged_ = std::make_unique<PagedPipeline>(data_, plan_, options_, *tables_, *launcher_,
                                               compute_, report_);
      bytes += paged_->bytes();
      report_.backend_bytes = bytes;
      return;
    }
    // The corpus's sizes are the plan's, made for the bytes it counted beside them
    // (GpuPlan::table_bytes; checked once allocated).
    DeviceCorpusOptions co;
    co.resident_max_bytes = plan_.corpus.resident_max_bytes;
    co.chunk_tokens = plan_.corpus.chunk_tokens;
    co.force_stream = options_.force_stream;
    co.window = data_.streamed;
    corpus_ = std::make_unique<DeviceCorpus>(*data_.corpus, co);
    report_.corpus_resident = corpus_->resident();
    bytes += corpus_->device_bytes();
    const uint32_t pool_size = data_.params.negative_pool;
    if (per_super_batch_ && pool_size > 0) {
      const uint64_t sentences = std::max<uint64_t>(plan_.max_piece_sentences, 1);
      pools_.pool = DeviceBuffer<uint32_t>(plan_.max_pools * pool_size, "the negative pools");
      pools_.sentence_pool = DeviceBuffer<uint32_t>(sentences, "pool numbers");
      pools_.host_sentence_pool = PinnedBuffer<uint32_t>(sentences, "pool numbers");
      bytes += pools_.pool.bytes() + pools_.sentence_pool.bytes();
    }
    report_.backend_bytes = bytes;
  }

  /// Resident tables: the corpus chunk by chunk, each chunk one launch; with super-batches
  /// (an optimizer or a negative pool), each chunk of a super-batch one piece.
  void train_resident(uint32_t epoch, uint64_t first_block, uint64_t last_block) {
    const auto& blocks = *data_.blocks;
    const cudaStream_t st = compute_.get();
    if (!per_super_batch_) {
      corpus_->for_each_chunk(blocks[first_block], blocks[last_block], st,
                              [&](const CorpusChunk& c) {
                                SgnsArgs a = launcher_->base_args(epoch);
                                a.tokens = c.tokens;
                                a.token_base = c.token_base;
                                a.sentence_starts = c.sentence_starts;
                                a.sentences = c.sentences;
                                a.token_count = c.token_count;
                                launcher_->launch_timed(a, st);
                              });
      return;
    }
    const uint32_t pool_size = data_.params.negative_pool;
    const uint64_t batch_blocks = plan_.batch_blocks;
    for (uint64_t b = first_block; b < last_block;) {
      const uint64_t super_batch = b / batch_blocks;
      const uint64_t end = std::min<uint64_t>((super_batch + 1) * batch_blocks, last_block);
      uint64_t chunk_first = blocks[b];  // the first sentence of the next chunk
      // The corpus may be a window of it (streamed): sentence s is sentence_starts[s − base].
      const uint64_t first_token =
          data_.corpus->sentence_starts[blocks[b] - data_.corpus->sentence_base];
      corpus_->for_each_chunk(blocks[b], blocks[end], st, [&](const CorpusChunk& c) {
        SgnsArgs a = launcher_->base_args(epoch);
        a.tokens = c.tokens;
        a.token_base = c.token_base;
        a.sentence_starts = c.sentence_starts;
        a.sentences = c.sentences;
        a.token_count = c.token_count;
        if (pool_size > 0) {
          launcher_->draw_pools(epoch, chunk_first, chunk_first + c.sentences, pools_, st);
          a.pool = pools_.pool.data();
          a.pool_size = pool_size;
          a.sentence_pool = pools_.sentence_pool.data();
        }
        launcher_->launch_timed(a, st);
        chunk_first += c.sentences;
      });
      // An optimizer steps once for the super-batch's part in this span, whatever chunks it
      // was uploaded in (spans aligned to super-batches: once per super-batch).
      launcher_->step(epoch, super_batch, first_token, st);
      b = end;
    }
  }

  Model& model_;
  const TrainData& data_;
  CudaBackendOptions options_;
  uint64_t rows_ = 0;
  bool per_super_batch_ = false;
  GpuPlan plan_;
  Stream compute_;
  std::unique_ptr<DeviceTables> tables_;
  std::unique_ptr<SgnsLauncher> launcher_;
  std::unique_ptr<DeviceCorpus> corpus_;  ///< resident
  PoolBuffers pools_;                     ///< resident with a negative pool
  std::unique_ptr<PagedPipeline> paged_;
  CudaBackendReport report_;
};

}  // namespace

uint64_t cuda_scratch_bytes(uint64_t select_n, uint32_t order_n, uint32_t key_bits) {
  // No keys: no slot order is sorted (GpuScratchBytes), the selects' scratch alone.
  if (order_n == 0) return select_marked_ids_temp_bytes(select_n);
  return std::max(select_marked_ids_temp_bytes(select_n),
                  order_free_slots_temp_bytes(order_n, key_bits));
}

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options, const GpuPlan& plan,
                                           const std::string& device_name) {
  return std::make_unique<CudaBackend>(model, data, options, plan, device_name);
}

std::unique_ptr<Backend> make_cuda_backend(Model& model, const TrainData& data,
                                           const CudaBackendOptions& options) {
  const DeviceFacts device = query_device();
  if (!device.usable) throw Error("--device cuda: no usable CUDA device found");
  CudaBackendOptions resolved = options;
  resolved.gpu = resolve_gpu_placement(options.gpu, data.keep->words(), data.params.dim,
                                       data.optimizer.kind, device);
  const GpuPlan plan =
      plan_gpu(make_plan_input(data, resolved),
               plan_device_facts(device, resolved.gpu.memory_budget, cuda_scratch_bytes));
  return make_cuda_backend(model, data, resolved, plan, device.name);
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
