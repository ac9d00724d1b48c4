// Training over ranks: the pure parts (which rank owns a row and trains a block, which rows a
// span needs) always; the runs themselves with `mpirun -np 2` on the CPU backend when the build
// has MPI (PAGEDW2V_DISTRIBUTED) and mpirun is on PATH, else those tests are skipped and say why;
// with the CUDA backend too when the machine has a GPU (GpuRanks, skipped without one).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "dist/needed_rows.hpp"
#include "dist/owned_rows.hpp"
#include "dist/ranks.hpp"
#include "dist/replica_span.hpp"
#include "dist/row_owners.hpp"
#include "dist/working_set.hpp"
#include "io/npy.hpp"
#include "model/model.hpp"
#include "model/negative_pool.hpp"
#include "model/sampler.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#ifdef PAGEDW2V_HAVE_CUDA
#include "cuda_test_util.hpp"
#endif

namespace pagedw2v {
namespace {

using testing_util::TempDir;

// ---- the launch ----------------------------------------------------------------------------

/// Sets (or with null unsets) an environment variable for its life, then puts back what was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(Launch, AProcessWithoutRanksAsksForFourGpuQueuesUnlessTheUserChose) {
  const char* kQueues = "CUDA_DEVICE_MAX_CONNECTIONS";
  // Nothing here may look like a launch with ranks.
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMI_SIZE", nullptr), c("PMIX_SIZE", nullptr),
      d("MPI_LOCALNRANKS", nullptr);
  {
    ScopedEnv q(kQueues, nullptr);
    dist::limit_gpu_queues();
    ASSERT_NE(std::getenv(kQueues), nullptr);
    EXPECT_STREQ(std::getenv(kQueues), "4");
  }
  {
    ScopedEnv q(kQueues, "8");
    dist::limit_gpu_queues();
    EXPECT_STREQ(std::getenv(kQueues), "8");
  }
  {
    // Under mpirun NCCL's streams share the queues: the driver's default stays.
    ScopedEnv q(kQueues, nullptr), ranks("OMPI_COMM_WORLD_SIZE", "2");
    dist::limit_gpu_queues();
    EXPECT_EQ(std::getenv(kQueues), nullptr);
  }
}

// ---- who owns what -------------------------------------------------------------------------

TEST(RowOwners, EveryRowHasOneOwnerAndTheCountsAgree) {
  for (const uint32_t ranks : {1u, 2u, 3u, 8u}) {
    for (const uint64_t rows : {0ull, 1ull, 5ull, 64ull, 1001ull}) {
      const dist::RowOwners owners{ranks};
      std::vector<uint64_t> seen(ranks, 0);
      for (uint64_t id = 0; id < rows; ++id) ++seen[owners.owner(id)];
      for (uint32_t r = 0; r < ranks; ++r) {
        EXPECT_EQ(seen[r], owners.owned(rows, r)) << rows << " rows, rank " << r << "/" << ranks;
      }
    }
  }
}

TEST(ShareOfSpan, TheRanksCutASpanIntoContiguousRunsThatCoverIt) {
  std::mt19937 rng(testing_util::fresh_seed());
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t first = rng() % 1000, length = rng() % 40;
    const uint32_t ranks = 1 + rng() % 9;
    uint64_t at = first;
    for (uint32_t r = 0; r < ranks; ++r) {
      const dist::BlockRange s = dist::share_of_span(first, first + length, r, ranks);
      EXPECT_EQ(s.first, at);
      EXPECT_LE(s.first, s.last);
      EXPECT_LE(s.last - s.first, length / ranks + 1);
      at = s.last;
    }
    EXPECT_EQ(at, first + length);
  }
}

// ---- the rows a span needs -----------------------------------------------------------------

struct SmallProblem {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  KeepTable keep;
  NoiseTable noise;
  TrainData data;
  Model model;

  SmallProblem(ModelKind kind, uint32_t pool, uint64_t seed) {
    const uint32_t vocab = 500;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::vector<uint64_t> counts(vocab);
    for (uint32_t i = 0; i < vocab; ++i) counts[i] = 20000 / (i + 1) + 1;
    std::discrete_distribution<uint32_t> word(counts.begin(), counts.end());
    std::uniform_int_distribution<uint32_t> len(1, 25);  // lone tokens too: they train nothing
    corpus.sentence_starts = {0};
    for (int s = 0; s < 200; ++s) {
      const uint32_t n = len(rng);
      for (uint32_t k = 0; k < n; ++k) corpus.tokens.push_back(word(rng));
      corpus.sentence_starts.push_back(corpus.tokens.size());
    }
    for (uint64_t s = 0; s < corpus.sentences(); s += 7) blocks.push_back(s);
    blocks.push_back(corpus.sentences());
    uint64_t total = 0;
    for (const uint64_t c : counts) total += c;
    keep = keep_probabilities(counts, total, 1e-3);
    noise = NoiseTable(unigram_weights(counts));
    data.corpus = &corpus;
    data.blocks = &blocks;
    data.keep = &keep;
    data.noise = &noise;
    TrainParams& p = data.params;
    p.model = kind;
    p.dim = 8;
    p.window = 3;
    p.negative = 5;
    p.epochs = 2;
    p.seed = seed;
    p.words_per_epoch = corpus.size();
    p.negative_pool = pool;
    p.pool_blocks = 2;
    data.optimizer = default_optimizer_params(OptimizerKind::kSgd);
    model = Model{HostTable(vocab, p.dim, "in", ""), HostTable(vocab, p.dim, "out", "")};
    init_model(model, seed);
  }
};

class NeededRowsTest : public ::testing::TestWithParam<std::tuple<ModelKind, uint32_t>> {};

// The rows found before training are exactly those the CPU backend's examples use: the
// centres (as context rows and as positive targets) and the negatives; with a pool, the whole
// pool of the blocks' super-batches stands for the negatives.
TEST_P(NeededRowsTest, HoldsExactlyTheRowsTheExamplesTouch) {
  const auto [kind, pool] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  SmallProblem p(kind, pool, seed);
  dist::NeededRows need(p.model.input.rows());
  const uint64_t nblocks = p.blocks.size() - 1;
  for (const uint32_t epoch : {0u, 1u}) {
    for (const auto& [first, last] : {std::pair<uint64_t, uint64_t>{0, 3}, {3, 4}, {5, nblocks}}) {
      need.collect(p.data, epoch, first, last);
      std::set<uint32_t> centres, targets;
      for (uint64_t b = first; b < last; ++b) {
        for (const auto& t : detail::block_example_targets(p.data, p.model, epoch, b)) {
          centres.insert(t[0]);
          targets.insert(t.begin(), t.end());
        }
      }
      if (pool > 0) {
        for (uint64_t b = first; b < last; ++b) {
          const auto members = draw_pool(seed, epoch, super_batch_of(b, 2), p.noise, pool);
          targets.insert(members.begin(), members.end());
        }
      }
      const std::set<uint32_t> input(need.input().begin(), need.input().end());
      const std::set<uint32_t> output(need.output().begin(), need.output().end());
      EXPECT_EQ(input.size(), need.input().size()) << "an input row listed twice";
      EXPECT_EQ(output.size(), need.output().size()) << "an output row listed twice";
      EXPECT_FALSE(centres.empty());
      EXPECT_EQ(input, centres) << "epoch " << epoch << ", blocks " << first << "-" << last;
      EXPECT_EQ(output, targets) << "epoch " << epoch << ", blocks " << first << "-" << last;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, NeededRowsTest,
                         ::testing::Values(std::make_tuple(ModelKind::kSkipGram, 0u),
                                           std::make_tuple(ModelKind::kCbow, 0u),
                                           std::make_tuple(ModelKind::kSkipGram, 64u),
                                           std::make_tuple(ModelKind::kCbow, 64u)));

// ---- the rows a rank holds -----------------------------------------------------------------

/// Whether rows `a` and `b` of two tables hold the same bits.
bool same_row(const HostTable& a, uint64_t ra, const HostTable& b, uint64_t rb) {
  return std::memcmp(a.row(ra), b.row(rb), sizeof(float) * a.dim()) == 0;
}

// A rank's fresh compact tables hold, at row k, the values the whole tables give word
// rank + k·N, with zeroed state tables.
TEST(OwnedRows, FreshCompactRowsAreTheWholeTablesRowsOfTheOwner) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const uint64_t words = 1001;
  const uint32_t dim = 12;
  for (const uint32_t ranks : {2u, 3u, 8u}) {
    const dist::RowOwners owners{ranks};
    for (uint32_t rank = 0; rank < ranks; ++rank) {
      Model whole = allocate_model(words, dim, OptimizerKind::kSgd, false, "");
      init_model(whole, seed, 2);
      const Model fresh =
          dist::allocate_owned_rows(words, dim, OptimizerKind::kAdam, owners, rank, seed, 3, "");
      ASSERT_EQ(fresh.input.rows(), owners.owned(words, rank));
      ASSERT_EQ(fresh.input_state.size(), 2u);
      ASSERT_EQ(fresh.output_state.size(), 2u);
      for (uint64_t k = 0; k < fresh.input.rows(); ++k) {
        ASSERT_TRUE(same_row(fresh.input, k, whole.input, rank + k * ranks)) << k;
      }
      EXPECT_TRUE(fresh.output.all_zero());
      for (const HostTable& t : fresh.input_state) EXPECT_TRUE(t.all_zero());
      for (const HostTable& t : fresh.output_state) EXPECT_TRUE(t.all_zero());
    }
  }
}

// A rank resuming reads its rows alone from a checkpoint of the whole tables (state tables
// too): row k of each of its tables is row rank + k·N of the checkpoint's.
TEST(OwnedRows, ARankReadsItsRowsAloneFromACheckpoint) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  const uint32_t words = 1001, dim = 12;
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = dim;
  apply_option(c, "optimizer", "adam");
  std::vector<std::string> names;
  std::vector<uint64_t> counts;
  for (uint32_t i = 0; i < words; ++i) {
    names.push_back("w" + std::to_string(i));
    counts.push_back(words - i);
  }
  const Vocab vocab = Vocab::from_words(names, counts);
  Model whole = allocate_model(words, dim, OptimizerKind::kAdam, false, "");
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<HostTable*> tables = {&whole.input, &whole.output};
  for (HostTable& t : whole.input_state) tables.push_back(&t);
  for (HostTable& t : whole.output_state) tables.push_back(&t);
  ASSERT_EQ(tables.size(), 6u);
  for (HostTable* t : tables) {
    for (uint64_t i = 0; i < uint64_t{words} * dim; ++i) t->data()[i] = u(rng);
  }
  const std::string path = dir.file("c.h5");
  save_checkpoint(path, c, vocab, whole, TrainPosition{0, 1, 10},
                  CorpusFingerprint{uint64_t{words} * words, 100, 7}, 0.01f);
  for (const uint32_t ranks : {2u, 3u, 8u}) {
    for (uint32_t rank = 0; rank < ranks; ++rank) {
      const Checkpoint ck = load_checkpoint(path, {}, RowSelection{rank, ranks});
      std::vector<const HostTable*> mine = {&ck.model.input, &ck.model.output};
      for (const HostTable& t : ck.model.input_state) mine.push_back(&t);
      for (const HostTable& t : ck.model.output_state) mine.push_back(&t);
      ASSERT_EQ(mine.size(), tables.size());
      EXPECT_EQ(ck.vocab.size(), words);
      for (size_t t = 0; t < mine.size(); ++t) {
        ASSERT_EQ(mine[t]->rows(), dist::RowOwners{ranks}.owned(words, rank));
        for (uint64_t k = 0; k < mine[t]->rows(); ++k) {
          ASSERT_TRUE(same_row(*mine[t], k, *tables[t], rank + k * ranks))
              << ranks << " ranks, rank " << rank << ", table " << t << ", row " << k;
        }
      }
    }
  }
}

