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
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "model/negative_pool.hpp"
#include "model/sampler.hpp"

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

// The same pieces, piece by piece: where each starts and ends, and its cold rows.
void expect_same_cuts(const std::vector<PieceCut>& a, const std::vector<PieceCut>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].first_sentence, b[k].first_sentence);
    EXPECT_EQ(a[k].last_sentence, b[k].last_sentence);
    EXPECT_EQ(a[k].cold, b[k].cold);
  }
}

TEST(PieceCuts, ThreadsGiveTheSameCutsInOrder) {
  const Corpus c = make_corpus(300, 900, 2);
  const PieceCutInput in = input_for(c, 30, 40);
  PieceCuts one(in, 1), four(in, 4);
  const auto a = check_span(c, in, one, 3, 0, c.blocks.size() - 1);
  const auto b = check_span(c, in, four, 3, 0, c.blocks.size() - 1);
  expect_same_cuts(a, b);
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

// A span named by expect() is cut while the span before it trains: its cuts are those of the
// span started cold, piece for piece, whether the expectation held, missed (another epoch,
// other blocks) or the span before it ended early.
TEST(PieceCuts, ExpectedSpansGiveTheCutsOfSpansStartedCold) {
  const Corpus c = make_corpus(300, 900, 5);
  PieceCutInput in = input_for(c, 25, 40);
  in.unit_blocks = 10;
  const uint64_t blocks = c.blocks.size() - 1, half = blocks / 2;
  const auto all = [&](PieceCuts& cuts) {
    std::vector<PieceCut> got;
    PieceCut cut;
    while (cuts.next(cut)) got.push_back(cut);
    return got;
  };
  PieceCuts cold(in, 2);
  const auto span = [&](uint32_t epoch, uint64_t first, uint64_t last) {
    cold.start(epoch, first, last, c.tokens.data(), c.starts.data());
    return all(cold);
  };
  const auto e0 = span(0, 0, half), e0b = span(0, half, blocks), e1 = span(1, 0, blocks);
  const auto e2 = span(2, 3, blocks);
  ASSERT_GT(e0.size(), 4u);
  for (const uint32_t threads : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    PieceCuts cuts(in, threads);
    // Held: the rest of epoch 0, then epoch 1.
    cuts.start(0, 0, half, c.tokens.data(), c.starts.data());
    cuts.expect(0, half, blocks);
    expect_same_cuts(all(cuts), e0);
    cuts.end();
    cuts.start(0, half, blocks, c.tokens.data(), c.starts.data());
    cuts.expect(1, 0, blocks);
    // Give the threads time to cut ahead of the span's end.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    expect_same_cuts(all(cuts), e0b);
    cuts.end();
    cuts.start(1, 0, blocks, c.tokens.data(), c.starts.data());
    // Missed: epoch 2 from block 0 expected, epoch 2 from block 3 comes, after an early end.
    cuts.expect(2, 0, blocks);
    PieceCut first;
    ASSERT_TRUE(cuts.next(first));
    cuts.end();
    EXPECT_FALSE(cuts.next(first));
    cuts.start(2, 3, blocks, c.tokens.data(), c.starts.data());
    expect_same_cuts(all(cuts), e2);
    // Expected, after another expectation replaced it while the threads cut that one ahead.
    cuts.start(1, 0, blocks, c.tokens.data(), c.starts.data());
    cuts.expect(0, 0, half);
    const auto again = all(cuts);
    expect_same_cuts(again, e1);
    cuts.expect(2, 3, blocks);
    cuts.end();
    cuts.start(2, 3, blocks, c.tokens.data(), c.starts.data());
    expect_same_cuts(all(cuts), e2);
    // Expected, never started: the object ends cleanly.
    cuts.expect(0, 0, blocks);
  }
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
  std::thread runs([&] {
    for (int k = 0; k < 1000; ++k) {
      PieceCuts cuts(in, 1 + k % 3);
      cuts.start(0, 0, c.blocks.size() - 1, c.tokens.data(), c.starts.data());
      PieceCut cut;
      if (!cuts.next(cut)) ADD_FAILURE() << "no piece, run " << k;
    }
  });
  // A cutter that never gives its first piece hangs here; the test's ctest timeout ends it.
  runs.join();
  busy = false;
  for (std::thread& t : load) t.join();
}

/// The units of blocks [first_block, last_block): the first to the next super-batch boundary,
/// then each twice as long as the one before, up to unit_blocks.
std::vector<uint64_t> unit_starts(const PieceCutInput& in, uint64_t first_block,
                                  uint64_t last_block) {
  std::vector<uint64_t> starts{first_block};
  uint64_t at =
      std::min<uint64_t>(last_block, (first_block / in.batch_blocks + 1) * in.batch_blocks);
  uint64_t size = in.batch_blocks;
  while (at < last_block) {
    starts.push_back(at);
    at = std::min<uint64_t>(last_block, at + size);
    size = std::min<uint64_t>(size * 2, std::max(in.unit_blocks, in.batch_blocks));
  }
  starts.push_back(last_block);
  return starts;
}

uint64_t union_size(const std::vector<std::vector<uint32_t>>& lists) {
  std::set<uint32_t> all;
  for (const auto& l : lists) all.insert(l.begin(), l.end());
  return all.size();
}

/// Whether sentences [a, b) of one piece keep within the stages' bounds.
bool within_bounds(const Corpus& c, const PieceCutInput& in, uint64_t a, uint64_t b) {
  if (b - a <= 1) return true;
  std::set<uint64_t> periods;
  for (uint64_t t = a; t < b; ++t) {
    periods.insert(static_cast<uint64_t>(std::upper_bound(c.blocks.begin(), c.blocks.end(), t) -
                                         c.blocks.begin() - 1) /
                   in.pool_blocks);
  }
  return (in.max_tokens == 0 || c.starts[b] - c.starts[a] <= in.max_tokens) &&
         (in.max_sentences == 0 || b - a <= in.max_sentences) &&
         (in.max_periods == 0 || periods.size() <= in.max_periods);
}

/// Checks the cuts of a span with the slots shared by `depth` pieces: each piece's cold rows
/// and pools, within one unit and the stages' bounds; with the depth − 1 pieces before it in
/// its unit its cold rows number at most the slots, and those they do not hold a depth's share
/// (a unit's first pieces a depth's share alone), and it took every sentence it could. Returns
/// the cuts.
std::vector<PieceCut> check_shared_span(const Corpus& c, const PieceCutInput& in, PieceCuts& cuts,
                                        uint32_t epoch, uint64_t first_block, uint64_t last_block) {
  cuts.start(epoch, first_block, last_block, c.tokens.data(), c.starts.data());
  std::vector<PieceCut> got;
  PieceCut cut;
  while (cuts.next(cut)) got.push_back(cut);
  const std::vector<uint64_t> units = unit_starts(in, first_block, last_block);
  uint64_t at = c.blocks[first_block];
  size_t unit = 0, in_unit = 0;
  const uint64_t first_share = std::min<uint64_t>(in.share, in.slots / in.depth);
  for (size_t i = 0; i < got.size(); ++i) {
    const PieceCut& p = got[i];
    SCOPED_TRACE("piece " + std::to_string(i) + " [" + std::to_string(p.first_sentence) + ", " +
                 std::to_string(p.last_sentence) + ")");
    EXPECT_EQ(p.first_sentence, at);
    EXPECT_LT(p.first_sentence, p.last_sentence);
    if (p.first_sentence >= p.last_sentence) break;
    at = p.last_sentence;
    while (c.blocks[units[unit + 1]] <= p.first_sentence) {
      ++unit;
      in_unit = 0;
    }
    const uint64_t unit_end = c.blocks[units[unit + 1]];
    EXPECT_LE(p.last_sentence, unit_end);
    EXPECT_EQ(p.cold, cold_rows(c, in, epoch, p.first_sentence, p.last_sentence));
    EXPECT_TRUE(within_bounds(c, in, p.first_sentence, p.last_sentence));
    // The pieces before it in its unit that may still hold slots.
    std::vector<std::vector<uint32_t>> with;
    for (size_t k = 1; k < in.depth && k <= in_unit; ++k) with.push_back(got[i - k].cold);
    const auto fits = [&](const std::vector<uint32_t>& cold) {
      if (in_unit + 1 < in.depth) return cold.size() <= first_share;
      std::vector<std::vector<uint32_t>> all = with;
      const uint64_t held = union_size(all);
      all.push_back(cold);
      const uint64_t together = union_size(all);
      return cold.size() <= in.share && together - held <= first_share && together <= in.slots;
    };
    if (p.last_sentence - p.first_sentence > 1) {
      EXPECT_TRUE(fits(p.cold));
    }
    // What the pipeline trusts instead of counting the union again.
    EXPECT_EQ(p.fits_with, fits(p.cold) ? std::min<uint64_t>(in_unit, in.depth - 1) : uint64_t{0});
    if (p.last_sentence < unit_end) {
      EXPECT_TRUE(!fits(cold_rows(c, in, epoch, p.first_sentence, p.last_sentence + 1)) ||
                  !within_bounds(c, in, p.first_sentence, p.last_sentence + 1));
    }
    ++in_unit;
  }
  EXPECT_EQ(at, c.blocks[last_block]);
  return got;
}

// Consecutive pieces share rows (a pool period's entries, the rarer words of a stretch of
// text), which hold one slot between them: counting the union of the pieces in flight against
// the slots cuts fewer, larger pieces than a share of the slots each.
TEST(PieceCuts, PiecesShareTheSlotsWithThePiecesBeforeThem) {
  const Corpus c = make_corpus(400, 3000, 11);
  PieceCutInput in = input_for(c, 40, 80);
  in.unit_blocks = 20;
  in.slots = 150;
  in.depth = 3;
  PieceCuts one(in, 1), four(in, 4);
  const auto a = check_shared_span(c, in, one, 2, 0, c.blocks.size() - 1);
  const auto b = check_shared_span(c, in, four, 2, 0, c.blocks.size() - 1);
  expect_same_cuts(a, b);
  // A span that starts inside a unit's grid, in another epoch.
  check_shared_span(c, in, four, 3, 7, c.blocks.size() - 2);
  // Slots so few that single sentences with their pools pass them: such a piece is one
  // sentence, and says that the cut could not fit it (fits_with 0).
  PieceCutInput few = in;
  few.slots = 30;
  PieceCuts tight(few, 2);
  const auto small = check_shared_span(c, few, tight, 2, 0, c.blocks.size() - 1);
  EXPECT_TRUE(
      std::any_of(small.begin(), small.end(), [](const PieceCut& p) { return p.fits_with == 0; }));
  // A share of the slots each, in units of one super-batch, as before.
  PieceCutInput apart = input_for(c, 40, in.slots / in.depth);
  PieceCuts each(apart, 2);
  const auto old = check_span(c, apart, each, 2, 0, c.blocks.size() - 1);
  EXPECT_LT(a.size() * 5, old.size() * 4) << a.size() << " pieces against " << old.size();
}

// The stages' bounds hold a piece beyond its first sentence: its tokens, sentences and pool
// periods, in units longer than a super-batch.
TEST(PieceCuts, PiecesKeepWithinTheStagesBounds) {
  const Corpus c = make_corpus(300, 1500, 12);
  for (const int bound : {0, 1, 2}) {
    SCOPED_TRACE("bound " + std::to_string(bound));
    PieceCutInput in = input_for(c, 30, 100000);
    in.unit_blocks = 40;
    in.slots = 300000;
    in.depth = 2;
    if (bound == 0) in.max_tokens = 60;
    if (bound == 1) in.max_sentences = 3;
    if (bound == 2) in.max_periods = 1;
    PieceCuts cuts(in, 3);
    const auto got = check_shared_span(c, in, cuts, 0, 0, c.blocks.size() - 1);
    ASSERT_FALSE(got.empty());
  }
}

TEST(PieceCuts, RefusesAnInputWithoutItsTables) {
  PieceCutInput in;
  EXPECT_THROW(PieceCuts(in, 1), Error);
}

}  // namespace
}  // namespace pagedw2v
