// The row-moving kernels (apps/bench/gather.hpp) and the id sort/dedup (apps/bench/unique_ids.hpp)
// against CPU references: random ids with repeats, unsorted; host tables in pinned, mapped memory
// (the paged layout) and in device memory; outputs poisoned with NaN before every launch.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/gather.hpp"
#include "bench/pinned_allocator.hpp"
#include "bench/unique_ids.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/replica_delta.hpp"
#include "model/host_table.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::upload;

struct Shape {
  uint32_t dim, batch;
  uint64_t table_rows;
  uint32_t seed;
};

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return "d" + std::to_string(s.dim) + "_n" + std::to_string(s.batch) + "_t" +
         std::to_string(s.table_rows) + "_s" + std::to_string(s.seed);
}

void poison(DeviceBuffer<float>& d) {
  const std::vector<float> nan(d.size(), std::nanf(""));
  PAGEDW2V_CUDA_TRY(
      cudaMemcpy(d.data(), nan.data(), nan.size() * sizeof(float), cudaMemcpyHostToDevice));
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());  // see upload()
}

class GatherTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    PAGEDW2V_REQUIRE_GPU();
    const Shape& s = GetParam();
    stream_owner_ = std::make_unique<Stream>();
    stream_ = stream_owner_->get();
    rng_.seed(s.seed);
    PinnedAllocatorOptions o;
    o.slab_bytes = size_t{1} << 20;  // small slabs, so tables span several
    o.on_failure = PinFailure::kStop;
    allocator_ = std::make_unique<PinnedAllocator>(o);
    table_ = HostTable(s.table_rows, s.dim, "test table", "hint", *allocator_);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    for (uint64_t i = 0; i < s.table_rows * s.dim; ++i) table_.data()[i] = value(rng_);
    d_table_ = static_cast<float*>(allocator_->device_pointer(table_.data()));
    ASSERT_NE(d_table_, nullptr);
    // Ids with repeats, unsorted: half the draws from a small hot set.
    std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(s.table_rows - 1));
    std::uniform_int_distribution<uint32_t> hot(
        0, static_cast<uint32_t>(std::min<uint64_t>(s.table_rows, 16) - 1));
    ids_.resize(s.batch);
    for (uint32_t& id : ids_) id = (rng_() & 1) ? any(rng_) : hot(rng_);
    if (s.batch > 2) ids_[1] = static_cast<uint32_t>(s.table_rows - 1);  // the last row too
  }

  /// The CPU reference gather: row i = table[ids[i]].
  std::vector<float> reference(const std::vector<uint32_t>& ids) const {
    const uint32_t dim = GetParam().dim;
    std::vector<float> out(ids.size() * dim);
    for (size_t i = 0; i < ids.size(); ++i) {
      std::copy(table_.row(ids[i]), table_.row(ids[i]) + dim, out.begin() + i * dim);
    }
    return out;
  }

  std::mt19937_64 rng_;
  std::unique_ptr<PinnedAllocator> allocator_;
  HostTable table_;
  float* d_table_ = nullptr;
  std::vector<uint32_t> ids_;
  std::unique_ptr<Stream> stream_owner_;  // made in SetUp: a Stream needs a device
  cudaStream_t stream_ = nullptr;
};

void expect_rows_equal(const std::vector<float>& got, const std::vector<float>& want, uint32_t dim,
                       const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i]))
        << what << ": element " << i << " (row " << i / dim << ") was not written";
    ASSERT_EQ(got[i], want[i]) << what << ": row " << i / dim << " col " << i % dim;
  }
}

