#include "bench/train_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "base/seconds_since.hpp"
#include "corpus/corpus.hpp"
#include "model/sampler.hpp"
#include "text/text_source.hpp"
#include "train/backend_factory.hpp"
#include "train/run_setup.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

#ifdef PAGEDW2V_HAVE_CUDA
#include "dist/replica_span.hpp"
#include "dist/row_owners.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/part_trainer.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/replica_delta.hpp"
#include "kernels/sgns.hpp"
#endif

namespace pagedw2v {
namespace {

using Clock = std::chrono::steady_clock;

#ifdef PAGEDW2V_HAVE_CUDA
double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
using GpuReport = CudaBackendReport;
#else
struct GpuReport {};
#endif

/// A field of /proc/self/status in bytes (VmHWM: the peak resident set; VmRSS: the resident set
/// now), 0 where there is none.
uint64_t status_bytes(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field, n) == 0) {
      kib = std::strtoull(line + n, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}
uint64_t peak_rss_bytes() { return status_bytes("VmHWM:"); }
uint64_t rss_bytes() { return status_bytes("VmRSS:"); }

/// Bytes of both tables and every optimizer state table.
uint64_t model_bytes(const Model& model) {
  uint64_t bytes = model.input.bytes() + model.output.bytes();
  for (const HostTable& t : model.input_state) bytes += t.bytes();
  for (const HostTable& t : model.output_state) bytes += t.bytes();
  return bytes;
}

/// The training set of `config.corpus`, its text repeated `repeat` times, read as `train` reads
/// it (the file mapped, counted on the run's threads, the text it has read let go as the count
/// goes, the codes kept for the encoding); the seconds of its stages go to `r`.
TrainingSet text_training_set(const Config& config, uint32_t repeat, TrainBenchResult& r) {
  auto t = Clock::now();
  CorpusText file = CorpusText::open({config.corpus});
  std::string repeated;
  std::vector<std::string_view> parts = file.parts();
  if (repeat > 1) {
    for (uint32_t i = 0; i < repeat; ++i) {
      for (const std::string_view part : file.parts()) {
        repeated.append(part);
        if (!part.empty() && part.back() != '\n') repeated.push_back('\n');
      }
    }
    parts = {repeated};
  }
  r.read_seconds = seconds_since(t);
  t = Clock::now();
  Vocab vocab = count_corpus_vocabulary(file, parts, config, true);
  r.vocab_seconds = seconds_since(t);
  t = Clock::now();
  TrainingSet set = make_training_set(parts, config, std::move(vocab));
  r.encode_seconds = seconds_since(t);
  return set;
}

void check_options(const TrainBenchOptions& options) {
  const Config& config = options.config;
  if (config.corpus.empty() && !options.synthetic) {
    throw UsageError("bench train: --corpus FILE or --synthetic VOCAB,WORDS,ZIPF is required");
  }
  if (!config.corpus.empty() && options.synthetic) {
    throw UsageError("bench train: give --corpus or --synthetic, not both");
  }
  if (options.repeat == 0) throw UsageError("--repeat: expected at least 1");
  if (options.synthetic && options.repeat > 1) {
    throw UsageError("--repeat applies to --corpus; make --synthetic's WORDS larger instead");
  }
}

/// The CUDA backend's tuning the bench's own settings ask for (TrainBenchOptions): the run's
/// plan is made under it, once, and the backend built with it.
CudaBackendOptions bench_cuda_tuning(const TrainBenchOptions& options) {
  CudaBackendOptions co;
  if (options.paging_sms >= 0) co.paging_sms = static_cast<uint32_t>(options.paging_sms);
  co.cache_rows = options.cache_rows;
  co.hot_rows = options.hot_rows;
  if (options.sgd_piece_words > 0) co.sgd_piece_words = options.sgd_piece_words;
  co.cut_threads = options.cut_threads;
  co.cut_ahead = options.cut_ahead;
  co.paging_trace = options.paging_trace;
  co.piece_cutting = options.piece_cuts == 1   ? PieceCutting::kHost
                     : options.piece_cuts == 2 ? PieceCutting::kDevice
                                               : PieceCutting::kAuto;
  co.move_blocks = options.move_blocks;
  co.item_tokens = options.item_tokens;
  if (options.table_skew >= 0) co.table_skew_bytes = static_cast<size_t>(options.table_skew);
  if (options.table_layout != 0) {
    co.table_layout = options.table_layout == 2 ? TableLayout::kInterleaved : TableLayout::kApart;
  }
  co.force_stream = options.force_stream;
  co.chunk_tokens = options.chunk_tokens;
  return co;
}

#ifdef PAGEDW2V_HAVE_CUDA
/// Rank 0 of `options.replicas` GPU ranks on replicated tables; prints its lines to `out`.
void bench_replicas(const TrainBenchOptions& options, const TrainingSet& set, const TrainData& data,
                    Model& model, const GpuGrant& gpu, Clock::time_point t0, TrainBenchResult& r,
                    std::FILE* out) {
  const Vocab& vocab = set.vocab;
  const EncodedCorpus& corpus = set.corpus;
  const TrainParams& p = data.params;
  // Rank 0 of `replicas`: whole tables on the GPU, its share of every span, then what the
  // span changed in the frequent rows (every row each cold period and at an epoch's end)
  // taken and applied as the ranks' sum would be; the sum between GPUs is left out.
  const uint32_t n = options.replicas;
  if (!gpu_parts_train(data)) {
    throw UsageError("bench train --replicas: skip-gram with sgd and no --negative-pool");
  }
  PartTrainer trainer(data, 1, 0, false, gpu);
  trainer.upload(model.input.data(), model.output.data(), 0);
  const uint64_t words = vocab.size();
  const uint64_t floats = words * trainer.row_stride();
  DeviceBuffer<float> snap_in(floats, "snapshot"), snap_out(floats, "snapshot"),
      sums(floats, "sums");
  Stream stream;
  cudaStream_t st = stream.get();
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(snap_in.data(), trainer.input_rows(), floats * 4,
                                    cudaMemcpyDeviceToDevice, st));
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(snap_out.data(), trainer.output_rows(), floats * 4,
                                    cudaMemcpyDeviceToDevice, st));
  stream.synchronize();
  const uint64_t rank_span = dist::gpu_replica_span_words(words);
  const uint64_t span_blocks = std::max<uint64_t>(1, rank_span * n / kBlockWords);
  const uint64_t nblocks = set.block_count();
  const auto& blocks = *data.blocks;
  double train_s = 0, sum_s = 0;
  uint64_t spans = 0, every = 0;
  for (uint32_t epoch = 0; epoch < p.epochs; ++epoch) {
    for (uint64_t b = 0; b < nblocks; b += span_blocks) {
      const uint64_t e = std::min(nblocks, b + span_blocks);
      const dist::BlockRange mine = dist::share_of_span(b, e, 0, n);
      auto t = Clock::now();
      if (mine.first < mine.last) trainer.train(epoch, blocks[mine.first], blocks[mine.last], 0);
      train_s += seconds_since(t);
      t = Clock::now();
      const bool all = dist::replica_sums_every_row(b, e, nblocks, span_blocks * kBlockWords);
      const uint64_t rows = all ? words : std::min<uint64_t>(words, dist::kReplicaHotRows);
      every += all;
      for (int k = 0; k < 2; ++k) {
        float* copy = static_cast<float*>(k == 0 ? trainer.input_rows() : trainer.output_rows());
        float* snap = k == 0 ? snap_in.data() : snap_out.data();
        const uint64_t count = rows * trainer.row_stride();
        launch_take_delta(copy, snap, sums.data(), count, st);
        launch_apply_sum(copy, snap, sums.data(), count, st);
      }
      stream.synchronize();
      sum_s += seconds_since(t);
      ++spans;
      r.words += corpus.sentence_starts[blocks[e]] - corpus.sentence_starts[blocks[b]];
    }
  }
  const double seconds = train_s + sum_s;
  r.device = "cuda";
  r.placement = "replicas";
  r.train_seconds = seconds;
  r.words_per_second = seconds > 0 ? r.words / seconds : 0;
  r.total_seconds = seconds_since(t0);
  if (out != nullptr) {
    std::fprintf(out,
                 "bench train: rank 0 of %u GPU ranks on replicated tables, dim %u, %u epochs: "
                 "%llu spans of %llu words a rank (%llu with every row summed); training "
                 "%.4f s, the sums' passes %.4f s\n",
                 n, p.dim, p.epochs, static_cast<unsigned long long>(spans),
                 static_cast<unsigned long long>(rank_span), static_cast<unsigned long long>(every),
                 train_s, sum_s);
    std::fprintf(out,
                 "RESULT device=cuda replicas=%u words=%llu train_s=%.4f words_per_s=%.1fM "
                 "(the words of all ranks over rank 0's time; the all-reduce between GPUs not "
                 "counted)\n",
                 n, static_cast<unsigned long long>(r.words), seconds, r.words_per_second / 1e6);
  }
}

