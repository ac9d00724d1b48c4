#pragma once
/// @file device_corpus.hpp
/// The encoded corpus as the GPU sees it. When it fits (the usual case), it is uploaded once and
/// stays resident for every epoch. Otherwise it is streamed: consecutive chunks of whole
/// sentences are copied from the host through two pinned staging buffers into two device
/// buffers on a copy stream, so the upload of chunk k+1 overlaps the training of chunk k.
/// A window of a streamed corpus (DeviceCorpusOptions::window) is always streamed, and read
/// only inside for_each_chunk: the caller may refill it once that returns.
///
/// Owns: the corpus's device copy, its staging and its copy stream. May not touch: the tables,
/// the launches (the caller trains each chunk it hands over).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "corpus/corpus.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"

namespace pagedw2v {

struct DeviceCorpusOptions {
  /// Keep the corpus on the GPU when it needs at most this many bytes (the CUDA backend sizes it
  /// by gpu_plan.hpp's resident_corpus_sizes); 0 = always streamed.
  size_t resident_max_bytes = 0;
  /// Stream even when the corpus would fit (tests and benchmarks of the streaming path).
  bool force_stream = false;
  /// Tokens per streamed chunk (raised to the longest sentence if shorter).
  size_t chunk_tokens = size_t{32} << 20;
  /// The corpus is a window of a streamed one (EncodedCorpus::token_base, sentence_base) whose
  /// contents change between calls: streamed, never kept, its sentences at most
  /// kMaxSentenceLength tokens long.
  bool window = false;
};

/// A range of whole sentences that is on the device: token p of the corpus is
/// tokens[p − token_base]; sentence_starts holds sentences + 1 global positions.
struct CorpusChunk {
  const uint32_t* tokens = nullptr;
  uint64_t token_base = 0;
  const uint64_t* sentence_starts = nullptr;
  uint64_t sentences = 0;
  uint64_t token_count = 0;  ///< tokens of those sentences
};

class DeviceCorpus {
 public:
  DeviceCorpus(const EncodedCorpus& corpus, const DeviceCorpusOptions& options);

  /// Calls `train(chunk)` for consecutive chunks covering sentences [first, last) (corpus-wide
  /// indices, within the window when the corpus is one); `train` enqueues its work on `compute`
  /// and must not block. Returns once everything is enqueued; the host corpus is not read after.
  void for_each_chunk(uint64_t first, uint64_t last, cudaStream_t compute,
                      const std::function<void(const CorpusChunk&)>& train);

  bool resident() const { return resident_; }
  /// Device bytes held for the corpus.
  size_t device_bytes() const;
  /// Seconds the copy engine spent uploading so far (completed copies only; call after a sync).
  double upload_seconds();

 private:
  void upload_resident();

  const EncodedCorpus& corpus_;
  DeviceCorpusOptions options_;
  bool resident_ = false;
  bool pinned_ = true;
  // Resident: the whole corpus.
  DeviceBuffer<uint32_t> tokens_;
  DeviceBuffer<uint64_t> starts_;
  // Streamed: two of each, used alternately.
  size_t chunk_tokens_ = 0;
  std::vector<PinnedBuffer<uint32_t>> staged_tokens_;
  std::vector<PinnedBuffer<uint64_t>> staged_starts_;
  std::vector<std::vector<uint32_t>> pageable_tokens_;  // when pinning failed
  std::vector<std::vector<uint64_t>> pageable_starts_;
  std::vector<DeviceBuffer<uint32_t>> chunk_tokens_dev_;
  std::vector<DeviceBuffer<uint64_t>> chunk_starts_dev_;
  Stream copy_stream_;
  std::vector<Event> copied_, trained_;
  struct Timed {
    Event start, stop;
  };
  std::vector<Timed> pending_copies_;
  double upload_seconds_ = 0.0;
};

}  // namespace pagedw2v
