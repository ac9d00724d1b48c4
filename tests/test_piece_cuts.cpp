// The cuts of paged sgd pieces made on the host (gpu/piece_cuts.hpp), without a GPU: every
// piece's cold rows against a brute-force count, the share rule and that a piece takes as many
// sentences as it may, super-batch boundaries, several threads, several spans.
#include "gpu/piece_cuts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "error.hpp"
#include "negative_pool.hpp"
#include "sampler.hpp"

namespace pagedw2v {
namespace {

struct Corpus {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> starts;  // each sentence's first token, and the end
  std::vector<uint64_t> blocks;  // sentence boundaries of the work blocks
  NoiseTable noise;
  uint64_t rows = 0;
};

Corpus make_corpus(uint64_t rows, uint64_t sentences, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Corpus c;
  c.rows = rows;
  std::vector<uint64_t> counts(rows, 1);
  c.starts.push_back(0);
  for (uint64_t s = 0; s < sentences; ++s) {
    const uint64_t len = 1 + rng() % 30;
    for (uint64_t k = 0; k < len; ++k) {
      // Low ids far more often, as in a corpus in frequency order.
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      const uint32_t id = static_cast<uint32_t>(std::min<double>(rows - 1, rows * u * u * u));
      c.tokens.push_back(id);
      ++counts[id];
    }
    c.starts.push_back(c.tokens.size());
  }
  for (uint64_t s = 0; s < sentences; s += 1 + rng() % 6) c.blocks.push_back(s);
  c.blocks.push_back(sentences);
  c.noise = NoiseTable(unigram_weights(counts));
  return c;
}

/// The cold rows of sentences [a, b) by brute force.
std::vector<uint32_t> cold_rows(const Corpus& c, const PieceCutInput& in, uint32_t epoch,
                                uint64_t a, uint64_t b) {
  std::set<uint32_t> ids;
  std::set<uint64_t> periods;
  for (uint64_t t = a; t < b; ++t) {
    const uint64_t block = static_cast<uint64_t>(
        std::upper_bound(c.blocks.begin(), c.blocks.end(), t) - c.blocks.begin() - 1);
    periods.insert(block / in.pool_blocks);
    for (uint64_t p = c.starts[t]; p < c.starts[t + 1]; ++p) {
      if (c.tokens[p] >= in.hot) ids.insert(c.tokens[p]);
    }
  }
  for (const uint64_t period : periods) {
    for (const uint32_t id : draw_pool(in.seed, epoch, period, c.noise, in.pool_size)) {
      if (id >= in.hot) ids.insert(id);
    }
  }
  return {ids.begin(), ids.end()};
}

PieceCutInput input_for(const Corpus& c, uint64_t hot, uint64_t share) {
  PieceCutInput in;
  in.blocks = &c.blocks;
  in.batch_blocks = 5;
  in.pool_blocks = 2;
  in.pool_size = 16;
  in.seed = 7;
  in.noise = &c.noise;
  in.rows = c.rows;
  in.hot = hot;
  in.share = share;
  return in;
}

/// Checks the cuts of blocks [first_block, last_block) of `epoch` and returns them.
std::vector<PieceCut> check_span(const Corpus& c, const PieceCutInput& in, PieceCuts& cuts,
                                 uint32_t epoch, uint64_t first_block, uint64_t last_block) {
  cuts.start(epoch, first_block, last_block, c.tokens.data(), c.starts.data());
  std::vector<PieceCut> got;
  PieceCut cut;
  while (cuts.next(cut)) got.push_back(cut);
  uint64_t at = c.blocks[first_block];
  for (const PieceCut& p : got) {
    SCOPED_TRACE("piece [" + std::to_string(p.first_sentence) + ", " +
                 std::to_string(p.last_sentence) + ")");
    EXPECT_EQ(p.first_sentence, at);
    EXPECT_LT(p.first_sentence, p.last_sentence);
    at = p.last_sentence;
    // Within one super-batch.
    const uint64_t first =
        static_cast<uint64_t>(std::upper_bound(c.blocks.begin(), c.blocks.end(), p.first_sentence) -
                              c.blocks.begin() - 1);
    const uint64_t super_end_block =
        std::min<uint64_t>(last_block, (first / in.batch_blocks + 1) * in.batch_blocks);
    const uint64_t super_end = c.blocks[super_end_block];
    EXPECT_LE(p.last_sentence, super_end);
    EXPECT_EQ(p.cold, cold_rows(c, in, epoch, p.first_sentence, p.last_sentence));
    // Its pools: every period from its first sentence's to its last's, as the device draws them.
    const uint64_t last = static_cast<uint64_t>(
        std::upper_bound(c.blocks.begin(), c.blocks.end(), p.last_sentence - 1) - c.blocks.begin() -
        1);
    EXPECT_EQ(p.first_period, first / in.pool_blocks);
    std::vector<uint32_t> pools;
    for (uint64_t period = first / in.pool_blocks; period <= last / in.pool_blocks; ++period) {
      const std::vector<uint32_t> pool = draw_pool(in.seed, epoch, period, c.noise, in.pool_size);
      pools.insert(pools.end(), pool.begin(), pool.end());
    }
    EXPECT_EQ(p.pools, pools);
    if (p.last_sentence - p.first_sentence > 1) {
      EXPECT_LE(p.cold.size(), in.share);
    }
    // It took every sentence it could: one more would pass the share (or the super-batch).
    if (p.last_sentence < super_end) {
      EXPECT_GT(cold_rows(c, in, epoch, p.first_sentence, p.last_sentence + 1).size(), in.share);
    }
  }
  EXPECT_EQ(at, c.blocks[last_block]);
  return got;
}

TEST(PieceCuts, EachPieceListsItsColdRowsAndTakesWhatItsShareAllows) {
  const Corpus c = make_corpus(400, 700, 1);
  for (const uint64_t share : {1, 25, 60, 100000}) {
    SCOPED_TRACE("share " + std::to_string(share));
    const PieceCutInput in = input_for(c, 40, share);
    PieceCuts cuts(in, 1);
    const auto got = check_span(c, in, cuts, 0, 0, c.blocks.size() - 1);
    if (share == 100000) {
      // Nothing cuts a super-batch but its end.
      EXPECT_EQ(got.size(), (c.blocks.size() - 1 + in.batch_blocks - 1) / in.batch_blocks);
    }
    if (share == 1) {
      for (const PieceCut& p : got) EXPECT_EQ(p.last_sentence - p.first_sentence, 1u);
    }
  }
}

TEST(PieceCuts, ThreadsGiveTheSameCutsInOrder) {
  const Corpus c = make_corpus(300, 900, 2);
  const PieceCutInput in = input_for(c, 30, 40);
  PieceCuts one(in, 1), four(in, 4);
  const auto a = check_span(c, in, one, 3, 0, c.blocks.size() - 1);
  const auto b = check_span(c, in, four, 3, 0, c.blocks.size() - 1);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].first_sentence, b[k].first_sentence);
    EXPECT_EQ(a[k].last_sentence, b[k].last_sentence);
    EXPECT_EQ(a[k].cold, b[k].cold);
  }
}