/// Rank 0 of `options.parts` GPU ranks on partitioned tables; prints its lines to `out`.
void bench_parts(const TrainBenchOptions& options, const TrainingSet& set, const TrainData& data,
                 Model& model, const GpuGrant& gpu, Clock::time_point t0, TrainBenchResult& r,
                 std::FILE* out) {
  const Vocab& vocab = set.vocab;
  const EncodedCorpus& corpus = set.corpus;
  const TrainParams& p = data.params;
  // Rank 0 of `parts`: its input part stays on the GPU; before each launch the output part
  // it trains against comes from host memory (the ranks move it between GPUs), untimed.
  const uint32_t n = options.parts;
  PartTrainer trainer(data, n, 0, false, gpu);
  auto part_rows = [&](const HostTable& t, uint32_t q) {
    std::vector<float> rows(trainer.part_rows(q) * p.dim);
    for (uint64_t j = 0; j < trainer.part_rows(q); ++j) {
      std::copy_n(t.row(q + j * n), p.dim, rows.data() + j * p.dim);
    }
    return rows;
  };
  std::vector<float> input = part_rows(model.input, 0);
  std::vector<std::vector<float>> output;
  for (uint32_t q = 0; q < n; ++q) output.push_back(part_rows(model.output, q));
  const uint64_t span_words = part_span_words(vocab.size(), kPartSpanLeastWords);
  const uint64_t nblocks = set.block_count();
  const uint64_t span_blocks = std::max<uint64_t>(1, span_words / kBlockWords);
  const auto& blocks = *data.blocks;
  double seconds = 0;
  uint64_t launches = 0, examples = 0;
  for (uint32_t epoch = 0; epoch < p.epochs; ++epoch) {
    for (uint64_t b = 0; b < nblocks; b += span_blocks) {
      const uint64_t e = std::min(nblocks, b + span_blocks);
      for (uint32_t q = 0; q < n; ++q) {
        trainer.upload(input.data(), output[q].data(), q);
        const auto t = Clock::now();
        examples += trainer.train(epoch, blocks[b], blocks[e], q).loss_terms;
        seconds += seconds_since(t);
        ++launches;
        trainer.download(input.data(), output[q].data(), q);
      }
      r.words += corpus.sentence_starts[blocks[e]] - corpus.sentence_starts[blocks[b]];
    }
  }
  r.device = "cuda";
  r.placement = "parts";
  r.train_seconds = seconds;
  r.words_per_second = seconds > 0 ? r.words / seconds : 0;
  r.total_seconds = seconds_since(t0);
  if (out != nullptr) {
    std::fprintf(
        out,
        "bench train: rank 0 of %u GPU ranks on partitioned tables, dim %u window %u "
        "negative %u, %u epochs: %llu launches over spans of %llu words, %llu examples "
        "of rank 0\n",
        n, p.dim, p.window, p.negative, p.epochs, static_cast<unsigned long long>(launches),
        static_cast<unsigned long long>(span_words), static_cast<unsigned long long>(examples));
    std::fprintf(out,
                 "RESULT device=cuda parts=%u words=%llu train_s=%.4f words_per_s=%.1fM "
                 "(the words of all ranks over rank 0's training time; the moves between ranks "
                 "not counted)\n",
                 n, static_cast<unsigned long long>(r.words), seconds, r.words_per_second / 1e6);
  }
}

