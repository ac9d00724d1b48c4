// Host tables of 16-bit storage on the GPU: the row moves (kernels/paging.hpp) widen rows coming
// in and round rows going out stochastically, compared value by value with storage.hpp's CPU
// functions on the same rounding bits; and the resident copies of DeviceTables, both ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_tables.hpp"
#include "gpu/stream.hpp"
#include "kernels/paging.hpp"
#include "model/model.hpp"
#include "model/storage.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::upload;

/// What the kernels store for device value v of table t, column d.
uint16_t rounded(Storage s, float v, uint64_t seed, uint32_t t, uint32_t d) {
  return half_write_back(s, v, seed, t, d);
}

/// Names the first value of `got` that differs from `want` in its bits (and whether a NaN
/// or Inf appeared).
::testing::AssertionResult same_floats(const std::vector<float>& got,
                                       const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], 4) != 0) {
      return ::testing::AssertionFailure() << "value " << i << " is " << got[i] << ", expected "
                                           << want[i] << (std::isfinite(got[i]) ? "" : " (!)");
    }
  }
  return ::testing::AssertionSuccess();
}

// Every table, every direction, both thread mappings (dims that take 4 values a lane and 1),
// entries to skip, listed and consecutive device rows, striding and claiming warps.
class CudaHalfMoves : public ::testing::TestWithParam<std::tuple<Storage, bool, bool>> {};