TEST(PieceCuts, SpansMayStartAndEndInsideSuperBatchesAndEndEarly) {
  const Corpus c = make_corpus(300, 600, 3);
  const PieceCutInput in = input_for(c, 20, 30);
  PieceCuts cuts(in, 3);
  const uint64_t blocks = c.blocks.size() - 1;
  check_span(c, in, cuts, 0, 3, blocks / 2 + 1);
  // A span dropped after one piece; the next starts cleanly, in another epoch.
  cuts.start(1, 0, blocks, c.tokens.data(), c.starts.data());
  PieceCut first;
  ASSERT_TRUE(cuts.next(first));
  cuts.end();
  EXPECT_FALSE(cuts.next(first));
  const auto again = check_span(c, in, cuts, 2, 7, blocks);
  EXPECT_FALSE(again.empty());
  // An empty span.
  cuts.start(2, 4, 4, c.tokens.data(), c.starts.data());
  EXPECT_FALSE(cuts.next(first));
}

TEST(PieceCuts, PoolsOfEveryPeriodThePieceSpansAreItsRows) {
  // Every token hot: a piece's cold rows are its pools' alone.
  const Corpus c = make_corpus(200, 300, 4);
  PieceCutInput in = input_for(c, 0, 100000);
  in.hot = 150;
  in.pool_size = 64;
  PieceCuts cuts(in, 2);
  const auto got = check_span(c, in, cuts, 5, 0, c.blocks.size() - 1);
  ASSERT_FALSE(got.empty());
}

// A piece's cold rows come out ascending either way: sorted when they are few beside the
// stretch of rows they span (a large vocabulary, small pieces), read off the bits in order when
// they are many (large pieces). Both ways over the same corpus, each checked by brute force.
TEST(PieceCuts, ColdRowsAscendWhetherSortedOrReadOffTheirBits) {
  const Corpus c = make_corpus(200000, 400, 8);
  for (const uint64_t share : {3, 40, 100000}) {
    SCOPED_TRACE("share " + std::to_string(share));
    const PieceCutInput in = input_for(c, 100, share);
    PieceCuts cuts(in, 2);
    const auto got = check_span(c, in, cuts, 1, 0, c.blocks.size() - 1);
    ASSERT_FALSE(got.empty());
  }
  // Every row cold and most of them touched: long lists over a short stretch.
  const Corpus dense = make_corpus(300, 2000, 9);
  const PieceCutInput in = input_for(dense, 0, 250);
  PieceCuts cuts(in, 3);
  check_span(dense, in, cuts, 0, 0, dense.blocks.size() - 1);
}

// Cutters started many times over, each cutting at once: none may wait forever (a thread that
// read the thread count while the others were still being started once never took a unit).
TEST(PieceCuts, EveryCutterStartsCutting) {
  const Corpus c = make_corpus(300, 200, 6);
  const PieceCutInput in = input_for(c, 20, 30);
  // Busy threads beside them, so that a thread is often stopped between two steps.
  std::atomic<bool> busy{true};
  std::vector<std::thread> load;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) {
    load.emplace_back([&] {
      while (busy.load(std::memory_order_relaxed)) {
      }
    });
  }
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread runs([&] {
    for (int k = 0; k < 1000; ++k) {
      PieceCuts cuts(in, 1 + k % 3);
      cuts.start(0, 0, c.blocks.size() - 1, c.tokens.data(), c.starts.data());
      PieceCut cut;
      if (!cuts.next(cut)) ADD_FAILURE() << "no piece, run " << k;
    }
    done.set_value();
  });
  if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "a cutter never gave its first piece\n");
    std::abort();  // the thread cannot be joined
  }
  runs.join();
  busy = false;
  for (std::thread& t : load) t.join();
}

TEST(PieceCuts, RefusesAnInputWithoutItsTables) {
  PieceCutInput in;
  EXPECT_THROW(PieceCuts(in, 1), Error);
}

}  // namespace
}  // namespace pagedw2v
