// The chunked multi-threaded row mover (bench/host_rows.hpp) against a plain loop: odd shapes,
// thread and chunk counts; chunks reported once and only when complete; scatters that read a
// chunk only after waiting for it; `meanwhile` run once by the caller; errors from callbacks.

#include "bench/host_rows.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pagedw2v {
namespace {

TEST(SplitRows, CoversInOrderWithNearlyEqualSizes) {
  for (uint64_t n : {0u, 1u, 2u, 7u, 16u, 17u, 1000u, 4099u}) {
    for (uint32_t parts : {0u, 1u, 2u, 3u, 16u, 5000u}) {
      const std::vector<RowRange> r = split_rows(n, parts);
      const uint64_t want = std::min<uint64_t>(std::max(parts, 1u), n);
      ASSERT_EQ(r.size(), want) << "n " << n << " parts " << parts;
      uint64_t at = 0, lo = n, hi = 0;
      for (const RowRange& c : r) {
        EXPECT_EQ(c.begin, at);
        EXPECT_GT(c.end, c.begin);
        lo = std::min(lo, c.size());
        hi = std::max(hi, c.size());
        at = c.end;
      }
      EXPECT_EQ(at, n);
      if (!r.empty()) {
        EXPECT_LE(hi - lo, 1u);
      }
    }
  }
}

struct Shape {
  uint32_t dim;
  uint64_t n;
  uint64_t table_rows;
  unsigned threads;
  uint32_t chunks;
  uint32_t seed;
};

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return "d" + std::to_string(s.dim) + "_n" + std::to_string(s.n) + "_t" +
         std::to_string(s.table_rows) + "_th" + std::to_string(s.threads) + "_c" +
         std::to_string(s.chunks) + "_s" + std::to_string(s.seed);
}

class HostRowsTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    const Shape& s = GetParam();
    rng_.seed(s.seed);
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    table_.resize(s.table_rows * s.dim);
    for (float& v : table_) v = value(rng_);
    // Distinct ids in random order, as the scatter needs.
    std::vector<uint32_t> all(s.table_rows);
    std::iota(all.begin(), all.end(), 0u);
    std::shuffle(all.begin(), all.end(), rng_);
    ids_.assign(all.begin(), all.begin() + s.n);
    chunks_ = split_rows(s.n, s.chunks);
    mover_ = std::make_unique<HostRowMover>(s.threads);
  }

  std::vector<float> poisoned(size_t count) const {
    return std::vector<float>(count, std::nanf(""));
  }

  const std::thread::id caller_ = std::this_thread::get_id();
  std::mt19937 rng_;
  std::vector<float> table_;
  std::vector<uint32_t> ids_;
  std::vector<RowRange> chunks_;
  std::unique_ptr<HostRowMover> mover_;
};

TEST_P(HostRowsTest, GatherMatchesLoopAndReportsEachChunkOnceComplete) {
  const Shape& s = GetParam();
  ASSERT_EQ(mover_->threads(), s.threads);
  std::vector<float> want(s.n * s.dim);
  for (uint64_t i = 0; i < s.n; ++i) {
    for (uint32_t c = 0; c < s.dim; ++c) want[i * s.dim + c] = table_[ids_[i] * s.dim + c];
  }
  // Several moves on one mover: the workers must pick up every one of them.
  for (int round = 0; round < 3; ++round) {
    std::vector<float> dense = poisoned(s.n * s.dim);
    std::vector<std::atomic<int>> calls(chunks_.size());
    std::atomic<int> incomplete{0};
    int meanwhile_calls = 0;
    mover_->gather(
        table_.data(), s.dim, ids_.data(), chunks_, dense.data(),
        [&](size_t k) {
          ASSERT_LT(k, chunks_.size());
          calls[k].fetch_add(1);
          for (uint64_t i = chunks_[k].begin * s.dim; i < chunks_[k].end * s.dim; ++i) {
            if (!(dense[i] == want[i])) incomplete.fetch_add(1);
          }
        },
        [&] {
          EXPECT_EQ(std::this_thread::get_id(), caller_);
          ++meanwhile_calls;
        });
    EXPECT_EQ(meanwhile_calls, 1);
    EXPECT_EQ(dense, want) << "round " << round;
    EXPECT_EQ(incomplete.load(), 0) << "a chunk was reported before all its rows were copied";
    for (size_t k = 0; k < chunks_.size(); ++k) EXPECT_EQ(calls[k].load(), 1) << "chunk " << k;
  }
}

