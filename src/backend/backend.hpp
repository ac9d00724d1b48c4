#pragma once
/// @file backend.hpp
/// The interface between the trainer and whatever runs the training step (CPU threads, a GPU).
/// The trainer owns the model in host tables and hands the backend whole work blocks; the backend
/// owns how they are computed. Every random draw is Philox keyed by (seed, token position, epoch),
/// so the result of a block does not depend on which thread or stream ran it.
///
/// Layer backend: every backend implements this and the trainer calls it; it includes nothing of
/// train/, gpu/ or the kernels. Backends are created by train/backend_factory.hpp.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "corpus/corpus.hpp"
#include "model/huffman.hpp"
#include "model/model.hpp"
#include "model/optimizer.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {

/// Everything fixed for a run that a backend reads.
struct TrainData {
  const EncodedCorpus* corpus = nullptr;
  const std::vector<uint64_t>* blocks = nullptr;  ///< block boundaries (sentence indices)
  const KeepTable* keep = nullptr;                ///< subsampling keep probability per word
  const NoiseTable* noise = nullptr;              ///< negative-sampling distribution
  /// Hierarchical softmax (params.hs): every word's path of inner-node rows and codes.
  const HuffmanTree* tree = nullptr;
  TrainParams params;
  OptimizerParams optimizer;  ///< sgd: word2vec's per-example update; else one step per block
  /// The corpus is streamed (corpus_stream.hpp): `corpus` is a window of it, with its bases
  /// set, that the trainer refills before each train() call with the blocks of that call, and
  /// `blocks` grows as the stream reads. A backend reads the window only inside train().
  bool streamed = false;
  /// Streamed: the most tokens a backend should stage at once beside the window (0: no limit).
  uint64_t stage_tokens = 0;
};

/// What training a range of blocks did.
struct SpanStats {
  uint64_t words = 0;    ///< in-vocabulary tokens read (before subsampling), word2vec's count
  uint64_t trained = 0;  ///< tokens kept after subsampling
  /// Sum of the examples' losses (accumulated in double): negative sampling's −log σ terms of
  /// the centre and the noise words, plus hierarchical softmax's −log σ(±h·node) over the
  /// centre's path.
  double loss = 0.0;
  uint64_t loss_terms = 0;  ///< number of (centre, context) examples the loss sums over

  SpanStats& operator+=(const SpanStats& o) {
    words += o.words;
    trained += o.trained;
    loss += o.loss;
    loss_terms += o.loss_terms;
    return *this;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda", …
  virtual std::string name() const = 0;
  /// One line on how it runs (placement, cache sizes); name() when there is nothing to add.
  virtual std::string describe() const { return name(); }
  /// How many words the trainer should hand over per train() call: large enough to keep the
  /// backend busy, small enough for progress and timed checkpoints.
  virtual uint64_t span_words() const = 0;
  /// Spans that start and end on multiples of this many blocks (or at the corpus's end) train
  /// as the backend trains a corpus held whole; others may train differently (the CUDA
  /// backend's optimizer steps once per piece of a super-batch, and a span's end ends a piece).
  virtual uint64_t span_align_blocks() const { return 1; }
  /// Trains blocks [first, last) of `epoch` and returns when their updates are done.
  virtual SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) = 0;
  /// Makes the host tables of the model hold the current values (a no-op for the CPU).
  virtual void sync_to_host() = 0;
  /// Reloads the backend's copy from the host tables (after a checkpoint is loaded).
  virtual void sync_from_host() = 0;
};

}  // namespace pagedw2v
