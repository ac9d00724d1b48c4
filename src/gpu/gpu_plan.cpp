#include "gpu/gpu_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "error.hpp"
#include "params.hpp"
#include "sampler.hpp"

namespace pagedw2v {

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1u << 30));
  return buf;
}

/// The largest piece of `batch_blocks` blocks, in tokens, sentences and pool periods.
void size_pieces(const GpuPlanInput& in, uint32_t batch_blocks, uint32_t pool_blocks,
                 GpuPlan& plan) {
  const auto& blocks = *in.blocks;
  const auto& starts = *in.sentence_starts;
  const uint64_t nblocks = blocks.size() - 1;
  plan.max_piece_tokens = plan.max_piece_sentences = 0;
  plan.max_pools = 1;
  for (uint64_t b = 0; b < nblocks; b += batch_blocks) {
    const uint64_t e = std::min<uint64_t>(b + batch_blocks, nblocks);
    plan.max_piece_tokens = std::max(plan.max_piece_tokens, starts[blocks[e]] - starts[blocks[b]]);
    plan.max_piece_sentences = std::max(plan.max_piece_sentences, blocks[e] - blocks[b]);
    plan.max_pools =
        std::max<uint64_t>(plan.max_pools, (e - 1) / pool_blocks - b / pool_blocks + 1);
  }
}

uint64_t longest_sentence(const std::vector<uint64_t>& starts) {
  uint64_t longest = 1;
  for (size_t i = 1; i < starts.size(); ++i)
    longest = std::max<uint64_t>(longest, starts[i] - starts[i - 1]);
  return longest;
}

}  // namespace

uint64_t device_row_bytes(uint32_t row_stride, OptimizerKind kind) {
  const uint64_t row = uint64_t{row_stride} * sizeof(float);
  const bool optimizer = kind != OptimizerKind::kSgd;
  return row * (2 + 2 * state_tables(kind) + (optimizer ? 2 : 0)) + (optimizer ? 2 + 8 : 0);
}

uint64_t resident_bytes(uint64_t rows, uint32_t row_stride, OptimizerKind kind) {
  const uint64_t per_word = sizeof(float) + sizeof(AliasEntry);  // keep, noise
  return rows * (device_row_bytes(row_stride, kind) + per_word) + (uint64_t{16} << 20);
}

uint64_t gpu_budget(uint64_t requested, uint64_t free_bytes) {
  const uint64_t margin = std::max<uint64_t>(uint64_t{256} << 20, free_bytes / 20);
  return requested > 0 ? requested : (free_bytes > margin ? free_bytes - margin : free_bytes / 2);
}

bool plan_pages_tables(uint64_t rows, uint32_t row_stride, OptimizerKind kind, Placement placement,
                       uint64_t budget) {
  switch (placement) {
    case Placement::kResident:
      return false;
    case Placement::kPaged:
      return true;
    case Placement::kAuto:
      break;
  }
  return resident_bytes(rows, row_stride, kind) > budget;
}

void require_pool_for_paging(uint32_t negative_pool, const std::string& why,
                             const std::string& remedy) {
  if (negative_pool > 0) return;
  throw UsageError(why +
                   " needs --negative-pool N (negatives drawn from a pool shared by --pool-words "
                   "words, e.g. --negative-pool 1024)" +
                   remedy);
}

uint32_t order_key_bits(uint64_t rows) {
  uint32_t bits = 1;
  while (bits < 32 && (rows >> bits) != 0) ++bits;
  return bits;
}

