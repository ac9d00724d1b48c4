// The negative pool (negative_pool.hpp) on the CPU: its entries follow the noise distribution and
// are fixed by (seed, epoch, super-batch); picks are uniform over the pool; the CPU backend takes
// every negative of a block from the pool of the block's super-batch, in the SGD and the batched
// passes alike; and training with a pool stays deterministic and resumable.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sgns_cpu.hpp"
#include "base/philox.hpp"
#include "corpus/corpus.hpp"
#include "model/negative_pool.hpp"
#include "model/optimizer.hpp"
#include "model/params.hpp"
#include "model/sampler.hpp"
#include "support/compare.hpp"

namespace pagedw2v {
namespace {

using testing_util::same_bits;

/// A chi-square statistic with `df` degrees of freedom passes below mean + 6 standard deviations.
double chi_square_limit(double df) { return df + 6.0 * std::sqrt(2.0 * df); }

/// Zipf-like word counts over `vocab` words, as a real vocabulary has.
std::vector<uint64_t> zipf_counts(uint32_t vocab) {
  std::vector<uint64_t> counts(vocab);
  for (uint32_t w = 0; w < vocab; ++w) counts[w] = 100000 / (w + 1) + 5;
  return counts;
}

TEST(NegativePool, EntryIsTheDocumentedAliasDraw) {
  const NoiseTable noise(unigram_weights(zipf_counts(300)));
  const uint64_t seed = 0xABCDEF0123ull;
  for (const uint64_t sb : {uint64_t{0}, uint64_t{7}, uint64_t{0xFFFFFFFF}}) {
    for (const uint32_t k : {0u, 1u, 99u, 0xFFFFFFFFu}) {
      const Philox4 r = draw(seed, (sb << 32) | k, 4, DrawKind::kPool);
      EXPECT_EQ(pool_entry(seed, 4, sb, k, noise.columns().data(), noise.column_count()),
                noise.sample(r.v[0], r.v[1]));
    }
  }
  const std::vector<uint32_t> pool = draw_pool(seed, 4, 7, noise, 50);
  for (uint32_t k = 0; k < 50; ++k) {
    EXPECT_EQ(pool[k], pool_entry(seed, 4, 7, k, noise.columns().data(), noise.column_count()));
  }
}

TEST(NegativePool, DeterministicAndIndependentAcrossKeys) {
  const NoiseTable noise(std::vector<double>(1000, 1.0));
  const uint32_t n = 4000;
  const std::vector<uint32_t> base = draw_pool(3, 1, 5, noise, n);
  EXPECT_EQ(base, draw_pool(3, 1, 5, noise, n));
  // A longer pool starts with the shorter one.
  const std::vector<uint32_t> longer = draw_pool(3, 1, 5, noise, n + 100);
  EXPECT_TRUE(std::equal(base.begin(), base.end(), longer.begin()));
  auto same_entries = [&](const std::vector<uint32_t>& other) {
    size_t same = 0;
    for (uint32_t k = 0; k < n; ++k) same += base[k] == other[k];
    return same;
  };
  // Uniform over 1000 ids: about 4 of 4000 entries agree by chance.
  EXPECT_LT(same_entries(draw_pool(4, 1, 5, noise, n)), 40u) << "seed";
  EXPECT_LT(same_entries(draw_pool(3, 2, 5, noise, n)), 40u) << "epoch";
  EXPECT_LT(same_entries(draw_pool(3, 1, 6, noise, n)), 40u) << "super-batch";
  EXPECT_LT(same_entries(draw_pool(3, 1, 5 + (uint64_t{1} << 31), noise, n)), 40u)
      << "super-batch in the high bits";
}

TEST(NegativePool, EntriesFollowTheNoiseDistribution) {
  const uint32_t vocab = 60;
  const std::vector<double> weights = unigram_weights(zipf_counts(vocab));
  const NoiseTable noise(weights);
  const double total_weight = [&] {
    double t = 0;
    for (double w : weights) t += w;
    return t;
  }();
  // Many pools (super-batches and epochs) together, and one large pool alone.
  std::vector<double> seen(vocab, 0), one(vocab, 0);
  uint64_t draws = 0;
  for (uint32_t epoch = 0; epoch < 3; ++epoch) {
    for (uint64_t sb = 0; sb < 20; ++sb) {
      for (uint32_t id : draw_pool(17, epoch, sb, noise, 5000)) {
        ASSERT_LT(id, vocab);
        seen[id] += 1;
        ++draws;
      }
    }
  }
  const std::vector<uint32_t> big = draw_pool(17, 0, 1000, noise, 300000);
  for (uint32_t id : big) one[id] += 1;
  for (const auto* counts : {&seen, &one}) {
    const double n = counts == &seen ? static_cast<double>(draws) : 300000.0;
    double chi = 0;
    for (uint32_t w = 0; w < vocab; ++w) {
      const double expect = n * weights[w] / total_weight;
      chi += ((*counts)[w] - expect) * ((*counts)[w] - expect) / expect;
    }
    EXPECT_LT(chi, chi_square_limit(vocab - 1));
  }
}

TEST(NegativePool, PicksAreUniformOverPoolIndices) {
  for (const uint32_t size : {1u, 2u, 37u, 1000u}) {
    std::vector<double> hits(size, 0);
    uint64_t n = 0;
    for (uint64_t pos = 0; pos < 20000; ++pos) {
      for (uint32_t slot = 0; slot < 4; ++slot) {
        uint32_t k0, k1;
        pool_pick_pair(9, pos, 2, slot, 1, size, &k0, &k1);
        const Philox4 r = draw(9, pos, 2, DrawKind::kNegative, (slot << 8) | 1u);
        ASSERT_EQ(k0, static_cast<uint32_t>((uint64_t{r.v[0]} * size) >> 32));
        ASSERT_EQ(k1, static_cast<uint32_t>((uint64_t{r.v[2]} * size) >> 32));
        ASSERT_LT(k0, size);
        ASSERT_LT(k1, size);
        hits[k0] += 1;
        hits[k1] += 1;
        n += 2;
      }
    }
    if (size == 1) continue;
    double chi = 0;
    const double expect = static_cast<double>(n) / size;
    for (double h : hits) chi += (h - expect) * (h - expect) / expect;
    EXPECT_LT(chi, chi_square_limit(size - 1)) << size;
  }
  EXPECT_EQ(pool_pick(0xFFFFFFFFu, 10), 9u);
  EXPECT_EQ(pool_pick(0, 10), 0u);
}

TEST(NegativePool, TargetsPickFromThePoolAndSkipTheCentre) {
  const NoiseTable noise(std::vector<double>(50, 1.0));
  // A pool in which the centre (7) is frequent, so skips happen.
  std::vector<uint32_t> pool = {7, 3, 7, 11, 7, 42, 7, 19, 7};
  const detail::NegativeSource src{noise.columns().data(), noise.column_count(), pool.data(),
                                   static_cast<uint32_t>(pool.size())};
  std::vector<uint32_t> targets(16);
  uint64_t skipped = 0;
  for (uint64_t pos = 0; pos < 2000; ++pos) {
    for (const uint32_t negative : {1u, 4u, 5u}) {
      const uint32_t n = detail::draw_targets(7, pos, 1, 3, 5, negative, src, targets.data());
      ASSERT_EQ(targets[0], 7u);
      // Replays the documented picks: negative 2c from v[0], 2c + 1 from v[2].
      std::vector<uint32_t> want = {7};
      for (uint32_t k = 0; k < negative; ++k) {
        const Philox4 r = draw(5, pos, 1, DrawKind::kNegative, (3u << 8) | (k >> 1));
        const uint32_t id = pool[pool_pick(k % 2 == 0 ? r.v[0] : r.v[2], 9)];
        if (id != 7) want.push_back(id);
      }
      ASSERT_EQ(std::vector<uint32_t>(targets.begin(), targets.begin() + n), want);
      skipped += negative + 1 - n;
    }
  }
  EXPECT_GT(skipped, 0u);
}

/// A synthetic corpus cut into many small work blocks, with its samplers and a model.
struct PoolProblem {
  EncodedCorpus corpus;
  std::vector<uint64_t> blocks;
  KeepTable keep;
  NoiseTable noise;
  TrainData data;
  Model model;