TEST_P(HostRowsTest, ScatterMatchesLoopAndReadsChunksOnlyAfterWaiting) {
  const Shape& s = GetParam();
  std::uniform_real_distribution<float> value(10.0f, 20.0f);
  std::vector<float> rows(s.n * s.dim);
  for (float& v : rows) v = value(rng_);
  std::vector<float> want = table_;
  for (uint64_t i = 0; i < s.n; ++i) {
    for (uint32_t c = 0; c < s.dim; ++c) want[ids_[i] * s.dim + c] = rows[i * s.dim + c];
  }
  for (int round = 0; round < 2; ++round) {
    std::vector<float> table = table_;
    // The dense rows arrive only when their chunk is waited for: a scatter that read a chunk
    // before waiting would write NaN into the table.
    std::vector<float> dense = poisoned(s.n * s.dim);
    std::vector<std::once_flag> filled(chunks_.size());
    std::vector<std::atomic<int>> waits(chunks_.size());
    int meanwhile_calls = 0;
    mover_->scatter(
        table.data(), s.dim, ids_.data(), chunks_, dense.data(),
        [&](size_t k) {
          ASSERT_LT(k, chunks_.size());
          waits[k].fetch_add(1);
          std::call_once(filled[k], [&] {
            std::copy(rows.begin() + chunks_[k].begin * s.dim,
                      rows.begin() + chunks_[k].end * s.dim,
                      dense.begin() + chunks_[k].begin * s.dim);
          });
        },
        [&] {
          EXPECT_EQ(std::this_thread::get_id(), caller_);
          ++meanwhile_calls;
        });
    EXPECT_EQ(meanwhile_calls, 1);
    EXPECT_EQ(table, want) << "round " << round;
    for (size_t k = 0; k < chunks_.size(); ++k) {
      EXPECT_GE(waits[k].load(), 1) << "chunk " << k;
      EXPECT_LE(waits[k].load(), static_cast<int>(s.threads)) << "chunk " << k;
    }
  }
}

TEST_P(HostRowsTest, WithoutCallbacks) {
  const Shape& s = GetParam();
  std::vector<float> dense = poisoned(s.n * s.dim);
  mover_->gather(table_.data(), s.dim, ids_.data(), chunks_, dense.data());
  std::vector<float> table(table_.size(), 0.0f);
  mover_->scatter(table.data(), s.dim, ids_.data(), chunks_, dense.data());
  for (uint64_t i = 0; i < s.n; ++i) {
    for (uint32_t c = 0; c < s.dim; ++c) {
      ASSERT_EQ(table[ids_[i] * s.dim + c], table_[ids_[i] * s.dim + c]) << "row " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, HostRowsTest,
    ::testing::Values(Shape{1, 1, 3, 1, 1, 1}, Shape{3, 5, 9, 2, 3, 2},
                      Shape{7, 100, 257, 3, 16, 3}, Shape{128, 1000, 4099, 4, 16, 4},
                      Shape{129, 4099, 10007, 8, 13, 5}, Shape{16, 2049, 2049, 5, 1, 6},
                      Shape{5, 37, 100, 8, 64, 7}, Shape{64, 10000, 50021, 16, 8, 8},
                      Shape{2, 0, 10, 4, 8, 9}),
    shape_name);

TEST(HostRowMover, EmptyChunksAreReportedOnceAndNeverWaitedFor) {
  std::vector<float> table = {1, 2, 3, 4, 5, 6};
  const std::vector<uint32_t> ids = {2, 0};
  const std::vector<RowRange> chunks = {{0, 0}, {0, 1}, {1, 1}, {1, 2}};
  HostRowMover mover(3);
  std::vector<float> dense(4, std::nanf(""));
  std::vector<int> calls(chunks.size(), 0);
  std::mutex m;
  mover.gather(table.data(), 2, ids.data(), chunks, dense.data(), [&](size_t k) {
    std::lock_guard<std::mutex> lock(m);
    ++calls[k];
  });
  EXPECT_EQ(dense, (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(calls, (std::vector<int>{1, 1, 1, 1}));
  std::vector<int> waits(chunks.size(), 0);
  mover.scatter(table.data(), 2, ids.data(), chunks, dense.data(), [&](size_t k) {
    std::lock_guard<std::mutex> lock(m);
    ++waits[k];
  });
  EXPECT_EQ(waits[0], 0);
  EXPECT_EQ(waits[2], 0);
  EXPECT_GE(waits[1], 1);
  EXPECT_GE(waits[3], 1);
}

TEST(HostRowMover, CallbackErrorsReachTheCallerAndTheMoverStaysUsable) {
  const uint32_t dim = 4;
  const uint64_t rows = 5000;
  std::vector<float> table(rows * dim);
  std::iota(table.begin(), table.end(), 1.0f);
  std::vector<uint32_t> ids(rows);
  std::iota(ids.rbegin(), ids.rend(), 0u);
  const std::vector<RowRange> chunks = split_rows(rows, 10);
  HostRowMover mover(4);
  std::vector<float> dense(rows * dim);
  EXPECT_THROW(mover.gather(table.data(), dim, ids.data(), chunks, dense.data(),
                            [](size_t k) {
                              if (k == 3) throw std::runtime_error("DMA failed");
                            }),
               std::runtime_error);
  EXPECT_THROW(mover.scatter(table.data(), dim, ids.data(), chunks, dense.data(),
                             [](size_t k) {
                               if (k == 0) throw std::runtime_error("event failed");
                             }),
               std::runtime_error);
  EXPECT_THROW(mover.gather(table.data(), dim, ids.data(), chunks, dense.data(), {},
                            [] { throw std::runtime_error("launch failed"); }),
               std::runtime_error);
  std::fill(dense.begin(), dense.end(), 0.0f);
  mover.gather(table.data(), dim, ids.data(), chunks, dense.data());
  for (uint64_t i = 0; i < rows; ++i) {
    ASSERT_EQ(dense[i * dim], table[ids[i] * dim]) << "row " << i;
  }
}

TEST(HostRowMover, ZeroThreadsMeansEveryCore) {
  HostRowMover mover(0);
  EXPECT_GE(mover.threads(), 1u);
}

}  // namespace
}  // namespace pagedw2v
