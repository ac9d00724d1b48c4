// The run's plan (train/run_plan.hpp) without a GPU: every decision a run makes about its device,
// placement, budget, sizes and backend, from a Config, a real training set and device facts made
// up for the test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "config/config.hpp"
#include "dist/rank_backend_kind.hpp"
#include "dist/replica_span.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/plan_input.hpp"
#include "model/model.hpp"
#include "model/optimizer.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"
#include "support/made_up_gpu.hpp"
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
DeviceFacts gpu(uint64_t free_bytes) { return testing_util::made_up_gpu(free_bytes); }

/// Fake CUB scratch sizes that grow with the items, as CUB's do.
constexpr auto scratch = testing_util::made_up_scratch;

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
  EXPECT_EQ(a.table_bytes, b.table_bytes);
  EXPECT_EQ(a.corpus.resident_max_bytes, b.corpus.resident_max_bytes);
  EXPECT_EQ(a.corpus.chunk_tokens, b.corpus.chunk_tokens);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(kGiB), 1, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), device, 1, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, true);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false);
  EXPECT_TRUE(plan.over_ranks);
  EXPECT_TRUE(plan.rank_gpus);
  EXPECT_TRUE(plan.on_parts);
  EXPECT_FALSE(plan.paged());
  EXPECT_EQ(plan.grant().budget, 38 * kGiB);  // the one margin rule
  EXPECT_EQ(plan.grant().device.name, "test GPU");
  apply_option(c, "gpu-memory", "2GiB");
  plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false);
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
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false);
  EXPECT_TRUE(plan.rank_gpus);
  EXPECT_FALSE(plan.on_parts);
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  EXPECT_EQ(c.negative_pool, kAutoNegativePool);
  EXPECT_EQ(c.pool_words, uint64_t{kAutoPoolWordsPerEntry} * kAutoNegativePool);
  // Those ranks keep no rows on the GPU: --gpu-memory has nothing to bound.
  apply_option(c, "gpu-memory", "2GiB");
  EXPECT_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false), UsageError);
}

TEST(RunPlan, RanksChooseTheirDevice) {
  Config c = base_config();
  const TrainingSet set = zipf_set(c, 20000, 2000);
  // --device auto: the GPUs for sgd, the CPU for an optimizer.
  const bool cuda = resolve_device(DeviceKind::kAuto, gpu(kGiB)) == DeviceKind::kCuda;
  EXPECT_EQ(plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false).rank_gpus, cuda);
  apply_option(c, "optimizer", "adam");
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false);
  EXPECT_FALSE(plan.rank_gpus);
  EXPECT_EQ(plan.grant().budget, 0u);
  // Without a GPU, the CPU.
  apply_option(c, "optimizer", "sgd");
  EXPECT_FALSE(plan_device(c, set.vocab.size(), DeviceFacts{}, 2, false).rank_gpus);
  // Resumed: a checkpoint trained with a pool, on the GPUs again; its pool is kept.
  c.negative_pool = 512;
  c.given.clear();
  plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, true);
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
  EXPECT_NO_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false));
  for (const char* placement : {"paged", "resident"}) {
    apply_option(c, "placement", placement);
    try {
      plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, false);
      ADD_FAILURE() << "--placement " << placement << " over ranks was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--rank-tables"), std::string::npos) << e.what();
    }
    // One process places its tables as asked.
    EXPECT_NO_THROW(plan_device(c, set.vocab.size(), gpu(40 * kGiB), 1, false));
  }
}

using dist::RankBackendKind;

/// The plan of a fresh run under `c` over `ranks` ranks with a GPU at hand, its sizes and the
/// ranks' backend chosen (plan_sizes).
RunPlan rank_plan(Config& c, const TrainingSet& set, uint32_t ranks = 2) {
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), ranks, false);
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  return plan;
}

/// Epochs that make a run of `set` under `c` at least `spans` spans long on replicated GPU
/// ranks (gpu_replica_span_words) and on CPU ranks of one thread (replica_span_words).
uint32_t epochs_for_spans(const TrainingSet& set, const Config& c, uint32_t ranks, uint64_t spans) {
  const uint64_t words = set.vocab.size();
  const uint64_t span =
      std::max(dist::gpu_replica_span_words(words), dist::replica_span_words(words, 1)) * ranks;
  const uint64_t per_epoch = set.train_data(c).params.words_per_epoch;
  return static_cast<uint32_t>((spans * span + per_epoch - 1) / per_epoch);
}

