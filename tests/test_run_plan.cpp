// The run's plan (train/run_plan.hpp) without a GPU: every decision a run makes about its device,
// placement, budget, sizes and backend, from a Config, a real training set and device facts made
// up for the test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "config/config.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/plan_input.hpp"
#include "model/model.hpp"
#include "support/random_data.hpp"
#include "support/seed.hpp"
#include "train/backend_factory.hpp"
#include "train/run_plan.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

/// A usable GPU with `free_bytes` free of 80 GiB.
DeviceFacts gpu(uint64_t free_bytes) {
  DeviceFacts d;
  d.usable = true;
  d.name = "test GPU";
  d.free_bytes = free_bytes;
  d.total_bytes = 80 * kGiB;
  return d;
}

/// Fake CUB scratch sizes that grow with the items, as CUB's do.
uint64_t scratch(uint64_t select_n, uint32_t order_n, uint32_t key_bits) {
  return std::max<uint64_t>(select_n / 2 + 4096, uint64_t{order_n} * 8 + key_bits * 1024);
}

Config base_config() {
  Config c;
  apply_option(c, "min-count", "1");
  apply_option(c, "dim", "128");
  c.given.clear();  // what a test gives, it gives below
  return c;
}

/// A Zipf corpus of `tokens` words over `vocab` words, from a fresh seed.
TrainingSet zipf_set(const Config& c, uint64_t tokens = 400000, uint32_t vocab = 60000) {
  return make_training_set(testing_util::zipf_text(tokens, vocab, testing_util::fresh_seed()), c);
}

/// Bytes resident tables of the set's vocabulary need under `c`.
uint64_t resident_need(const TrainingSet& set, const Config& c) {
  return resident_bytes(set.vocab.size(), sgns_row_stride(c.dim), c.optimizer);
}

/// The plan the CUDA backend would have made for itself over `c`'s sizes: the same input and
/// device, nothing left to choose.
GpuPlan backend_plan(const RunPlan& plan, const TrainingSet& set, const Config& c) {
  return plan_gpu(make_plan_input(set.train_data(c), cuda_options(plan)),
                  plan_device_facts(plan.device, plan.gpu.memory_budget, scratch));
}

void expect_same_plan(const GpuPlan& a, const GpuPlan& b) {
  EXPECT_EQ(a.paged, b.paged);
  EXPECT_EQ(a.budget, b.budget);
  EXPECT_EQ(a.negative_pool, b.negative_pool);
  EXPECT_EQ(a.pool_blocks, b.pool_blocks);
  EXPECT_EQ(a.super_batch_blocks, b.super_batch_blocks);
  EXPECT_EQ(a.hot_rows, b.hot_rows);
  EXPECT_EQ(a.cache_rows, b.cache_rows);
  EXPECT_EQ(a.device_rows, b.device_rows);
  EXPECT_EQ(a.batch_blocks, b.batch_blocks);
  EXPECT_EQ(a.max_piece_tokens, b.max_piece_tokens);
  EXPECT_EQ(a.max_piece_sentences, b.max_piece_sentences);
  EXPECT_EQ(a.max_pools, b.max_pools);
  EXPECT_EQ(a.max_list, b.max_list);
  EXPECT_EQ(a.scratch_bytes, b.scratch_bytes);
  EXPECT_EQ(a.host_cuts, b.host_cuts);
}

TEST(RunPlan, TheMarginRule) {
  // A 20th of what is free, at least 256 MiB; the budget is what is free less it.
  EXPECT_EQ(gpu_memory_margin(kGiB), 256 * kMiB);
  EXPECT_EQ(gpu_memory_margin(80 * kGiB), 4 * kGiB);
  EXPECT_EQ(gpu_budget(0, 80 * kGiB), 76 * kGiB);
  EXPECT_EQ(gpu_budget(0, kGiB), 768 * kMiB);
  EXPECT_EQ(gpu_budget(0, 200 * kMiB), 100 * kMiB);  // less than the margin: half
  EXPECT_EQ(gpu_budget(3 * kGiB, 80 * kGiB), 3 * kGiB);
}

