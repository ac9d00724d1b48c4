// The CUDA backend's plan (gpu/gpu_plan.hpp) without a GPU: placement, the split of a paged
// budget into hot rows and cache slots, and piece sizes, over many shapes and budgets.
#include "gpu/gpu_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "model/negative_pool.hpp"
#include "model/optimizer.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"
#include "support/seed.hpp"

namespace pagedw2v {
namespace {

/// A corpus shape: sentences of random lengths, cut into work blocks of kBlockWords words.
struct Shape {
  std::vector<uint64_t> starts;  // token offset of each sentence, and the end
  std::vector<uint64_t> blocks;  // sentence boundaries of the blocks
  KeepTable keep;
  std::vector<uint32_t> tokens;  // ids, frequent words (low ids) far more often, as Zipf's law
};

Shape make_shape(uint64_t rows, uint64_t tokens, uint32_t max_sentence, uint32_t seed,
                 bool with_ids = true) {
  std::mt19937_64 rng(seed);
  Shape s;
  s.starts.push_back(0);
  while (s.starts.back() < tokens) {
    const uint64_t len = 1 + rng() % max_sentence;
    s.starts.push_back(std::min(tokens, s.starts.back() + len));
  }
  const uint64_t sentences = s.starts.size() - 1;
  s.blocks.push_back(0);
  uint64_t words = 0;
  for (uint64_t i = 0; i < sentences; ++i) {
    words += s.starts[i + 1] - s.starts[i];
    if (words >= kBlockWords || i + 1 == sentences) {
      s.blocks.push_back(i + 1);
      words = 0;
    }
  }
  // Frequent words (low ids) are subsampled, as Vocab orders them.
  const uint64_t dropped = rows / 7 + 1;
  s.keep =
      KeepTable(std::vector<float>(std::min(rows, dropped), 0.5f), static_cast<uint32_t>(rows));
  // Log-uniform ids: about Zipf(1), the shape of word frequencies.
  std::uniform_real_distribution<double> u(0.0, 1.0);
  s.tokens.resize(with_ids ? tokens : 0);
  for (uint32_t& t : s.tokens) {
    t = static_cast<uint32_t>(
        std::min<double>(double(rows - 1), std::pow(double(rows), u(rng)) - 1));
  }
  return s;
}

/// The most distinct ids (from `first` on) of one super-batch of `batch_blocks` blocks, counted
/// with a set.
uint64_t brute_max_rows(const Shape& s, uint32_t batch_blocks, uint64_t first = 0) {
  uint64_t best = 0;
  const uint64_t nblocks = s.blocks.size() - 1;
  for (uint64_t b = 0; b < nblocks; b += batch_blocks) {
    const uint64_t e = std::min(nblocks, b + batch_blocks);
    std::set<uint32_t> ids;
    for (uint64_t t = s.starts[s.blocks[b]]; t < s.starts[s.blocks[e]]; ++t) {
      if (s.tokens[t] >= first) ids.insert(s.tokens[t]);
    }
    best = std::max<uint64_t>(best, ids.size());
  }
  return best;
}

/// The rows of the fullest super-batch of plan `p` that take cache slots: its distinct ids at
/// or above the hot rows and every pool entry (the pool's of its periods).
uint64_t brute_cold_need(const Shape& s, const GpuPlan& p) {
  const uint64_t nblocks = s.blocks.size() - 1;
  uint64_t best = 0;
  for (uint64_t first = 0; first < nblocks; first += p.super_batch_blocks) {
    const uint64_t last = std::min(nblocks, first + p.super_batch_blocks);
    std::set<uint32_t> ids;
    for (uint64_t t = s.starts[s.blocks[first]]; t < s.starts[s.blocks[last]]; ++t) {
      if (s.tokens[t] >= p.hot_rows) ids.insert(s.tokens[t]);
    }
    const uint64_t pools = (last - 1) / p.pool_blocks - first / p.pool_blocks + 1;
    best = std::max<uint64_t>(best, ids.size() + pools * p.negative_pool);
  }
  return std::min(best, p.max_list);
}

/// Fake CUB scratch sizes: grow with the item count, as CUB's do.
GpuDeviceFacts facts(uint64_t budget, bool host_pointers = true) {
  GpuDeviceFacts f;
  f.name = "test GPU";
  f.budget = budget;
  f.host_pointers = host_pointers;
  f.scratch_bytes = [](uint64_t select_n, uint32_t order_n, uint32_t key_bits) -> uint64_t {
    return std::max<uint64_t>(select_n / 2 + 4096, uint64_t{order_n} * 8 + key_bits * 1024);
  };
  return f;
}

GpuPlanInput input(const Shape& s, uint64_t rows, uint32_t dim, OptimizerKind kind, uint32_t pool,
                   uint32_t batch_blocks, Placement placement) {
  GpuPlanInput in;
  in.rows = rows;
  in.dim = dim;
  in.row_stride = (dim + 3u) & ~3u;
  in.optimizer = kind;
  in.negative_pool = pool;
  in.batch_blocks = batch_blocks;
  in.pool_blocks = 1;
  in.placement = placement;
  in.sgd_piece_words = 262144;
  in.blocks = &s.blocks;
  in.sentence_starts = &s.starts;
  in.keep = &s.keep;
  in.tokens = &s.tokens;
  return in;
}

/// The largest piece of `batch_blocks` blocks, counted the slow way.
uint64_t brute_max_tokens(const Shape& s, uint32_t batch_blocks) {
  uint64_t best = 0;
  const uint64_t nblocks = s.blocks.size() - 1;
  for (uint64_t b = 0; b < nblocks; b += batch_blocks) {
    uint64_t tokens = 0;
    for (uint64_t k = b; k < std::min(nblocks, b + batch_blocks); ++k) {
      tokens += s.starts[s.blocks[k + 1]] - s.starts[s.blocks[k]];
    }
    best = std::max(best, tokens);
  }
  return best;
}

/// Bytes the paged plan lays out: what sizes with the rows (slots) and what does not.
uint64_t paged_bytes(const GpuPlanInput& in, const GpuPlan& p, const GpuDeviceFacts& f) {
  const uint64_t pool_entries = p.max_pools * in.negative_pool;
  const uint64_t stage = p.max_piece_tokens * 8 + (p.max_piece_sentences + 1) * 12 +
                         p.max_list * 16 + pool_entries * 8 + 64;
  const uint64_t scratch = f.scratch_bytes(
      std::max(in.rows, p.max_list), static_cast<uint32_t>(p.max_list), order_key_bits(in.rows));
  // Pieces cut on the host: a slot per id and no marks, selects or slot order.
  const uint64_t fixed = p.host_cuts
                             ? in.rows * 4 + p.keep_count * sizeof(float) + kPagedStages * stage +
                                   paged_margin(f.budget)
                             : in.rows * 5 + p.keep_count * sizeof(float) + kPagedStages * stage +
                                   p.max_list * 8 + scratch + paged_margin(f.budget);
  return fixed + p.device_rows * (device_row_bytes(in.row_stride, in.optimizer) + 13);
}

TEST(GpuPlan, RowBytesCountEveryDeviceTable) {
  EXPECT_EQ(device_row_bytes(128, OptimizerKind::kSgd), 2u * 128 * 4);
  // adam: two tables, two state tables each, two gradient tables, flags and step lists.
  EXPECT_EQ(device_row_bytes(128, OptimizerKind::kAdam), 8u * 128 * 4 + 10);
  EXPECT_EQ(device_row_bytes(100, OptimizerKind::kAdagrad), 6u * 100 * 4 + 10);
  EXPECT_EQ(resident_bytes(1000, 128, OptimizerKind::kSgd),
            1000 * (2u * 128 * 4 + 4) + (uint64_t{16} << 20));
  EXPECT_EQ(resident_bytes(1000, 128, OptimizerKind::kSgd, 4096),
            1000 * (2u * 128 * 4 + 4) + 4096 + (uint64_t{16} << 20));
}

TEST(GpuPlan, BudgetIsTheRequestOrTheFreeMemoryLessAMargin) {
  EXPECT_EQ(gpu_budget(12345, uint64_t{80} << 30), 12345u);
  const uint64_t free = uint64_t{100} << 30;
  EXPECT_EQ(gpu_budget(0, free), free - free / 20);
  // The margin is at least 256 MiB; with less than that free, half of it.
  EXPECT_EQ(gpu_budget(0, uint64_t{1} << 30), (uint64_t{1} << 30) - (uint64_t{256} << 20));
  EXPECT_EQ(gpu_budget(0, uint64_t{200} << 20), uint64_t{100} << 20);
}

TEST(GpuPlan, KeyBitsCoverEveryIdAndTheEmptySlot) {
  EXPECT_EQ(order_key_bits(1), 1u);
  EXPECT_EQ(order_key_bits(2), 2u);
  EXPECT_EQ(order_key_bits(255), 8u);
  EXPECT_EQ(order_key_bits(256), 9u);
  EXPECT_EQ(order_key_bits(uint64_t{1} << 40), 32u);
}

TEST(GpuPlan, ExplicitResidentBeyondTheBudgetIsRefused) {
  const uint64_t rows = 100000;
  const Shape s = make_shape(rows, 200000, 40, 1);
  const GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 0, 256, Placement::kResident);
  const uint64_t need = resident_bytes(rows, 128, OptimizerKind::kSgd);
  EXPECT_FALSE(plan_gpu(in, facts(need)).paged);
  try {
    plan_gpu(in, facts(need - 1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--placement resident"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test GPU"), std::string::npos) << e.what();
  }
}

TEST(GpuPlan, PagedNeedsANegativePool) {
  const uint64_t rows = 50000;
  const Shape s = make_shape(rows, 100000, 30, 2);
  GpuPlanInput in = input(s, rows, 64, OptimizerKind::kSgd, 0, 256, Placement::kPaged);
  EXPECT_THROW(plan_gpu(in, facts(uint64_t{1} << 30)), UsageError);
  // Auto placement pages (and so asks for the pool) only when the tables do not fit.
  in.placement = Placement::kAuto;
  EXPECT_FALSE(plan_gpu(in, facts(uint64_t{1} << 30)).paged);
  EXPECT_THROW(plan_gpu(in, facts(resident_bytes(rows, 64, OptimizerKind::kSgd) - 1)), UsageError);
}

// One rule, one message: the plan and the settings' validation both say what pages the tables
// and what to add.
TEST(GpuPlan, ThePoolRuleSaysWhatPagesAndWhatToAdd) {
  EXPECT_NO_THROW(require_pool_for_paging(1024, "--placement paged"));
  try {
    require_pool_for_paging(0, "--placement paged", "; or else");
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--placement paged needs --negative-pool N", 0), 0u) << m;
    EXPECT_EQ(m.substr(m.size() - 9), "; or else") << m;
  }
  const uint64_t rows = 50000;
  const Shape s = make_shape(rows, 100000, 30, 2);
  GpuPlanInput in = input(s, rows, 64, OptimizerKind::kSgd, 0, 256, Placement::kAuto);
  try {
    plan_gpu(in, facts(resident_bytes(rows, 64, OptimizerKind::kSgd) - 1));
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("paging the tables (they need ", 0), 0u) << m;
    EXPECT_NE(m.find("needs --negative-pool N"), std::string::npos) << m;
    EXPECT_NE(m.find("raise --gpu-memory"), std::string::npos) << m;
  }
}

