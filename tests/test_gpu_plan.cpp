// The CUDA backend's plan (gpu/gpu_plan.hpp) without a GPU: placement, the split of a paged
// budget into hot rows and cache slots, and piece sizes, over many shapes and budgets.
#include "gpu/gpu_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "error.hpp"
#include "params.hpp"
#include "sampler.hpp"

namespace pagedw2v {
namespace {

/// A corpus shape: sentences of random lengths, cut into work blocks of kBlockWords words.
struct Shape {
  std::vector<uint64_t> starts;  // token offset of each sentence, and the end
  std::vector<uint64_t> blocks;  // sentence boundaries of the blocks
  std::vector<float> keep;
};

Shape make_shape(uint64_t rows, uint64_t tokens, uint32_t max_sentence, uint32_t seed) {
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
  s.keep.assign(rows, 1.0f);
  // Frequent words (low ids) are subsampled, as Vocab orders them.
  const uint64_t dropped = rows / 7 + 1;
  for (uint64_t id = 0; id < std::min(rows, dropped); ++id) s.keep[id] = 0.5f;
  return s;
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
  const uint64_t fixed = in.rows * 5 + p.keep_count * sizeof(float) + kPagedStages * stage +
                         p.max_list * 8 + scratch + (uint64_t{16} << 20);
  return fixed + p.device_rows * (device_row_bytes(in.row_stride, in.optimizer) + 13);
}

TEST(GpuPlan, RowBytesCountEveryDeviceTable) {
  EXPECT_EQ(device_row_bytes(128, OptimizerKind::kSgd), 2u * 128 * 4);
  // adam: two tables, two state tables each, two gradient tables, flags and step lists.
  EXPECT_EQ(device_row_bytes(128, OptimizerKind::kAdam), 8u * 128 * 4 + 10);
  EXPECT_EQ(device_row_bytes(100, OptimizerKind::kAdagrad), 6u * 100 * 4 + 10);
  EXPECT_EQ(resident_bytes(1000, 128, OptimizerKind::kSgd),
            1000 * (2u * 128 * 4 + 4 + sizeof(AliasEntry)) + (uint64_t{16} << 20));
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
    plan_gpu(in, facts(uint64_t{20} << 20));
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

// {rows, dim, optimizer, pool, batch blocks, budget as a share of the resident tables (%)}
using Case = std::tuple<uint64_t, uint32_t, OptimizerKind, uint32_t, uint32_t, uint32_t>;

class GpuPlanShapes : public ::testing::TestWithParam<Case> {};

TEST_P(GpuPlanShapes, AutoPlanFitsTheBudgetAndAgreesWithThePlacementRule) {
  const auto [rows, dim, kind, pool, batch_blocks, share] = GetParam();
  const Shape s = make_shape(rows, rows * 3, 60, static_cast<uint32_t>(rows + dim + share));
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
  // The cache holds a third of what fits (or twice the largest sentence with its pool).
  EXPECT_GE(p.cache_rows, 2u * std::min<uint64_t>(rows, pool + 1));
  if (p.hot_rows < rows) {
    EXPECT_NEAR(double(p.cache_rows), double(p.cache_rows + p.hot_rows) / 3.0,
                double(p.cache_rows + p.hot_rows) / 3.0 * 0.01 + 2.0 * (pool + 60));
  }
  // Pieces: sgd is cut to 64 blocks (262,144 words); optimizers keep whole super-batches.
  const uint32_t expect_blocks =
      kind == OptimizerKind::kSgd ? std::min<uint32_t>(batch_blocks, 64) : batch_blocks;
  EXPECT_EQ(p.batch_blocks, expect_blocks);
  EXPECT_EQ(p.max_piece_tokens, brute_max_tokens(s, expect_blocks));
  EXPECT_EQ(p.max_list, std::min<uint64_t>(rows, p.max_piece_tokens + p.max_pools * pool));
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

}  // namespace
}  // namespace pagedw2v