class WorkingSetTest : public ::testing::TestWithParam<std::tuple<ModelKind, uint32_t>> {};

/// The rows rank `rank` of `ranks` holds of `whole`, compact (rank 0: `whole` itself is used).
Model owned_copy(const Model& whole, uint32_t ranks, uint32_t rank) {
  const uint64_t n = dist::RowOwners{ranks}.owned(whole.input.rows(), rank);
  Model m{HostTable(n, whole.input.dim(), "in", ""), HostTable(n, whole.input.dim(), "out", "")};
  for (uint64_t k = 0; k < n; ++k) {
    std::copy_n(whole.input.row(rank + k * ranks), whole.input.dim(), m.input.row(k));
    std::copy_n(whole.output.row(rank + k * ranks), whole.input.dim(), m.output.row(k));
  }
  return m;
}

// Each span's rows get a slot: a row the rank holds keeps its row of the owned tables (every row
// on rank 0, whose tables are whole), any other gets the next row of the copy tables; the
// previous span's rows lose theirs; the copy tables grow to the largest span's copies.
TEST_P(WorkingSetTest, GivesEverySpanRowItsPlace) {
  const auto [kind, pool] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  SmallProblem p(kind, pool, seed);
  const uint64_t words = p.model.input.rows();
  const uint32_t ranks = 3;
  const uint64_t nblocks = p.blocks.size() - 1;
  for (const uint32_t rank : {0u, 1u, 2u}) {
    Model mine = owned_copy(p.model, ranks, rank);
    const dist::OwnedRows owned{rank == 0 ? &p.model : &mine, rank == 0 ? 1u : ranks};
    dist::NeededRows need(words);
    dist::WorkingSet work(owned, dist::RowOwners{ranks}, rank, words, p.data.params.dim);
    EXPECT_EQ(work.capacity(), 0u);
    for (const auto& [first, last] : {std::pair<uint64_t, uint64_t>{0, 1}, {1, nblocks}, {3, 4}}) {
      need.collect(p.data, 0, first, last);
      work.assign(need);
      std::set<uint32_t> rows(need.output().begin(), need.output().end());
      rows.insert(need.input().begin(), need.input().end());
      ASSERT_EQ(work.words().size(), rows.size());
      std::vector<uint32_t> copies;
      for (uint32_t id = 0; id < words; ++id) {
        if (rows.count(id) == 0) {
          EXPECT_EQ(work.slot(id), dist::WorkingSet::kNoSlot) << id;
        } else if (rank == 0 || id % ranks == rank) {
          EXPECT_FALSE(work.is_copy(id)) << id;
          EXPECT_EQ(work.input(id), owned.input(id)) << id;
          EXPECT_EQ(work.output(id), owned.output(id)) << id;
        } else {
          EXPECT_TRUE(work.is_copy(id)) << id;
          copies.push_back(id);
        }
      }
      EXPECT_EQ(std::set<uint32_t>(work.copies().begin(), work.copies().end()),
                std::set<uint32_t>(copies.begin(), copies.end()));
      EXPECT_EQ(work.copies().size(), copies.size());
      EXPECT_GE(work.capacity(), copies.size());
      EXPECT_LE(work.capacity(), words - mine.input.rows());
      if (rank == 0) {
        EXPECT_TRUE(copies.empty());
      }
      for (size_t k = 0; k < work.copies().size(); ++k) {
        const uint32_t id = work.copies()[k];
        EXPECT_EQ(work.input(id), work.rows().copy_input + k * p.data.params.dim);
        EXPECT_EQ(work.output(id), work.rows().copy_output + k * p.data.params.dim);
      }
    }
  }
}

// The CPU backend trained on a rank's rows (its own rows in place, the others' as copies)
// changes every row exactly as it changes the whole tables: the same bits, sgd and the batched
// gradients alike.
TEST_P(WorkingSetTest, TrainingARanksRowsGivesTheBitsOfTrainingTheWholeTables) {
  const auto [kind, pool] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  SmallProblem whole(kind, pool, seed), split(kind, pool, seed);
  const uint64_t words = whole.model.input.rows();
  const uint32_t dim = whole.data.params.dim;
  // Output rows that are not zero, so that every row's update depends on its values.
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (uint64_t i = 0; i < words * dim; ++i) {
    whole.model.output.data()[i] = split.model.output.data()[i] = u(rng);
  }
  const uint32_t ranks = 3, rank = 2;
  Model mine = owned_copy(split.model, ranks, rank);
  const dist::OwnedRows owned{&mine, ranks};
  dist::NeededRows need(words);
  dist::WorkingSet work(owned, dist::RowOwners{ranks}, rank, words, dim);
  auto on_whole = make_cpu_backend(whole.model, whole.data, 1);
  auto on_rank = make_cpu_backend(mine, split.data, 1, &work.rows());
  // Before a span: the rank's rows and its copies from split.model; after it, back there.
  auto fill = [&] {
    for (uint64_t k = 0; k < mine.input.rows(); ++k) {
      std::copy_n(split.model.input.row(rank + k * ranks), dim, mine.input.row(k));
      std::copy_n(split.model.output.row(rank + k * ranks), dim, mine.output.row(k));
    }
    for (const uint32_t id : work.copies()) {
      std::copy_n(split.model.input.row(id), dim, work.input(id));
      std::copy_n(split.model.output.row(id), dim, work.output(id));
    }
  };
  auto drain = [&] {
    for (const uint32_t id : work.words()) {
      std::copy_n(work.input(id), dim, split.model.input.row(id));
      std::copy_n(work.output(id), dim, split.model.output.row(id));
    }
  };
  const uint64_t nblocks = whole.blocks.size() - 1;
  for (const uint32_t epoch : {0u, 1u}) {
    for (const auto& [first, last] : {std::pair<uint64_t, uint64_t>{0, 2}, {2, 3}, {3, nblocks}}) {
      const SpanStats a = on_whole->train(epoch, first, last);
      need.collect(split.data, epoch, first, last);
      work.assign(need);
      fill();
      const SpanStats b = on_rank->train(epoch, first, last);
      drain();
      EXPECT_EQ(a.loss, b.loss);
      EXPECT_EQ(a.loss_terms, b.loss_terms);
      EXPECT_GT(a.loss_terms, 0u);
      for (uint64_t id = 0; id < words; ++id) {
        ASSERT_TRUE(same_row(whole.model.input, id, split.model.input, id)) << "input " << id;
        ASSERT_TRUE(same_row(whole.model.output, id, split.model.output, id)) << "output " << id;
      }
    }
  }

  // The batched pass's gradients, per row touched, are the dense pass's rows.
  need.collect(split.data, 1, 0, nblocks);
  work.assign(need);
  fill();
  std::vector<float> gin(words * dim, 0.0f), gout(words * dim, 0.0f);
  std::vector<uint8_t> tin(words, 0), tout(words, 0);
  SpanStats sa, sb;
  detail::accumulate_gradients_cpu(whole.data, whole.model, 1, 0, 0, whole.corpus.sentences(),
                                   gin.data(), gout.data(), tin.data(), tout.data(), &sa);
  detail::RowGradients g;
  detail::accumulate_row_gradients_cpu(split.data, work.rows(), 1, 0, 0, split.corpus.sentences(),
                                       &g, &sb);
  EXPECT_EQ(sa.loss, sb.loss);
  auto check = [&](const std::vector<uint32_t>& ids, const std::vector<float>& grads,
                   const std::vector<float>& dense, const std::vector<uint8_t>& touched) {
    ASSERT_EQ(grads.size(), ids.size() * dim);
    EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), ids.size());
    size_t count = 0;
    for (const uint8_t t : touched) count += t;
    EXPECT_EQ(ids.size(), count);
    for (size_t k = 0; k < ids.size(); ++k) {
      EXPECT_EQ(touched[ids[k]], 1) << ids[k];
      EXPECT_EQ(
          std::memcmp(dense.data() + ids[k] * dim, grads.data() + k * dim, sizeof(float) * dim), 0)
          << ids[k];
    }
  };
  check(g.input_ids, g.input, gin, tin);
  check(g.output_ids, g.output, gout, tout);
}