  PoolProblem(ModelKind kind, uint32_t pool, uint32_t batch_blocks, uint64_t seed,
              OptimizerKind optimizer = OptimizerKind::kSgd) {
    const uint32_t vocab = 400;
    std::mt19937 rng(42);
    const std::vector<uint64_t> counts = zipf_counts(vocab);
    std::discrete_distribution<uint32_t> word(counts.begin(), counts.end());
    std::uniform_int_distribution<uint32_t> len(3, 30);
    corpus.sentence_starts = {0};
    for (int s = 0; s < 240; ++s) {
      const uint32_t n = len(rng);
      for (uint32_t k = 0; k < n; ++k) corpus.tokens.push_back(word(rng));
      corpus.sentence_starts.push_back(corpus.tokens.size());
    }
    for (uint64_t s = 0; s < corpus.sentences(); s += 6) blocks.push_back(s);
    blocks.push_back(corpus.sentences());
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    keep = keep_probabilities(counts, total, 1e-3);
    noise = NoiseTable(unigram_weights(counts));
    data.corpus = &corpus;
    data.blocks = &blocks;
    data.keep = &keep;
    data.noise = &noise;
    TrainParams& p = data.params;
    p.model = kind;
    p.dim = 16;
    p.window = 4;
    p.negative = 5;
    p.epochs = 2;
    p.seed = seed;
    p.alpha = kind == ModelKind::kCbow ? 0.05f : 0.025f;
    p.words_per_epoch = corpus.size();
    p.negative_pool = pool;
    p.pool_blocks = batch_blocks;
    data.optimizer = default_optimizer_params(optimizer);
    model = Model{HostTable(vocab, p.dim, "in", ""), HostTable(vocab, p.dim, "out", "")};
    init_model(model, 7);
    init_optimizer_state(model, optimizer);
  }