TEST(GpuPlan, PagedNeedsHostPointers) {
  const uint64_t rows = 50000;
  const Shape s = make_shape(rows, 100000, 30, 3);
  const GpuPlanInput in = input(s, rows, 64, OptimizerKind::kSgd, 256, 256, Placement::kPaged);
  EXPECT_NO_THROW(plan_gpu(in, facts(uint64_t{1} << 30, true)));
  EXPECT_THROW(plan_gpu(in, facts(uint64_t{1} << 30, false)), Error);
}

TEST(GpuPlan, TooSmallABudgetSaysWhatIsNeeded) {
  const uint64_t rows = 200000;
  const Shape s = make_shape(rows, 400000, 50, 4);
  const GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  try {
    plan_gpu(in, facts(uint64_t{2} << 20));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is too small for paged tables"), std::string::npos)
        << e.what();
  }
}

TEST(GpuPlan, FixedHotAndCacheRowsAreTaken) {
  const uint64_t rows = 30000;
  const Shape s = make_shape(rows, 80000, 20, 5);
  GpuPlanInput in = input(s, rows, 32, OptimizerKind::kSgd, 128, 64, Placement::kPaged);
  in.hot_rows = 100;
  in.cache_rows = 5000;
  const GpuPlan p = plan_gpu(in, facts(uint64_t{1} << 30));
  EXPECT_TRUE(p.paged);
  EXPECT_EQ(p.hot_rows, 100u);
  EXPECT_EQ(p.cache_rows, 5000u);
  EXPECT_EQ(p.device_rows, 5100u);
  // A cache too small for one sentence and its pool is raised to twice that.
  in.cache_rows = 10;
  const GpuPlan q = plan_gpu(in, facts(uint64_t{1} << 30));
  EXPECT_GE(q.cache_rows, 2u * (128 + 1));
}

TEST(GpuPlan, SuperBatchRowsAreCountedAndTheCountStopsPastTheLimit) {
  const uint64_t rows = 5000;
  const Shape s = make_shape(rows, 60000, 40, 6);
  for (const uint32_t blocks : {1u, 2u, 3u, 8u, 64u}) {
    const uint64_t brute = brute_max_rows(s, blocks);
    EXPECT_EQ(max_super_batch_rows(s.tokens, s.starts, s.blocks, blocks, rows), brute) << blocks;
    // Past a limit below the answer the count stops, above the limit.
    const uint64_t partial =
        max_super_batch_rows(s.tokens, s.starts, s.blocks, blocks, rows, brute / 2);
    EXPECT_GT(partial, brute / 2) << blocks;
    EXPECT_LE(partial, brute) << blocks;
  }
  // By id range: exact from the start of a range, else at most one range's ids more.
  for (const uint32_t blocks : {1u, 8u, 1000u}) {
    const SuperBatchRows r = super_batch_rows(s.tokens, s.starts, s.blocks, blocks, rows, 64);
    EXPECT_EQ(r.width, (rows + 63) / 64);
    EXPECT_EQ(r.max_from(0), brute_max_rows(s, blocks)) << blocks;
    EXPECT_EQ(r.max_from(rows), 0u);
    for (const uint64_t first : {uint64_t{1}, uint64_t{100}, r.width * 3, uint64_t{2500}}) {
      const uint64_t exact = brute_max_rows(s, blocks, first);
      const uint64_t start = first / r.width * r.width;
      EXPECT_GE(r.max_from(first), exact) << blocks << " " << first;
      EXPECT_LE(r.max_from(first), brute_max_rows(s, blocks, start)) << blocks << " " << first;
      if (start == first) {
        EXPECT_EQ(r.max_from(first), exact) << blocks << " " << first;
      }
    }
    EXPECT_LT(r.max_from(2500), r.max_from(0));
  }
  // From a first id, on 1 to 5 threads: the brute count exactly.
  for (const uint32_t blocks : {1u, 3u, 8u, 1000u}) {
    for (const uint64_t first : {uint64_t{0}, uint64_t{1}, uint64_t{100}, uint64_t{2500}, rows}) {
      for (const uint32_t threads : {1u, 2u, 5u}) {
        EXPECT_EQ(max_run_rows_from(s.tokens, s.starts, s.blocks, blocks, first, rows, threads),
                  first >= rows ? 0 : brute_max_rows(s, blocks, first))
            << blocks << " " << first << " " << threads;
      }
    }
  }
  // Larger super-batches touch more rows, and never more than the table has.
  EXPECT_LE(brute_max_rows(s, 2), brute_max_rows(s, 4));
  EXPECT_EQ(max_super_batch_rows(s.tokens, s.starts, s.blocks, 1000, rows),
            std::set<uint32_t>(s.tokens.begin(), s.tokens.end()).size());
}

TEST(GpuPlan, PagedRunsLeftWithoutAPoolGetOne) {
  const uint64_t rows = 400000;
  const Shape s = make_shape(rows, 1200000, 30, 2);
  GpuPlanInput in = input(s, rows, 64, OptimizerKind::kSgd, 0, 256, Placement::kAuto);
  in.choose_pool = in.choose_pool_blocks = in.choose_batch = true;
  const uint64_t tables = resident_bytes(rows, 64, OptimizerKind::kSgd);
  // Resident: nothing changes (a pool of 0 draws per example, as word2vec).
  const GpuPlan resident = plan_gpu(in, facts(tables));
  EXPECT_FALSE(resident.paged);
  EXPECT_EQ(resident.negative_pool, 0u);
  EXPECT_EQ(resident.pool_blocks, 1u);
  EXPECT_EQ(resident.super_batch_blocks, 256u);
  // Paged: 1024 per 4096 words, one entry per four words.
  const GpuPlan paged = plan_gpu(in, facts(tables / 2));
  EXPECT_TRUE(paged.paged);
  EXPECT_EQ(paged.negative_pool, kAutoNegativePool);
  EXPECT_EQ(paged.pool_blocks, 1u);
  // A given pool is kept; its period left to the plan keeps one entry per four words.
  in.negative_pool = 4096;
  in.choose_pool = false;
  const GpuPlan given = plan_gpu(in, facts(tables / 2));
  EXPECT_EQ(given.negative_pool, 4096u);
  EXPECT_EQ(given.pool_blocks, 4u);
  in.choose_pool_blocks = false;
  in.pool_blocks = 2;
  EXPECT_EQ(plan_gpu(in, facts(tables / 2)).pool_blocks, 2u);
}