GpuPlan plan_gpu(const GpuPlanInput& in, const GpuDeviceFacts& device) {
  GpuPlan plan;
  plan.budget = device.budget;
  const uint64_t rows = in.rows;
  const bool optimizer = in.optimizer != OptimizerKind::kSgd;
  const uint32_t pool_blocks = std::max<uint32_t>(1, in.pool_blocks);
  plan.batch_blocks = std::max<uint32_t>(1, in.batch_blocks);
  // Words past the last one that subsampling may drop are always kept (kernels/sgns.hpp).
  for (uint64_t id = 0; id < rows; ++id) {
    if ((*in.keep)[id] < 1.0f) plan.keep_count = id + 1;
  }
  size_pieces(in, plan.batch_blocks, pool_blocks, plan);

  const uint64_t resident_need = resident_bytes(rows, in.row_stride, in.optimizer);
  if (!plan_pages_tables(rows, in.row_stride, in.optimizer, in.placement, plan.budget)) {
    if (resident_need > plan.budget) {
      throw Error("--placement resident: the tables" +
                  std::string(optimizer ? " and optimizer state" : "") + " need " +
                  gib(double(resident_need)) + " of GPU memory, more than the budget of " +
                  gib(double(plan.budget)) + " on " + device.name +
                  "; use --placement paged (or auto), or raise --gpu-memory");
    }
    plan.hot_rows = plan.device_rows = rows;
    return plan;
  }
  plan.paged = true;
  // With sgd nothing steps per super-batch, so paged pieces may be shorter than --batch-words:
  // smaller stage buffers leave more of the budget to rows, and moves and launches interleave
  // more finely (CudaBackendOptions::sgd_piece_words).
  if (!optimizer && in.sgd_piece_words > 0) {
    const uint64_t cap =
        std::max<uint64_t>(1, (in.sgd_piece_words + kBlockWords - 1) / kBlockWords);
    if (plan.batch_blocks > cap) {
      plan.batch_blocks = static_cast<uint32_t>(cap);
      size_pieces(in, plan.batch_blocks, pool_blocks, plan);
    }
  }
  const uint32_t pool = in.negative_pool;
  require_pool_for_paging(pool,
                          "paging the tables (they need " + gib(double(resident_need)) +
                              ", the GPU budget is " + gib(double(plan.budget)) + ")",
                          ", or raise --gpu-memory");
  if (!device.host_pointers) {
    throw Error(device.name +
                " cannot address registered host memory by its host pointer, which paged "
                "tables need; use --placement resident");
  }
  const uint64_t pool_entries = plan.max_pools * pool;
  plan.max_list = std::min<uint64_t>(rows, plan.max_piece_tokens + pool_entries);
  const uint64_t stage_bytes = plan.max_piece_tokens * 8 + (plan.max_piece_sentences + 1) * 12 +
                               plan.max_list * 16 + pool_entries * 8 + 64;
  const uint32_t key_bits = order_key_bits(rows);
  const auto scratch = [&](uint64_t cache) {
    return device.scratch_bytes(std::max({rows, cache, plan.max_list}),
                                static_cast<uint32_t>(plan.max_list), key_bits);
  };
  // Beside the stages: the second key and slot lists of the slot order, and scratch for the
  // selects and that sort (sized here before the cache is, as for a cache of no rows).
  const uint64_t fixed = rows * 5 + plan.keep_count * sizeof(float) + kPagedStages * stage_bytes +
                         plan.max_list * 8 + scratch(0) + (uint64_t{16} << 20);
  // A cache slot: its row in every table, slot_id, slot_use, a flag and a free-list entry.
  const uint64_t slot_bytes = device_row_bytes(in.row_stride, in.optimizer) + 13;
  const uint64_t rows_fit = plan.budget > fixed ? (plan.budget - fixed) / slot_bytes : 0;
  // Any one sentence with its pool must fit, with room to spare.
  const uint64_t reserve = std::min<uint64_t>(rows, pool + longest_sentence(*in.sentence_starts));
  // The cache holds the rows of the pieces in flight and serves few repeat lookups beyond them
  // (a tail row recurs only millions of words later), while every hot row saves lookups: a third
  // of the rows for the cache.
  plan.cache_rows = in.cache_rows > 0 ? in.cache_rows : rows_fit / 3;
  plan.cache_rows = std::max(plan.cache_rows, 2 * reserve);
  if (in.hot_rows == 0 && plan.cache_rows > rows_fit) {
    throw Error("--gpu-memory " + gib(double(plan.budget)) +
                " is too small for paged tables of dim " + std::to_string(in.dim) +
                " with --negative-pool " + std::to_string(pool) + ": at least " +
                gib(double(fixed + 2 * reserve * slot_bytes)) +
                " is needed; raise --gpu-memory or lower --negative-pool");
  }
  plan.hot_rows = in.hot_rows > 0 ? std::min<uint64_t>(in.hot_rows, rows)
                                  : std::min<uint64_t>(rows, rows_fit - plan.cache_rows);
  plan.device_rows = plan.hot_rows + plan.cache_rows;
  if (plan.device_rows >= 0xFFFFFFF0ull) throw Error("paged tables: too many device rows");
  plan.scratch_bytes = scratch(plan.cache_rows);
  return plan;
}

}  // namespace pagedw2v