  uint64_t block_count() const { return blocks.size() - 1; }
};

std::vector<float> table_values(const HostTable& t) {
  return std::vector<float>(t.data(), t.data() + t.rows() * t.dim());
}

/// Trains every epoch of `p` on one CPU thread.
void train_all(PoolProblem& p) {
  auto backend = make_cpu_backend(p.model, p.data, 1);
  for (uint32_t e = 0; e < p.data.params.epochs; ++e) backend->train(e, 0, p.block_count());
}

TEST(NegativePoolTraining, NegativesOfABlockComeFromItsSuperBatchPool) {
  for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    PoolProblem p(kind, 64, 3, 11);
    const TrainParams& params = p.data.params;
    for (uint32_t epoch = 0; epoch < 2; ++epoch) {
      size_t outside_previous = 0;
      for (uint64_t b = 0; b < p.block_count(); ++b) {
        const uint64_t sb = super_batch_of(b, params.pool_blocks);
        ASSERT_EQ(sb, b / 3);
        const std::vector<uint32_t> pool = draw_pool(params.seed, epoch, sb, p.noise, 64);
        const std::set<uint32_t> members(pool.begin(), pool.end());
        const std::vector<uint32_t> other =
            draw_pool(params.seed, epoch, sb + 1, p.noise, params.negative_pool);
        const std::set<uint32_t> other_members(other.begin(), other.end());
        const auto examples = detail::block_example_targets(p.data, p.model, epoch, b);
        for (const auto& t : examples) {
          ASSERT_GE(t.size(), 1u);
          for (size_t k = 1; k < t.size(); ++k) {
            ASSERT_TRUE(members.count(t[k]) != 0)
                << "block " << b << " epoch " << epoch << " negative " << t[k];
            ASSERT_NE(t[k], t[0]);
            outside_previous += other_members.count(t[k]) == 0;
          }
        }
      }
      // The pools differ between super-batches: the check above is not vacuous.
      EXPECT_GT(outside_previous, 0u);
    }
  }
}

TEST(NegativePoolTraining, WithoutAPoolNegativesAreAliasDraws) {
  PoolProblem p(ModelKind::kSkipGram, 0, 3, 11);
  std::set<uint32_t> negatives;
  for (const auto& t : detail::block_example_targets(p.data, p.model, 0, 0)) {
    negatives.insert(t.begin() + 1, t.end());
  }
  EXPECT_GT(negatives.size(), 64u);
}

TEST(NegativePoolTraining, BatchedGradientsTouchOnlyPoolRowsAsNegatives) {
  for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    PoolProblem p(kind, 48, 4, 5, OptimizerKind::kAdam);
    const uint32_t vocab = p.noise.words(), dim = p.data.params.dim;
    const uint64_t sb = 2;
    const std::vector<uint32_t> pool = draw_pool(p.data.params.seed, 1, sb, p.noise, 48);
    std::set<uint32_t> allowed(pool.begin(), pool.end());
    allowed.insert(p.corpus.tokens.begin(), p.corpus.tokens.begin() + p.corpus.sentence_starts[20]);
    std::vector<float> gin(size_t{vocab} * dim, 0.0f), gout(size_t{vocab} * dim, 0.0f);
    std::vector<uint8_t> tin(vocab, 0), tout(vocab, 0);
    SpanStats stats;
    detail::accumulate_gradients_cpu(p.data, p.model, 1, sb, 0, 20, gin.data(), gout.data(),
                                     tin.data(), tout.data(), &stats);
    EXPECT_GT(stats.loss_terms, 0u);
    size_t touched = 0;
    for (uint32_t id = 0; id < vocab; ++id) {
      if (tout[id] != 0) {
        EXPECT_TRUE(allowed.count(id) != 0) << id;
        ++touched;
      } else {
        for (uint32_t d = 0; d < dim; ++d) ASSERT_EQ(gout[size_t{id} * dim + d], 0.0f);
      }
      if (tin[id] == 0) {
        for (uint32_t d = 0; d < dim; ++d) ASSERT_EQ(gin[size_t{id} * dim + d], 0.0f);
      }
    }
    EXPECT_GT(touched, 0u);
  }
}