TEST(RunPlan, TheDevice) {
  EXPECT_EQ(resolve_device(DeviceKind::kCpu, gpu(kGiB)), DeviceKind::kCpu);
  EXPECT_EQ(resolve_device(DeviceKind::kAuto, DeviceFacts{}), DeviceKind::kCpu);
  EXPECT_EQ(resolve_device(DeviceKind::kCuda, DeviceFacts{}), DeviceKind::kCuda);
  EXPECT_NO_THROW(check_device(DeviceKind::kCpu, DeviceFacts{}));
  EXPECT_NO_THROW(check_device(DeviceKind::kAuto, DeviceFacts{}));
#ifdef PAGEDW2V_HAVE_CUDA
  EXPECT_THROW(check_device(DeviceKind::kCuda, DeviceFacts{}), Error);
  EXPECT_EQ(resolve_device(DeviceKind::kAuto, gpu(kGiB)), DeviceKind::kCuda);
  EXPECT_NO_THROW(check_device(DeviceKind::kCuda, gpu(kGiB)));
#else
  EXPECT_THROW(check_device(DeviceKind::kCuda, DeviceFacts{}), UsageError);
  EXPECT_EQ(resolve_device(DeviceKind::kAuto, gpu(kGiB)), DeviceKind::kCpu);
  EXPECT_THROW(check_device(DeviceKind::kCuda, gpu(kGiB)), UsageError);
#endif
}

TEST(RunPlan, CpuPagesNothingAndKeepsItsSizes) {
  Config c = base_config();
  apply_option(c, "device", "cpu");
  apply_option(c, "placement", "paged");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  const Config before = c;
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(kGiB), false, false);
  EXPECT_EQ(plan.kind, DeviceKind::kCpu);
  EXPECT_EQ(plan.gpu.placement, Placement::kResident);
  EXPECT_FALSE(plan.paged());
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  EXPECT_FALSE(plan.gpu_plan.has_value());
  EXPECT_EQ(c.negative_pool, before.negative_pool);
  EXPECT_EQ(c.pool_words, before.pool_words);
  EXPECT_EQ(c.batch_words, before.batch_words);
  // The CPU backend, as the plan says.
  Model model = allocate_model(set.vocab.size(), c.dim, c.optimizer, false, "", c.storage, false);
  EXPECT_EQ(make_backend(plan, model, set.train_data(c), 1)->name(), "cpu");
  // A plan for CUDA without a device to run it says so, as --device cuda does.
  RunPlan no_device;
  no_device.kind = DeviceKind::kCuda;
  try {
    make_backend(no_device, model, set.train_data(c), 1);
    ADD_FAILURE() << "a CUDA backend was made without a device";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
}

TEST(RunPlan, ResidentOnAGpuWithRoom) {
  Config c = base_config();
  const TrainingSet set = zipf_set(c);
  const DeviceFacts device = gpu(80 * kGiB);
  RunPlan plan = plan_device(c, set.vocab.size(), device, false, false);
  EXPECT_EQ(plan.kind == DeviceKind::kCuda,
            resolve_device(DeviceKind::kAuto, device) == DeviceKind::kCuda);
  if (plan.kind != DeviceKind::kCuda) GTEST_SKIP() << "a build without CUDA trains on the CPU";
  EXPECT_EQ(plan.gpu.memory_budget, 76 * kGiB);  // the free memory less the margin
  EXPECT_EQ(plan.gpu.placement, Placement::kResident);
  const Config before = c;
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  ASSERT_TRUE(plan.gpu_plan.has_value());
  EXPECT_FALSE(plan.gpu_plan->paged);
  EXPECT_EQ(plan.gpu_plan->hot_rows, set.vocab.size());
  EXPECT_EQ(plan.gpu_plan->budget, 76 * kGiB);
  // Resident tables leave nothing to the plan.
  EXPECT_EQ(c.negative_pool, before.negative_pool);
  EXPECT_EQ(c.batch_words, before.batch_words);
  expect_same_plan(*plan.gpu_plan, backend_plan(plan, set, c));
}