/// The paged placement's figures of `cr` in `r`.
void read_gpu_report(const CudaBackendReport& cr, TrainBenchResult& r) {
  r.placement = cr.paged ? "paged" : "resident";
  if (cr.paged) {
    r.hot_rows = cr.hot_rows;
    r.cache_rows = cr.cache_rows;
    r.super_batches = cr.super_batches;
    r.budget_bytes = cr.budget_bytes;
    r.splits = cr.splits;
    r.narrowed = cr.narrowed;
    r.drains = cr.drains;
    r.cold_rows = cr.cold_rows;
    // Hits are counted per reference (a token or a pool entry): the hot rows serve a share,
    // and every reference but the first to each row read from the host is served on the GPU.
    if (cr.row_lookups > 0) {
      const double refs = static_cast<double>(cr.row_lookups);
      r.hot_hit_rate = 1.0 - static_cast<double>(cr.cold_lookups) / refs;
      r.cache_hit_rate = 1.0 - static_cast<double>(cr.rows_from_host) / refs;
    }
    r.rows_from_host = cr.rows_from_host;
    r.rows_to_host = cr.rows_to_host;
    r.pcie_bytes_per_word = r.words > 0 ? static_cast<double>(cr.pcie_bytes) / r.words : 0.0;
  }
}
#endif