TEST_P(GatherTest, GatherMatchesCpu) {
  const uint32_t dim = GetParam().dim, n = GetParam().batch;
  DeviceBuffer<uint32_t> d_ids = upload(ids_, "ids");
  DeviceBuffer<float> d_out(size_t{n} * dim, "out");
  const std::vector<float> want = reference(ids_);
  // Warps striding or claiming rows from a counter; the counter is reused, so each launch must
  // reset it.
  DeviceBuffer<unsigned long long> d_claim(1, "claim counter");
  for (unsigned long long* claim : {static_cast<unsigned long long*>(nullptr), d_claim.data()}) {
    for (const GatherTuning& t :
         {GatherTuning{1, 0}, GatherTuning{4, 0}, GatherTuning{2, 1}, GatherTuning{8, 2}}) {
      poison(d_out);
      launch_gather_rows(d_table_, dim, d_ids.data(), n, nullptr, d_out.data(), stream_, t, claim);
      PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
      expect_rows_equal(download(d_out), want, dim,
                        claim ? "coalesced, claimed" : "coalesced, other launch shapes");
    }
  }
  for (const bool thread_per_row : {false, true}) {
    poison(d_out);
    if (thread_per_row) {
      launch_gather_rows_thread_per_row(d_table_, dim, d_ids.data(), n, d_out.data(), stream_);
    } else {
      launch_gather_rows(d_table_, dim, d_ids.data(), n, nullptr, d_out.data(), stream_);
    }
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
    expect_rows_equal(download(d_out), want, dim, thread_per_row ? "thread per row" : "coalesced");
  }
}

TEST_P(GatherTest, GatherFromDeviceTableAndUnalignedBuffers) {
  const uint32_t dim = GetParam().dim, n = GetParam().batch;
  const uint64_t rows = GetParam().table_rows;
  // The table one float past a 16-byte boundary: the kernels must take their 4-byte path.
  DeviceBuffer<float> d_table(rows * dim + 1, "device table");
  PAGEDW2V_CUDA_TRY(cudaMemset(d_table.data(), 0, d_table.bytes()));
  // From a pageable copy: one cudaMemcpy may not span the pinned table's slabs.
  const std::vector<float> flat_host(table_.data(), table_.data() + rows * dim);
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_table.data() + 1, flat_host.data(), rows * dim * sizeof(float),
                               cudaMemcpyHostToDevice));
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  DeviceBuffer<uint32_t> d_ids = upload(ids_, "ids");
  DeviceBuffer<float> d_out(size_t{n} * dim + 1, "out");
  for (const int shift : {0, 1}) {
    poison(d_out);
    launch_gather_rows(d_table.data() + shift, dim, d_ids.data(), n, nullptr, d_out.data() + shift,
                       stream_);
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
    std::vector<float> got = download(d_out);
    got.erase(got.begin(), got.begin() + shift);
    got.resize(size_t{n} * dim);
    if (shift == 0) {
      // Aligned device table holds the rows shifted by one float: compare against that.
      std::vector<float> flat(rows * dim + 1);
      PAGEDW2V_CUDA_TRY(cudaMemcpy(flat.data(), d_table.data(), flat.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost));
      std::vector<float> want(size_t{n} * dim);
      for (uint32_t i = 0; i < n; ++i) {
        std::copy(flat.begin() + size_t{ids_[i]} * dim, flat.begin() + size_t{ids_[i] + 1} * dim,
                  want.begin() + size_t{i} * dim);
      }
      expect_rows_equal(got, want, dim, "device table, aligned");
    } else {
      expect_rows_equal(got, reference(ids_), dim, "device table, unaligned");
    }
  }
}