/// A batched step (non-sgd optimizer) of one block changes only the rows its examples touch: its
/// words, and as negatives only members of its super-batch's pool.
TEST(NegativePoolTraining, BatchedStepChangesOnlyTheBlockAndItsPool) {
  for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
    PoolProblem p(kind, 24, 5, 21, OptimizerKind::kAdam);
    const uint64_t block = 13;  // super-batch 2
    const uint32_t epoch = 1;
    const std::vector<uint32_t> pool = draw_pool(p.data.params.seed, epoch, 2, p.noise, 24);
    std::set<uint32_t> allowed(pool.begin(), pool.end());
    const auto& starts = p.corpus.sentence_starts;
    allowed.insert(p.corpus.tokens.begin() + starts[p.blocks[block]],
                   p.corpus.tokens.begin() + starts[p.blocks[block + 1]]);
    const std::vector<float> before = table_values(p.model.output);
    auto backend = make_cpu_backend(p.model, p.data, 1);
    backend->train(epoch, block, block + 1);
    const uint32_t dim = p.data.params.dim;
    size_t changed = 0;
    for (uint32_t id = 0; id < p.noise.words(); ++id) {
      bool moved = false;
      for (uint32_t d = 0; d < dim; ++d) {
        moved |= p.model.output.data()[size_t{id} * dim + d] != before[size_t{id} * dim + d];
      }
      if (!moved) continue;
      ++changed;
      EXPECT_TRUE(allowed.count(id) != 0) << "output row " << id;
    }
    EXPECT_GT(changed, 5u);
  }
}