TEST_P(CudaHalfMoves, MatchTheCpuReference) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [storage, interleaved, claimed] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  DeviceBuffer<unsigned long long> d_claim(1, "claim counter");
  // 7: a value a lane; 20: four; 40, 128 and 200: eight, a piece of lanes spanning tables.
  for (const uint32_t dim : {7u, 20u, 40u, 128u, 200u}) {
    const uint32_t stride = (dim + 3) & ~3u, vocab = 1000, dev_rows = 900, n = 200;
    const std::string what = to_string(storage) + " dim " + std::to_string(dim) +
                             (interleaved ? " interleaved" : " apart") +
                             (claimed ? " claimed" : " striding");
    std::mt19937_64 rng(seed + dim);
    // Magnitudes over many binades, fp16's subnormals included.
    auto value = [&] {
      const float m = std::ldexp(std::uniform_real_distribution<float>(0.5f, 1)(rng),
                                 -static_cast<int>(rng() % 26));
      return (rng() & 1) ? m : -m;
    };
    std::vector<uint32_t> list(vocab);
    for (uint32_t i = 0; i < vocab; ++i) list[i] = i;
    std::shuffle(list.begin(), list.end(), rng);
    std::vector<uint32_t> evicted(list.begin() + n, list.begin() + 2 * n);
    for (uint32_t k = 2; k < n; k += 4) evicted[k] = kNoRow;
    list.resize(n);
    std::sort(list.begin(), list.end());
    std::vector<uint32_t> rows(dev_rows);
    for (uint32_t i = 0; i < dev_rows; ++i) rows[i] = i;
    std::shuffle(rows.begin(), rows.end(), rng);
    rows.resize(n);
    std::vector<uint32_t> in = list, out = list;
    for (uint32_t k = 0; k < n; k += 3) in[k] = kNoRow;
    for (uint32_t k = 1; k < n; k += 2) out[k] = kNoRow;
    const int tables = 4;
    const size_t host_stride = interleaved ? size_t{tables} * dim : dim;
    // The reference: host values (16-bit patterns) and device values (fp32, padding zero).
    std::vector<std::vector<uint16_t>> host(tables, std::vector<uint16_t>(size_t{vocab} * dim));
    std::vector<std::vector<float>> dev(tables, std::vector<float>(size_t{dev_rows} * stride));
    for (auto& t : host)
      for (uint16_t& x : t) x = half_round_nearest(storage, value());
    for (auto& t : dev)
      for (size_t i = 0; i < t.size(); ++i) t[i] = i % stride < dim ? value() : 0.0f;
    std::vector<uint16_t*> pinned(interleaved ? 1 : tables);
    for (uint16_t*& p : pinned) {
      PAGEDW2V_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&p), size_t{vocab} * host_stride * 2,
                                      cudaHostAllocMapped));
    }
    auto base = [&](int t) { return interleaved ? pinned[0] + size_t(t) * dim : pinned[t]; };
    auto host_equal = [&](int t) -> ::testing::AssertionResult {
      for (size_t r = 0; r < vocab; ++r)
        for (uint32_t d = 0; d < dim; ++d)
          if (base(t)[r * host_stride + d] != host[t][r * dim + d])
            return ::testing::AssertionFailure()
                   << "host row " << r << " column " << d << " is " << base(t)[r * host_stride + d]
                   << ", expected " << host[t][r * dim + d];
      return ::testing::AssertionSuccess();
    };
    std::vector<DeviceBuffer<float>> d_dev;
    MoveArgs m;
    for (int t = 0; t < tables; ++t) {
      for (size_t r = 0; r < vocab; ++r)
        std::memcpy(base(t) + r * host_stride, &host[t][r * dim], dim * 2);
      d_dev.push_back(upload(dev[t]));
      m.tables[t] = PagedTable{base(t), d_dev[t].data()};
    }
    m.table_count = tables;
    m.dim = dim;
    m.stride = stride;
    m.host_stride = static_cast<uint32_t>(host_stride);
    m.host_storage = storage;
    m.round_seed = seed;
    m.n = n;
    if (claimed) {
      m.claim = d_claim.data();
      m.max_blocks = 1;
    }
    DeviceBuffer<uint32_t> d_in = upload(in), d_out = upload(out), d_rows = upload(rows);
    Stream st;

    // In: widened exactly into the listed device rows.
    m.host_rows = d_in.data();
    m.dev_rows = d_rows.data();
    launch_move_rows(MoveKind::kToDevice, m, st.get());
    st.synchronize();
    for (int t = 0; t < tables; ++t) {
      for (uint32_t k = 0; k < n; ++k) {
        if (in[k] == kNoRow) continue;
        for (uint32_t d = 0; d < dim; ++d)
          dev[t][size_t{rows[k]} * stride + d] =
              half_to_float(storage, host[t][size_t{in[k]} * dim + d]);
      }
      ASSERT_TRUE(same_floats(download(d_dev[t], dev[t].size()), dev[t]))
          << what << " in, table " << t;
    }
    // Out: consecutive device rows from dev_base, rounded stochastically; the device rows take
    // the rounded values too.
    for (auto& t : dev)
      for (size_t i = 0; i < t.size(); ++i) t[i] = i % stride < dim ? value() : 0.0f;
    for (int t = 0; t < tables; ++t) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpy(d_dev[t].data(), dev[t].data(), dev[t].size() * 4, cudaMemcpyHostToDevice));
    }
    m.host_rows = d_out.data();
    m.dev_rows = nullptr;
    m.dev_base = 50;
    launch_move_rows(MoveKind::kToHost, m, st.get());
    st.synchronize();
    uint64_t rounded_up = 0, rounded_at_all = 0;
    for (int t = 0; t < tables; ++t) {
      for (uint32_t k = 0; k < n; ++k) {
        if (out[k] == kNoRow) continue;
        for (uint32_t d = 0; d < dim; ++d) {
          float& v = dev[t][(50 + size_t{k}) * stride + d];
          const uint16_t h = rounded(storage, v, seed, t, d);
          if (half_round_nearest(storage, v) != h) ++rounded_up;
          if (half_to_float(storage, h) != v) ++rounded_at_all;
          host[t][size_t{out[k]} * dim + d] = h;
          v = half_to_float(storage, h);
        }
      }
      EXPECT_TRUE(host_equal(t)) << what << " out, table " << t;
      EXPECT_TRUE(same_floats(download(d_dev[t], dev[t].size()), dev[t]))
          << what << " out (device write-back), table " << t;
    }
    // Stochastic, not nearest: a good share of the values rounded away from the nearest.
    EXPECT_GT(rounded_up, rounded_at_all / 5) << what;

    // Identity rows (host_rows null): device rows 0 … 99 from host rows 0 … 99.
    m.host_rows = nullptr;
    m.dev_rows = nullptr;
    m.dev_base = 0;
    m.n = 100;
    launch_move_rows(MoveKind::kToDevice, m, st.get());
    st.synchronize();
    for (int t = 0; t < tables; ++t) {
      for (size_t r = 0; r < 100; ++r)
        for (uint32_t d = 0; d < dim; ++d)
          dev[t][r * stride + d] = half_to_float(storage, host[t][r * dim + d]);
      ASSERT_TRUE(same_floats(download(d_dev[t], dev[t].size()), dev[t]))
          << what << " identity, table " << t;
    }
    m.n = n;
    // Swap: listed device rows go back to the evicted ids (rounded; the slot is then
    // overwritten, or keeps its fp32 value when nothing comes in) while the list's rows come in.
    for (int t = 0; t < tables; ++t) {
      for (size_t i = 0; i < dev[t].size(); ++i) dev[t][i] = i % stride < dim ? value() : 0.0f;
      PAGEDW2V_CUDA_TRY(
          cudaMemcpy(d_dev[t].data(), dev[t].data(), dev[t].size() * 4, cudaMemcpyHostToDevice));
    }
    DeviceBuffer<uint32_t> d_evicted = upload(evicted);
    m.host_rows = d_in.data();
    m.out_rows = d_evicted.data();
    m.dev_rows = d_rows.data();
    launch_move_rows(MoveKind::kSwap, m, st.get());
    st.synchronize();
    for (int t = 0; t < tables; ++t) {
      for (uint32_t k = 0; k < n; ++k) {
        for (uint32_t d = 0; d < dim; ++d) {
          float& v = dev[t][size_t{rows[k]} * stride + d];
          if (evicted[k] != kNoRow) {
            host[t][size_t{evicted[k]} * dim + d] = rounded(storage, v, seed, t, d);
          }
          if (in[k] != kNoRow) v = half_to_float(storage, host[t][size_t{in[k]} * dim + d]);
        }
      }
      EXPECT_TRUE(same_floats(download(d_dev[t], dev[t].size()), dev[t]))
          << what << " swap, table " << t;
      EXPECT_TRUE(host_equal(t)) << what << " swap, table " << t;
    }
    for (uint16_t* p : pinned) cudaFreeHost(p);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaHalfMoves,
                         ::testing::Combine(::testing::Values(Storage::kBf16, Storage::kFp16),
                                            ::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_interleaved" : "_apart") +
                                  (std::get<2>(info.param) ? "_claimed" : "_striding");
                         });

