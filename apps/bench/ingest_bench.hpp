#pragma once
/// @file ingest_bench.hpp
/// `pagedw2v bench ingest`: times reading the corpus into a vocabulary and encoding it, the part
/// of `train` before the first training step.

#include <cstdint>
#include <cstdio>

#include "config/config.hpp"

namespace pagedw2v {

struct IngestBenchOptions {
  Config config;        ///< --corpus, --min-count, --max-vocab, --lowercase, --threads
  uint32_t repeat = 3;  ///< timed runs; the fastest is printed
  /// Also time the one-thread reference (Vocab::count_serial, encode_corpus_serial) on one part.
  bool reference = false;
};

void run_ingest_bench(const IngestBenchOptions& options, std::FILE* out);

}  // namespace pagedw2v