/// What the epochs counted beside `TrainBenchResult`.
struct EpochCounts {
  uint64_t kept = 0;      ///< words kept after subsampling
  uint64_t examples = 0;  ///< pairs or windows
  std::vector<double> epoch_seconds;
};

/// Trains every epoch span by span, as the trainer hands spans to its backend.
EpochCounts train_epochs(Backend& backend, uint64_t nblocks, uint32_t epochs, TrainBenchResult& r) {
  const uint64_t span_blocks = std::max<uint64_t>(1, backend.span_words() / kBlockWords);
  const auto t_train = Clock::now();
  double last_loss = 0;
  uint64_t last_terms = 0;
  EpochCounts c;
  for (uint32_t epoch = 0; epoch < epochs; ++epoch) {
    const auto t_epoch = Clock::now();
    last_loss = 0;
    last_terms = 0;
    for (uint64_t b = 0; b < nblocks; b += span_blocks) {
      const SpanStats s = backend.train(epoch, b, std::min(nblocks, b + span_blocks));
      r.words += s.words;
      c.kept += s.trained;
      c.examples += s.loss_terms;
      last_loss += s.loss;
      last_terms += s.loss_terms;
    }
    c.epoch_seconds.push_back(seconds_since(t_epoch));
  }
  r.train_seconds = seconds_since(t_train);
  r.mean_loss = last_terms > 0 ? last_loss / last_terms : 0;
  return c;
}