// In-place rounding of the listed rows (the optimizer step's lists): those rows take their
// write-back values, every other row and the padding keep their bits; the count is read on the
// device and bounded by the capacity.
class CudaRoundRows : public ::testing::TestWithParam<Storage> {};

TEST_P(CudaRoundRows, MatchTheCpuReference) {
  PAGEDW2V_REQUIRE_GPU();
  const Storage storage = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const uint32_t dim : {5u, 100u}) {
    const uint32_t stride = (dim + 3) & ~3u, rows = 5000, listed = 1200;
    std::vector<float> table(size_t{rows} * stride);
    for (size_t i = 0; i < table.size(); ++i) table[i] = i % stride < dim ? u(rng) : 7.0f;
    std::vector<uint32_t> all(rows);
    for (uint32_t i = 0; i < rows; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<uint32_t> list(all.begin(), all.begin() + listed);
    for (const uint32_t count : {0u, 700u, listed + 500}) {
      const uint32_t capacity = listed;
      DeviceBuffer<float> d_table = upload(table);
      DeviceBuffer<uint32_t> d_list = upload(list), d_count = upload(std::vector<uint32_t>{count});
      Stream st;
      launch_round_rows(storage, seed, 3, d_table.data(), stride, dim, d_list.data(),
                        d_count.data(), capacity, st.get());
      st.synchronize();
      std::vector<float> want = table;
      for (uint32_t k = 0; k < std::min(count, capacity); ++k) {
        for (uint32_t d = 0; d < dim; ++d) {
          float& v = want[size_t{list[k]} * stride + d];
          v = half_to_float(storage, half_write_back(storage, v, seed, 3, d));
        }
      }
      EXPECT_TRUE(same_floats(download(d_table, want.size()), want))
          << to_string(storage) << " dim " << dim << " count " << count;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaRoundRows, ::testing::Values(Storage::kBf16, Storage::kFp16),
                         [](const auto& info) { return to_string(info.param); });

// Resident tables of a 16-bit model: copied to the device widened, back rounded stochastically
// (the device keeping the rounded values), through the staging buffer; device tables apart and
// interleaved (rows read and written at the tables' pitch).
class CudaHalfResident : public ::testing::TestWithParam<std::tuple<Storage, TableLayout>> {};

/// Device rows `rows` × `stride` floats of `table`, whose rows lie `pitch` floats apart.
std::vector<float> download_rows(const float* table, uint32_t rows, uint32_t stride,
                                 uint32_t pitch) {
  std::vector<float> v(size_t{rows} * stride);
  PAGEDW2V_CUDA_TRY(cudaMemcpy2D(v.data(), stride * 4, table, size_t{pitch} * 4, stride * 4, rows,
                                 cudaMemcpyDeviceToHost));
  return v;
}

TEST_P(CudaHalfResident, CopiesBothWays) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [storage, layout] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  // Rows over three staging chunks of 8 MiB.
  const uint32_t rows = 300000, dim = 30, stride = 32;
  Model model = allocate_model(rows, dim, OptimizerKind::kSgd, false, "", storage);
  std::vector<float> in(size_t{rows} * dim), out(size_t{rows} * dim);
  for (float& x : in) x = u(rng);
  for (float& x : out) x = u(rng);
  model.input.copy_from(in.data());
  model.output.copy_from(out.data());
  Stream st;
  DeviceTables tables(model, OptimizerKind::kSgd, stride, rows, layout, kDefaultTableSkew,
                      st.get());
  const uint32_t pitch = tables.pitch();
  EXPECT_EQ(pitch, layout == TableLayout::kInterleaved ? 2 * stride : stride);
  tables.copy_all(cudaMemcpyHostToDevice, st.get());
  const HostTable* host[2] = {&model.input, &model.output};
  float* device[2] = {tables.input(), tables.output()};
  std::vector<std::vector<float>> dev(2, std::vector<float>(size_t{rows} * stride));
  for (int t = 0; t < 2; ++t) {
    std::vector<float> row(dim);
    for (uint32_t r = 0; r < rows; ++r) {
      host[t]->read_row(r, row.data());
      std::copy(row.begin(), row.end(), dev[t].begin() + size_t{r} * stride);
    }
    ASSERT_TRUE(same_floats(download_rows(device[t], rows, stride, pitch), dev[t]))
        << "to the device, table " << t;
  }
  // New device values (as training would leave them), then back to the host.
  for (int t = 0; t < 2; ++t) {
    for (size_t i = 0; i < dev[t].size(); ++i) dev[t][i] = i % stride < dim ? u(rng) : 0.0f;
    PAGEDW2V_CUDA_TRY(cudaMemcpy2D(device[t], size_t{pitch} * 4, dev[t].data(), stride * 4,
                                   stride * 4, rows, cudaMemcpyHostToDevice));
  }
  tables.copy_all(cudaMemcpyDeviceToHost, st.get());
  for (int t = 0; t < 2; ++t) {
    const auto* h = static_cast<const uint16_t*>(host[t]->raw());
    uint64_t differ = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t d = 0; d < dim; ++d) {
        float& v = dev[t][size_t{r} * stride + d];
        const uint16_t want = rounded(storage, v, DeviceTables::kRoundSeed, t, d);
        differ += h[size_t{r} * dim + d] != want;
        v = half_to_float(storage, want);
      }
    }
    EXPECT_EQ(differ, 0u) << "to the host, table " << t;
    EXPECT_TRUE(same_floats(download_rows(device[t], rows, stride, pitch), dev[t]))
        << "device after the write-back, table " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CudaHalfResident,
    ::testing::Combine(::testing::Values(Storage::kBf16, Storage::kFp16),
                       ::testing::Values(TableLayout::kApart, TableLayout::kInterleaved)),
    [](const auto& info) {
      return to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) == TableLayout::kInterleaved ? "_interleaved" : "_apart");
    });

}  // namespace
}  // namespace pagedw2v
