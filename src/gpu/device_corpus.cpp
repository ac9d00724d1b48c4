#include "gpu/device_corpus.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v {

DeviceCorpus::DeviceCorpus(const EncodedCorpus& corpus, const DeviceCorpusOptions& options)
    : corpus_(corpus), options_(options) {
  const size_t bytes =
      corpus.tokens.size() * sizeof(uint32_t) + corpus.sentence_starts.size() * sizeof(uint64_t);
  resident_ = !options.window && !options.force_stream && bytes <= options.resident_max_bytes;
  if (resident_) {
    upload_resident();
    return;
  }

  // A window's sentences come later; none is longer than the encoder cuts them.
  uint64_t longest = options.window ? kMaxSentenceLength : 0;
  for (uint64_t s = 0; s < corpus.sentences(); ++s) {
    longest = std::max(longest, corpus.sentence_starts[s + 1] - corpus.sentence_starts[s]);
  }
  chunk_tokens_ = std::max<size_t>({options.chunk_tokens, longest, 1});
  for (int b = 0; b < 2; ++b) {
    // A chunk has at most one sentence per token, so chunk_tokens + 1 starts.
    chunk_tokens_dev_.emplace_back(chunk_tokens_, "a corpus chunk");
    chunk_starts_dev_.emplace_back(chunk_tokens_ + 1, "a corpus chunk's sentence offsets");
    copied_.emplace_back(false);
    trained_.emplace_back(false);
  }
  try {
    for (int b = 0; b < 2; ++b) {
      staged_tokens_.emplace_back(chunk_tokens_, "corpus upload");
      staged_starts_.emplace_back(chunk_tokens_ + 1, "corpus upload");
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "pagedw2v: %s; uploading the corpus from pageable memory (slower)\n",
                 e.what());
    pinned_ = false;
    staged_tokens_.clear();
    staged_starts_.clear();
    for (int b = 0; b < 2; ++b) {
      pageable_tokens_.emplace_back(chunk_tokens_);
      pageable_starts_.emplace_back(chunk_tokens_ + 1);
    }
  }
  // Both buffers start free: record their events once so the first waits return at once.
  for (int b = 0; b < 2; ++b) {
    copied_[b].record(copy_stream_.get());
    trained_[b].record(copy_stream_.get());
  }
}

void DeviceCorpus::upload_resident() {
  tokens_ = DeviceBuffer<uint32_t>(corpus_.tokens.size(), "the encoded corpus");
  starts_ = DeviceBuffer<uint64_t>(corpus_.sentence_starts.size(), "the sentence offsets");
  Timed t;
  t.start.record(copy_stream_.get());
  if (!corpus_.tokens.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(tokens_.data(), corpus_.tokens.data(), tokens_.bytes(),
                                      cudaMemcpyHostToDevice, copy_stream_.get()));
  }
  if (!corpus_.sentence_starts.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(starts_.data(), corpus_.sentence_starts.data(),
                                      starts_.bytes(), cudaMemcpyHostToDevice, copy_stream_.get()));
  }
  t.stop.record(copy_stream_.get());
  copy_stream_.synchronize();
  upload_seconds_ += t.stop.elapsed_ms_since(t.start) * 1e-3;
}

size_t DeviceCorpus::device_bytes() const {
  size_t b = tokens_.bytes() + starts_.bytes();
  for (const auto& d : chunk_tokens_dev_) b += d.bytes();
  for (const auto& d : chunk_starts_dev_) b += d.bytes();
  return b;
}

double DeviceCorpus::upload_seconds() {
  for (auto& t : pending_copies_) {
    t.stop.synchronize();
    upload_seconds_ += t.stop.elapsed_ms_since(t.start) * 1e-3;
  }
  pending_copies_.clear();
  return upload_seconds_;
}

void DeviceCorpus::for_each_chunk(uint64_t first, uint64_t last, cudaStream_t compute,
                                  const std::function<void(const CorpusChunk&)>& train) {
  if (first >= last) return;
  // Sentence s starts at starts[s] and token p is tokens[p], whether the corpus is whole or a
  // window of it (bases 0 when whole).
  const uint64_t base = corpus_.sentence_base;
  if (first < base || last > base + corpus_.sentences()) {
    throw Error("the corpus on the GPU: sentences [" + std::to_string(first) + ", " +
                std::to_string(last) + ") are not in the window [" + std::to_string(base) + ", " +
                std::to_string(base + corpus_.sentences()) + ")");
  }
  const uint64_t* starts = corpus_.sentence_starts.data() - base;
  const uint32_t* tokens = corpus_.tokens.data() - corpus_.token_base;
  if (resident_) {
    CorpusChunk c;
    c.tokens = tokens_.data();
    c.token_base = 0;
    c.sentence_starts = starts_.data() + first;
    c.sentences = last - first;
    c.token_count = starts[last] - starts[first];
    train(c);
    return;
  }
  int b = 0;
  for (uint64_t s = first; s < last; b ^= 1) {
    // The largest run of whole sentences from s that fits a chunk.
    uint64_t e = s + 1;
    while (e < last && starts[e + 1] - starts[s] <= chunk_tokens_) ++e;
    const uint64_t t0 = starts[s], t1 = starts[e];
    const size_t ntok = t1 - t0, nst = e - s + 1;
    if (ntok > chunk_tokens_) {
      throw Error("the corpus on the GPU: sentence " + std::to_string(s) + " has " +
                  std::to_string(ntok) + " tokens, more than a chunk holds (" +
                  std::to_string(chunk_tokens_) + ")");
    }

    // The staging buffer is free once its previous copy has finished.
    copied_[b].synchronize();
    uint32_t* host_tokens = pinned_ ? staged_tokens_[b].data() : pageable_tokens_[b].data();
    uint64_t* host_starts = pinned_ ? staged_starts_[b].data() : pageable_starts_[b].data();
    std::memcpy(host_tokens, tokens + t0, ntok * sizeof(uint32_t));
    std::memcpy(host_starts, starts + s, nst * sizeof(uint64_t));

    // The device buffer is free once the training that read it has finished.
    PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(copy_stream_.get(), trained_[b].get(), 0));
    Timed t;
    t.start.record(copy_stream_.get());
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(chunk_tokens_dev_[b].data(), host_tokens,
                                      ntok * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                      copy_stream_.get()));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(chunk_starts_dev_[b].data(), host_starts,
                                      nst * sizeof(uint64_t), cudaMemcpyHostToDevice,
                                      copy_stream_.get()));
    t.stop.record(copy_stream_.get());
    copied_[b].record(copy_stream_.get());
    pending_copies_.push_back(std::move(t));

    PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(compute, copied_[b].get(), 0));
    CorpusChunk c;
    c.tokens = chunk_tokens_dev_[b].data();
    c.token_base = t0;
    c.sentence_starts = chunk_starts_dev_[b].data();
    c.sentences = e - s;
    c.token_count = ntok;
    train(c);
    trained_[b].record(compute);
    s = e;
  }
}

}  // namespace pagedw2v