/// A paged run: the tables get 60 % of what they need. The plan chooses what the run left to
/// it, once; the backend's plan over the chosen sizes is the same plan.
void check_paged(OptimizerKind optimizer) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  apply_option(c, "optimizer", to_string(optimizer));
  const TrainingSet set = zipf_set(c);
  const uint64_t budget = resident_need(set, c) / 10 * 6;
  apply_option(c, "gpu-memory", std::to_string(budget));
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), false, false);
  EXPECT_EQ(plan.kind, DeviceKind::kCuda);
  EXPECT_EQ(plan.gpu.memory_budget, budget);  // --gpu-memory, not the free memory
  EXPECT_TRUE(plan.paged());
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  ASSERT_TRUE(plan.gpu_plan.has_value());
  const GpuPlan& p = *plan.gpu_plan;
  EXPECT_TRUE(p.paged);
  EXPECT_LT(p.device_rows, set.vocab.size());
  EXPECT_EQ(c.negative_pool, kAutoNegativePool);
  EXPECT_EQ(c.pool_words, uint64_t{kAutoPoolWordsPerEntry} * kAutoNegativePool);
  EXPECT_EQ(c.batch_words, uint64_t{p.super_batch_blocks} * kBlockWords);
  const TrainData data = set.train_data(c);
  EXPECT_EQ(data.params.negative_pool, p.negative_pool);
  EXPECT_EQ(data.params.pool_blocks, p.pool_blocks);
  EXPECT_EQ(data.params.batch_blocks, p.super_batch_blocks);
  expect_same_plan(p, backend_plan(plan, set, c));
}

TEST(RunPlan, PagedSgdChoosesThePoolOnce) { check_paged(OptimizerKind::kSgd); }
TEST(RunPlan, PagedAdamChoosesTheSuperBatchOnce) { check_paged(OptimizerKind::kAdam); }

TEST(RunPlan, GivenSizesAreKept) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  apply_option(c, "negative-pool", "512");
  apply_option(c, "pool-words", "8192");
  const TrainingSet set = zipf_set(c);
  apply_option(c, "gpu-memory", std::to_string(resident_need(set, c) / 10 * 6));
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), false, false);
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  ASSERT_TRUE(plan.gpu_plan.has_value());
  EXPECT_TRUE(plan.gpu_plan->paged);
  EXPECT_EQ(c.negative_pool, 512u);
  EXPECT_EQ(c.pool_words, 8192u);
  EXPECT_EQ(plan.gpu_plan->negative_pool, 512u);
}

TEST(RunPlan, AResumedRunKeepsItsRecordedSizes) {
  // The settings a checkpoint recorded (a paged run's pool and period), given nothing now: the
  // plan pages the tables again but chooses nothing.
  Config c = base_config();
  apply_option(c, "device", "cuda");
  c.negative_pool = 256;
  c.pool_words = 4096;
  const TrainingSet set = zipf_set(c);
  apply_option(c, "gpu-memory", std::to_string(resident_need(set, c) / 10 * 6));
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), false, true);
  EXPECT_TRUE(plan.paged());
  plan_sizes(plan, c, set.train_data(c), true, {}, scratch);
  ASSERT_TRUE(plan.gpu_plan.has_value());
  EXPECT_EQ(c.negative_pool, 256u);
  EXPECT_EQ(c.pool_words, 4096u);
  EXPECT_EQ(plan.gpu_plan->negative_pool, 256u);
  EXPECT_EQ(plan.gpu_plan->pool_blocks, 1u);
}

TEST(RunPlan, ResidentTooLargeIsRefusedWithTheBudget) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  apply_option(c, "placement", "resident");
  const TrainingSet set = zipf_set(c);
  apply_option(c, "gpu-memory", std::to_string(resident_need(set, c) / 2));
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), false, false);
  EXPECT_EQ(plan.gpu.placement, Placement::kResident);
  try {
    plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
    ADD_FAILURE() << "resident tables over the budget were planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--placement resident"), std::string::npos) << e.what();
  }
}