/// The rows of super-batch `b` of `blocks` blocks: distinct ids and every pool entry.
uint64_t super_batch_need(const Shape& s, const GpuPlan& p, uint64_t b) {
  const uint64_t nblocks = s.blocks.size() - 1;
  const uint64_t first = b * p.super_batch_blocks;
  const uint64_t last = std::min(nblocks, first + p.super_batch_blocks);
  const std::set<uint32_t> ids(s.tokens.begin() + s.starts[s.blocks[first]],
                               s.tokens.begin() + s.starts[s.blocks[last]]);
  const uint64_t pools = (last - 1) / p.pool_blocks - first / p.pool_blocks + 1;
  return ids.size() + pools * p.negative_pool;
}

// An optimizer's super-batch that would not fit is made smaller, not refused: mix5m's shape
// with Adam at a budget of about half its tables and state.
TEST(GpuPlan, AnOptimizersSuperBatchShrinksUntilItsRowsFit) {
  const uint64_t rows = 70000;
  const Shape s = make_shape(rows, 3000000, 60, 7);
  GpuPlanInput in = input(s, rows, 100, OptimizerKind::kAdam, 0, 256, Placement::kAuto);
  in.choose_pool = in.choose_pool_blocks = in.choose_batch = true;
  const uint64_t tables = resident_bytes(rows, in.row_stride, OptimizerKind::kAdam);
  for (const uint64_t budget : {tables / 2, tables / 4, tables / 8}) {
    const GpuPlan p = plan_gpu(in, facts(budget));
    ASSERT_TRUE(p.paged);
    EXPECT_EQ(p.negative_pool, kAutoNegativePool);
    EXPECT_LT(p.super_batch_blocks, 256u) << budget;
    EXPECT_EQ(p.batch_blocks, p.super_batch_blocks);
    // Every super-batch's rows fit the cache at once: the pipeline never refuses one.
    const uint64_t nblocks = s.blocks.size() - 1;
    uint64_t most = 0;
    for (uint64_t b = 0; b * p.super_batch_blocks < nblocks; ++b) {
      most = std::max(most, super_batch_need(s, p, b));
    }
    EXPECT_LE(most, p.max_list) << budget;
    // The cache holds two super-batches' cold rows (or every row on the GPU is a slot).
    const uint64_t cold = brute_cold_need(s, p);
    EXPECT_GE(p.cache_rows, cold) << budget;
    EXPECT_TRUE(2 * cold <= p.cache_rows || p.hot_rows == 0) << budget;
    // Two of them fit in two thirds of the rows on the GPU, and twice as large would not; on
    // a budget where not even one block's would, the largest of which one fits.
    GpuPlanInput twice = in;
    twice.choose_batch = false;
    twice.negative_pool = p.negative_pool;
    twice.pool_blocks = p.pool_blocks;
    if (3 * p.max_list > p.device_rows) {
      twice.batch_blocks = 1;
      const GpuPlan one = plan_gpu(twice, facts(budget));
      EXPECT_GT(3 * one.max_list, one.device_rows) << budget;
    }
    twice.batch_blocks = p.super_batch_blocks * 2;
    try {
      const GpuPlan q = plan_gpu(twice, facts(budget));
      EXPECT_GT(3 * q.max_list, q.device_rows) << budget;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--batch-words"), std::string::npos) << e.what();
    }
    // The backend, given the chosen sizes, plans the same.
    GpuPlanInput chosen = twice;
    chosen.batch_blocks = p.super_batch_blocks;
    const GpuPlan again = plan_gpu(chosen, facts(budget));
    EXPECT_EQ(again.cache_rows, p.cache_rows);
    EXPECT_EQ(again.hot_rows, p.hot_rows);
    EXPECT_EQ(again.max_list, p.max_list);
  }
}

TEST(GpuPlan, AGivenSuperBatchThatCannotFitIsRefusedClearly) {
  const uint64_t rows = 70000;
  const Shape s = make_shape(rows, 3000000, 60, 8);
  GpuPlanInput in = input(s, rows, 100, OptimizerKind::kAdam, 1024, 256, Placement::kPaged);
  const uint64_t tables = resident_bytes(rows, in.row_stride, OptimizerKind::kAdam);
  try {
    plan_gpu(in, facts(tables / 8));
    FAIL() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--batch-words 1048576 touches up to"), std::string::npos) << m;
    EXPECT_NE(m.find("lower --batch-words"), std::string::npos) << m;
  }
  // Far too small a budget for even one block of words: refused, saying what is needed.
  in.choose_batch = true;
  try {
    plan_gpu(in, facts(uint64_t{4} << 20));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is too small"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least"), std::string::npos) << e.what();
  }
}

// With an optimizer the cache is sized for the rows a super-batch takes slots for, those at or
// above the hot rows: where the hot rows serve most of a super-batch (frequent words), a third
// of the rows holds two super-batches' cold rows, and the rest stay hot. Sizing the cache for
// all of a super-batch's rows would give up hot rows and move more of them every super-batch.
TEST(GpuPlan, AnOptimizersCacheTakesTwoSuperBatchesColdRowsNotAllTheirRows) {
  const uint64_t rows = 400000;
  const Shape s = make_shape(rows, 3000000, 50, 11);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kAdam, 64, 64, Placement::kPaged);
  const GpuDeviceFacts f = facts(resident_bytes(rows, 128, OptimizerKind::kAdam) / 10 * 6);
  const GpuPlan p = plan_gpu(in, f);
  ASSERT_TRUE(p.paged);
  ASSERT_LT(p.hot_rows, rows);
  const uint64_t fit = p.hot_rows + p.cache_rows;
  // Two super-batches' rows, hot ones included, need more than a third of the rows ...
  ASSERT_GT(2 * p.max_list, fit / 3 + 2);
  // ... their cold rows fit a third: the cache is a third, the hot rows two thirds.
  const uint64_t cold = brute_cold_need(s, p);
  EXPECT_LE(2 * cold, p.cache_rows);
  EXPECT_NEAR(double(p.cache_rows), double(fit) / 3.0, 2.0);
  EXPECT_EQ(p.hot_rows, fit - p.cache_rows);
  EXPECT_LE(paged_bytes(in, p, f), f.budget);
  // Given the same split, the hot rows fixed, the plan sizes the same cache.
  GpuPlanInput fixed_hot = in;
  fixed_hot.hot_rows = p.hot_rows;
  EXPECT_EQ(plan_gpu(fixed_hot, f).cache_rows, p.cache_rows);
}

// Given the noise the pools draw from, two super-batches are planned with the pool entries
// likely to be cold, not every one: for Zipf-like words most draws are frequent words, hot.
// One super-batch still fits with every entry cold.
TEST(GpuPlan, GivenTheNoiseTheCacheCountsThePoolEntriesLikelyCold) {
  const uint64_t rows = 400000;
  const Shape s = make_shape(rows, 3000000, 50, 12);
  std::vector<uint64_t> counts(rows);
  for (uint64_t id = 0; id < rows; ++id) counts[id] = 1 + 100000000 / (id + 1);
  const std::vector<double> weights = unigram_weights(counts);
  const NoiseTable noise(weights);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kAdam, 1024, 64, Placement::kPaged);
  const GpuDeviceFacts f = facts(resident_bytes(rows, 128, OptimizerKind::kAdam) / 10 * 6);
  const GpuPlan every = plan_gpu(in, f);
  in.noise = &noise;
  const GpuPlan likely = plan_gpu(in, f);
  ASSERT_TRUE(every.paged && likely.paged);
  const uint64_t fit = likely.hot_rows + likely.cache_rows;
  // The same rows fit, less those whose bytes the noise table's columns take on the GPU.
  const uint64_t noise_rows =
      noise.column_count() * sizeof(NoiseColumn) / device_row_bytes(128, OptimizerKind::kAdam) + 1;
  EXPECT_LE(fit, every.hot_rows + every.cache_rows);
  EXPECT_LE(every.hot_rows + every.cache_rows - fit, noise_rows);
  // Every pool entry cold: two super-batches need more than a third of the rows.
  EXPECT_GT(every.cache_rows, fit / 3 + 2);
  EXPECT_LT(likely.cache_rows, every.cache_rows);
  EXPECT_GT(likely.hot_rows, every.hot_rows);
  EXPECT_GE(likely.cache_rows, fit / 3);
  // One super-batch with every entry, two with the expected cold entries, fit.
  EXPECT_GE(likely.cache_rows, brute_cold_need(s, likely));
  const uint64_t pool_entries = likely.max_pools * uint64_t{likely.negative_pool};
  double cold_share = 0, total = 0;
  for (uint64_t id = 0; id < rows; ++id) {
    total += weights[id];
    if (id >= likely.hot_rows) cold_share += weights[id];
  }
  const double expected = double(pool_entries) * cold_share / total;
  const uint64_t ids = brute_max_rows(s, likely.super_batch_blocks, likely.hot_rows);
  EXPECT_GE(double(likely.cache_rows), 2.0 * (double(ids) + expected));
  EXPECT_LE(paged_bytes(in, likely, f), f.budget);
}