INSTANTIATE_TEST_SUITE_P(Models, WorkingSetTest,
                         ::testing::Values(std::make_tuple(ModelKind::kSkipGram, 0u),
                                           std::make_tuple(ModelKind::kCbow, 0u),
                                           std::make_tuple(ModelKind::kSkipGram, 64u),
                                           std::make_tuple(ModelKind::kCbow, 64u)));

// ---- runs over two ranks -------------------------------------------------------------------

/// Why the runs over ranks cannot be tested here (empty: they can).
std::string why_no_ranks() {
#ifndef PAGEDW2V_HAVE_MPI
  return "built without MPI (PAGEDW2V_DISTRIBUTED=OFF, or libopenmpi-dev not installed)";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) return "mpirun is not on PATH";
  return "";
#endif
}

/// `mpirun -np RANKS pagedw2v ARGS…` (or pagedw2v alone with ranks 0), started in the
/// background; output to LOG. With `per_rank` given (and RANKS its size), each rank runs with its
/// own arguments instead (`mpirun -np 1 pagedw2v ARGS0 : -np 1 pagedw2v ARGS1 …`).
pid_t start(uint32_t ranks, const std::vector<std::string>& args, const std::string& log,
            const std::vector<std::vector<std::string>>& per_rank = {}) {
  std::vector<std::string> argv;
  const char* asan_before = std::getenv("ASAN_OPTIONS");
  const std::string asan_saved = asan_before != nullptr ? asan_before : "";
  const bool had_asan = asan_before != nullptr;
  if (ranks > 0) {
    // Two ranks on a machine of fewer cores, as root in containers; --bind-to none leaves the
    // cores to the kernel (the tests share the machine with other tests).
    argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none"};
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);  // containers lack CMA
    // A sanitized build: OpenMPI unloads its components before the leak check runs, so what
    // they leave allocated cannot be told from ours. The ranks run without the leak check (every
    // other check stays); the one-process runs of the suite keep it.
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string given = asan != nullptr ? asan : "";
    if (given.find("detect_leaks=0") == std::string::npos) {
      ::setenv("ASAN_OPTIONS", ((given.empty() ? "" : given + ":") + "detect_leaks=0").c_str(), 1);
    }
  }
  if (per_rank.empty()) {
    argv.push_back(PAGEDW2V_BINARY);
    argv.insert(argv.end(), args.begin(), args.end());
  } else {
    argv.resize(1);  // mpirun: each rank's own "-np 1 program arguments", apart by ":"
    argv.insert(argv.end(), {"--oversubscribe", "--bind-to", "none"});
    for (size_t r = 0; r < per_rank.size(); ++r) {
      if (r > 0) argv.push_back(":");
      argv.insert(argv.end(), {"-np", "1", PAGEDW2V_BINARY});
      argv.insert(argv.end(), per_rank[r].begin(), per_rank[r].end());
    }
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A process group of its own: finish() can end the job and every rank with one kill.
    ::setpgid(0, 0);
    std::vector<char*> ptrs;
    for (std::string& a : argv) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    if (!std::freopen(log.c_str(), "w", stdout) || !std::freopen(log.c_str(), "a", stderr)) {
      ::_exit(126);
    }
    ::setvbuf(stdout, nullptr, _IONBF, 0);
    ::execvp(ptrs[0], ptrs.data());
    ::_exit(127);
  }
  if (had_asan) {
    ::setenv("ASAN_OPTIONS", asan_saved.c_str(), 1);
  } else {
    ::unsetenv("ASAN_OPTIONS");
  }
  return pid;
}

/// Seconds a job (mpirun and its ranks, or one process) may run before it is taken for hung: far
/// above what any run here takes, under the sanitizers too, and below the tests' ctest timeout
/// (tests/CMakeLists.txt), so that a hung rank fails the test with its log instead of hanging it.
constexpr int kJobLimitSeconds = 240;

