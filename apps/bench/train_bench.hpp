#pragma once
/// @file train_bench.hpp
/// `pagedw2v bench train`: times training on a corpus (optionally repeated N times in memory) or
/// on a synthetic Zipf corpus, words counted as word2vec counts them (every in-vocabulary word
/// read, before subsampling), with the time split the CUDA backend reports (upload, kernels,
/// other), its GPU memory, how the tables were placed (and, paged, the cache and PCIe traffic),
/// and the host memory the process used.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "bench/synthetic_corpus.hpp"
#include "config/config.hpp"

namespace pagedw2v {

struct TrainBenchOptions {
  Config config;        ///< corpus, model and training flags, device
  uint32_t repeat = 1;  ///< the corpus text is repeated this many times
  /// Train on a generated corpus instead of `config.corpus` (bench/synthetic_corpus.hpp).
  std::optional<SyntheticSpec> synthetic;
  bool force_stream = false;  ///< CUDA: stream the corpus in chunks even when it fits
  uint64_t chunk_tokens = uint64_t{32} << 20;  ///< CUDA: tokens per streamed chunk
  /// CUDA, paged: multiprocessors left to the paging kernels; negative: the backend's default.
  int paging_sms = -1;
  /// CUDA, paged: blocks every piece's row moves take; 0: the backend's choice.
  uint32_t move_blocks = 0;
  /// CUDA, paged: slots of the row cache; 0: the backend's default.
  uint64_t cache_rows = 0;
  /// CUDA, paged: rows kept on the GPU for the run (CudaBackendOptions::hot_rows); 0: sized
  /// from the budget.
  uint64_t hot_rows = 0;
  /// CUDA, paged sgd: the longest piece in words (CudaBackendOptions::sgd_piece_words); 0: the
  /// backend's default.
  uint64_t sgd_piece_words = 0;
  /// CUDA, pieces cut on the host: cutting threads (0: the backend's default), and whether the
  /// next span is cut ahead (CudaBackendOptions::cut_threads, cut_ahead).
  uint32_t cut_threads = 0;
  bool cut_ahead = true;
  /// CUDA, paged: a file each span appends its pieces' times to (empty: none).
  std::string paging_trace;
  /// CUDA, paged sgd: where pieces are cut (CudaBackendOptions::piece_cutting): 0 as the plan
  /// decides, 1 on the host, 2 on the device.
  int piece_cuts = 0;
  /// CUDA: positions per work item of the training kernel (CudaBackendOptions::item_tokens);
  /// 0: sized per launch; UINT32_MAX: a sentence each.
  uint32_t item_tokens = 0;
  /// CUDA: bytes between the device's input and output vectors
  /// (CudaBackendOptions::table_skew_bytes); negative: the backend's default.
  int64_t table_skew = -1;
  /// CUDA: how the device holds each pair of tables (CudaBackendOptions::table_layout): 0 the
  /// backend's default, 1 apart, 2 interleaved.
  int table_layout = 0;
  /// CUDA, skip-gram sgd: time what rank 0 of this many GPU ranks trains on partitioned
  /// tables (gpu/part_trainer.hpp), its output parts moved in turn from host memory (not
  /// timed) instead of from the other ranks; 0 or 1: one process's backend.
  uint32_t parts = 0;
  /// CUDA, skip-gram sgd: time what rank 0 of this many GPU ranks on replicated tables
  /// (dist/gpu_replica_backend.hpp) does: its share of every span on whole tables, and the
  /// sums' passes over the changed rows on its GPU; the all-reduce between GPUs is not timed.
  uint32_t replicas = 0;
};

struct TrainBenchResult {
  std::string device;
  uint64_t corpus_words = 0;  ///< in-vocabulary words of one epoch
  uint64_t words = 0;         ///< words trained, all epochs
  uint32_t vocab = 0;
  double prepare_seconds = 0;  ///< read, vocabulary, encoding, samplers, model init
  double read_seconds = 0;     ///< of prepare: the corpus mapped (and repeated)
  double vocab_seconds = 0;    ///< of prepare: counting words (a synthetic corpus: making it)
  double encode_seconds = 0;   ///< of prepare: word ids, blocks, samplers
  double setup_seconds = 0;    ///< backend creation (CUDA: allocation and uploads)
  double train_seconds = 0;    ///< the epochs
  double sync_seconds = 0;     ///< tables back to the host
  double total_seconds = 0;
  double words_per_second = 0;  ///< words / train_seconds
  double mean_loss = 0;         ///< loss per example over the last epoch
  /// Where the tables were: "host" (CPU backend), "resident" or "paged" (GPU).
  std::string placement;
  /// Paged placement (zero otherwise): hot rows and cache slots on the GPU, the GPU budget,
  /// pieces trained and the splits that made them fit, the share of row lookups served without
  /// a read from the host (and by the hot rows alone), distinct cold rows used summed over
  /// pieces, rows read from and written to host memory, and PCIe bytes per word trained.
  uint64_t hot_rows = 0;
  uint64_t cache_rows = 0;
  uint64_t budget_bytes = 0;
  uint64_t super_batches = 0;
  uint64_t splits = 0;
  uint64_t narrowed = 0;  ///< pieces whose rows waited for the piece two back to train
  uint64_t drains = 0;    ///< pieces that waited for the pieces in flight to train, to fit
  double cache_hit_rate = 0;
  double hot_hit_rate = 0;
  uint64_t cold_rows = 0;
  uint64_t rows_from_host = 0;
  uint64_t rows_to_host = 0;
  double pcie_bytes_per_word = 0;
  /// Host memory: the process's peak resident set (0 where /proc cannot tell), and the bytes of
  /// the model's tables and optimizer state.
  uint64_t peak_rss_bytes = 0;
  uint64_t table_bytes = 0;
  uint64_t corpus_bytes = 0;  ///< the encoded corpus in memory: ids and sentence offsets
  /// The resident set (VmRSS) once the corpus and vocabulary are built, once the model is
  /// allocated and initialised, and once the backend is set up; the vocabulary's own bytes.
  uint64_t rss_set_bytes = 0;
  uint64_t rss_model_bytes = 0;
  uint64_t rss_setup_bytes = 0;
  uint64_t vocab_bytes = 0;
};

/// Runs the benchmark and prints its report to `out`.
TrainBenchResult run_train_bench(const TrainBenchOptions& options, std::FILE* out);

}  // namespace pagedw2v