TEST(GpuPlan, SgdPiecesHalveOnlyWhereTheStagesLeaveNoRoomForACache) {
  const uint64_t rows = 200000;
  const Shape s = make_shape(rows, 2000000, 50, 10, false);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  // The halving alone (host_cut_piece_blocks shortens a small cache's pieces further: tested
  // below).
  in.cap_host_cut_pieces = false;
  // A roomy budget keeps pieces of 262,144 words.
  const GpuPlan roomy = plan_gpu(in, facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 2));
  EXPECT_EQ(roomy.batch_blocks, 64u);
  // A budget that 64-block stages would fill: shorter pieces, a cache of two sentences' rows
  // and pools at least, and everything within the budget.
  const uint64_t tight = uint64_t{20} << 20;
  const GpuPlan p = plan_gpu(in, facts(tight));
  EXPECT_LT(p.batch_blocks, 64u);
  EXPECT_GE(p.batch_blocks, 1u);
  EXPECT_GE(p.cache_rows, 2u * (1024 + 1));
  EXPECT_LE(paged_bytes(in, p, facts(tight)), tight);
  EXPECT_EQ(p.max_piece_tokens, brute_max_tokens(s, p.batch_blocks));
  // Pieces of 64 blocks at that budget would have been refused (cut on the device: lists as
  // long as a piece's tokens and pools).
  in.piece_cutting = PieceCutting::kDevice;
  in.sgd_piece_words = 0;
  in.batch_blocks = p.batch_blocks * 2;
  in.hot_rows = 1;  // fixed rows: the plan takes the pieces as they are
  in.cache_rows = 2 * (1024 + 50);
  const GpuPlan fixed = plan_gpu(in, facts(tight));
  EXPECT_GT(paged_bytes(in, fixed, facts(tight)), tight);
}

// A cache of a given size (`bench --cache-rows`) is planned as the plan's own: pieces halve until
// the stages leave room for it, and one that fits no budget is refused naming it.
TEST(GpuPlan, AGivenCacheShortensThePiecesItsBudgetNeeds) {
  const uint64_t rows = 200000;
  const Shape s = make_shape(rows, 2000000, 50, 10, false);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  const uint64_t tight = uint64_t{20} << 20;
  const GpuPlan own = plan_gpu(in, facts(tight));
  for (const uint64_t given : {own.cache_rows, own.cache_rows + own.cache_rows / 4}) {
    in.cache_rows = given;
    const GpuPlan p = plan_gpu(in, facts(tight));
    EXPECT_EQ(p.cache_rows, given);
    EXPECT_LT(p.batch_blocks, 64u);
    EXPECT_GT(p.hot_rows, 0u);
    EXPECT_LE(paged_bytes(in, p, facts(tight)), tight);
  }
  in.cache_rows = tight / 128;  // about 1 KB a slot: eight times the budget
  try {
    plan_gpu(in, facts(tight));
    ADD_FAILURE() << "a cache larger than the budget was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--cache-rows " + std::to_string(tight / 128)),
              std::string::npos)
        << e.what();
  }
}

// With sgd the cache is a third of the rows unless a third would cut the pieces below half of
// kSgdPieceFloorWords words: the distinct cold ids and pool entries of kPagedStages pieces of that
// size in a row, counted at the hot rows a third leaves, more than twice a third. Then it is
// kSgdCacheMostShare of the rows. Words spread evenly over many rows (a graph's walks) touch
// mostly cold rows; Zipf-like words with a small pool keep the third.
uint64_t window_need(const Shape& s, uint64_t hot, uint32_t pool) {
  const uint32_t window = static_cast<uint32_t>(kSgdPieceFloorWords / kBlockWords * kPagedStages);
  return brute_max_rows(s, window, hot) + uint64_t{pool} * (window + 1);
}

/// 1.5 M words spread evenly over `rows` ids, as a graph's walks spread theirs.
Shape spread_shape(uint64_t rows) {
  Shape s = make_shape(rows, 1500000, 50, 21);
  std::mt19937_64 rng(5);
  for (uint32_t& t : s.tokens) t = static_cast<uint32_t>(rng() % rows);
  return s;
}

TEST(GpuPlan, SgdCacheGrowsOnlyWhereAThirdWouldCutThePiecesSmall) {
  const uint64_t rows = 1000000;
  const Shape flat = spread_shape(rows);
  GpuPlanInput in = input(flat, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  const GpuDeviceFacts f = facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 10);
  // Cut on the device, which leaves the rows as the rule split them (cut on the host, such a
  // cache keeps its size and the budget the device's cut would need goes to hot rows).
  GpuPlanInput device_cuts = in;
  device_cuts.piece_cutting = PieceCutting::kDevice;
  const GpuPlan grown = plan_gpu(device_cuts, f);
  ASSERT_TRUE(grown.paged);
  const uint64_t fit = grown.hot_rows + grown.cache_rows;
  EXPECT_GT(window_need(flat, fit - fit / 3, 1024), 2 * (fit / 3));
  ASSERT_GT(grown.cache_rows, kHostCutMaxSlots);
  EXPECT_EQ(grown.cache_rows, static_cast<uint64_t>(double(fit) * kSgdCacheMostShare));
  EXPECT_LE(paged_bytes(device_cuts, grown, f), f.budget);
  const GpuPlan host_cut = plan_gpu(in, f);
  EXPECT_TRUE(host_cut.host_cuts);
  EXPECT_EQ(host_cut.cache_rows, grown.cache_rows);
  EXPECT_GE(host_cut.hot_rows, grown.hot_rows);
  EXPECT_LE(paged_bytes(in, host_cut, f), f.budget);
  // A budget whose cache would be cut on the host keeps more hot rows: kSgdCacheHostCutShare.
  const GpuDeviceFacts small = facts(uint64_t{12000} * device_row_bytes(128, OptimizerKind::kSgd) +
                                     host_cut_fixed_bytes(in, grown) + (uint64_t{4} << 20));
  const GpuPlan cut = plan_gpu(in, small);
  ASSERT_TRUE(cut.paged);
  EXPECT_TRUE(cut.host_cuts);
  EXPECT_LE(cut.cache_rows, kHostCutMaxSlots);
  // The same cache when the device cuts the pieces (which leaves the rows as the rule split
  // them): kSgdCacheHostCutShare of them, not kSgdCacheMostShare.
  GpuPlanInput on_device = in;
  on_device.piece_cutting = PieceCutting::kDevice;
  const GpuPlan split = plan_gpu(on_device, small);
  EXPECT_EQ(split.cache_rows, cut.cache_rows);
  const double share = double(split.cache_rows) / double(split.hot_rows + split.cache_rows);
  EXPECT_NEAR(share, kSgdCacheHostCutShare, 0.01);
  EXPECT_LT(share, kSgdCacheMostShare - 0.1) << "a host-cut cache keeps more hot rows";
  // A streamed corpus (ids not known when planning) keeps the third.
  GpuPlanInput streamed = in;
  streamed.tokens = nullptr;
  const GpuPlan third = plan_gpu(streamed, f);
  EXPECT_NEAR(double(third.cache_rows), double(third.hot_rows + third.cache_rows) / 3.0, 2.0);
  // Given rows are taken as they are.
  GpuPlanInput given = in;
  given.cache_rows = fit / 5;
  EXPECT_EQ(plan_gpu(given, f).cache_rows, fit / 5);

  // Zipf-like ids, a roomy budget and a small pool: the pieces in flight fit in twice a third.
  const uint64_t zrows = 300000;
  const Shape zipf = make_shape(zrows, 1500000, 50, 22);
  GpuPlanInput z = input(zipf, zrows, 128, OptimizerKind::kSgd, 64, 256, Placement::kPaged);
  z.piece_cutting = PieceCutting::kDevice;
  const GpuDeviceFacts roomy = facts(resident_bytes(zrows, 128, OptimizerKind::kSgd) / 2);
  const GpuPlan kept = plan_gpu(z, roomy);
  ASSERT_TRUE(kept.paged);
  const uint64_t zfit = kept.hot_rows + kept.cache_rows;
  EXPECT_NEAR(double(kept.cache_rows), double(zfit) / 3.0, 2.0);
  EXPECT_LE(window_need(zipf, kept.hot_rows, 64), 2 * kept.cache_rows);
}

