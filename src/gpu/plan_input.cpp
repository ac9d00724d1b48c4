/// @file plan_input.cpp
/// The GPU plan's inputs from a run (plan_input.hpp).

#include "gpu/plan_input.hpp"

#include <algorithm>

#include "model/model.hpp"
#include "model/params.hpp"

namespace pagedw2v {

GpuPlanInput make_plan_input(const TrainData& data, const CudaBackendOptions& options) {
  const TrainParams& p = data.params;
  GpuPlanInput in;
  in.rows = data.keep->words();
  in.dim = p.dim;
  in.row_stride = sgns_row_stride(p.dim);
  // Beside negative sampling, hierarchical softmax's inner nodes are a third table with its own
  // state and gradients: every group of tables (vectors, each state, gradients) is half as large
  // again, as if each of its two tables' rows were half a stride wider. The plan counts bytes only.
  if (needs_node_table(p.hs, p.negative)) in.row_stride += in.row_stride / 2;
  in.optimizer = data.optimizer.kind;
  in.negative_pool = p.negative_pool;
  in.batch_blocks = std::max<uint32_t>(1, p.batch_blocks);
  in.pool_blocks = std::max<uint32_t>(1, p.pool_blocks);
  in.placement = options.gpu.placement;
  in.hot_rows = options.hot_rows;
  in.cache_rows = options.cache_rows;
  in.table_gap_bytes =
      options.table_layout == TableLayout::kInterleaved ? 0 : options.table_skew_bytes;
  in.sgd_piece_words = options.sgd_piece_words;
  in.piece_cutting = options.piece_cutting;
  in.keep = data.keep;
  in.noise = data.noise;
  in.hs = p.hs;
  in.hs_alone = p.hs && p.negative == 0;
  if (p.hs && data.tree != nullptr) {
    in.hs_tree = data.tree;
    // A streamed corpus is not at hand: any sentence with every word's longest path.
    in.hs_sentence_rows =
        data.streamed
            ? std::min<uint64_t>(in.rows,
                                 uint64_t{kMaxSentenceLength} * (1 + data.tree->max_length))
            : hs_sentence_rows(data.corpus->tokens, data.corpus->sentence_starts, *data.tree);
  }
  in.resident_corpus_max_bytes = options.resident_corpus_max_bytes;
  in.chunk_tokens = options.chunk_tokens;
  in.force_stream = options.force_stream;
  in.stage_tokens = data.streamed ? data.stage_tokens : 0;
  // A streamed corpus's window is empty now, its blocks mostly unread: the plan bounds them.
  in.streamed = data.streamed;
  if (!data.streamed) {
    in.blocks = data.blocks;
    in.sentence_starts = &data.corpus->sentence_starts;
    in.tokens = &data.corpus->tokens;
  }
  return in;
}

GpuOptions resolve_gpu_placement(const GpuOptions& gpu, uint64_t rows, uint32_t dim,
                                 OptimizerKind kind, const DeviceFacts& device) {
  GpuOptions resolved = gpu;
  resolved.memory_budget = gpu_budget(gpu.memory_budget, device.free_bytes);
  if (resolved.placement == Placement::kAuto) {
    resolved.placement = plan_pages_tables(rows, sgns_row_stride(dim), kind, Placement::kAuto,
                                           resolved.memory_budget)
                             ? Placement::kPaged
                             : Placement::kResident;
  }
  return resolved;
}

GpuDeviceFacts plan_device_facts(const DeviceFacts& device, uint64_t budget,
                                 const GpuScratchBytes& scratch) {
  GpuDeviceFacts facts;
  facts.name = device.name;
  facts.budget = budget;
  facts.host_pointers = device.host_pointers;
  facts.scratch_bytes = scratch;
  return facts;
}

}  // namespace pagedw2v