TEST_P(GatherTest, SortUniqueMatchesCpu) {
  const uint32_t n = GetParam().batch;
  std::vector<uint32_t> want = ids_;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  DeviceBuffer<uint32_t> d_ids = upload(ids_, "ids");
  DeviceBuffer<uint32_t> d_sorted(n, "sorted"), d_unique(n, "unique");
  DeviceBuffer<uint32_t> d_count = upload(std::vector<uint32_t>{0xdeadbeefu}, "count");
  const size_t temp_bytes = sort_unique_ids_temp_bytes(n);
  DeviceBuffer<unsigned char> d_temp(temp_bytes, "temp");
  PAGEDW2V_CUDA_TRY(cudaMemset(d_unique.data(), 0xff, n * sizeof(uint32_t)));
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());  // see upload()
  launch_sort_unique_ids(d_ids.data(), n, id_bits(GetParam().table_rows), d_sorted.data(),
                         d_unique.data(), d_count.data(), d_temp.data(), temp_bytes, stream_);
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
  const uint32_t count = download(d_count)[0];
  ASSERT_EQ(count, want.size());
  std::vector<uint32_t> got = download(d_unique);
  got.resize(count);
  EXPECT_EQ(got, want);
}

TEST_P(GatherTest, SortedPipelineGathersAndScattersBack) {
  const uint32_t dim = GetParam().dim, n = GetParam().batch;
  std::vector<uint32_t> uniq = ids_;
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());

  DeviceBuffer<uint32_t> d_ids = upload(ids_, "ids");
  DeviceBuffer<uint32_t> d_sorted(n, "sorted"), d_unique(n, "unique"), d_count(1, "count");
  const size_t temp_bytes = sort_unique_ids_temp_bytes(n);
  DeviceBuffer<unsigned char> d_temp(temp_bytes, "temp");
  DeviceBuffer<float> d_rows(size_t{n} * dim, "rows");
  DeviceBuffer<unsigned long long> d_claim(1, "claim counter");
  launch_sort_unique_ids(d_ids.data(), n, id_bits(GetParam().table_rows), d_sorted.data(),
                         d_unique.data(), d_count.data(), d_temp.data(), temp_bytes, stream_);
  // The count stays on the device: rows past it must stay untouched. Striding and claimed.
  for (const bool claimed : {false, true}) {
    poison(d_rows);
    launch_gather_rows(d_table_, dim, d_unique.data(), n, d_count.data(), d_rows.data(), stream_,
                       GatherTuning{}, claimed ? d_claim.data() : nullptr);
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
    std::vector<float> got = download(d_rows);
    const size_t written = uniq.size() * dim;
    for (size_t i = written; i < got.size(); ++i) {
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " past the unique count was written";
    }
    got.resize(written);
    expect_rows_equal(got, reference(uniq), dim,
                      claimed ? "sorted gather, claimed" : "sorted gather");
  }

  // Scatter fresh values back through each kernel; untouched rows must keep theirs.
  for (const int way : {0, 1, 2}) {
    const bool thread_per_row = way == 2, claimed = way == 1;
    std::vector<float> fresh(size_t{n} * dim);
    std::uniform_real_distribution<float> value(3.0f, 5.0f);
    for (float& x : fresh) x = value(rng_);
    const std::vector<float> before(table_.data(), table_.data() + table_.rows() * dim);
    DeviceBuffer<float> d_fresh = upload(fresh, "fresh");
    if (thread_per_row) {
      DeviceBuffer<uint32_t> d_uniq = upload(uniq, "unique ids");
      launch_scatter_rows_thread_per_row(d_table_, dim, d_uniq.data(),
                                         static_cast<uint32_t>(uniq.size()), d_fresh.data(),
                                         stream_);
    } else {
      launch_scatter_rows(d_table_, dim, d_unique.data(), n, d_count.data(), d_fresh.data(),
                          stream_, GatherTuning{}, claimed ? d_claim.data() : nullptr);
    }
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_));
    std::vector<float> want = before;
    for (size_t i = 0; i < uniq.size(); ++i) {
      std::copy(fresh.begin() + i * dim, fresh.begin() + (i + 1) * dim,
                want.begin() + size_t{uniq[i]} * dim);
    }
    const std::vector<float> after(table_.data(), table_.data() + table_.rows() * dim);
    expect_rows_equal(after, want, dim,
                      thread_per_row ? "scatter, thread per row"
                      : claimed      ? "scatter, claimed"
                                     : "scatter");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GatherTest,
                         ::testing::Values(Shape{1, 1000, 3000, 1}, Shape{7, 777, 2000, 2},
                                           Shape{33, 2048, 4096, 3}, Shape{128, 4096, 20000, 4},
                                           Shape{300, 1500, 3000, 5}, Shape{128, 1, 10, 6},
                                           Shape{4, 70000, 1u << 17, 7},
                                           Shape{128, 5000, 100000, 8}),
                         shape_name);