// A large cache cuts its pieces on the host too where it would cut them short: words spread
// over many rows (a graph's walks), whose pieces in flight need more cold rows than their share
// of the slots. Zipf-like words whose pieces keep their size are cut on the device.
TEST(GpuPlan, SgdPiecesTheCacheWouldCutShortAreCutOnTheHost) {
  const uint64_t rows = 1000000;
  const Shape flat = spread_shape(rows);
  GpuPlanInput in = input(flat, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  const GpuPlan spread = plan_gpu(in, facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 10));
  ASSERT_TRUE(spread.paged);
  ASSERT_GT(spread.cache_rows, kHostCutMaxSlots);
  // At most the words of the pieces counted and their pools.
  const uint64_t window_words = kSgdPieceFloorWords * kPagedStages;
  EXPECT_GT(spread.piece_cold_rows, 0u);
  EXPECT_LE(spread.piece_cold_rows, window_words + 1024 * (window_words / kBlockWords + 1));
  EXPECT_TRUE(cache_cuts_pieces(spread.piece_cold_rows, spread.cache_rows));
  EXPECT_TRUE(spread.host_cuts);
  in.piece_cutting = PieceCutting::kDevice;
  EXPECT_FALSE(plan_gpu(in, facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 10)).host_cuts);

  const uint64_t zrows = 300000;
  const Shape zipf = make_shape(zrows, 1500000, 50, 22);
  GpuPlanInput z = input(zipf, zrows, 128, OptimizerKind::kSgd, 64, 256, Placement::kPaged);
  const GpuPlan kept = plan_gpu(z, facts(resident_bytes(zrows, 128, OptimizerKind::kSgd) / 5 * 4));
  ASSERT_TRUE(kept.paged);
  ASSERT_GT(kept.cache_rows, kHostCutMaxSlots);
  EXPECT_GT(kept.piece_cold_rows, 0u);
  EXPECT_FALSE(cache_cuts_pieces(kept.piece_cold_rows, kept.cache_rows));
  EXPECT_FALSE(kept.host_cuts);
  // The rule's bound: more than a quarter above a third of the slots.
  EXPECT_FALSE(cache_cuts_pieces(125, 300));
  EXPECT_TRUE(cache_cuts_pieces(126, 300));
}

TEST(GpuPlan, SgdPiecesAreCutOnTheHostForASmallCache) {
  const uint64_t rows = 300000;
  const Shape s = make_shape(rows, 600000, 50, 9);
  // A small pool, so that a roomy cache keeps its pieces whole.
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 64, 256, Placement::kPaged);
  // Pieces capped only by sgd_piece_words, so that both cuts plan the same cache.
  in.cap_host_cut_pieces = false;
  // A small budget: a cache within kHostCutMaxSlots.
  const GpuDeviceFacts small = facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 20);
  const GpuPlan a = plan_gpu(in, small);
  ASSERT_TRUE(a.paged);
  ASSERT_LE(a.cache_rows, kHostCutMaxSlots);
  EXPECT_TRUE(a.host_cuts);
  // A larger one, whose pieces keep their size: the device cuts.
  const GpuDeviceFacts large = facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 5 * 4);
  const GpuPlan b = plan_gpu(in, large);
  ASSERT_TRUE(b.paged);
  ASSERT_GT(b.cache_rows, kHostCutMaxSlots);
  EXPECT_FALSE(b.host_cuts);
  // Asked for, either way; never for an optimizer, whose pieces are whole super-batches.
  in.piece_cutting = PieceCutting::kHost;
  EXPECT_TRUE(plan_gpu(in, large).host_cuts);
  in.piece_cutting = PieceCutting::kDevice;
  const GpuPlan d = plan_gpu(in, small);
  EXPECT_FALSE(d.host_cuts);
  // The same cache; the budget that the device's cut needs for marks, selects and long lists
  // holds more hot rows instead, and both fit.
  EXPECT_EQ(a.cache_rows, d.cache_rows);
  EXPECT_GT(a.hot_rows, d.hot_rows);
  EXPECT_LT(a.max_list, d.max_list);
  EXPECT_LE(paged_bytes(in, a, small), small.budget);
  EXPECT_LE(paged_bytes(in, d, small), small.budget);
  GpuPlanInput adam = input(s, rows, 128, OptimizerKind::kAdam, 1024, 4, Placement::kPaged);
  adam.piece_cutting = PieceCutting::kHost;
  EXPECT_FALSE(
      plan_gpu(adam, facts(resident_bytes(rows, 128, OptimizerKind::kAdam) / 4)).host_cuts);
  // Resident tables cut nothing.
  GpuPlanInput resident = in;
  resident.placement = Placement::kResident;
  resident.piece_cutting = PieceCutting::kHost;
  EXPECT_FALSE(
      plan_gpu(resident, facts(resident_bytes(rows, 128, OptimizerKind::kSgd) * 2)).host_cuts);
}

// A small cache cut on the host holds pieces of a few words a slot: the plan caps its pieces
// there, and the budget the stages no longer take holds more rows, within the budget.
TEST(GpuPlan, ASmallHostCutCacheCapsItsPiecesByItsSlots) {
  const uint64_t rows = 300000;
  const Shape s = make_shape(rows, 2000000, 50, 9);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  const GpuDeviceFacts small = facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 30);
  GpuPlanInput uncapped = in;
  uncapped.cap_host_cut_pieces = false;
  const GpuPlan u = plan_gpu(uncapped, small);
  ASSERT_TRUE(u.paged);
  ASSERT_TRUE(u.host_cuts);
  ASSERT_LE(u.cache_rows, kHostCutMaxSlots);
  ASSERT_LT(host_cut_piece_blocks(u.cache_rows), u.batch_blocks) << "nothing to cap";
  const GpuPlan p = plan_gpu(in, small);
  ASSERT_TRUE(p.paged);
  EXPECT_TRUE(p.host_cuts);
  EXPECT_LE(p.cache_rows, kHostCutMaxSlots);
  EXPECT_LE(p.batch_blocks, host_cut_piece_blocks(u.cache_rows));
  EXPECT_EQ(p.max_piece_tokens, brute_max_tokens(s, p.batch_blocks));
  EXPECT_GT(p.device_rows, u.device_rows);
  EXPECT_GE(p.cache_rows, u.cache_rows);
  EXPECT_LE(paged_bytes(in, p, small), small.budget);
  // The cap is the plan's own: a given cache, or an optimizer, keeps the pieces as they were.
  GpuPlanInput given = in;
  given.cache_rows = u.cache_rows;
  EXPECT_EQ(plan_gpu(given, small).batch_blocks, u.batch_blocks);
  // The words a slot, in whole blocks.
  EXPECT_EQ(host_cut_piece_blocks(0), 1u);
  EXPECT_EQ(host_cut_piece_blocks(kBlockWords / kHostCutPieceWordsPerSlot), 1u);
  EXPECT_EQ(host_cut_piece_blocks(kBlockWords / kHostCutPieceWordsPerSlot + 1), 2u);
}

TEST(GpuPlan, SmallerRowsLeaveRoomForMoreOfThem) {
  const uint64_t rows = 300000;
  const Shape s = make_shape(rows, 600000, 50, 9);
  GpuPlanInput in = input(s, rows, 128, OptimizerKind::kSgd, 1024, 256, Placement::kPaged);
  const GpuDeviceFacts f = facts(resident_bytes(rows, 128, OptimizerKind::kSgd) / 5);
  const GpuPlan fp32 = plan_gpu(in, f);
  in.row_bytes = 128 * 2;
  const GpuPlan half = plan_gpu(in, f);
  EXPECT_GT(half.device_rows, fp32.device_rows * 19 / 10);
  EXPECT_LE(half.device_rows, fp32.device_rows * 21 / 10 + 100);
}

// The largest blocks make_blocks can make: the bounds a streamed corpus is planned with.
TEST(GpuPlan, StreamBlockBoundsAreTheLargestBlocksThereCanBe) {
  // 4095 one-word sentences, then one of the longest: the most tokens in one block.
  EncodedCorpus most_tokens;
  most_tokens.sentence_starts.push_back(0);
  for (uint64_t i = 0; i + 1 < kBlockWords; ++i) most_tokens.sentence_starts.push_back(i + 1);
  most_tokens.sentence_starts.push_back(kBlockWords - 1 + kMaxSentenceLength);
  most_tokens.tokens.assign(most_tokens.sentence_starts.back(), 0);
  // Then more blocks, to see that the first one closed where it should.
  for (int i = 0; i < 3; ++i) {
    most_tokens.sentence_starts.push_back(most_tokens.sentence_starts.back() + 7);
  }
  most_tokens.tokens.resize(most_tokens.sentence_starts.back(), 0);
  const std::vector<uint64_t> a = make_blocks(most_tokens, kBlockWords);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(most_tokens.sentence_starts[a[1]], kMaxBlockTokens);
  // One-word sentences only: the most sentences in one block.
  EncodedCorpus most_sentences;
  for (uint64_t i = 0; i <= 3 * kBlockWords; ++i) most_sentences.sentence_starts.push_back(i);
  most_sentences.tokens.assign(3 * kBlockWords, 0);
  const std::vector<uint64_t> b = make_blocks(most_sentences, kBlockWords);
  ASSERT_GE(b.size(), 2u);
  EXPECT_EQ(b[1] - b[0], kMaxBlockSentences);
}

