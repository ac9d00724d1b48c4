#pragma once
/// @file part_trainer.hpp
/// Training on partitioned tables on the GPU: what a rank of a run over GPUs trains with when
/// its rows stay on its GPU (dist/part_backend.hpp). The rank holds the input rows of the words
/// `id % parts == part` (its own) for the whole run, and one output part at a time, the parts
/// moving from rank to rank between launches; word id lies at row id / parts of both (the
/// compact layout of dist/owned_rows.hpp). A launch over a range of sentences trains only the
/// pairs whose context is in the rank's input part and whose centre is in the output part it
/// holds, with negatives from that part's noise table (kernels/sgns.hpp, SgnsArgs::parts).
///
/// Owns: the device tables of the two parts, the corpus on the device, the subsampling table,
/// the noise table of every part, the counters, the training stream. May not touch: how the
/// output parts move between ranks (dist/part_rotation.hpp moves the bytes output_rows() points
/// at), the model's host tables but through upload/download, the order of spans. Host-only
/// header: it names no CUDA type.

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "gpu/device_facts.hpp"

namespace pagedw2v {

/// Whether GPU ranks keep a run's rows on their GPUs, in parts (dist/part_backend.hpp) or
/// replicated (dist/gpu_replica_backend.hpp), both trained by gpu/part_trainer.hpp: skip-gram
/// with sgd and no negative pool (a pool is drawn from the whole vocabulary, and CBOW's mean
/// reaches over every part). Other GPU runs over ranks train each span's rows through host memory
/// (sharded_backend.hpp). The one statement of the rule: the run plan and the backends ask it.
inline bool gpu_parts_train(ModelKind model, OptimizerKind optimizer, uint32_t negative_pool) {
  return model == ModelKind::kSkipGram && optimizer == OptimizerKind::kSgd && negative_pool == 0;
}
inline bool gpu_parts_train(const TrainData& data) {
  return gpu_parts_train(data.params.model, data.optimizer.kind, data.params.negative_pool);
}

/// Words a rank trains between two moves of its output parts (dist/part_backend.hpp): eight
/// words a row of the vocabulary, and at least `least`. Within a span each pair of parts trains
/// alone, its input rows only against its output rows, so a long span lets the pairs drift
/// apart: mix5m (2 ranks, one NVIDIA H200, 2026-12-04) lost 0.5–0.7 point of analogy at 25 words
/// a row and none at 8 or 4. Every span moves the whole output table round the ranks once,
/// 2 · 4 · dim / 8 bytes a word at dim 128 (128 B/word), and the launches of a short span cost
/// more than their words (rank 0 of 2 on mix5m × 4: spans of 65,536 words 0.90 × one GPU's
/// words/s, 262,144 words 1.19 ×, 843,875 words 1.33 ×; docs/notebook.md, "Distributed training").
inline constexpr uint64_t kPartSpanLeastWords = 65536;
inline uint64_t part_span_words(uint64_t vocabulary, uint64_t least) {
  return 8 * vocabulary > least ? 8 * vocabulary : least;
}

class PartTrainer {
 public:
  /// For the run `data` (skip-gram sgd, no negative pool, the corpus whole) on `parts` ranks,
  /// this one holding input part `part`, on the current CUDA device. One part is the whole
  /// tables (a replicated copy, dist/gpu_replica_backend.hpp): the launches are then those of
  /// one process, with its noise table, and count their words. `single_warp`: one warp a
  /// launch (deterministic). `gpu`: the device as the run's one query found it and the budget
  /// the run plan grants (gpu_budget: --gpu-memory, or the free memory less the margin). Throws
  /// UsageError for runs it cannot train, Error when the parts, the corpus and their buffers do
  /// not fit in that budget (saying how much they need).
  PartTrainer(const TrainData& data, uint32_t parts, uint32_t part, bool single_warp,
              const GpuGrant& gpu);
  ~PartTrainer();
  PartTrainer(const PartTrainer&) = delete;
  PartTrainer& operator=(const PartTrainer&) = delete;

  /// Rows of part `p` (words id % parts == p of the vocabulary).
  uint64_t part_rows(uint32_t p) const;
  /// Device bytes of the output part `p` as output_rows() holds it (rows × the device stride).
  uint64_t part_bytes(uint32_t p) const;
  /// The device table that holds the current output part, sized for the largest part.
  void* output_rows();
  /// The device table of the input part (part_rows(part) rows).
  void* input_rows();
  /// Floats a row takes on the device (both tables; the floats past dim are zero).
  uint32_t row_stride() const;

  /// Copies the input part and the output part `output_part` from host rows (dim floats a row,
  /// row-major, part_rows() rows each) to the device.
  void upload(const float* input, const float* output, uint32_t output_part);
  /// Copies them back (the output part the device holds now, `output_part`).
  void download(float* input, float* output, uint32_t output_part);

  /// Trains sentences [first_sentence, last_sentence) of `epoch` against output part
  /// `output_part` (the one the device holds) and returns when done: the pairs the parts hold,
  /// their loss, and the centres counted when output_part is the rank's own (no words).
  SpanStats train(uint32_t epoch, uint64_t first_sentence, uint64_t last_sentence,
                  uint32_t output_part);

  /// GPU memory it holds, and the device's name.
  uint64_t device_bytes() const;
  std::string device_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedw2v