TEST(NegativePoolTraining, OneThreadIsDeterministicAndSeedsDiffer) {
  for (const OptimizerKind opt : {OptimizerKind::kSgd, OptimizerKind::kAdagrad}) {
    for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
      PoolProblem a(kind, 100, 4, 3, opt), b(kind, 100, 4, 3, opt), c(kind, 100, 4, 4, opt);
      PoolProblem no_pool(kind, 0, 4, 3, opt);
      const std::vector<float> start = table_values(a.model.input);
      train_all(a);
      train_all(b);
      train_all(c);
      train_all(no_pool);
      for (const HostTable* t : {&a.model.input, &a.model.output}) {
        for (size_t i = 0; i < t->rows() * t->dim(); ++i) ASSERT_TRUE(std::isfinite(t->data()[i]));
      }
      EXPECT_NE(table_values(a.model.input), start) << "training changed nothing";
      EXPECT_TRUE(same_bits(a.model.input, b.model.input));
      EXPECT_TRUE(same_bits(a.model.output, b.model.output));
      EXPECT_FALSE(same_bits(a.model.input, c.model.input));
      EXPECT_FALSE(same_bits(a.model.output, no_pool.model.output)) << "the pool is not used";
    }
  }
}

/// A run that stops after block `split` of epoch 1 and resumes on a new backend (fresh
/// per-thread pools) equals a straight run bit for bit.
TEST(NegativePoolTraining, ResumedRunEqualsStraightRun) {
  for (const OptimizerKind opt : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    for (const ModelKind kind : {ModelKind::kSkipGram, ModelKind::kCbow}) {
      PoolProblem straight(kind, 80, 5, 9, opt), resumed(kind, 80, 5, 9, opt);
      train_all(straight);
      const uint64_t nb = resumed.block_count(), split = 13;  // inside super-batch 2
      ASSERT_GT(nb, split + 5);
      {
        auto backend = make_cpu_backend(resumed.model, resumed.data, 1);
        backend->train(0, 0, nb);
        backend->train(1, 0, split);
      }
      auto backend = make_cpu_backend(resumed.model, resumed.data, 1);
      backend->train(1, split, split + 1);
      backend->train(1, split + 1, nb);
      EXPECT_TRUE(same_bits(straight.model.input, resumed.model.input))
          << to_string(opt) << " " << static_cast<int>(kind);
      EXPECT_TRUE(same_bits(straight.model.output, resumed.model.output));
      for (size_t k = 0; k < straight.model.input_state.size(); ++k) {
        EXPECT_TRUE(same_bits(straight.model.input_state[k], resumed.model.input_state[k]));
        EXPECT_TRUE(same_bits(straight.model.output_state[k], resumed.model.output_state[k]));
      }
    }
  }
}

TEST(NegativePoolTraining, SentenceReferenceUsesTheGivenSuperBatch) {
  PoolProblem a(ModelKind::kSkipGram, 30, 2, 8), b(ModelKind::kSkipGram, 30, 2, 8);
  PoolProblem c(ModelKind::kSkipGram, 30, 2, 8);
  const auto& starts = a.corpus.sentence_starts;
  SpanStats sa, sb, sc;
  // Block 3 (sentences 18 … 23) is in super-batch 1.
  {
    auto backend = make_cpu_backend(a.model, a.data, 1);
    sa = backend->train(0, 3, 4);
  }
  for (uint64_t s = 18; s < 24; ++s) {
    detail::train_sentence_cpu(b.data, b.model, 0, starts[s], starts[s + 1], &sb, 1);
    detail::train_sentence_cpu(c.data, c.model, 0, starts[s], starts[s + 1], &sc, 0);
  }
  EXPECT_TRUE(same_bits(a.model.output, b.model.output));
  EXPECT_TRUE(same_bits(a.model.input, b.model.input));
  EXPECT_EQ(sa.loss, sb.loss);
  EXPECT_FALSE(same_bits(a.model.output, c.model.output));
}

}  // namespace
}  // namespace pagedw2v