// A streamed corpus is planned before its blocks are read: its pieces are sized for the largest
// blocks, never smaller than those of any real corpus, and the plan of a corpus held whole is
// what it was.
TEST(GpuPlan, AStreamedCorpusIsPlannedForItsLargestBlocks) {
  const uint64_t rows = 50000;
  const Shape s = make_shape(rows, 400000, kMaxSentenceLength, 21);
  for (const Placement placement : {Placement::kResident, Placement::kPaged}) {
    const OptimizerKind kind = OptimizerKind::kSgd;
    for (const uint32_t batch_blocks : {1u, 3u, 16u, 256u}) {
      for (const uint32_t pool_blocks : {1u, 2u, 5u, 64u}) {
        SCOPED_TRACE(std::string(placement == Placement::kPaged ? "paged" : "resident") +
                     " batch " + std::to_string(batch_blocks) + " pool " +
                     std::to_string(pool_blocks));
        GpuPlanInput whole = input(s, rows, 64, kind, 512, batch_blocks, placement);
        whole.pool_blocks = pool_blocks;
        GpuPlanInput streamed = whole;
        streamed.streamed = true;
        streamed.blocks = nullptr;
        streamed.sentence_starts = nullptr;
        streamed.tokens = nullptr;
        const uint64_t need = resident_bytes(rows, 64, kind);
        const GpuDeviceFacts f = facts(placement == Placement::kPaged ? need * 2 / 3 : need);
        const GpuPlan w = plan_gpu(whole, f);
        const GpuPlan p = plan_gpu(streamed, f);
        ASSERT_EQ(p.paged, placement == Placement::kPaged);
        // Larger stages may leave room for shorter sgd pieces only.
        EXPECT_LE(p.batch_blocks, w.batch_blocks);
        EXPECT_EQ(p.max_piece_tokens, uint64_t{p.batch_blocks} * kMaxBlockTokens);
        EXPECT_EQ(p.max_piece_sentences, uint64_t{p.batch_blocks} * kMaxBlockSentences);
        EXPECT_GE(p.max_piece_tokens, brute_max_tokens(s, p.batch_blocks));
        if (p.batch_blocks == w.batch_blocks) {
          EXPECT_GE(p.max_piece_tokens, w.max_piece_tokens);
          EXPECT_GE(p.max_piece_sentences, w.max_piece_sentences);
          EXPECT_GE(p.max_pools, w.max_pools);
        }
        // A window may cut a piece anywhere inside blocks [kB, (k + 1)B): the pool periods of
        // the whole range, the most a piece can touch, counted for every k until the ranges'
        // offsets in a period repeat.
        uint64_t pools = 1;
        for (uint64_t k = 0; k <= pool_blocks; ++k) {
          const uint64_t b = k * p.batch_blocks, e = b + p.batch_blocks;
          pools = std::max<uint64_t>(pools, (e - 1) / pool_blocks - b / pool_blocks + 1);
        }
        EXPECT_EQ(p.max_pools, pools);
        if (p.paged) {
          EXPECT_LE(paged_bytes(streamed, p, f), f.budget);
        }
        // Unchanged for the corpus held whole.
        EXPECT_EQ(w.max_piece_tokens, brute_max_tokens(s, w.batch_blocks));
      }
    }
  }
}

// With an optimizer a streamed corpus's super-batches are not counted (its ids are not read yet):
// a piece may touch every id it holds and every pool entry, and the cache takes two such.
TEST(GpuPlan, AStreamedCorpusWithAnOptimizerIsPlannedForItsLargestSuperBatch) {
  const uint64_t rows = 200000;
  const Shape s = make_shape(rows, 400000, 50, 4);
  for (const uint32_t batch_blocks : {1u, 4u, 8u}) {
    SCOPED_TRACE("batch " + std::to_string(batch_blocks));
    GpuPlanInput in =
        input(s, rows, 32, OptimizerKind::kAdam, 256, batch_blocks, Placement::kPaged);
    in.streamed = true;
    in.blocks = nullptr;
    in.sentence_starts = nullptr;
    in.tokens = nullptr;
    const GpuDeviceFacts f = facts(resident_bytes(rows, 32, OptimizerKind::kAdam) / 2);
    const GpuPlan p = plan_gpu(in, f);
    ASSERT_TRUE(p.paged);
    EXPECT_EQ(p.batch_blocks, batch_blocks);
    EXPECT_EQ(p.max_list,
              std::min<uint64_t>(rows, p.max_piece_tokens + p.max_pools * uint64_t{256}));
    EXPECT_GE(p.cache_rows, p.max_list);
    EXPECT_LE(paged_bytes(in, p, f), f.budget);
    // Counted, the same corpus held whole needs no more.
    const GpuPlan w =
        plan_gpu(input(s, rows, 32, OptimizerKind::kAdam, 256, batch_blocks, Placement::kPaged), f);
    EXPECT_LE(w.max_list, p.max_list);
    EXPECT_GE(w.hot_rows, p.hot_rows);
  }
}

// {rows, dim, optimizer, pool, batch blocks, budget as a share of the resident tables (%)}
using Case = std::tuple<uint64_t, uint32_t, OptimizerKind, uint32_t, uint32_t, uint32_t>;

class GpuPlanShapes : public ::testing::TestWithParam<Case> {};