TEST(GatherEdge, EmptyBatchIsANoOp) {
  PAGEDW2V_REQUIRE_GPU();
  launch_gather_rows(nullptr, 128, nullptr, 0, nullptr, nullptr, nullptr);
  launch_scatter_rows(nullptr, 128, nullptr, 0, nullptr, nullptr, nullptr);
  DeviceBuffer<uint32_t> d_count = upload(std::vector<uint32_t>{7}, "count");
  launch_sort_unique_ids(nullptr, 0, 8, nullptr, nullptr, d_count.data(), nullptr, 0, nullptr);
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(download(d_count)[0], 0u);
}

TEST(IdBits, CoversTheBound) {
  EXPECT_EQ(id_bits(1), 1u);
  EXPECT_EQ(id_bits(2), 1u);
  EXPECT_EQ(id_bits(3), 2u);
  EXPECT_EQ(id_bits(1u << 24), 24u);
  EXPECT_EQ(id_bits((1u << 24) + 1), 25u);
  EXPECT_EQ(id_bits(10000000), 24u);
  EXPECT_EQ(id_bits(uint64_t{1} << 32), 32u);
}

}  // namespace

// The passes of summing replicated tables over GPU ranks (kernels/replica_delta.hpp) against
// the CPU's loop (dist/replica_backend.cpp): the same floats, bit for bit, over a length that
// is not a multiple of a block.
TEST(CudaReplicaDelta, TakeAndApplyAsTheCpuLoop) {
  PAGEDW2V_REQUIRE_GPU();
  const uint64_t n = 300001;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> copy(n), snap(n), other(n);
  for (uint64_t i = 0; i < n; ++i) {
    snap[i] = u(rng);
    copy[i] = snap[i] + 1e-3f * u(rng);
    other[i] = 1e-3f * u(rng);  // what another rank changed
  }
  Stream stream;
  DeviceBuffer<float> d_copy(n, "copy"), d_snap(n, "snapshot"), d_delta(n, "delta");
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_copy.data(), copy.data(), n * 4, cudaMemcpyHostToDevice));
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_snap.data(), snap.data(), n * 4, cudaMemcpyHostToDevice));
  launch_take_delta(d_copy.data(), d_snap.data(), d_delta.data(), n, stream.get());
  stream.synchronize();
  std::vector<float> delta(n);
  PAGEDW2V_CUDA_TRY(cudaMemcpy(delta.data(), d_delta.data(), n * 4, cudaMemcpyDeviceToHost));
  std::vector<float> sum(n), want_snap(n);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(delta[i], copy[i] - snap[i]) << i;
    sum[i] = delta[i] + other[i];
    want_snap[i] = snap[i] + sum[i];
  }
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_delta.data(), sum.data(), n * 4, cudaMemcpyHostToDevice));
  launch_apply_sum(d_copy.data(), d_snap.data(), d_delta.data(), n, stream.get());
  stream.synchronize();
  std::vector<float> got_copy(n), got_snap(n);
  PAGEDW2V_CUDA_TRY(cudaMemcpy(got_copy.data(), d_copy.data(), n * 4, cudaMemcpyDeviceToHost));
  PAGEDW2V_CUDA_TRY(cudaMemcpy(got_snap.data(), d_snap.data(), n * 4, cudaMemcpyDeviceToHost));
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_snap[i], want_snap[i]) << i;
    ASSERT_EQ(got_copy[i], want_snap[i]) << i;
  }
}

}  // namespace pagedw2v