TEST(RunPlan, RanksOnPartsHonourGpuMemory) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false);
  EXPECT_TRUE(plan.over_ranks);
  EXPECT_TRUE(plan.rank_gpus);
  EXPECT_TRUE(plan.on_parts);
  EXPECT_FALSE(plan.paged());
  EXPECT_EQ(plan.grant().budget, 38 * kGiB);  // the one margin rule
  EXPECT_EQ(plan.grant().device.name, "test GPU");
  apply_option(c, "gpu-memory", "2GiB");
  plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false);
  EXPECT_EQ(plan.grant().budget, 2 * kGiB);
  c.negative_pool = 64;  // parts train without a pool
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  EXPECT_EQ(c.negative_pool, 0u);
  EXPECT_FALSE(plan.gpu_plan.has_value());
}

TEST(RunPlan, RanksWithAPoolTrainRowsThroughHostMemory) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  apply_option(c, "model", "cbow");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false);
  EXPECT_TRUE(plan.rank_gpus);
  EXPECT_FALSE(plan.on_parts);
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  EXPECT_EQ(c.negative_pool, kAutoNegativePool);
  EXPECT_EQ(c.pool_words, uint64_t{kAutoPoolWordsPerEntry} * kAutoNegativePool);
  // Those ranks keep no rows on the GPU: --gpu-memory has nothing to bound.
  apply_option(c, "gpu-memory", "2GiB");
  EXPECT_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false), UsageError);
}

TEST(RunPlan, RanksChooseTheirDevice) {
  Config c = base_config();
  const TrainingSet set = zipf_set(c, 20000, 2000);
  // --device auto: the GPUs for sgd, the CPU for an optimizer.
  const bool cuda = resolve_device(DeviceKind::kAuto, gpu(kGiB)) == DeviceKind::kCuda;
  EXPECT_EQ(plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false).rank_gpus, cuda);
  apply_option(c, "optimizer", "adam");
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false);
  EXPECT_FALSE(plan.rank_gpus);
  EXPECT_EQ(plan.grant().budget, 0u);
  // Without a GPU, the CPU.
  apply_option(c, "optimizer", "sgd");
  EXPECT_FALSE(plan_device(c, set.vocab.size(), DeviceFacts{}, true, false).rank_gpus);
  // Resumed: a checkpoint trained with a pool, on the GPUs again; its pool is kept.
  c.negative_pool = 512;
  c.given.clear();
  plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, true);
  EXPECT_EQ(plan.rank_gpus, cuda);
  EXPECT_FALSE(plan.on_parts);
  plan_sizes(plan, c, set.train_data(c), true, {}, scratch);
  EXPECT_EQ(c.negative_pool, 512u);
}

TEST(RunPlan, RanksRefuseAPlacement) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  apply_option(c, "placement", "auto");
  EXPECT_NO_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false));
  for (const char* placement : {"paged", "resident"}) {
    apply_option(c, "placement", placement);
    try {
      plan_device(c, set.vocab.size(), gpu(40 * kGiB), true, false);
      ADD_FAILURE() << "--placement " << placement << " over ranks was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--rank-tables"), std::string::npos) << e.what();
    }
    // One process places its tables as asked.
    EXPECT_NO_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), false, false));
  }
}

TEST(RunPlan, ResidentCorpusSizes) {
  // Half of what the budget leaves beside the tables, chunks a 48th of it where two chunks'
  // buffers would take more than half.
  const CorpusSizes a = resident_corpus_sizes(kGiB, 200 * kMiB, 0, uint64_t{32} << 20, false, 0);
  EXPECT_EQ(a.resident_max_bytes, 412 * kMiB);
  EXPECT_EQ(a.chunk_tokens, 824 * kMiB / 48);
  const CorpusSizes b =
      resident_corpus_sizes(80 * kGiB, 10 * kGiB, 0, uint64_t{32} << 20, false, 1000000);
  EXPECT_EQ(b.resident_max_bytes, 35 * kGiB);
  EXPECT_EQ(b.chunk_tokens, 1000000u);  // a streamed corpus's stage
  const CorpusSizes c = resident_corpus_sizes(kGiB, 2 * kGiB, 12345, 4096, true, 0);
  EXPECT_EQ(c.resident_max_bytes, 12345u);  // given
  EXPECT_EQ(c.chunk_tokens, 4096u);         // forced streaming keeps its chunks
}

}  // namespace
}  // namespace pagedw2v