TEST_P(GpuPlanShapes, AutoPlanFitsTheBudgetAndAgreesWithThePlacementRule) {
  const auto [rows, dim, kind, pool, batch_blocks, share] = GetParam();
  // The plan counts the ids of a super-batch only with an optimizer.
  const Shape s = make_shape(rows, rows * 3, 60, static_cast<uint32_t>(rows + dim + share),
                             kind != OptimizerKind::kSgd);
  const GpuPlanInput in = input(s, rows, dim, kind, pool, batch_blocks, Placement::kAuto);
  const uint64_t need = resident_bytes(rows, in.row_stride, kind);
  const uint64_t budget = need / 100 * share;
  const GpuDeviceFacts f = facts(budget);
  GpuPlan p;
  try {
    p = plan_gpu(in, f);
  } catch (const UsageError&) {
    FAIL() << "a negative pool is given";
  } catch (const Error& e) {
    // Only a budget below what paged tables need may be refused.
    EXPECT_TRUE(plan_pages_tables(rows, in.row_stride, kind, Placement::kAuto, budget));
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
    return;
  }
  // The rule the model's allocation uses before the corpus is read gives the same placement.
  EXPECT_EQ(p.paged, plan_pages_tables(rows, in.row_stride, kind, Placement::kAuto, budget));
  EXPECT_EQ(p.paged, need > budget);
  EXPECT_EQ(p.budget, budget);
  EXPECT_EQ(p.keep_count, rows / 7 + 1);
  if (!p.paged) {
    EXPECT_EQ(p.hot_rows, rows);
    EXPECT_EQ(p.cache_rows, 0u);
    EXPECT_EQ(p.device_rows, rows);
    EXPECT_EQ(p.batch_blocks, batch_blocks);
    EXPECT_EQ(p.max_piece_tokens, brute_max_tokens(s, batch_blocks));
    return;
  }
  EXPECT_LE(p.hot_rows, rows);
  EXPECT_EQ(p.device_rows, p.hot_rows + p.cache_rows);
  EXPECT_LE(paged_bytes(in, p, f), budget) << "hot " << p.hot_rows << " cache " << p.cache_rows;
  // The cache holds a third of what fits (or twice the largest sentence with its pool); with
  // an optimizer, more where two super-batches' cold rows need it (never more than two
  // super-batches' rows, cold or hot), and always one.
  EXPECT_GE(p.cache_rows, 2u * std::min<uint64_t>(rows, pool + 1));
  const double fit = double(p.cache_rows + p.hot_rows);
  if (p.hot_rows < rows) {
    const double third = fit / 3.0;
    const double slack = third * 0.01 + 2.0 * (pool + 60);
    if (p.host_cuts) {
      // The budget the cache's marks, selects and lists no longer take went to hot rows.
      EXPECT_LE(double(p.cache_rows), third + slack);
    } else if (kind == OptimizerKind::kSgd) {
      EXPECT_NEAR(double(p.cache_rows), third, slack);
    } else {
      EXPECT_GE(double(p.cache_rows), third - slack);
      EXPECT_LE(double(p.cache_rows),
                std::max(third, std::min(fit, 2.0 * double(p.max_list))) + slack);
      const uint64_t cold = brute_cold_need(s, p);
      EXPECT_TRUE(2 * cold <= p.cache_rows || p.hot_rows == 0)
          << "cold " << cold << " cache " << p.cache_rows;
    }
  }
  // Pieces: sgd is cut to 64 blocks (262,144 words), and halved further only where the
  // stages would leave no room for a cache; optimizers keep whole super-batches.
  const uint32_t expect_blocks =
      kind == OptimizerKind::kSgd ? std::min<uint32_t>(batch_blocks, 64) : batch_blocks;
  if (kind == OptimizerKind::kSgd) {
    EXPECT_LE(p.batch_blocks, expect_blocks);
  } else {
    EXPECT_EQ(p.batch_blocks, expect_blocks);
  }
  EXPECT_EQ(p.super_batch_blocks, batch_blocks);
  EXPECT_EQ(p.negative_pool, pool);
  EXPECT_EQ(p.max_piece_tokens, brute_max_tokens(s, p.batch_blocks));
  const uint64_t bound = std::min<uint64_t>(rows, p.max_piece_tokens + p.max_pools * pool);
  EXPECT_EQ(p.host_cuts,
            kind == OptimizerKind::kSgd && (p.cache_rows <= kHostCutMaxSlots ||
                                            cache_cuts_pieces(p.piece_cold_rows, p.cache_rows)));
  if (p.host_cuts) {
    // A piece cut on the host lists at most half the slots, or one sentence (≤ 60 words here)
    // and its pool.
    EXPECT_EQ(p.max_list, std::min(bound, std::max<uint64_t>(p.cache_rows / 2 + 1,
                                                             std::min<uint64_t>(rows, pool + 60))));
    EXPECT_EQ(p.scratch_bytes, 0u);
    return;
  }
  if (kind == OptimizerKind::kSgd) {
    EXPECT_EQ(p.max_list, bound);
  } else {
    // Counted: the distinct ids of the fullest super-batch and every pool entry.
    EXPECT_EQ(p.max_list,
              std::min(bound, brute_max_rows(s, batch_blocks) + p.max_pools * uint64_t{pool}));
    EXPECT_GE(p.cache_rows, brute_cold_need(s, p));
  }
  EXPECT_GT(p.scratch_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuPlanShapes,
                         ::testing::Combine(::testing::Values(uint64_t{20000}, uint64_t{300000}),
                                            ::testing::Values(32u, 100u, 128u),
                                            ::testing::Values(OptimizerKind::kSgd,
                                                              OptimizerKind::kAdam,
                                                              OptimizerKind::kAdagrad),
                                            ::testing::Values(64u, 1024u),
                                            ::testing::Values(16u, 256u),
                                            ::testing::Values(5u, 10u, 50u, 99u, 100u, 200u)));

// What a paged budget keeps back grows with it, from 1 MiB to 16 MiB: a budget of tens of
// megabytes keeps nearly all of them for rows. It holds at least the gap between the tables and
// 64 KiB, which the plan does not count otherwise.
TEST(GpuPlan, SmallBudgetsKeepTheirRows) {
  EXPECT_EQ(paged_margin(uint64_t{8} << 20), kDefaultTableGap + (uint64_t{64} << 10));
  EXPECT_EQ(paged_margin(uint64_t{8} << 20, 0), uint64_t{1} << 20);
  EXPECT_EQ(paged_margin(uint64_t{8} << 20, uint64_t{4} << 20),
            (uint64_t{4} << 20) + (uint64_t{64} << 10));
  EXPECT_EQ(paged_margin(41000000), 41000000u / 32);
  EXPECT_EQ(paged_margin(uint64_t{8} << 30), uint64_t{16} << 20);
  // mix5m's shape: 33,755 rows of dim 100 (27 MB of tables), a budget of 41 MB.
  const uint64_t rows = 33755;
  const Shape s = make_shape(rows, 600000, 20, 7);
  GpuPlanInput in = input(s, rows, 100, OptimizerKind::kSgd, 1024, 64, Placement::kPaged);
  const GpuDeviceFacts f = facts(41000000);
  const GpuPlan p = plan_gpu(in, f);
  ASSERT_TRUE(p.paged);
  EXPECT_LE(paged_bytes(in, p, f), f.budget);
  // Most rows fit on the GPU (with a margin of 16 MiB, about a third of them did).
  EXPECT_GE(p.device_rows, rows * 85 / 100) << "hot " << p.hot_rows << " cache " << p.cache_rows;
}

// A piece's row moves take the room training leaves (three blocks on each multiprocessor left
// to them) until it brings more than a row for every three words, then four for each row a
// word: up to eight, and no more than a third above those whose row rate reaches the path's
// bytes (rows of 1 KB at three, so fp32 rows at dim 128 keep three).
TEST(GpuPlan, RowMovesTakeMoreBlocksOnlyForPiecesThatBringManyRows) {
  const uint64_t bf16 = 128 * 2 * 2, fp32 = 128 * 4 * 2, small = 16 * 2 * 2;
  EXPECT_EQ(piece_move_blocks(0, 262144, bf16, 4), 12u);
  EXPECT_EQ(piece_move_blocks(262144 / 4, 262144, bf16, 4), 12u);  // Zipf 1.0: 0.28 a word
  EXPECT_EQ(piece_move_blocks(262144 / 3, 262144, bf16, 4), 12u);
  EXPECT_EQ(piece_move_blocks(262144 * 72 / 100, 262144, bf16, 4), 32u);  // Zipf 0.7
  EXPECT_EQ(piece_move_blocks(262144 * 60 / 100, 262144, bf16, 4), 28u);
  EXPECT_EQ(piece_move_blocks(262144 * 40 / 100, 262144, bf16, 4), 19u);
  EXPECT_EQ(piece_move_blocks(262144 * 72 / 100, 262144, fp32, 4), 12u);  // at the bound
  EXPECT_EQ(piece_move_blocks(262144, 262144, small, 4), 32u);
  EXPECT_EQ(piece_move_blocks(5000, 0, small, 4), 32u);
  EXPECT_EQ(piece_move_blocks(100, 1000, small, 0), 3u);
  EXPECT_EQ(piece_move_blocks(1000, 1000, small, 2), 16u);
  EXPECT_EQ(piece_move_blocks(1000, 1000, 0, 4), 32u);
}

}  // namespace
}  // namespace pagedw2v

namespace pagedw2v {
namespace {

// Hierarchical softmax: a sentence reads its words' rows and the inner-node rows of their paths
// (one id space, model.hpp), each counted once however often the sentence reads it.
TEST(GpuPlanHs, SentenceRowsCountWordsAndTheirPathsOnce) {
  HuffmanTree tree;
  // Four words; paths of inner-node rows 0 (the root), 1, 2.
  tree.offsets = {0, 1, 3, 6, 9};
  tree.rows = {0, 0, 1, 0, 1, 2, 0, 1, 2};
  tree.codes = {0, 1, 0, 1, 1, 0, 1, 1, 1};
  tree.max_length = 3;
  // {1} ∪ {0, 1} = 2 rows; {3, 3} ∪ {0, 1, 2} = 4; {0} ∪ {0} = 1.
  const std::vector<uint32_t> tokens = {1, 3, 3, 0};
  EXPECT_EQ(hs_sentence_rows(tokens, {0, 1, 3, 4}, tree), 4u);
  EXPECT_EQ(hs_sentence_rows(tokens, {0, 1}, tree), 2u);
  EXPECT_EQ(hs_sentence_rows({0, 0, 0}, {0, 3}, tree), 1u);
}

// The walk that stops at the first node a sentence has read counts what a set of every row
// counts, on a word2vec tree of Zipf counts and Zipf sentences.
TEST(GpuPlanHs, SentenceRowsEqualTheSetOfEveryRowRead) {
  const uint64_t rows = 3000;
  const Shape s = make_shape(rows, 40000, 60, 11);
  std::vector<uint64_t> counts(rows, 1);
  for (const uint32_t id : s.tokens) ++counts[id];
  std::sort(counts.begin(), counts.end(), std::greater<uint64_t>());
  const HuffmanTree tree = build_huffman_tree(CountList(counts));
  ASSERT_GT(tree.max_length, 8u);
  uint64_t want = 0;
  for (size_t k = 0; k + 1 < s.starts.size(); ++k) {
    std::set<uint32_t> read;
    for (uint64_t p = s.starts[k]; p < s.starts[k + 1]; ++p) {
      const uint32_t w = s.tokens[p];
      read.insert(w);
      read.insert(tree.path_rows(w), tree.path_rows(w) + tree.length(w));
    }
    want = std::max<uint64_t>(want, read.size());
  }
  EXPECT_EQ(hs_sentence_rows(s.tokens, s.starts, tree), want);
}

/// The distinct rows at or above `first` that one sentence (or range) reads at most, counted with a
/// set of its words and their whole paths.
uint64_t brute_hs_rows(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                       const HuffmanTree& tree, uint64_t first) {
  uint64_t most = 0;
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    std::set<uint32_t> read;
    for (uint64_t p = starts[k]; p < starts[k + 1]; ++p) {
      const uint32_t w = tokens[p];
      read.insert(w);
      read.insert(tree.path_rows(w), tree.path_rows(w) + tree.length(w));
    }
    most = std::max<uint64_t>(
        most, std::distance(read.lower_bound(static_cast<uint32_t>(first)), read.end()));
  }
  return most;
}

/// A tree of the counts of `s`'s ids (Zipf: long paths for the rare ids).
HuffmanTree tree_of(const Shape& s, uint64_t rows) {
  std::vector<uint64_t> counts(rows, 1);
  for (const uint32_t id : s.tokens) ++counts[id];
  std::sort(counts.begin(), counts.end(), std::greater<uint64_t>());
  return build_huffman_tree(CountList(counts));
}

// Rows at or above a first row (the hot rows leave the others on the GPU, the inner nodes nearest
// the root among them): the walk that stops below the first row counts what a set counts, and
// the ladder of first rows gives that count at each of its rows and a bound between them.
TEST(GpuPlanHs, SentenceRowsAboveTheHotRowsAreCountedAtEveryFirstRow) {
  const uint64_t seed = testing_util::fresh_seed();
  const uint64_t rows = 2000;
  const Shape s = make_shape(rows, 30000, 300, static_cast<uint32_t>(seed));
  const HuffmanTree tree = tree_of(s, rows);
  const HsRowsFrom from = hs_rows_from(s.tokens, s.starts, tree);
  ASSERT_FALSE(from.firsts.empty());
  EXPECT_EQ(from.firsts[0], 0u);
  EXPECT_EQ(from.max_from(0), hs_sentence_rows(s.tokens, s.starts, tree));
  for (size_t k = 0; k < from.firsts.size(); ++k) {
    if (k > 0) {
      EXPECT_GT(from.firsts[k], from.firsts[k - 1]);
      EXPECT_LE(from.firsts[k], from.firsts[k - 1] + from.firsts[k - 1] / 16 + 1);
      EXPECT_LE(from.most[k], from.most[k - 1]);
    }
  }
  EXPECT_LT(from.firsts.back(), rows);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 12; ++i) {
    const uint64_t first = i == 0 ? 0 : rng() % (rows + 50);
    SCOPED_TRACE("first row " + std::to_string(first) + ", seed " + std::to_string(seed));
    const uint64_t exact = brute_hs_rows(s.tokens, s.starts, tree, first);
    EXPECT_EQ(hs_sentence_rows(s.tokens, s.starts, tree, first), exact);
    EXPECT_GE(from.max_from(first), exact);
    const auto at = std::find(from.firsts.begin(), from.firsts.end(), first);
    if (at != from.firsts.end()) {
      EXPECT_EQ(from.max_from(first), exact);
    }
  }
  for (const uint64_t first : from.firsts) {
    EXPECT_EQ(from.max_from(first), brute_hs_rows(s.tokens, s.starts, tree, first)) << first;
  }
}

