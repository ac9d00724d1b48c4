#include "gpu/gpu_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "model/negative_pool.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {

namespace {

/// The largest piece of `batch_blocks` blocks, in tokens, sentences and pool periods.
void size_pieces(const GpuPlanInput& in, uint32_t batch_blocks, uint32_t pool_blocks,
                 GpuPlan& plan) {
  if (in.streamed) {
    // Any piece lies within blocks [kB, (k + 1)B) for some k (B = batch_blocks). Those start
    // r = kB mod P blocks into a pool period (P = pool_blocks), r a multiple of g = gcd(B, P)
    // up to P − g, and so span at most (P − g + B − 1) / P + 1 periods.
    const uint64_t b = batch_blocks, p = std::max<uint32_t>(1, pool_blocks), g = std::gcd(b, p);
    plan.max_piece_tokens = b * kMaxBlockTokens;
    plan.max_piece_sentences = b * kMaxBlockSentences;
    plan.max_pools = (p - g + b - 1) / p + 1;
    return;
  }
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

/// GPU bytes of the noise table's columns (both placements hold them on the GPU).
uint64_t noise_bytes(const GpuPlanInput& in) {
  return in.noise != nullptr ? uint64_t{in.noise->column_count()} * sizeof(NoiseColumn) : 0;
}

uint64_t longest_sentence(const std::vector<uint64_t>& starts) {
  uint64_t longest = 1;
  for (size_t i = 1; i < starts.size(); ++i)
    longest = std::max<uint64_t>(longest, starts[i] - starts[i - 1]);
  return longest;
}

}  // namespace

uint64_t device_row_bytes_of(uint64_t table_row_bytes, OptimizerKind kind) {
  const bool optimizer = kind != OptimizerKind::kSgd;
  return table_row_bytes * (2 + 2 * state_tables(kind) + (optimizer ? 2 : 0)) +
         (optimizer ? 2 + 8 : 0);
}

uint64_t device_row_bytes(uint32_t row_stride, OptimizerKind kind) {
  return device_row_bytes_of(uint64_t{row_stride} * sizeof(float), kind);
}

uint64_t resident_bytes(uint64_t rows, uint32_t row_stride, OptimizerKind kind,
                        uint64_t noise_bytes) {
  const uint64_t per_word = sizeof(float);  // keep
  return rows * (device_row_bytes(row_stride, kind) + per_word) + noise_bytes +
         (uint64_t{16} << 20);
}

uint32_t piece_move_blocks(uint64_t fresh, uint64_t tokens, uint64_t entry_bytes,
                           uint32_t paging_sms) {
  const uint64_t sms = std::max<uint32_t>(1, paging_sms);
  const uint64_t least = 3 * sms;
  // Rows below the path's bound: a third more blocks than reach it at the blocks' fixed rate,
  // since the moves share the multiprocessors with the pieces' preparation.
  const uint64_t most = entry_bytes < kMoveBoundRowBytes
                            ? std::clamp<uint64_t>(least * 4 * kMoveBoundRowBytes /
                                                       (3 * std::max<uint64_t>(1, entry_bytes)),
                                                   least, 8 * sms)
                            : least;
  if (tokens == 0) return static_cast<uint32_t>(most);
  if (fresh * 3 <= tokens) return static_cast<uint32_t>(least);
  return static_cast<uint32_t>(std::clamp(least * 4 * fresh / tokens, least, most));
}

uint64_t paged_margin(uint64_t budget, uint64_t gap_bytes) {
  return std::max(std::clamp<uint64_t>(budget / 32, uint64_t{1} << 20, uint64_t{16} << 20),
                  gap_bytes + (uint64_t{64} << 10));
}

uint64_t gpu_memory_margin(uint64_t free_bytes) {
  return std::max<uint64_t>(uint64_t{256} << 20, free_bytes / 20);
}

uint64_t gpu_budget(uint64_t requested, uint64_t free_bytes) {
  const uint64_t margin = gpu_memory_margin(free_bytes);
  return requested > 0 ? requested : (free_bytes > margin ? free_bytes - margin : free_bytes / 2);
}

CorpusSizes resident_corpus_sizes(uint64_t budget, uint64_t allocated, uint64_t resident_max_bytes,
                                  uint64_t chunk_tokens, bool force_stream, uint64_t stage_tokens) {
  const uint64_t left = budget > allocated ? budget - allocated : 0;
  CorpusSizes sizes;
  sizes.resident_max_bytes =
      resident_max_bytes > 0 ? resident_max_bytes : std::max<uint64_t>(left / 2, 1);
  sizes.chunk_tokens = chunk_tokens;
  if (!force_stream && left / 2 < chunk_tokens * 24) {
    sizes.chunk_tokens = std::max<uint64_t>(left / 48, uint64_t{1} << 20);
  }
  if (stage_tokens > 0) sizes.chunk_tokens = std::min(sizes.chunk_tokens, stage_tokens);
  return sizes;
}

uint64_t resident_table_bytes(const GpuPlanInput& in, uint64_t device_rows, uint64_t keep_count,
                              const GpuDeviceFacts& device) {
  const bool optimizer = in.optimizer != OptimizerKind::kSgd;
  // Input and output vectors, and the inner nodes' beside negative sampling (needs_node_table).
  const uint64_t vector_tables = in.hs && !in.hs_alone ? 3 : 2;
  const uint64_t table = device_rows * sgns_row_stride(in.dim) * sizeof(float);
  // Tables apart: the output vectors start the gap, rounded up to 16 bytes, past the input's
  // (gpu/device_tables.cpp); interleaved tables have none (GpuPlanInput::table_gap_bytes 0).
  const uint64_t gap = (in.table_gap_bytes / sizeof(float) + 3) / 4 * 4 * sizeof(float);
  const uint64_t groups = state_tables(in.optimizer) + (optimizer ? 1 : 0);
  uint64_t bytes = vector_tables * table + gap + groups * vector_tables * table;
  if (optimizer) {
    // A touched flag and a step list entry a row of each vector table, and the select's scratch.
    bytes += device_rows * (1 + sizeof(uint32_t)) * vector_tables +
             std::max<uint64_t>(device.scratch_bytes(device_rows, 0, 0), 1);
  }
  // The samplers and counters (gpu/sgns_launcher.hpp).
  bytes += keep_count * sizeof(float) + noise_bytes(in) + kSgnsCounterBytes;
  if (in.hs) bytes += hs_tree_bytes(in.rows);
  return bytes;
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

uint32_t order_key_bits(uint64_t rows) {
  uint32_t bits = 1;
  while (bits < 32 && (rows >> bits) != 0) ++bits;
  return bits;
}

namespace {

/// How a paged budget divides for one choice of training sizes: what does not grow with the
/// rows, the bytes of a row on the GPU, and the rows that fit beside the rest.
struct PagedLayout {
  uint64_t fixed = 0, slot_bytes = 0, rows_fit = 0, reserve = 0, pool_entries = 0;
  /// The fewest slots the cache may have: two reserves (a piece of one sentence training while
  /// the next moves), or with hierarchical softmax where two do not fit, one (paged_layout);
  /// where not even one fits, the fewest rows, hot and cache, that would hold one.
  uint64_t least_cache = 0;
  /// Whether least_cache holds two reserves (sgd pieces halve until it does, or are one block).
  bool roomy = true;
};

/// Bytes of one stage of the paged pipeline (a piece's buffers).
uint64_t stage_bytes(const GpuPlan& plan, uint64_t pool_entries) {
  return plan.max_piece_tokens * 8 + (plan.max_piece_sentences + 1) * 12 + plan.max_list * 16 +
         pool_entries * 8 + 64;
}

}  // namespace

uint64_t host_cut_fixed_bytes(const GpuPlanInput& in, const GpuPlan& plan) {
  return in.rows * 4 + plan.keep_count * sizeof(float) + noise_bytes(in) +
         kPagedStages * stage_bytes(plan, plan.max_pools * plan.negative_pool) +
         paged_margin(plan.budget, in.table_gap_bytes);
}

namespace {

/// What paged_layout counted in the corpus so far: the distinct ids of super-batches of each size
/// ({blocks, count}) and, with hierarchical softmax, a sentence's rows by the hot rows.
struct RowCounts {
  std::vector<std::pair<uint32_t, uint64_t>> by_blocks;
  bool hs_counted = false;
  HsRowsFrom hs_sentences;
};

PagedLayout paged_layout(const GpuPlanInput& in, const GpuDeviceFacts& device, GpuPlan& plan,
                         RowCounts& counted) {
  PagedLayout l;
  const uint64_t rows = in.rows;
  // A cache slot: its row in every table, slot_id, slot_use, a flag and a free-list entry.
  const uint64_t table_row = in.row_bytes > 0 ? in.row_bytes : uint64_t{in.row_stride} * 4;
  l.slot_bytes = device_row_bytes_of(table_row, in.optimizer) + 13;
  l.pool_entries = in.hs_alone ? 0 : plan.max_pools * plan.negative_pool;
  plan.max_list = in.hs ? rows : std::min<uint64_t>(rows, plan.max_piece_tokens + l.pool_entries);
  if ((in.optimizer != OptimizerKind::kSgd || in.hs) && in.tokens != nullptr && !in.streamed &&
      (!in.hs || in.hs_tree != nullptr)) {
    // An optimizer's pieces are whole super-batches (or parts of one): at most the distinct
    // ids of one, counted, and every pool entry. Counting stops past the rows the budget
    // could hold at all (a super-batch that large fits nowhere). With hierarchical softmax
    // the ids are the words' and their paths' inner nodes, counted whole, for any piece (an
    // sgd piece lies within one run of batch_blocks blocks too).
    auto& by_blocks = counted.by_blocks;
    auto it = std::find_if(by_blocks.begin(), by_blocks.end(),
                           [&](const auto& c) { return c.first == plan.batch_blocks; });
    if (it == by_blocks.end()) {
      const uint64_t any_fit = plan.budget / l.slot_bytes + 1;
      uint64_t most = 0;
      if (in.hs) {
        const std::vector<uint64_t>& blocks = *in.blocks;
        std::vector<uint64_t> bounds;
        for (uint64_t b = 0; b + 1 < blocks.size(); b += plan.batch_blocks) {
          bounds.push_back((*in.sentence_starts)[blocks[b]]);
        }
        bounds.push_back((*in.sentence_starts)[blocks.back()]);
        most = hs_sentence_rows(*in.tokens, bounds, *in.hs_tree);
      } else {
        most = max_super_batch_rows(*in.tokens, *in.sentence_starts, *in.blocks, plan.batch_blocks,
                                    rows, any_fit);
      }
      by_blocks.emplace_back(plan.batch_blocks, most);
      it = by_blocks.end() - 1;
    }
    plan.max_list = std::min(plan.max_list, it->second + l.pool_entries);
  }
  const uint32_t key_bits = order_key_bits(rows);
  // Beside the stages: the second key and slot lists of the slot order, and scratch for the
  // selects and that sort (sized here before the cache is, as for a cache of no rows).
  l.fixed = rows * 5 + plan.keep_count * sizeof(float) + noise_bytes(in) +
            kPagedStages * stage_bytes(plan, l.pool_entries) + plan.max_list * 8 +
            device.scratch_bytes(std::max(rows, plan.max_list),
                                 static_cast<uint32_t>(plan.max_list), key_bits) +
            paged_margin(plan.budget, in.table_gap_bytes) +
            (in.hs ? kPagedStages * rows * 4 + hs_tree_bytes(rows) : 0);
  l.rows_fit = plan.budget > l.fixed ? (plan.budget - l.fixed) / l.slot_bytes : 0;
  // Any one sentence with its pool must fit, with room to spare.
  const uint64_t longest =
      in.streamed ? uint64_t{kMaxSentenceLength} : longest_sentence(*in.sentence_starts);
  const uint64_t sentence_rows = in.hs ? std::max(in.hs_sentence_rows, longest) : longest;
  const uint64_t pool = in.hs_alone ? 0 : uint64_t{plan.negative_pool};
  l.reserve = std::min<uint64_t>(rows, pool + sentence_rows);
  l.least_cache = 2 * l.reserve;
  if (in.hs && in.tokens != nullptr && !in.streamed && in.hs_tree != nullptr) {
    // A sentence's words and paths are a few times its words, and its rows below the hot rows
    // (the frequent words and the inner nodes nearest the root) take no slots: the reserve is
    // its rows at or above the hot rows, the most that leave the cache two reserves (fewer hot
    // rows leave more slots but make more rows cold). Where no split of the rows holds two,
    // one will do: a sentence that finds too few free slots waits until the pieces in flight
    // have trained and then has every slot (paged_prepare.cpp).
    if (!counted.hs_counted) {
      counted.hs_sentences = hs_rows_from(*in.tokens, *in.sentence_starts, *in.hs_tree);
      counted.hs_counted = true;
    }
    const HsRowsFrom& cold = counted.hs_sentences;
    if (in.hot_rows > 0) {
      l.reserve = std::min<uint64_t>(rows, pool + cold.max_from(in.hot_rows));
      l.least_cache = 2 * l.reserve;
      return l;
    }
    for (const uint64_t k : {2, 1}) {
      for (size_t j = cold.firsts.size(); j-- > 0;) {
        const uint64_t reserve = std::min<uint64_t>(rows, pool + cold.most[j]);
        if (cold.firsts[j] + k * reserve <= l.rows_fit) {
          l.reserve = reserve;
          l.least_cache = k * reserve;
          l.roomy = k == 2;
          return l;
        }
      }
    }
    // None fits: the fewest rows that would hold one sentence beside the hot rows it leaves.
    l.roomy = false;
    l.least_cache = UINT64_MAX;
    for (size_t j = 0; j < cold.firsts.size(); ++j) {
      const uint64_t reserve = std::min<uint64_t>(rows, pool + cold.most[j]);
      if (cold.firsts[j] + reserve < l.least_cache) {
        l.reserve = reserve;
        l.least_cache = cold.firsts[j] + reserve;
      }
    }
  }
  return l;
}

std::string words(uint64_t blocks) { return std::to_string(blocks * kBlockWords); }

/// The sgd cache: a third of the rows, or kSgdCacheMostShare of them (kSgdCacheHostCutShare for a
/// cache whose pieces are cut on the host) when a third would cut the
/// pieces below half of kSgdPieceFloorWords words: when the rows that the pieces in flight
/// (kPagedStages of that size, in a row of the corpus) need — their distinct ids at or above the
/// hot rows a third leaves, counted, and their pool entries likely cold — are more than twice a
/// third. Pieces shrink to what the free slots take, and each costs a round trip and its
/// launches whatever its size, so a corpus that would be cut into small pieces (words spread
/// over many rows, as a graph's walks) trades hot rows for larger pieces; one whose pieces keep
/// their size (the Zipf streams, mix5m at 41 MB) keeps its hot rows, which serve more lookups.
/// The choice is one or the other, not a fixed point between them: a larger cache leaves fewer
/// hot rows and so more cold ones, which would grow it again (docs/notebook.md, "Paged tables").
uint64_t sgd_cache_rows(const GpuPlanInput& in, GpuPlan& plan, const PagedLayout& layout) {
  const uint64_t third = layout.rows_fit / 3;
  if (in.tokens == nullptr || in.streamed || in.rows == 0 || in.sentence_starts->empty() ||
      in.tokens->size() < in.sentence_starts->back()) {
    return third;  // the ids are not known
  }
  const uint32_t floor_blocks = static_cast<uint32_t>(
      std::min<uint64_t>(plan.batch_blocks, (kSgdPieceFloorWords + kBlockWords - 1) / kBlockWords));
  const uint32_t window = floor_blocks * static_cast<uint32_t>(kPagedStages);
  const uint64_t hot = std::min<uint64_t>(in.rows, layout.rows_fit - third);
  const uint32_t threads = std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16);
  const uint64_t ids =
      max_run_rows_from(*in.tokens, *in.sentence_starts, *in.blocks, window, hot, in.rows, threads);
  // The window spans at most this many pool periods.
  const uint64_t pool_entries =
      uint64_t{plan.negative_pool} * ((window + plan.pool_blocks - 1) / plan.pool_blocks + 1);
  double likely = double(pool_entries);
  if (in.noise != nullptr && in.noise->words() == in.rows) {
    likely *= in.noise->share_from(hot);
  }
  plan.piece_cold_rows = ids + static_cast<uint64_t>(likely);
  if (double(ids) + likely <= 2.0 * double(third)) return third;
  const auto share = [&](double s) {
    return std::max(third, static_cast<uint64_t>(double(layout.rows_fit) * s));
  };
  const uint64_t most = share(kSgdCacheMostShare);
  return most <= kHostCutMaxSlots ? share(kSgdCacheHostCutShare) : most;
}

}  // namespace

namespace {

GpuPlan plan_once(const GpuPlanInput& in, const GpuDeviceFacts& device);

}  // namespace

GpuPlan plan_gpu(const GpuPlanInput& in, const GpuDeviceFacts& device) {
  GpuPlan plan = plan_once(in, device);
  // A small cache whose pieces are cut on the host holds pieces of a few thousand words, cut by
  // their cold rows, while each stage is sized for the longest piece the cap allows: the cap
  // follows the cache (host_cut_piece_blocks), and what the stages no longer take goes to rows.
  // The cap only shrinks, and a plan that would no longer cut on the host is not taken.
  for (int round = 0; round < 4; ++round) {
    if (!plan.paged || !plan.host_cuts || plan.cache_rows > kHostCutMaxSlots ||
        in.optimizer != OptimizerKind::kSgd || in.cache_rows > 0 || in.hot_rows > 0 ||
        !in.cap_host_cut_pieces) {
      break;
    }
    const uint64_t blocks = host_cut_piece_blocks(plan.cache_rows);
    if (blocks >= plan.batch_blocks) break;
    GpuPlanInput capped = in;
    capped.sgd_piece_words = blocks * kBlockWords;
    GpuPlan next = plan_once(capped, device);
    if (!next.paged || !next.host_cuts || next.cache_rows > kHostCutMaxSlots) break;
    plan = next;
  }
  return plan;
}

namespace {

/// An optimizer's cache (plan_gpu): the super-batch chosen where the run left it to the plan,
/// checked to fit, and the cache sized for two super-batches' cold rows. Updates `plan`'s piece
/// sizes and `layout` as it tries super-batches; returns the cache's slots.
uint64_t optimizer_cache_rows(const GpuPlanInput& in, const GpuDeviceFacts& device, GpuPlan& plan,
                              PagedLayout& layout, RowCounts& counted) {
  const uint64_t rows = in.rows;
  // An optimizer trains a super-batch whole: its rows must fit the cache at once, and two of
  // them for the next to move while one trains (the pipeline's depth).
  const auto roomy = [&] { return 3 * plan.max_list <= layout.rows_fit; };
  const auto fits = [&] { return plan.max_list <= layout.rows_fit; };
  if (in.choose_batch && !roomy()) {
    // The largest super-batch (halving) whose two fit two thirds of the rows; else the
    // largest that fits at all.
    const uint32_t from = plan.batch_blocks;
    for (const bool strict : {true, false}) {
      for (uint32_t blocks = from;; blocks = (blocks + 1) / 2) {
        plan.batch_blocks = blocks;
        size_pieces(in, plan.batch_blocks, plan.pool_blocks, plan);
        layout = paged_layout(in, device, plan, counted);
        if (strict ? roomy() : fits()) break;
        if (blocks == 1) break;
      }
      if (strict ? roomy() : fits()) break;
    }
    plan.super_batch_blocks = plan.batch_blocks;
  }
  if (!fits()) {
    const std::string what =
        in.choose_batch ? "a super-batch of " + words(plan.batch_blocks) + " words (the least)"
                        : "--batch-words " + words(plan.batch_blocks);
    throw Error("--gpu-memory " + format_gib(plan.budget) +
                " is too small for paged tables of dim " + std::to_string(in.dim) +
                " with --optimizer " + to_string(in.optimizer) + ": " + what + " touches up to " +
                std::to_string(plan.max_list) + " rows (its distinct words and " +
                std::to_string(layout.pool_entries) + " pool entries), the budget holds " +
                std::to_string(layout.rows_fit) + "; at least " +
                format_gib(layout.fixed + plan.max_list * layout.slot_bytes) +
                " is needed; raise --gpu-memory" +
                (in.choose_batch ? std::string() : std::string(" or lower --batch-words")));
  }
  // Only rows at or above the hot rows take slots, and the cache it takes away from the hot
  // rows makes more of them cold: from a third of the rows (as sgd), the cache grows to two
  // super-batches' cold rows until they fit (or it takes every row). Sizing it for all of a
  // super-batch's rows would take the hot rows that serve most lookups, and move more rows.
  // One super-batch must fit with every pool entry cold (the pipeline refuses it otherwise);
  // two, for the next to move while one trains, with the entries likely cold: their expected
  // number and four standard deviations (a pair that does not fit waits, as the pipeline
  // drains).
  SuperBatchRows by_range;
  if (in.tokens != nullptr) {
    by_range =
        super_batch_rows(*in.tokens, *in.sentence_starts, *in.blocks, plan.batch_blocks, rows);
  }
  const auto want_cache = [&](uint64_t cache) {
    if (in.tokens == nullptr) return std::min(layout.rows_fit, 2 * plan.max_list);
    const uint64_t hot = in.hot_rows > 0 ? std::min<uint64_t>(in.hot_rows, rows)
                                         : std::min<uint64_t>(rows, layout.rows_fit - cache);
    const uint64_t ids = by_range.max_from(hot);
    const uint64_t one = std::min(plan.max_list, ids + layout.pool_entries);
    uint64_t likely = layout.pool_entries;
    if (in.noise != nullptr && in.noise->words() == rows) {
      const double mean = double(layout.pool_entries) * in.noise->share_from(hot);
      likely = std::min(likely, static_cast<uint64_t>(mean + 4.0 * std::sqrt(mean)) + 1);
    }
    const uint64_t two = 2 * std::min(plan.max_list, ids + likely);
    return std::max(one, std::min(layout.rows_fit, two));
  };
  // A few rounds settle it; past them, the bound of every row of two super-batches, which
  // always holds them.
  uint64_t cache = std::max(layout.rows_fit / 3, std::min(layout.rows_fit, layout.least_cache));
  for (int round = 0;; ++round) {
    const uint64_t want = want_cache(cache);
    if (want <= cache) break;
    cache = want;
    if (round == 7) {
      cache = std::max(cache, std::min(layout.rows_fit, 2 * plan.max_list));
      break;
    }
  }
  return cache;
}

GpuPlan plan_once(const GpuPlanInput& in, const GpuDeviceFacts& device) {
  GpuPlan plan;
  plan.budget = device.budget;
  const uint64_t rows = in.rows;
  const bool optimizer = in.optimizer != OptimizerKind::kSgd;
  plan.negative_pool = in.negative_pool;
  plan.pool_blocks = std::max<uint32_t>(1, in.pool_blocks);
  plan.super_batch_blocks = plan.batch_blocks = std::max<uint32_t>(1, in.batch_blocks);
  // Words past the last one that subsampling may drop are always kept (kernels/sgns.hpp).
  plan.keep_count = in.keep != nullptr ? in.keep->stored() : 0;
  size_pieces(in, plan.batch_blocks, plan.pool_blocks, plan);

  const uint64_t resident_need = resident_bytes(rows, in.row_stride, in.optimizer, noise_bytes(in));
  if (!plan_pages_tables(rows, in.row_stride, in.optimizer, in.placement, plan.budget)) {
    if (resident_need > plan.budget) {
      throw Error("--placement resident: the tables" +
                  std::string(optimizer ? " and optimizer state" : "") + " need " +
                  format_gib(resident_need) + " of GPU memory, more than the budget of " +
                  format_gib(plan.budget) + " on " + device.name +
                  "; use --placement paged (or auto), or raise --gpu-memory");
    }
    plan.hot_rows = plan.device_rows = rows;
    plan.table_bytes = resident_table_bytes(in, plan.device_rows, plan.keep_count, device);
    plan.corpus = resident_corpus_sizes(plan.budget, plan.table_bytes, in.resident_corpus_max_bytes,
                                        in.chunk_tokens, in.force_stream, in.stage_tokens);
    return plan;
  }
  plan.paged = true;
  if (in.choose_pool) plan.negative_pool = auto_negative_pool(plan.negative_pool);
  if (in.choose_pool_blocks) {
    const uint64_t period = auto_pool_words(plan.negative_pool);
    plan.pool_blocks = static_cast<uint32_t>(
        std::clamp<uint64_t>((period + kBlockWords - 1) / kBlockWords, 1, UINT32_MAX));
  }
  const uint32_t pool = plan.negative_pool;
  require_pool_for_paging(pool,
                          "paging the tables (they need " + format_gib(resident_need) +
                              ", the GPU budget is " + format_gib(plan.budget) + ")",
                          ", or raise --gpu-memory");
  if (!device.host_pointers) {
    throw Error(device.name +
                " cannot address registered host memory by its host pointer, which paged "
                "tables need; use --placement resident");
  }
  // With sgd nothing steps per super-batch, so paged pieces may be shorter than --batch-words:
  // smaller stage buffers leave more of the budget to rows, and moves and launches interleave
  // more finely (CudaBackendOptions::sgd_piece_words).
  uint32_t piece_cap = plan.batch_blocks;
  if (!optimizer && in.sgd_piece_words > 0) {
    piece_cap = static_cast<uint32_t>(std::min<uint64_t>(
        piece_cap, std::max<uint64_t>(1, (in.sgd_piece_words + kBlockWords - 1) / kBlockWords)));
  }
  plan.batch_blocks = piece_cap;
  size_pieces(in, plan.batch_blocks, plan.pool_blocks, plan);
  RowCounts counted;
  PagedLayout layout = paged_layout(in, device, plan, counted);
  const std::string with_pool = "with --negative-pool " + std::to_string(pool);
  if (optimizer && in.cache_rows == 0) {
    plan.cache_rows = optimizer_cache_rows(in, device, plan, layout, counted);
  } else {
    // The cache holds the rows of the pieces in flight and serves few repeat lookups beyond
    // them (a tail row recurs only millions of words later), while every hot row saves
    // lookups: a third of the rows for the cache, or more where a third would cut the pieces
    // small (sgd_cache_rows). Sgd pieces are the plan's to size: on a
    // budget whose stages leave too few rows for a cache, they halve until one fits.
    // A given cache (with no given hot rows) is sized around in the same way.
    const auto cache_fits = [&] {
      const uint64_t want = in.cache_rows > 0 ? in.cache_rows : layout.rows_fit / 3;
      return in.hot_rows > 0 ||
             (layout.roomy && std::max(want, layout.least_cache) <= layout.rows_fit);
    };
    while (!optimizer && !cache_fits() && plan.batch_blocks > 1) {
      plan.batch_blocks = (plan.batch_blocks + 1) / 2;
      size_pieces(in, plan.batch_blocks, plan.pool_blocks, plan);
      layout = paged_layout(in, device, plan, counted);
    }
    plan.cache_rows = in.cache_rows > 0 ? in.cache_rows : layout.rows_fit / 3;
    if (!optimizer && in.cache_rows == 0 && in.hot_rows == 0) {
      plan.cache_rows = sgd_cache_rows(in, plan, layout);
    }
  }
  plan.cache_rows = std::max(plan.cache_rows, layout.least_cache);
  if (in.hot_rows == 0 && in.cache_rows > 0 && plan.cache_rows > layout.rows_fit) {
    throw Error("--cache-rows " + std::to_string(in.cache_rows) + " does not fit in --gpu-memory " +
                format_gib(plan.budget) + " with paged tables of dim " + std::to_string(in.dim) +
                " " + with_pool + ": it holds " + std::to_string(layout.rows_fit) +
                " rows beside the fixed buffers");
  }
  if (in.hot_rows == 0 && plan.cache_rows > layout.rows_fit) {
    throw Error("--gpu-memory " + format_gib(plan.budget) +
                " is too small for paged tables of dim " + std::to_string(in.dim) + " " +
                with_pool + ": at least " +
                format_gib(layout.fixed + layout.least_cache * layout.slot_bytes) +
                " is needed; raise --gpu-memory" +
                (in.choose_pool ? std::string() : std::string(" or lower --negative-pool")));
  }
  plan.hot_rows = in.hot_rows > 0 ? std::min<uint64_t>(in.hot_rows, rows)
                                  : std::min<uint64_t>(rows, layout.rows_fit - plan.cache_rows);
  plan.device_rows = plan.hot_rows + plan.cache_rows;
  if (plan.device_rows >= 0xFFFFFFF0ull) throw Error("paged tables: too many device rows");
  plan.host_cuts = !optimizer && !in.hs &&
                   (in.piece_cutting == PieceCutting::kHost ||
                    (in.piece_cutting == PieceCutting::kAuto &&
                     (plan.cache_rows <= kHostCutMaxSlots ||
                      cache_cuts_pieces(plan.piece_cold_rows, plan.cache_rows))));
  if (plan.host_cuts) {
    // A piece cut on the host lists at most a share of the slots (a half at the least depth),
    // or one sentence and its pool; the cache needs no marks, selects or slot order. What
    // they held goes to more hot rows; the cache keeps its size.
    plan.max_list = std::min<uint64_t>(plan.max_list,
                                       std::max<uint64_t>(layout.reserve, plan.cache_rows / 2 + 1));
    const uint64_t fixed = host_cut_fixed_bytes(in, plan);
    const uint64_t rows_fit = plan.budget > fixed ? (plan.budget - fixed) / layout.slot_bytes : 0;
    if (in.hot_rows == 0 && rows_fit > plan.device_rows) {
      plan.hot_rows = std::min<uint64_t>(rows, rows_fit - plan.cache_rows);
      plan.device_rows = plan.hot_rows + plan.cache_rows;
    }
    plan.scratch_bytes = 0;
    return plan;
  }
  plan.scratch_bytes =
      device.scratch_bytes(std::max({rows, plan.cache_rows, plan.max_list}),
                           static_cast<uint32_t>(plan.max_list), order_key_bits(rows));
  return plan;
}

}  // namespace

}  // namespace pagedw2v