TEST(RunPlan, GpuRanksChooseTheirBackend) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  apply_option(c, "threads", "1");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  ASSERT_LE(set.vocab.size(), dist::kReplicaMostRows);
  const std::string few = std::to_string(c.epochs);
  const std::string many =
      std::to_string(epochs_for_spans(set, c, 2, 2 * dist::kReplicaLeastSpans));
  // Skip-gram sgd with no pool: replicated by default in a run long enough, else in parts.
  apply_option(c, "epochs", many);
  RunPlan plan = rank_plan(c, set);
  EXPECT_TRUE(plan.rank_gpus);
  EXPECT_TRUE(plan.on_parts);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kGpuReplica);
  apply_option(c, "epochs", few);
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kGpuParts);
  // Over more ranks the same run has fewer spans: 64 ranks leave it too few to replicate.
  apply_option(c, "epochs", many);
  EXPECT_EQ(rank_plan(c, set, 64).rank_backend, RankBackendKind::kGpuParts);
  // --rank-tables: sharded keeps the parts; replicated replicates a short run too.
  apply_option(c, "rank-tables", "sharded");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kGpuParts);
  apply_option(c, "epochs", few);
  apply_option(c, "rank-tables", "replicated");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kGpuReplica);
  // A pool (given, or CBOW's chosen by the plan): the rows through host memory, whatever the
  // vocabulary and the run's length.
  apply_option(c, "rank-tables", "auto");
  apply_option(c, "epochs", many);
  apply_option(c, "negative-pool", "512");
  plan = rank_plan(c, set);
  EXPECT_FALSE(plan.on_parts);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kRankRows);
  apply_option(c, "negative-pool", "0");  // none, as the default: parts again
  plan = rank_plan(c, set);
  EXPECT_TRUE(plan.on_parts);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kGpuReplica);
  Config cbow = base_config();
  apply_option(cbow, "device", "cuda");
  apply_option(cbow, "model", "cbow");
  apply_option(cbow, "epochs", many);
  plan = rank_plan(cbow, set);
  EXPECT_EQ(cbow.negative_pool, kAutoNegativePool);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kRankRows);
  // Replicated GPU ranks train skip-gram sgd without a pool alone: refused by the plan, before
  // any rank allocates its rows.
  apply_option(cbow, "rank-tables", "replicated");
  try {
    rank_plan(cbow, set);
    ADD_FAILURE() << "replicated CBOW over GPU ranks was planned";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--rank-tables replicated over GPU ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(RunPlan, CpuRanksChooseTheirBackend) {
  Config c = base_config();
  apply_option(c, "device", "cpu");
  apply_option(c, "threads", "1");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  const std::string few = std::to_string(c.epochs);
  const std::string many =
      std::to_string(epochs_for_spans(set, c, 2, 2 * dist::kReplicaLeastSpans));
  // sgd over a small vocabulary: replicated by default in a run long enough, else sharded.
  apply_option(c, "epochs", many);
  RunPlan plan = rank_plan(c, set);
  EXPECT_FALSE(plan.rank_gpus);
  EXPECT_EQ(plan.grant().budget, 0u);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kCpuReplica);
  EXPECT_TRUE(dist::trains_on_replicas(set.train_data(c), 2, 1));
  apply_option(c, "epochs", few);
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kRankRows);
  EXPECT_FALSE(dist::trains_on_replicas(set.train_data(c), 2, 1));
  // --rank-tables: replicated replicates a short run, sharded shards a long one.
  apply_option(c, "rank-tables", "replicated");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kCpuReplica);
  apply_option(c, "epochs", many);
  apply_option(c, "rank-tables", "sharded");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kRankRows);
  // More threads a rank make longer spans, and so fewer: the plan counts the run's threads.
  apply_option(c, "rank-tables", "auto");
  apply_option(c, "threads", "64");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kRankRows);
  // An optimizer: sharded, its steps applied by the owners.
  apply_option(c, "threads", "1");
  apply_option(c, "optimizer", "adam");
  EXPECT_EQ(rank_plan(c, set).rank_backend, RankBackendKind::kRankRows);
  // --device auto without a GPU: CPU ranks, replicated as above.
  Config auto_device = base_config();
  apply_option(auto_device, "threads", "1");
  apply_option(auto_device, "epochs", many);
  plan = plan_device(auto_device, set.vocab.size(), DeviceFacts{}, 2, false);
  plan_sizes(plan, auto_device, set.train_data(auto_device), false, {}, scratch);
  EXPECT_FALSE(plan.rank_gpus);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kCpuReplica);
}

TEST(RunPlan, AResumedRunOverRanksChoosesItsBackendAgain) {
  // The settings a checkpoint of GPU ranks with a pool recorded: the rows through host memory
  // again, its pool kept.
  Config c = base_config();
  apply_option(c, "device", "cuda");
  const TrainingSet set = zipf_set(c, 20000, 2000);
  c.negative_pool = 512;
  c.given.clear();
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, true);
  plan_sizes(plan, c, set.train_data(c), true, {}, scratch);
  EXPECT_EQ(c.negative_pool, 512u);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kRankRows);
  // One trained on parts: parts again.
  c.negative_pool = 0;
  plan = plan_device(c, set.vocab.size(), gpu(40 * kGiB), 2, true);
  plan_sizes(plan, c, set.train_data(c), true, {}, scratch);
  EXPECT_EQ(plan.rank_backend, RankBackendKind::kGpuParts);
}