/// The exit status of job `pid` (128 + the signal when one ended it). A job past
/// kJobLimitSeconds gets SIGTERM (mpirun passes it on to its ranks), then SIGKILL to its whole
/// process group 10 s later; its status is then 124, as timeout(1) gives.
int finish(pid_t pid) {
  int status = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto past = [&](int seconds) {
    return std::chrono::steady_clock::now() - started > std::chrono::seconds(seconds);
  };
  bool terminated = false;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return 127;
    if (!terminated && past(kJobLimitSeconds)) {
      ADD_FAILURE() << "the job ran past " << kJobLimitSeconds << " s: stopped";
      ::kill(pid, SIGTERM);
      terminated = true;
    } else if (terminated && past(kJobLimitSeconds + 10)) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (terminated) return 124;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(uint32_t ranks, const std::vector<std::string>& args, const std::string& log) {
  return finish(start(ranks, args, log));
}

/// One job of as many ranks as `per_rank` has argument lists, each rank with its own.
int run_each(const std::vector<std::vector<std::string>>& per_rank, const std::string& log) {
  return finish(start(static_cast<uint32_t>(per_rank.size()), {}, log, per_rank));
}

/// A corpus with structure to learn: each sentence draws its words from one of 20 topics of
/// 40 words (Zipf within the topic) and a few from 30 common words.
void write_topic_corpus(const std::string& path, uint32_t sentences, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream out(path);
  std::vector<double> zipf(40);
  for (size_t i = 0; i < zipf.size(); ++i) zipf[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<int> in_topic(zipf.begin(), zipf.end());
  for (uint32_t s = 0; s < sentences; ++s) {
    const int topic = static_cast<int>(rng() % 20);
    const int n = 8 + static_cast<int>(rng() % 20);
    for (int k = 0; k < n; ++k) {
      if (rng() % 5 == 0) {
        out << "common" << rng() % 30;
      } else {
        out << "t" << topic << "w" << in_topic(rng);
      }
      out << (k + 1 < n ? ' ' : '\n');
    }
  }
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(testing_util::read_file(path));
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class TwoRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = why_no_ranks();
    if (!why.empty()) PAGEDW2V_SKIP_WITHOUT(why);
    corpus_ = dir_.file("corpus.txt");
    write_topic_corpus(corpus_, 5000, 11);
  }

  /// `args` with the tables replicated over the ranks: a run of a few epochs of this corpus is
  /// too short for --rank-tables auto to replicate them (dist/replica_span.hpp).
  static std::vector<std::string> replicated(std::vector<std::string> args) {
    args.insert(args.end(), {"--rank-tables", "replicated"});
    return args;
  }

  std::vector<std::string> train_args(const std::string& out, uint32_t epochs) const {
    return {"train",     "--corpus", corpus_,
            "--output",  out,        "--dim",
            "24",        "--epochs", std::to_string(epochs),
            "--threads", "1",        "--min-count",
            "2",         "--seed",   "3",
            "--device",  "cpu"};
  }

  TempDir dir_;
  std::string corpus_;
};

TEST_F(TwoRanks, GiveTheVocabularyFilesAndLossOfOneRank) {
  const std::string one = dir_.file("one"), two = dir_.file("two");
  ASSERT_EQ(run(0, train_args(one, 3), dir_.file("one.log")), 0)
      << testing_util::read_file(dir_.file("one.log"));
  ASSERT_EQ(run(2, replicated(train_args(two, 3)), dir_.file("two.log")), 0)
      << testing_util::read_file(dir_.file("two.log"));
  const std::string log = testing_util::read_file(dir_.file("two.log"));
  EXPECT_NE(log.find("2 ranks"), std::string::npos) << log;
  // Rank 0 alone reports: one settings line, one summary.
  EXPECT_EQ(log.find("settings:"), log.rfind("settings:")) << log;

  EXPECT_EQ(names_in(one), names_in(two));
  EXPECT_EQ(names_in(one + "/checkpoints"), names_in(two + "/checkpoints"));
  EXPECT_EQ(testing_util::read_file(one + "/vocab.tsv"),
            testing_util::read_file(two + "/vocab.tsv"));
  // The same formats: the .npy header, the text header, the binary's size.
  for (const char* f : {"vectors.npy", "vectors.bin", "embeddings.h5"}) {
    EXPECT_TRUE(std::ifstream(two + "/" + f).good()) << f;
  }
  const std::string npy1 = testing_util::read_file(one + "/vectors.npy");
  const std::string npy2 = testing_util::read_file(two + "/vectors.npy");
  EXPECT_EQ(npy1.size(), npy2.size());
  EXPECT_EQ(npy1.substr(0, 128), npy2.substr(0, 128));
  EXPECT_NE(npy1, npy2) << "two ranks train differently from one";
  const std::string txt = testing_util::read_file(two + "/vectors.txt");
  EXPECT_EQ(txt.substr(0, txt.find('\n')),
            testing_util::read_file(one + "/vectors.txt").substr(0, txt.find('\n')));
  EXPECT_EQ(testing_util::read_file(one + "/vectors.bin").size(),
            testing_util::read_file(two + "/vectors.bin").size());

  const nlohmann::json r1 = read_json(one + "/run.json"), r2 = read_json(two + "/run.json");
  EXPECT_EQ(r1["words_trained"], r2["words_trained"]);
  const double l1 = r1["loss_per_epoch"].back(), l2 = r2["loss_per_epoch"].back();
  EXPECT_TRUE(std::isfinite(l2));
  EXPECT_NEAR(l2, l1, 0.05 * l1) << "one rank " << l1 << ", two ranks " << l2;
  // Training happened: the loss of the last epoch is well below the first's.
  EXPECT_LT(l2, 0.9 * static_cast<double>(r2["loss_per_epoch"].front()));
}

// Which CPU runs replicate their tables, and their spans (dist/replica_backend.hpp): sgd, at
// most 131,072 words, and a run of at least 96 spans.
TEST(Replicas, SmallVocabulariesWithSgdAndSpansOfTwoWordsARow) {
  EXPECT_EQ(dist::replica_span_words(830, 1), 8192u);       // the tests' corpus: the least
  EXPECT_EQ(dist::replica_span_words(33755, 1), 65536u);    // mix5m: the most
  EXPECT_EQ(dist::replica_span_words(20000, 1), 36864u);    // whole blocks of two words a row
  EXPECT_EQ(dist::replica_span_words(33755, 32), 131072u);  // a block for every thread
  const KeepTable small({}, 131072), large({}, 131073);
  TrainData data;
  data.keep = &small;
  data.params.epochs = 5;
  data.params.words_per_epoch = 96 * 2 * 65536 / 5;  // 96 spans of two ranks
  EXPECT_EQ(dist::replica_run_spans(data, 2, 65536), 96u);
  EXPECT_TRUE(dist::trains_on_replicas(data, 2, 1));
  data.optimizer.kind = OptimizerKind::kAdam;  // the owners step it (owner_steps.hpp)
  EXPECT_FALSE(dist::trains_on_replicas(data, 2, 1));
  data.optimizer.kind = OptimizerKind::kSgd;
  data.keep = &large;  // sharded: no rank holds the whole tables
  EXPECT_FALSE(dist::trains_on_replicas(data, 2, 1));
  data.keep = &small;
  EXPECT_FALSE(dist::trains_on_replicas(data, 3, 1));   // 64 spans of three ranks: too few sums
  EXPECT_FALSE(dist::trains_on_replicas(data, 2, 32));  // 48 spans of 32 threads' blocks
  data.params.epochs = 4;
  EXPECT_FALSE(dist::trains_on_replicas(data, 2, 1));  // 77 spans
  // mix5m (33,755 words, 5,115,417 a pass), two ranks of one thread: five epochs replicate
  // (196 spans), one does not (40).
  const KeepTable mix5m({}, 33755);
  data.keep = &mix5m;
  data.params.words_per_epoch = 5115417;
  data.params.epochs = 5;
  EXPECT_EQ(dist::replica_run_spans(data, 2, dist::replica_span_words(33755, 1)), 196u);
  EXPECT_TRUE(dist::trains_on_replicas(data, 2, 1));
  data.params.epochs = 1;
  EXPECT_FALSE(dist::trains_on_replicas(data, 2, 1));
}

// GPU ranks replicate a small vocabulary by default when their launches train it (skip-gram,
// sgd, no pool) over a run of at least 96 spans, and whenever asked; spans of four words a row,
// from 8,192 to 131,072 words.
TEST(Replicas, GpuRanksReplicateSkipGramSgdWithoutAPool) {
  EXPECT_EQ(dist::gpu_replica_span_words(830), 8192u);
  EXPECT_EQ(dist::gpu_replica_span_words(20000), 77824u);
  EXPECT_EQ(dist::gpu_replica_span_words(33755), 131072u);
  const KeepTable small({}, 131072), large({}, 131073);
  TrainData data;
  data.keep = &small;
  data.params.model = ModelKind::kSkipGram;
  data.params.epochs = 5;
  data.params.words_per_epoch = 20869964;  // mix5m × 4, 5 epochs: 399 spans of two GPU ranks
  EXPECT_TRUE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kSharded, 2));
  data.keep = &large;
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  EXPECT_TRUE(dist::gpu_ranks_replicate(data, RankTables::kReplicated, 2));
  data.keep = &small;
  data.params.negative_pool = 1024;  // a pool's rows go through host memory
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  data.params.negative_pool = 0;
  data.params.model = ModelKind::kCbow;
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  data.params.model = ModelKind::kSkipGram;
  data.optimizer.kind = OptimizerKind::kAdam;
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  data.optimizer.kind = OptimizerKind::kSgd;
  EXPECT_TRUE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  EXPECT_TRUE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 4));    // 200 spans of 4 ranks
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 16));  // 50 of 16
  data.params.epochs = 1;  // 80 spans: too few sums, unless asked
  EXPECT_FALSE(dist::gpu_ranks_replicate(data, RankTables::kAuto, 2));
  EXPECT_TRUE(dist::gpu_ranks_replicate(data, RankTables::kReplicated, 2));
}

// A small vocabulary trains on whole copies on every rank (dist/replica_backend.hpp), whose
// changes the ranks sum. The corpus makes each rank's share of every span one of two disjoint
// vocabularies: sentences of 16 words, blocks of 256 sentences, spans of 4 blocks (8,192 words a
// rank), rank 0 taking the first 2 blocks of a span and rank 1 the last 2. Rank 1 never trains a
// sentence of `a` words, so the `a` words it owns (odd ids) learn only through the sums, and a
// rank that kept its own copy would export them as initialised: every word must end up nearer
// its own vocabulary than the other.
TEST_F(TwoRanks, ASmallVocabularyTrainsOnCopiesWhoseChangesTheRanksSum) {
  const std::string corpus = dir_.file("halves.txt");
  {
    std::ofstream out(corpus);
    std::mt19937 rng(5);
    for (int round = 0; round < 12; ++round) {
      for (const char* group : {"a", "b"}) {
        for (int sentence = 0; sentence < 512; ++sentence) {
          for (int k = 0; k < 16; ++k) {
            out << group << rng() % 24 << (k + 1 < 16 ? ' ' : '\n');
          }
        }
      }
    }
  }
  const std::string two = dir_.file("two");
  ASSERT_EQ(run(2, {"train", "--corpus", corpus, "--output",      two,         "--dim",
                    "16",    "--epochs", "2",    "--threads",     "1",         "--min-count",
                    "1",     "--sample", "0",    "--seed",        "3",         "--device",
                    "cpu",   "--format", "npy",  "--rank-tables", "replicated"},
                dir_.file("two.log")),
            0)
      << testing_util::read_file(dir_.file("two.log"));
  const std::string log = testing_util::read_file(dir_.file("two.log"));
  EXPECT_NE(log.find("replicated tables"), std::string::npos) << log;
  const NpyMatrix v = read_npy(two + "/vectors.npy");
  std::vector<char> group;
  {
    std::istringstream vocab(testing_util::read_file(two + "/vocab.tsv"));
    std::string line;
    while (std::getline(vocab, line)) {
      if (!line.empty() && (line[0] == 'a' || line[0] == 'b')) group.push_back(line[0]);
    }
  }
  ASSERT_EQ(group.size(), 48u);
  ASSERT_EQ(v.rows, 48u);
  auto cosine = [&](uint64_t i, uint64_t j) {
    double dot = 0, ni = 0, nj = 0;
    for (uint32_t d = 0; d < v.cols; ++d) {
      const double x = v.data[i * v.cols + d], y = v.data[j * v.cols + d];
      dot += x * y;
      ni += x * x;
      nj += y * y;
    }
    return dot / std::sqrt(ni * nj);
  };
  for (uint64_t i = 0; i < v.rows; ++i) {
    double same = 0, other = 0;
    int n_same = 0, n_other = 0;
    for (uint64_t j = 0; j < v.rows; ++j) {
      if (j == i) continue;
      (group[j] == group[i] ? same : other) += cosine(i, j);
      (group[j] == group[i] ? n_same : n_other) += 1;
    }
    same /= n_same;
    other /= n_other;
    EXPECT_GT(same, other + 0.2) << "word " << i << " (" << group[i] << ", owned by rank " << i % 2
                                 << "): mean cosine " << same << " to its vocabulary, " << other
                                 << " to the other";
  }
}