// A skewed corpus of long sentences, hierarchical softmax alone: a sentence reads several times
// its words in rows. At 30 % and at 25 % of the tables' bytes the plan is accepted and holds every
// byte it lays out within the budget (the tree one link a node, a node map a stage). Its cache
// takes the longest sentence's rows at or above its hot rows: two of them at 30 %; at 25 % two do
// not fit, but one does (a sentence that finds no room waits for the pieces in flight), and the
// pieces are one block.
TEST(GpuPlanHs, ALongSentenceAboveTheHotRowsFitsThirtyAndAQuarterOfTheTables) {
  const uint64_t rows = 30000;
  const Shape s = make_shape(rows, 300000, 1000, 5);
  const HuffmanTree tree = tree_of(s, rows);
  GpuPlanInput in = input(s, rows, 100, OptimizerKind::kSgd, 0, 64, Placement::kPaged);
  in.choose_pool = true;
  in.hs = true;
  in.hs_alone = true;
  in.hs_tree = &tree;
  in.hs_sentence_rows = hs_sentence_rows(s.tokens, s.starts, tree);
  const uint64_t table_bytes = rows * in.row_stride * sizeof(float) * 2;
  EXPECT_EQ(hs_tree_bytes(rows), (2 * rows - 1) * 4);
  for (const uint64_t percent : {30, 25}) {
    SCOPED_TRACE(std::to_string(percent) + " % of the tables");
    const GpuDeviceFacts f = facts(table_bytes * percent / 100);
    const GpuPlan p = plan_gpu(in, f);
    ASSERT_TRUE(p.paged);
    EXPECT_FALSE(p.host_cuts);
    EXPECT_GT(p.hot_rows, 0u);
    const uint64_t cold = brute_hs_rows(s.tokens, s.starts, tree, p.hot_rows);
    EXPECT_GE(p.cache_rows, (percent == 30 ? 2 : 1) * cold);
    // Two whole sentences (the reserve counted from row 0) would not fit either budget.
    EXPECT_GT(2 * in.hs_sentence_rows, p.device_rows);
    // Every byte laid out: the paged buffers, the stages' node maps and the tree's links.
    const uint64_t hs_bytes = kPagedStages * rows * 4 + (2 * rows - 1) * 4;
    EXPECT_LE(paged_bytes(in, p, f) + hs_bytes, f.budget);
    // The lists hold a piece's words and paths.
    std::vector<uint64_t> bounds;
    for (uint64_t b = 0; b + 1 < s.blocks.size(); b += p.batch_blocks) {
      bounds.push_back(s.starts[s.blocks[b]]);
    }
    bounds.push_back(s.starts[s.blocks.back()]);
    EXPECT_EQ(p.max_list, std::min(rows, hs_sentence_rows(s.tokens, bounds, tree)));
    if (percent == 25) {
      EXPECT_LT(p.cache_rows, 2 * cold);
      EXPECT_EQ(p.batch_blocks, 1u);
    }
  }
  // Well below, not even one sentence fits: refused, with what would be needed.
  try {
    plan_gpu(in, facts(table_bytes / 20));
    FAIL() << "a budget of 5 % was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
  }
}

// A piece's rows are counted with its paths' inner nodes (whole super-batches with an
// optimizer, sgd's shorter pieces without): the lists hold that many and the pool, not every
// row. Alone (no negatives), hierarchical softmax pages no pool.
TEST(GpuPlanHs, ListsHoldAPiecesWordsAndPaths) {
  const uint64_t rows = 30000;
  const Shape s = make_shape(rows, 80000, 20, 8);
  std::vector<uint64_t> counts(rows, 1);
  for (const uint32_t id : s.tokens) ++counts[id];
  std::sort(counts.begin(), counts.end(), std::greater<uint64_t>());
  const HuffmanTree tree = build_huffman_tree(CountList(counts));
  for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kSgd}) {
    for (const bool alone : {false, true}) {
      SCOPED_TRACE(to_string(kind) + (alone ? " alone" : " beside negatives"));
      GpuPlanInput in = input(s, rows, 32, kind, 128, 2, Placement::kPaged);
      in.sgd_piece_words = 2 * kBlockWords;
      in.hs = true;
      in.hs_alone = alone;
      in.hs_tree = &tree;
      in.hs_sentence_rows = hs_sentence_rows(s.tokens, s.starts, tree);
      const GpuPlan p = plan_gpu(in, facts(resident_bytes(rows, in.row_stride, kind) / 2));
      ASSERT_TRUE(p.paged);
      std::vector<uint64_t> bounds;
      for (uint64_t b = 0; b + 1 < s.blocks.size(); b += p.batch_blocks) {
        bounds.push_back(s.starts[s.blocks[b]]);
      }
      bounds.push_back(s.starts[s.blocks.back()]);
      const uint64_t piece_rows = hs_sentence_rows(s.tokens, bounds, tree);
      EXPECT_GT(piece_rows, brute_max_rows(s, p.batch_blocks));  // the paths add rows
      const uint64_t pool = alone ? 0 : p.max_pools * 128;
      EXPECT_EQ(p.max_list, std::min(rows, piece_rows + pool));
      EXPECT_LT(p.max_list, rows);
      // Two sentences' rows at or above the hot rows, with their pools, fit this budget.
      EXPECT_GE(p.cache_rows,
                2 * ((alone ? 0 : 128) + hs_sentence_rows(s.tokens, s.starts, tree, p.hot_rows)));
    }
  }
}

// Paged hierarchical softmax: pieces cut on the device (the host's cuts list no inner nodes),
// row lists for every row, and a cache that takes two sentences with their paths and pools.
TEST(GpuPlanHs, PagesWithListsForEveryRowAndAReserveForPaths) {
  const uint64_t rows = 30000;
  const Shape s = make_shape(rows, 80000, 20, 7);
  GpuPlanInput in = input(s, rows, 32, OptimizerKind::kSgd, 128, 64, Placement::kPaged);
  const uint64_t budget = resident_bytes(rows, in.row_stride, OptimizerKind::kSgd) * 6 / 10;
  const GpuPlan ns = plan_gpu(in, facts(budget));
  ASSERT_TRUE(ns.paged);
  EXPECT_LT(ns.max_list, rows);
  in.hs = true;
  in.hs_sentence_rows = 300;
  const GpuPlan hs = plan_gpu(in, facts(budget));
  ASSERT_TRUE(hs.paged);
  EXPECT_FALSE(hs.host_cuts);
  EXPECT_EQ(hs.max_list, rows);
  EXPECT_GE(hs.cache_rows, 2u * (128 + 300));
  // The tree and the pieces' node maps take budget: fewer rows on the device.
  EXPECT_LT(hs.device_rows, ns.device_rows);
  EXPECT_LT(hs.device_rows, rows);
}

}  // namespace
}  // namespace pagedw2v