/// Bytes resident tables of `set` under `c` (skip-gram, no hierarchical softmax, tables
/// interleaved) and their samplers take on the device, counted from the backend's buffers: the
/// vectors and each optimizer state, an optimizer's gradients, touched flags, step lists and
/// the select's scratch (the fake `scratch` with no sort), the stored keep probabilities, the
/// noise table's columns and the 40 bytes of counters.
uint64_t backend_table_bytes(const TrainingSet& set, const Config& c) {
  const uint64_t rows = set.vocab.size();
  const uint64_t table = rows * sgns_row_stride(c.dim) * sizeof(float);
  const bool optimizer = c.optimizer != OptimizerKind::kSgd;
  const uint64_t groups = 1 + state_tables(c.optimizer) + (optimizer ? 1 : 0);
  uint64_t bytes = 2 * table * groups;
  if (optimizer) bytes += 2 * rows * 5 + scratch(rows, 0, 0);
  const TrainData data = set.train_data(c);
  return bytes + data.keep->stored() * sizeof(float) +
         uint64_t{data.noise->column_count()} * sizeof(NoiseColumn) + 40;
}

TEST(RunPlan, ResidentCudaPlansTheCorpus) {
  for (const char* optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    Config c = base_config();
    apply_option(c, "device", "cuda");
    apply_option(c, "optimizer", optimizer);
    const TrainingSet set = zipf_set(c, 200000, 20000);
    const uint64_t corpus_bytes = set.corpus.size() * sizeof(uint32_t);
    // Room: the whole corpus fits in half of what the budget leaves beside the tables, in
    // chunks of the default size.
    RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
    plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
    ASSERT_TRUE(plan.gpu_plan.has_value());
    const GpuPlan& roomy = *plan.gpu_plan;
    EXPECT_FALSE(roomy.paged);
    EXPECT_EQ(roomy.table_bytes, backend_table_bytes(set, c));
    EXPECT_EQ(roomy.corpus.resident_max_bytes, (76 * kGiB - roomy.table_bytes) / 2);
    EXPECT_GT(roomy.corpus.resident_max_bytes, corpus_bytes);
    EXPECT_EQ(roomy.corpus.chunk_tokens, CudaBackendOptions{}.chunk_tokens);
    expect_same_plan(roomy, backend_plan(plan, set, c));
    // A budget that holds the tables with 192 MiB beside: chunks a 48th of it, fewer tokens
    // than the default's, two of them within half of it.
    const uint64_t budget = backend_table_bytes(set, c) + 192 * kMiB;
    ASSERT_GE(budget, resident_need(set, c));
    apply_option(c, "gpu-memory", std::to_string(budget));
    plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
    EXPECT_FALSE(plan.paged());
    plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
    ASSERT_TRUE(plan.gpu_plan.has_value());
    const GpuPlan& tight = *plan.gpu_plan;
    EXPECT_EQ(tight.corpus.resident_max_bytes, 96 * kMiB);
    EXPECT_EQ(tight.corpus.chunk_tokens, 4 * kMiB);
    EXPECT_LT(tight.corpus.chunk_tokens, CudaBackendOptions{}.chunk_tokens);
    expect_same_plan(tight, backend_plan(plan, set, c));
    // The backend's tuning, as the plan takes it: a corpus larger than the most it may hold is
    // streamed in chunks, forced streaming keeps the chunks' size.
    CudaBackendOptions tuning;
    tuning.resident_corpus_max_bytes = corpus_bytes / 4;
    tuning.force_stream = true;
    tuning.chunk_tokens = set.corpus.size() / 8;
    plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
    plan_sizes(plan, c, set.train_data(c), false, tuning, scratch);
    ASSERT_TRUE(plan.gpu_plan.has_value());
    EXPECT_EQ(plan.gpu_plan->corpus.resident_max_bytes, corpus_bytes / 4);
    EXPECT_LT(plan.gpu_plan->corpus.resident_max_bytes, corpus_bytes);
    EXPECT_EQ(plan.gpu_plan->corpus.chunk_tokens, set.corpus.size() / 8);
  }
}

TEST(RunPlan, PagedCudaPlansNoResidentCorpus) {
  Config c = base_config();
  apply_option(c, "device", "cuda");
  const TrainingSet set = zipf_set(c);
  apply_option(c, "gpu-memory", std::to_string(resident_need(set, c) / 10 * 6));
  RunPlan plan = plan_device(c, set.vocab.size(), gpu(80 * kGiB), 1, false);
  plan_sizes(plan, c, set.train_data(c), false, {}, scratch);
  ASSERT_TRUE(plan.gpu_plan.has_value());
  EXPECT_TRUE(plan.gpu_plan->paged);
  EXPECT_EQ(plan.gpu_plan->table_bytes, 0u);
  EXPECT_EQ(plan.gpu_plan->corpus.resident_max_bytes, 0u);
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