/// The report of a run on one backend; `cr`: the CUDA backend's report, null for the CPU's.
void print_report(std::FILE* out, const TrainBenchOptions& options, const Config& config,
                  const TrainParams& p, const Backend& backend, const EncodedCorpus& corpus,
                  const EpochCounts& counts, const TrainBenchResult& r, const GpuReport* cr) {
  const uint64_t kept = counts.kept, examples = counts.examples;
  const std::vector<double>& epoch_seconds = counts.epoch_seconds;
  std::fprintf(out, "bench train: %s, %s dim %u window %u negative %u sample %g, %u epochs\n",
               r.device.c_str(), to_string(config.model).c_str(), p.dim, p.window, p.negative,
               config.sample, p.epochs);
  std::fprintf(out, "backend: %s; negative pool %u, super-batch %u blocks of %llu words\n",
               backend.describe().c_str(), p.negative_pool, p.batch_blocks,
               static_cast<unsigned long long>(kBlockWords));
  if (options.synthetic) {
    std::fprintf(out,
                 "corpus: synthetic, Zipf exponent %g, seed %llu: %llu words/epoch, %llu "
                 "sentences, vocabulary %u\n",
                 options.synthetic->zipf, static_cast<unsigned long long>(config.seed),
                 static_cast<unsigned long long>(r.corpus_words),
                 static_cast<unsigned long long>(corpus.sentences()), r.vocab);
  } else {
    std::fprintf(out, "corpus: %s x%u: %llu words/epoch, %llu sentences, vocabulary %u\n",
                 config.corpus.c_str(), options.repeat,
                 static_cast<unsigned long long>(r.corpus_words),
                 static_cast<unsigned long long>(corpus.sentences()), r.vocab);
  }
  if (r.words > 0) {
    std::fprintf(out, "per word: %.4f kept after subsampling, %.4f examples (pairs or windows)\n",
                 static_cast<double>(kept) / r.words, static_cast<double>(examples) / r.words);
  }
  std::fprintf(out, "epochs (s):");
  for (double s : epoch_seconds) std::fprintf(out, " %.4f", s);
  std::fprintf(out, "\n");
  std::fprintf(
      out, "time (s): prepare %.3f, backend setup %.3f, train %.4f, sync %.4f, total %.3f\n",
      r.prepare_seconds, r.setup_seconds, r.train_seconds, r.sync_seconds, r.total_seconds);
  // As `train` prints it; the bench writes no checkpoint and no export.
  std::fprintf(out,
               "time: read %.2f s, vocabulary %.2f s, encoding %.2f s, setup %.2f s, training "
               "%.2f s, checkpoints 0.00 s, export 0.00 s\n",
               r.read_seconds, r.vocab_seconds, r.encode_seconds,
               r.prepare_seconds - r.read_seconds - r.vocab_seconds - r.encode_seconds +
                   r.setup_seconds + r.sync_seconds,
               r.train_seconds);
#ifdef PAGEDW2V_HAVE_CUDA
  if (cr != nullptr) {
    std::fprintf(out, "gpu: %s; corpus %s; %llu launches\n", cr->device_name.c_str(),
                 cr->corpus_resident ? "resident" : "streamed",
                 static_cast<unsigned long long>(cr->launches));
    std::fprintf(out,
                 "split (s): upload %.4f (copy engine%s), kernels %.4f, other %.4f "
                 "(train wall minus kernels)\n",
                 cr->upload_seconds, cr->corpus_resident ? ", before training" : ", overlapped",
                 cr->kernel_seconds, std::max(0.0, r.train_seconds - cr->kernel_seconds));
    std::fprintf(out, "gpu memory: backend %.1f MiB, device peak used %.1f MiB\n",
                 mib(cr->backend_bytes), mib(cr->device_used_bytes));
    if (cr->kernel_seconds > 0) {
      std::fprintf(out, "kernel words/s: %.1f M\n", r.words / cr->kernel_seconds / 1e6);
    }
  }
#endif
  if (r.placement == "paged") {
    std::fprintf(out,
                 "placement: paged, %llu hot rows on the GPU, a cache of %llu rows, GPU "
                 "budget %.2f GiB\n",
                 static_cast<unsigned long long>(r.hot_rows),
                 static_cast<unsigned long long>(r.cache_rows), gib(r.budget_bytes));
    std::fprintf(
        out,
        "paging: %llu pieces (%llu splits, %llu narrowed, %llu drains), hit rate %.4f of row "
        "lookups (hot rows "
        "%.4f), %llu cold rows used, rows from host %llu, to host %llu, PCIe %.1f "
        "bytes/word\n",
        static_cast<unsigned long long>(r.super_batches), static_cast<unsigned long long>(r.splits),
        static_cast<unsigned long long>(r.narrowed), static_cast<unsigned long long>(r.drains),
        r.cache_hit_rate, r.hot_hit_rate, static_cast<unsigned long long>(r.cold_rows),
        static_cast<unsigned long long>(r.rows_from_host),
        static_cast<unsigned long long>(r.rows_to_host), r.pcie_bytes_per_word);
#ifdef PAGEDW2V_HAVE_CUDA
    const double moved = static_cast<double>(cr->pcie_bytes) / 2;
    std::fprintf(out,
                 "paging time (s): training launches in flight %.4f of %.4f; collecting pieces "
                 "%.4f (device); row moves %.4f (device, %.1f GB/s each way); host preparing "
                 "%.4f, of which waiting %.4f for the device and %.4f for the cuts\n",
                 cr->kernel_busy_seconds, r.train_seconds, cr->prep_seconds, cr->move_seconds,
                 cr->move_seconds > 0 ? moved / cr->move_seconds / 1e9 : 0.0,
                 cr->prepare_host_seconds, cr->prepare_blocked_seconds,
                 cr->prepare_cut_wait_seconds);
#endif
  } else {
    std::fprintf(out, "placement: %s\n",
                 r.placement == "host" ? "host (cpu backend)" : "resident on the GPU");
  }
  std::fprintf(out, "host memory: peak RSS %.3f GiB; tables + optimizer state %.3f GiB",
               gib(r.peak_rss_bytes), gib(r.table_bytes));
  if (r.peak_rss_bytes > 0 && r.table_bytes > 0) {
    const double with_corpus = static_cast<double>(r.table_bytes + r.corpus_bytes);
    std::fprintf(out, " (peak RSS is %.3fx); with the encoded corpus %.3f GiB (%.3fx)",
                 static_cast<double>(r.peak_rss_bytes) / static_cast<double>(r.table_bytes),
                 gib(r.table_bytes + r.corpus_bytes),
                 static_cast<double>(r.peak_rss_bytes) / with_corpus);
  }
  std::fprintf(out, "\n");
  if (r.rss_set_bytes > 0) {
    std::fprintf(out,
                 "host memory by stage (resident set): corpus and vocabulary %.3f GiB (the "
                 "vocabulary's words and counts %.3f GiB), the model allocated %.3f GiB, the "
                 "backend set up %.3f GiB, peak %.3f GiB\n",
                 gib(r.rss_set_bytes), gib(r.vocab_bytes), gib(r.rss_model_bytes),
                 gib(r.rss_setup_bytes), gib(r.peak_rss_bytes));
  }
  std::fprintf(out, "loss/example (last epoch): %.4f\n", r.mean_loss);
  std::fprintf(out,
               "RESULT device=%s model=%s words=%llu train_s=%.4f words_per_s=%.1fM total_s=%.3f "
               "placement=%s storage=%s peak_rss_gib=%.3f tables_gib=%.3f\n",
               r.device.c_str(), to_string(config.model).c_str(),
               static_cast<unsigned long long>(r.words), r.train_seconds, r.words_per_second / 1e6,
               r.total_seconds, r.placement.c_str(), to_string(config.storage).c_str(),
               gib(r.peak_rss_bytes), gib(r.table_bytes));
}

}  // namespace