// --rank-tables sharded keeps a small vocabulary sharded (dist/sharded_backend.hpp): each rank
// holds its rows and copies the others' for a span; a deterministic run resumes to its bits.
TEST_F(TwoRanks, ShardedTablesOnRequestTrainAndResumeExactly) {
  const std::string full = dir_.file("sfull"), resumed = dir_.file("sresumed");
  std::vector<std::string> args = train_args(full, 2);
  args.insert(args.end(), {"--rank-tables", "sharded"});
  ASSERT_EQ(run(2, args, dir_.file("sfull.log")), 0)
      << testing_util::read_file(dir_.file("sfull.log"));
  const std::string log = testing_util::read_file(dir_.file("sfull.log"));
  EXPECT_NE(log.find("2 ranks (rank r owns rows id % 2 == r)"), std::string::npos) << log;
  // Two epochs of this corpus are 11 spans of 2 × 8,192 words: auto would shard them too.
  EXPECT_NE(log.find("the run's 11 spans are too few for replicated tables (96;"),
            std::string::npos)
      << log;
  const nlohmann::json r = read_json(full + "/run.json");
  EXPECT_GT(static_cast<uint64_t>(r["ranks"][1]["working_rows"]), 0u) << r.dump();
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", full + "/checkpoints/epoch-1.h5",
                 "--threads", "1"},
                dir_.file("sresumed.log")),
            0)
      << testing_util::read_file(dir_.file("sresumed.log"));
  // The choice is the checkpoint's unless given again.
  EXPECT_NE(testing_util::read_file(dir_.file("sresumed.log")).find("rank r owns rows"),
            std::string::npos);
  const std::string a = testing_util::read_file(full + "/vectors.npy");
  ASSERT_GT(a.size(), 128u);
  EXPECT_TRUE(a == testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

TEST_F(TwoRanks, ResumeFromAGatheredCheckpointIsExact) {
  const std::string full = dir_.file("full"), resumed = dir_.file("resumed");
  ASSERT_EQ(run(2, replicated(train_args(full, 2)), dir_.file("full.log")), 0)
      << testing_util::read_file(dir_.file("full.log"));
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", full + "/checkpoints/epoch-1.h5",
                 "--threads", "1"},
                dir_.file("resumed.log")),
            0)
      << testing_util::read_file(dir_.file("resumed.log"));
  const std::string a = testing_util::read_file(full + "/vectors.npy");
  ASSERT_GT(a.size(), 128u);
  EXPECT_TRUE(a == testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

// Adam over ranks: the owners apply the steps with their state, which the gathered checkpoint
// holds: the loss stays near one process's and a resumed run repeats the run that did not stop.
TEST_F(TwoRanks, AdamStepsAtTheOwnersTrainAndResumeExactly) {
  std::vector<std::string> one_args = train_args(dir_.file("one"), 2);
  std::vector<std::string> two_args = train_args(dir_.file("two"), 2);
  for (auto* args : {&one_args, &two_args}) args->insert(args->end(), {"--optimizer", "adam"});
  ASSERT_EQ(run(0, one_args, dir_.file("one.log")), 0)
      << testing_util::read_file(dir_.file("one.log"));
  ASSERT_EQ(run(2, two_args, dir_.file("two.log")), 0)
      << testing_util::read_file(dir_.file("two.log"));
  const nlohmann::json r1 = read_json(dir_.file("one/run.json"));
  const nlohmann::json r2 = read_json(dir_.file("two/run.json"));
  const double l1 = r1["loss_per_epoch"].back(), l2 = r2["loss_per_epoch"].back();
  EXPECT_NEAR(l2, l1, 0.1 * l1) << "one rank " << l1 << ", two ranks " << l2;
  EXPECT_LT(l2, 0.9 * static_cast<double>(r2["loss_per_epoch"].front()));

  const std::string resumed = dir_.file("resumed");
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", dir_.file("two/checkpoints/epoch-1.h5"),
                 "--threads", "1"},
                dir_.file("resumed.log")),
            0)
      << testing_util::read_file(dir_.file("resumed.log"));
  EXPECT_TRUE(testing_util::read_file(dir_.file("two/vectors.npy")) ==
              testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

/// A corpus of `words` distinct words, each at least once, then `tokens` more drawn with Zipf
/// weights: a vocabulary large beside what one span of it touches.
void write_wide_corpus(const std::string& path, uint32_t words, uint32_t tokens, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (uint32_t i = 0; i < words; ++i) out << 'w' << i << (i % 20 == 19 ? '\n' : ' ');
  out << '\n';
  const std::vector<uint32_t> ids = testing_util::zipf_ids(words, tokens, rng);
  for (uint32_t i = 0; i < tokens; ++i) out << 'w' << ids[i] << (i % 20 == 19 ? '\n' : ' ');
  out << '\n';
}

// Each of two ranks, rank 0 too, holds the rows it owns (half of each table) and copies of other
// rows much fewer than the vocabulary; each rank's peak memory is below one process's by most of
// the half of the tables it does not hold. Rank 0 writes the export from the rows it gathers a
// block at a time, without holding the tables.
/// Each word's row of a run's vectors.npy, by the words of its vocab.tsv.
std::map<std::string, std::vector<float>> rows_by_word(const std::string& run_dir) {
  const NpyMatrix m = read_npy(run_dir + "/vectors.npy");
  std::istringstream vocab(testing_util::read_file(run_dir + "/vocab.tsv"));
  std::map<std::string, std::vector<float>> rows;
  std::string line;
  for (uint64_t r = 0; r < m.rows && std::getline(vocab, line); ++r) {
    rows[line.substr(0, line.find('\t'))] =
        std::vector<float>(m.data.begin() + r * m.cols, m.data.begin() + (r + 1) * m.cols);
  }
  return rows;
}

// A run of one process continued over two ranks on new text, sharded and replicated, sgd and
// adam: every rank starts from the rows it owns of the grown tables. Every word of the run is
// kept; a word the new text lacks (topics 10 to 19) keeps the input row the run left it (no step
// trains it: its row started as the run's); the new words (topic 20) get rows; and a rerun with
// the same ranks repeats the bytes.
TEST_F(TwoRanks, ARunContinuedOverRanksStartsFromTheRunsRows) {
  // The new text: the sentences of topics 0 to 9, and a topic of new words.
  std::istringstream old_text(testing_util::read_file(corpus_));
  std::string text, line;
  uint32_t n = 0;
  while (std::getline(old_text, line)) {
    const size_t t = line.find('t');
    if (t != std::string::npos && line[t + 2] == 'w' && line[t + 1] <= '9') text += line + "\n";
    if (++n % 4 == 0) {
      for (uint32_t k = 0; k < 12; ++k)
        text += "t20w" + std::to_string((n / 4 * 7 + k * 3) % 40) + " ";
      text += "common" + std::to_string(n % 30) + "\n";
    }
  }
  testing_util::write_file(dir_.file("new.txt"), text);
  for (const bool adam : {false, true}) {
    SCOPED_TRACE(adam ? "adam" : "sgd");
    const std::string one = dir_.file(adam ? "one-adam" : "one");
    std::vector<std::string> first = train_args(one, 1);
    if (adam) first.insert(first.end(), {"--optimizer", "adam"});
    ASSERT_EQ(run(0, first, one + ".log"), 0) << testing_util::read_file(one + ".log");
    const auto before = rows_by_word(one);
    for (const std::string& tables : {std::string("sharded"), std::string("replicated")}) {
      if (adam && tables == "replicated") continue;  // replicas train sgd
      std::string out[2];
      for (int k = 0; k < 2; ++k) {
        out[k] = one + "-" + tables + (k ? "-again" : "");
        const std::vector<std::string> args = {"train",
                                               "--continue-from",
                                               one,
                                               "--corpus",
                                               dir_.file("new.txt"),
                                               "--output",
                                               out[k],
                                               "--epochs",
                                               "2",
                                               "--threads",
                                               "1",
                                               "--rank-tables",
                                               tables,
                                               "--device",
                                               "cpu"};
        ASSERT_EQ(run(2, args, out[k] + ".log"), 0) << testing_util::read_file(out[k] + ".log");
      }
      const std::string log = testing_util::read_file(out[0] + ".log");
      EXPECT_NE(log.find("2 ranks"), std::string::npos) << log;
      EXPECT_NE(log.find("40 added from the new text"), std::string::npos) << log;
      EXPECT_EQ(testing_util::read_file(out[0] + "/vectors.npy"),
                testing_util::read_file(out[1] + "/vectors.npy"));
      const auto after = rows_by_word(out[0]);
      size_t kept = 0, moved = 0;
      for (const auto& [word, row] : before) {
        ASSERT_TRUE(after.count(word)) << word;
        const bool absent = word[0] == 't' && word[2] != 'w';  // t10w… to t19w…
        if (absent) {
          ++kept;
          EXPECT_EQ(after.at(word), row) << word << ", " << tables;
        } else {
          moved += after.at(word) != row;
        }
      }
      EXPECT_GT(kept, 300u);
      EXPECT_GT(moved, 300u);
      EXPECT_EQ(after.size(), before.size() + 40);
      const nlohmann::json from = read_json(out[0] + "/run.json")["continued_from"];
      EXPECT_EQ(from["words_kept"], before.size());
      EXPECT_EQ(from["words_added"], 40u);
    }
  }
}

TEST_F(TwoRanks, EveryRankHoldsItsHalfOfTheTables) {
  const uint32_t words = 400000, dim = 128;
  const std::string corpus = dir_.file("wide.txt");
  write_wide_corpus(corpus, words, 600000, 5);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{"train",
                                    "--corpus",
                                    corpus,
                                    "--output",
                                    out,
                                    "--dim",
                                    std::to_string(dim),
                                    "--epochs",
                                    "1",
                                    "--threads",
                                    "1",
                                    "--min-count",
                                    "1",
                                    "--model",
                                    "cbow",
                                    "--window",
                                    "2",
                                    "--negative",
                                    "2",
                                    "--keep-checkpoints",
                                    "0",
                                    "--format",
                                    "npy",
                                    "--device",
                                    "cpu"};
  };
  std::vector<std::string> one = args(dir_.file("one"));
  one.push_back(dir_.file("one.log"));
  std::string err;
  const uint64_t one_peak = testing_util::peak_rss_of_run(PAGEDW2V_BINARY, one, &err);
  ASSERT_GT(one_peak, 0u) << err;
  ASSERT_EQ(run(2, args(dir_.file("two")), dir_.file("two.log")), 0)
      << testing_util::read_file(dir_.file("two.log"));
  const nlohmann::json r = read_json(dir_.file("two/run.json"));
  ASSERT_EQ(r["vocabulary"]["words"], words);
  ASSERT_TRUE(r.contains("ranks")) << r.dump(2);
  const nlohmann::json& ranks = r["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  const uint64_t tables = uint64_t{2} * words * dim * sizeof(float);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(ranks[rank]["table_rows"], words / 2);
    EXPECT_GT(ranks[rank]["working_rows"].get<uint64_t>(), 0u);
    EXPECT_LT(ranks[rank]["working_rows"].get<uint64_t>(), words / 8) << ranks[rank].dump();
    const uint64_t peak = ranks[rank]["peak_rss_bytes"];
    // A rank leaves out half the tables (less its copies, about 7 % of the vocabulary here)
    // and adds what MPI takes (about 20 MB); rank 0 adds a block of each table it writes.
    EXPECT_LT(peak + tables / 4, one_peak) << "rank " << rank << " " << peak << " B, one process "
                                           << one_peak << " B, tables " << tables << " B";
  }
  // The export holds every row.
  EXPECT_EQ(std::filesystem::file_size(dir_.file("two/vectors.npy")),
            std::filesystem::file_size(dir_.file("one/vectors.npy")));
}

