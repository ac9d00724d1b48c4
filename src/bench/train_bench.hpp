#pragma once
/// @file train_bench.hpp
/// `pagedw2v bench train`: times training on a corpus (optionally repeated N times in memory),
/// words counted as word2vec counts them (every in-vocabulary word read, before subsampling),
/// with the time split the CUDA backend reports (upload, kernels, other) and its GPU memory.

#include <cstdint>
#include <cstdio>
#include <string>

#include "config.hpp"

namespace pagedw2v {

struct TrainBenchOptions {
  Config config;              ///< corpus, model and training flags, device
  uint32_t repeat = 1;        ///< the corpus text is repeated this many times
  bool force_stream = false;  ///< CUDA: stream the corpus in chunks even when it fits
  uint64_t chunk_tokens = uint64_t{32} << 20;  ///< CUDA: tokens per streamed chunk
};

struct TrainBenchResult {
  std::string device;
  uint64_t corpus_words = 0;  ///< in-vocabulary words of one epoch
  uint64_t words = 0;         ///< words trained, all epochs
  uint32_t vocab = 0;
  double prepare_seconds = 0;  ///< read, vocabulary, encoding, samplers, model init
  double setup_seconds = 0;    ///< backend creation (CUDA: allocation and uploads)
  double train_seconds = 0;    ///< the epochs
  double sync_seconds = 0;     ///< tables back to the host
  double total_seconds = 0;
  double words_per_second = 0;  ///< words / train_seconds
  double mean_loss = 0;         ///< loss per example over the last epoch
};

/// Runs the benchmark and prints its report to `out`.
TrainBenchResult run_train_bench(const TrainBenchOptions& options, std::FILE* out);

}  // namespace pagedw2v