TrainBenchResult run_train_bench(const TrainBenchOptions& options, std::FILE* out) {
  check_options(options);
  Config config = options.config;
  TrainBenchResult r;
  const auto t0 = Clock::now();
  // The one device query of this process.
  const DeviceFacts device = query_run_device(config);
  check_device(config.device, device);

  TrainingSet set = options.synthetic ? make_synthetic_training_set(*options.synthetic, config)
                                      : text_training_set(config, options.repeat, r);
  // As `train` does: nothing reads the words while the corpus trains.
  pack_vocabulary(set, config.effective_threads());
  if (options.synthetic) r.vocab_seconds = seconds_since(t0);
  const Vocab& vocab = set.vocab;
  const EncodedCorpus& corpus = set.corpus;
  r.rss_set_bytes = rss_bytes();
  r.vocab_bytes = vocab.memory_bytes();
  // The run's plan, made once from the one device query under the bench's tuning, as `train`
  // makes it: the model's layout and the backend both follow it.
  const CudaBackendOptions tuning = bench_cuda_tuning(options);
  const RunPlan plan = plan_run(config, set, device, nullptr, tuning);
  const TrainData data = set.train_data(config);
  const TrainParams& p = data.params;
  Model model = make_run_model(config, vocab.size(), plan.gpu);
  r.rss_model_bytes = rss_bytes();
  r.prepare_seconds = seconds_since(t0);
  r.vocab = vocab.size();
  r.corpus_words = corpus.size();

#ifdef PAGEDW2V_HAVE_CUDA
  // The GPU of the ranks the bench stands for, with the budget a rank's plan gives it.
  const GpuGrant rank_grant{device, gpu_budget(config.gpu_memory, device.free_bytes)};
  if (options.replicas > 1) {
    bench_replicas(options, set, data, model, rank_grant, t0, r, out);
    return r;
  }
  if (options.parts > 1) {
    bench_parts(options, set, data, model, rank_grant, t0, r, out);
    return r;
  }
#endif
  const auto t_setup = Clock::now();
  std::unique_ptr<Backend> backend =
      make_backend(plan, model, data, config.effective_threads(), tuning);
  r.setup_seconds = seconds_since(t_setup);
  r.rss_setup_bytes = rss_bytes();
  r.device = backend->name();

  const EpochCounts counts = train_epochs(*backend, set.block_count(), p.epochs, r);
  const auto t_sync = Clock::now();
  backend->sync_to_host();
  r.sync_seconds = seconds_since(t_sync);
  r.total_seconds = seconds_since(t0);
  r.words_per_second = r.train_seconds > 0 ? r.words / r.train_seconds : 0;
  r.placement = "host";
  const GpuReport* gpu_report = nullptr;
#ifdef PAGEDW2V_HAVE_CUDA
  CudaBackendReport cr;
  if (cuda_backend_report(*backend, &cr)) {
    read_gpu_report(cr, r);
    gpu_report = &cr;
  }
#endif
  r.table_bytes = model_bytes(model);
  r.corpus_bytes =
      corpus.tokens.size() * sizeof(uint32_t) + corpus.sentence_starts.size() * sizeof(uint64_t);
  r.peak_rss_bytes = peak_rss_bytes();
  if (out != nullptr) {
    print_report(out, options, config, p, *backend, corpus, counts, r, gpu_report);
  }
  return r;
}

}  // namespace pagedw2v