// Rank 0 of three writes the checkpoints and the export from the rows it gathers from their
// owners, a block at a time: the export is what one process writes from the last checkpoint
// (`pagedw2v export`), in every format, with the context vectors; the checkpoints hold the
// optimizer's state and resume.
TEST_F(TwoRanks, ThreeRanksWriteWhatOneProcessWritesFromTheirRows) {
  const std::string out = dir_.file("three"), again = dir_.file("again");
  std::vector<std::string> args = train_args(out, 2);
  args.insert(args.end(), {"--optimizer", "adam", "--save-context", "--format", "npy,h5,bin,txt",
                           "--model", "cbow"});
  ASSERT_EQ(run(3, args, dir_.file("three.log")), 0)
      << testing_util::read_file(dir_.file("three.log"));
  const nlohmann::json r = read_json(out + "/run.json");
  const uint64_t words = r["vocabulary"]["words"];
  ASSERT_EQ(r["ranks"].size(), 3u);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(r["ranks"][rank]["table_rows"], (words - rank + 2) / 3) << rank;
  }
  const std::string checkpoint = out + "/checkpoints/epoch-2.h5";
  ASSERT_EQ(run(0,
                {"export", "--checkpoint", checkpoint, "--output", dir_.file("one"), "--format",
                 "npy,h5,bin,txt", "--save-context"},
                dir_.file("export.log")),
            0)
      << testing_util::read_file(dir_.file("export.log"));
  for (const char* f : {"vocab.tsv", "vectors.npy", "context_vectors.npy", "vectors.bin",
                        "context_vectors.bin", "vectors.txt", "context_vectors.txt"}) {
    EXPECT_TRUE(testing_util::read_file(out + "/" + f) ==
                testing_util::read_file(dir_.file("one/") + f))
        << f << " differs from one process's export of the checkpoint";
  }
  const LoadedEmbeddings a = read_embeddings_h5(out + "/embeddings.h5");
  const LoadedEmbeddings b = read_embeddings_h5(dir_.file("one/embeddings.h5"));
  EXPECT_EQ(a.words, b.words);
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_TRUE(a.vectors == b.vectors);
  const Checkpoint ck = load_checkpoint(checkpoint);
  EXPECT_EQ(ck.model.input.rows(), words);
  EXPECT_EQ(ck.model.input_state.size(), 2u);
  EXPECT_FALSE(ck.model.input_state[1].all_zero()) << "adam's state was not gathered";

  // Three ranks resume their checkpoint of epoch 1 and repeat the run that did not stop.
  ASSERT_EQ(run(3,
                {"train", "--output", again, "--resume", out + "/checkpoints/epoch-1.h5",
                 "--threads", "1", "--format", "npy,txt", "--save-context"},
                dir_.file("again.log")),
            0)
      << testing_util::read_file(dir_.file("again.log"));
  for (const char* f : {"vectors.npy", "context_vectors.txt"}) {
    EXPECT_TRUE(testing_util::read_file(out + "/" + f) == testing_util::read_file(again + "/" + f))
        << f << ": the resumed run differs from the run that did not stop";
  }
}

/// The pids of the ranks of a job whose command line names `out`, by rank.
std::vector<pid_t> ranks_of_job(const std::string& out, uint32_t ranks) {
  std::vector<pid_t> pids(ranks, 0);
  for (const std::string& name : names_in("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = testing_util::read_file("/proc/" + name + "/environ");
    const std::string cmd = testing_util::read_file("/proc/" + name + "/cmdline");
    if (cmd.find(out) == std::string::npos || cmd.rfind("mpirun", 0) == 0) continue;
    for (uint32_t r = 0; r < ranks; ++r) {
      if (env.find("OMPI_COMM_WORLD_RANK=" + std::to_string(r) + '\0') != std::string::npos) {
        pids[r] = static_cast<pid_t>(std::stol(name));
      }
    }
  }
  return pids;
}

/// Waits until `path` exists; false when it has not after kJobLimitSeconds (the job hung).
bool wait_for(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kJobLimitSeconds);
  while (!exists(path) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exists(path);
}

// An error on rank 0 alone (it alone claims the output) ends every rank, with its line.
// Every rank reads the corpus itself: ranks that read different text (another file, or the same
// path on machines whose copies differ) would train tables that do not fit together. The job ends
// with one line that says so, and writes no vectors.
TEST_F(TwoRanks, RanksThatReadDifferentCorporaEndTheJobWithOneLine) {
  const std::string other = dir_.file("other.txt");
  write_topic_corpus(other, 5000, 12);
  std::vector<std::string> first = train_args(dir_.file("out"), 1);
  std::vector<std::string> second = first;
  second[2] = other;  // --corpus
  ASSERT_EQ(first[1], "--corpus");
  const std::string log_path = dir_.file("differ.log");
  EXPECT_NE(run_each({first, second}, log_path), 0);
  const std::string log = testing_util::read_file(log_path);
  EXPECT_NE(log.find("do not see the same"), std::string::npos) << log;
  EXPECT_FALSE(exists(dir_.file("out/vectors.npy"))) << log;
}

TEST_F(TwoRanks, AnErrorOnOneRankEndsTheJobWithItsLine) {
  const std::string out = dir_.file("taken");
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  testing_util::write_file(out + "/run.json", "{}\n");
  const std::string log = dir_.file("taken.log");
  const int code = run(2, train_args(out, 1), log);
  const std::string text = testing_util::read_file(log);
  EXPECT_NE(code, 0) << text;
  EXPECT_NE(text.find("pagedw2v: output '" + out + "' holds the files of another run"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("resume with"), std::string::npos) << text;
  EXPECT_EQ(testing_util::read_file(out + "/run.json"), "{}\n");
}

// Over ranks the tables are placed by --rank-tables, and --gpu-memory bounds only rows a GPU
// keeps: either flag where it cannot be honoured ends the job with one line that says why.
TEST_F(TwoRanks, APlacementOrAGpuBudgetTheRanksCannotHonourIsRefused) {
  const struct {
    std::vector<std::string> flags;
    std::string says;
  } cases[] = {
      {{"--placement", "paged"}, "over MPI ranks the tables are placed by --rank-tables"},
      {{"--gpu-memory", "1GiB"}, "these ranks train on the CPU"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string out = dir_.file("refused" + std::to_string(n));
    const std::string log_path = dir_.file("refused" + std::to_string(n++) + ".log");
    std::vector<std::string> args = train_args(out, 1);
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    EXPECT_NE(run(2, args, log_path), 0);
    const std::string log = testing_util::read_file(log_path);
    EXPECT_NE(log.find(c.says), std::string::npos) << log;
    EXPECT_FALSE(exists(out + "/vectors.npy")) << log;
  }
}

// 16-bit tables over ranks are refused before a rank trains, whichever device the ranks would
// take and however they place the tables: one line, no output files.
TEST_F(TwoRanks, SixteenBitStorageIsRefusedBeforeTraining) {
  int n = 0;
  for (const bool replicate : {false, true}) {
    const std::string out = dir_.file("bf16_" + std::to_string(n));
    const std::string log_path = dir_.file("bf16_" + std::to_string(n++) + ".log");
    std::vector<std::string> args = train_args(out, 1);
    ASSERT_EQ(args[args.size() - 2], "--device");
    args.back() = "auto";  // --device cpu is refused by the settings, before any rank
    args.insert(args.end(), {"--storage", "bf16"});
    if (replicate) args = replicated(args);
    EXPECT_NE(run(2, args, log_path), 0);
    const std::string log = testing_util::read_file(log_path);
    EXPECT_NE(log.find("pagedw2v: --storage bf16 over ranks is not built: ranks hold fp32 rows"),
              std::string::npos)
        << log;
    EXPECT_FALSE(exists(out + "/vectors.npy")) << log;
    EXPECT_FALSE(exists(out + "/checkpoints")) << log;
  }
}

// SIGINT to every rank (not to mpirun, which would end the job): the ranks agree to stop at
// the same span, rank 0 writes a checkpoint there, and the run resumes from it.
TEST_F(TwoRanks, SigintToEveryRankStopsThemTogetherWithACheckpoint) {
  const std::string out = dir_.file("stopped"), log = dir_.file("stopped.log");
  const pid_t job = start(2, train_args(out, 200), log);
  ASSERT_TRUE(wait_for(out + "/checkpoints/epoch-1.h5")) << testing_util::read_file(log);
  const std::vector<pid_t> pids = ranks_of_job(out, 2);
  ASSERT_NE(pids[0], 0);
  ASSERT_NE(pids[1], 0);
  ::kill(pids[1], SIGINT);
  ::kill(pids[0], SIGINT);
  const int code = finish(job);
  const std::string text = testing_util::read_file(log);
  EXPECT_NE(code, 0) << text;
  EXPECT_NE(text.find("pagedw2v: stopped by signal 2"), std::string::npos) << text;
  // 200 epochs are long enough for --rank-tables auto to replicate the tables.
  EXPECT_NE(text.find("2 ranks on replicated tables"), std::string::npos) << text;
  EXPECT_NE(text.find("resume with: mpirun -np 2 pagedw2v train"), std::string::npos) << text;
  char target[256] = {};
  const ssize_t n = ::readlink((out + "/checkpoints/latest.h5").c_str(), target, sizeof target - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(target, static_cast<size_t>(n)).rfind("step-", 0), 0u) << target;
  EXPECT_EQ(
      run(2,
          {"train", "--output", out, "--resume", out + "/checkpoints/latest.h5", "--epochs", "2"},
          dir_.file("resume.log")),
      0)
      << testing_util::read_file(dir_.file("resume.log"));
}

TEST_F(TwoRanks, AKilledRankEndsTheJobWithOneClearErrorAndACheckpointThatResumes) {
  const std::string out = dir_.file("killed"), log = dir_.file("killed.log");
  const pid_t job = start(2, train_args(out, 200), log);
  ASSERT_TRUE(wait_for(out + "/checkpoints/epoch-1.h5")) << testing_util::read_file(log);
  const pid_t victim = ranks_of_job(out, 2)[1];
  ASSERT_NE(victim, 0) << "rank 1 not found";
  ::kill(victim, SIGKILL);
  const int code = finish(job);
  const std::string text = testing_util::read_file(log);
  EXPECT_NE(code, 0) << text;
  EXPECT_NE(text.find("pagedw2v: rank 0 of 2: the job is ending"), std::string::npos) << text;
  EXPECT_NE(text.find("--resume " + out + "/checkpoints/latest.h5"), std::string::npos) << text;

  // The newest checkpoint is whole and continues the run for one more epoch.
  char target[256] = {};
  const ssize_t n = ::readlink((out + "/checkpoints/latest.h5").c_str(), target, sizeof target - 1);
  ASSERT_GT(n, 0);
  const std::string name(target, static_cast<size_t>(n));
  ASSERT_EQ(name.rfind("epoch-", 0), 0u) << name;
  const int done = std::stoi(name.substr(6));
  EXPECT_EQ(run(2,
                {"train", "--output", out, "--resume", out + "/checkpoints/latest.h5", "--epochs",
                 std::to_string(done + 1)},
                dir_.file("resume.log")),
            0)
      << testing_util::read_file(dir_.file("resume.log"));
  EXPECT_TRUE(exists(out + "/vectors.npy"));
}

// ---- ranks on GPUs -----------------------------------------------------------------------------

#ifdef PAGEDW2V_HAVE_CUDA
// Two ranks with --device cuda (here both on the machine's one GPU, or one GPU each): each trains
// its share's rows on its GPU (gpu/row_set_trainer.hpp) and exchanges them as the CPU ranks do.
class GpuRanks : public TwoRanks {
 protected:
  void SetUp() override {
    PAGEDW2V_REQUIRE_GPU();
    TwoRanks::SetUp();
  }

  /// A run with the pool the GPU ranks choose, given to every run alike.
  std::vector<std::string> gpu_args(const std::string& out, uint32_t epochs,
                                    const std::string& device) const {
    return {"train",
            "--corpus",
            corpus_,
            "--output",
            out,
            "--dim",
            "24",
            "--epochs",
            std::to_string(epochs),
            "--min-count",
            "2",
            "--seed",
            "3",
            "--device",
            device,
            "--deterministic",
            "--negative-pool",
            "1024",
            "--pool-words",
            "4096"};
  }
};

// With one warp a launch, a GPU rank trains its share in the order a CPU rank's one thread does,
// with the same draws (the kernel and the CPU reference agree within rounding): two GPU ranks
// give two CPU ranks' loss and vectors, with the same vocabulary and files. A deterministic run
// repeats its bits, and its checkpoint resumes to them.
TEST_F(GpuRanks, TrainAsCpuRanksRepeatAndResumeExactly) {
  const std::string cpu = dir_.file("cpu"), two = dir_.file("two"), again = dir_.file("again"),
                    resumed = dir_.file("resumed");
  ASSERT_EQ(run(2, gpu_args(cpu, 2, "cpu"), dir_.file("cpu.log")), 0)
      << testing_util::read_file(dir_.file("cpu.log"));
  ASSERT_EQ(run(2, gpu_args(two, 2, "cuda"), dir_.file("two.log")), 0)
      << testing_util::read_file(dir_.file("two.log"));
  const std::string log = testing_util::read_file(dir_.file("two.log"));
  EXPECT_NE(log.find("backend: cuda on"), std::string::npos) << log;
  EXPECT_NE(log.find("2 ranks"), std::string::npos) << log;
  EXPECT_EQ(testing_util::read_file(cpu + "/vocab.tsv"),
            testing_util::read_file(two + "/vocab.tsv"));
  EXPECT_EQ(names_in(cpu), names_in(two));
  const nlohmann::json r1 = read_json(cpu + "/run.json"), r2 = read_json(two + "/run.json");
  EXPECT_EQ(r1["words_trained"], r2["words_trained"]);
  const double l1 = r1["loss_per_epoch"].back(), l2 = r2["loss_per_epoch"].back();
  EXPECT_TRUE(std::isfinite(l2));
  EXPECT_NEAR(l2, l1, 1e-3 * l1) << "two CPU ranks " << l1 << ", two GPU ranks " << l2;
  EXPECT_LT(l2, 0.9 * static_cast<double>(r2["loss_per_epoch"].front()));
  const NpyMatrix a = read_npy(cpu + "/vectors.npy"), b = read_npy(two + "/vectors.npy");
  ASSERT_EQ(a.data.size(), b.data.size());
  double most = 0;
  for (size_t k = 0; k < a.data.size(); ++k) {
    most = std::max(most, std::fabs(double(a.data[k]) - double(b.data[k])));
  }
  EXPECT_LT(most, 1e-3) << "the GPU ranks' vectors depart from the CPU ranks' by up to " << most;

  const std::string vectors = testing_util::read_file(two + "/vectors.npy");
  ASSERT_EQ(run(2, gpu_args(again, 2, "cuda"), dir_.file("again.log")), 0)
      << testing_util::read_file(dir_.file("again.log"));
  EXPECT_TRUE(vectors == testing_util::read_file(again + "/vectors.npy"))
      << "two deterministic runs over GPU ranks differ";
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", two + "/checkpoints/epoch-1.h5",
                 "--device", "cuda", "--deterministic"},
                dir_.file("resumed.log")),
            0)
      << testing_util::read_file(dir_.file("resumed.log"));
  EXPECT_TRUE(vectors == testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

// Sharded skip-gram sgd without a pool keeps the rows on the GPUs in parts (dist/part_backend.hpp)
// (the choice for vocabularies past kReplicaMostRows; asked for here): every
// pair trains once, on the rank that holds both its rows, with negatives from its centre's part,
// so the run departs from the CPU ranks' only in that draw and the pairs' order: the same
// vocabulary, files and words, a loss close to theirs. A deterministic run repeats its
// bits, and its checkpoint (the parts brought home and gathered) resumes to them.
TEST_F(GpuRanks, PartsTrainRepeatAndResumeExactly) {
  const std::string cpu = dir_.file("pcpu"), two = dir_.file("ptwo"), again = dir_.file("pagain"),
                    resumed = dir_.file("presumed");
  auto args = [&](const std::string& out, const std::string& device) {
    return std::vector<std::string>{"train",
                                    "--corpus",
                                    corpus_,
                                    "--output",
                                    out,
                                    "--dim",
                                    "24",
                                    "--epochs",
                                    "2",
                                    "--min-count",
                                    "2",
                                    "--seed",
                                    "3",
                                    "--device",
                                    device,
                                    "--deterministic",
                                    "--rank-tables",
                                    "sharded"};
  };
  ASSERT_EQ(run(2, args(cpu, "cpu"), dir_.file("pcpu.log")), 0)
      << testing_util::read_file(dir_.file("pcpu.log"));
  ASSERT_EQ(run(2, args(two, "cuda"), dir_.file("ptwo.log")), 0)
      << testing_util::read_file(dir_.file("ptwo.log"));
  const std::string log = testing_util::read_file(dir_.file("ptwo.log"));
  EXPECT_NE(log.find("ranks on partitioned tables"), std::string::npos) << log;
  EXPECT_EQ(testing_util::read_file(cpu + "/vocab.tsv"),
            testing_util::read_file(two + "/vocab.tsv"));
  EXPECT_EQ(names_in(cpu), names_in(two));
  const nlohmann::json r1 = read_json(cpu + "/run.json"), r2 = read_json(two + "/run.json");
  EXPECT_EQ(r1["words_trained"], r2["words_trained"]);
  const double l1 = r1["loss_per_epoch"].back(), l2 = r2["loss_per_epoch"].back();
  EXPECT_TRUE(std::isfinite(l2));
  // A part's noise table draws its frequent words more often, the centre among them, whose
  // draws are skipped: a pair has fewer negative terms, and the loss per pair is lower (on this
  // vocabulary of a few hundred words, by about a tenth).
  EXPECT_LT(l2, 1.02 * l1) << "two CPU ranks " << l1 << ", two GPU ranks on parts " << l2;
  EXPECT_GT(l2, 0.8 * l1) << "two CPU ranks " << l1 << ", two GPU ranks on parts " << l2;
  EXPECT_LT(l2, 0.9 * static_cast<double>(r2["loss_per_epoch"].front()));

  const std::string vectors = testing_util::read_file(two + "/vectors.npy");
  ASSERT_EQ(run(2, args(again, "cuda"), dir_.file("pagain.log")), 0)
      << testing_util::read_file(dir_.file("pagain.log"));
  EXPECT_TRUE(vectors == testing_util::read_file(again + "/vectors.npy"))
      << "two deterministic runs on parts differ";
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", two + "/checkpoints/epoch-1.h5",
                 "--device", "cuda", "--deterministic"},
                dir_.file("presumed.log")),
            0)
      << testing_util::read_file(dir_.file("presumed.log"));
  EXPECT_NE(testing_util::read_file(dir_.file("presumed.log")).find("partitioned tables"),
            std::string::npos);
  EXPECT_TRUE(vectors == testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

// Replicated tables on the GPUs (dist/gpu_replica_backend.hpp; asked for, since two epochs of
// this corpus are too short for --rank-tables auto to replicate them, as on the CPU ranks): with
// one warp a launch each rank trains its share as the CPU ranks' one thread does, and the
// ranks sum the same changes after the same spans, so two GPU ranks give two CPU ranks' loss
// and vectors within rounding. A deterministic run repeats its bits, and its checkpoint resumes
// to them.
TEST_F(GpuRanks, ReplicasTrainAsCpuRanksRepeatAndResumeExactly) {
  const std::string cpu = dir_.file("rcpu"), two = dir_.file("rtwo"), again = dir_.file("ragain"),
                    resumed = dir_.file("rresumed");
  auto args = [&](const std::string& out, const std::string& device) {
    return std::vector<std::string>{"train",
                                    "--corpus",
                                    corpus_,
                                    "--output",
                                    out,
                                    "--dim",
                                    "24",
                                    "--epochs",
                                    "2",
                                    "--min-count",
                                    "2",
                                    "--seed",
                                    "3",
                                    "--device",
                                    device,
                                    "--deterministic",
                                    "--threads",
                                    "1",
                                    "--rank-tables",
                                    "replicated"};
  };
  ASSERT_EQ(run(2, args(cpu, "cpu"), dir_.file("rcpu.log")), 0)
      << testing_util::read_file(dir_.file("rcpu.log"));
  ASSERT_EQ(run(2, args(two, "cuda"), dir_.file("rtwo.log")), 0)
      << testing_util::read_file(dir_.file("rtwo.log"));
  const std::string log = testing_util::read_file(dir_.file("rtwo.log"));
  EXPECT_NE(log.find("ranks on replicated tables (whole copies on every GPU"), std::string::npos)
      << log;
  EXPECT_EQ(testing_util::read_file(cpu + "/vocab.tsv"),
            testing_util::read_file(two + "/vocab.tsv"));
  const nlohmann::json r1 = read_json(cpu + "/run.json"), r2 = read_json(two + "/run.json");
  EXPECT_EQ(r1["words_trained"], r2["words_trained"]);
  const double l1 = r1["loss_per_epoch"].back(), l2 = r2["loss_per_epoch"].back();
  EXPECT_NEAR(l2, l1, 1e-3 * l1) << "two CPU ranks " << l1 << ", two GPU ranks " << l2;
  const NpyMatrix a = read_npy(cpu + "/vectors.npy"), b = read_npy(two + "/vectors.npy");
  ASSERT_EQ(a.data.size(), b.data.size());
  double most = 0;
  for (size_t k = 0; k < a.data.size(); ++k) {
    most = std::max(most, std::fabs(double(a.data[k]) - double(b.data[k])));
  }
  EXPECT_LT(most, 1e-3) << "the GPU ranks' vectors depart from the CPU ranks' by up to " << most;

  const std::string vectors = testing_util::read_file(two + "/vectors.npy");
  ASSERT_EQ(run(2, args(again, "cuda"), dir_.file("ragain.log")), 0)
      << testing_util::read_file(dir_.file("ragain.log"));
  EXPECT_TRUE(vectors == testing_util::read_file(again + "/vectors.npy"))
      << "two deterministic runs on replicas differ";
  ASSERT_EQ(run(2,
                {"train", "--output", resumed, "--resume", two + "/checkpoints/epoch-1.h5",
                 "--device", "cuda", "--deterministic"},
                dir_.file("rresumed.log")),
            0)
      << testing_util::read_file(dir_.file("rresumed.log"));
  EXPECT_TRUE(vectors == testing_util::read_file(resumed + "/vectors.npy"))
      << "the resumed run's vectors differ from the run's that did not stop";
}

// What GPU ranks do not train is refused on every rank with one clear line.
// Replicated tables on GPU ranks train skip-gram with sgd and no pool: CBOW asked for with them
// is refused with one line that names what to give instead, before any training.
TEST_F(GpuRanks, ReplicatedTablesOfAnotherModelAreAClearError) {
  std::vector<std::string> args = gpu_args(dir_.file("cbow"), 1, "cuda");
  args.insert(args.end(), {"--model", "cbow", "--rank-tables", "replicated"});
  ASSERT_NE(run(2, args, dir_.file("cbow.log")), 0);
  const std::string log = testing_util::read_file(dir_.file("cbow.log"));
  EXPECT_NE(log.find("--rank-tables replicated over GPU ranks trains skip-gram with sgd"),
            std::string::npos)
      << log;
  EXPECT_FALSE(exists(dir_.file("cbow/vectors.npy"))) << log;
}

TEST_F(GpuRanks, AnOptimizerWithStateIsAClearError) {
  std::vector<std::string> args = gpu_args(dir_.file("adam"), 1, "cuda");
  args.insert(args.end(), {"--optimizer", "adam"});
  ASSERT_NE(run(2, args, dir_.file("adam.log")), 0);
  const std::string log = testing_util::read_file(dir_.file("adam.log"));
  EXPECT_NE(log.find("over ranks trains with sgd"), std::string::npos) << log;
}
#endif

}  // namespace
}  // namespace pagedw2v
