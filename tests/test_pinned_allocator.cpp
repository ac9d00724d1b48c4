// PinnedAllocator: slabs, the fallback and stop policies (through a backend that fails on
// demand, so they run without a GPU), and, on a GPU, a real pinned table read by the gather
// kernel across slab boundaries.

#include "bench/pinned_allocator.hpp"
#include "cuda_test_util.hpp"
#include "gpu/pinned_region.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bench/gather.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "kernels/cuda_check.hpp"
#include "model/host_table.hpp"

namespace pagedw2v {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

/// What the fake driver saw; shared with the test after the allocator takes the backend.
struct FakeState {
  size_t budget = SIZE_MAX;  ///< bytes that can be locked in all
  size_t locked = 0;
  bool host_is_device = true;
  std::map<void*, size_t> ranges;  ///< registered ranges
  std::map<void*, size_t> allocs;  ///< host_alloc'ed blocks
  size_t last_host_alloc = 0;
};

class FakePinBackend final : public detail::PinBackend {
 public:
  explicit FakePinBackend(std::shared_ptr<FakeState> s) : s_(std::move(s)) {}
  bool register_range(void* p, size_t bytes, std::string* error) override {
    if (s_->locked + bytes > s_->budget) {
      *error = "fake: out of lockable memory";
      return false;
    }
    // The range must be real memory: touch both ends.
    static_cast<char*>(p)[0] = 1;
    static_cast<char*>(p)[bytes - 1] = 1;
    s_->locked += bytes;
    s_->ranges[p] = bytes;
    return true;
  }
  void unregister_range(void* p) noexcept override {
    const auto it = s_->ranges.find(p);
    if (it == s_->ranges.end()) std::abort();  // unregistering what was never registered
    s_->locked -= it->second;
    s_->ranges.erase(it);
  }
  void* host_alloc(size_t bytes, std::string* error) override {
    s_->last_host_alloc = bytes;
    if (s_->locked + bytes > s_->budget) {
      *error = "fake: out of lockable memory";
      return nullptr;
    }
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    s_->locked += bytes;
    s_->allocs[p] = bytes;
    return p;
  }
  void host_free(void* p) noexcept override {
    const auto it = s_->allocs.find(p);
    if (it == s_->allocs.end()) std::abort();
    s_->locked -= it->second;
    s_->allocs.erase(it);
    std::free(p);
  }
  void* pool_alloc(size_t bytes, std::string* error) override { return host_alloc(bytes, error); }
  void pool_free(void* p) noexcept override { host_free(p); }
  void* device_pointer(void* p) noexcept override { return p; }
  bool host_pointer_is_device_pointer() noexcept override { return s_->host_is_device; }

 private:
  std::shared_ptr<FakeState> s_;
};

/// A temporary file that collects the allocator's notices.
struct Log {
  std::FILE* f = std::tmpfile();
  ~Log() { std::fclose(f); }
  std::vector<std::string> lines() const {
    std::fflush(f);
    std::rewind(f);
    std::vector<std::string> out;
    char buf[1024];
    while (std::fgets(buf, sizeof buf, f)) out.emplace_back(buf);
    return out;
  }
};

PinnedAllocator fake_allocator(const std::shared_ptr<FakeState>& s, PinnedAllocatorOptions o) {
  return PinnedAllocator(std::move(o), std::make_unique<FakePinBackend>(s));
}

TEST(PinnedAllocator, SlabsCoverTheTableContiguously) {
  auto s = std::make_shared<FakeState>();
  PinnedAllocatorOptions o;
  o.slab_bytes = 4 * kMiB;
  PinnedAllocator a = fake_allocator(s, o);
  const size_t bytes = 10 * kMiB + 3;
  char* p = static_cast<char*>(a.allocate(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_TRUE(a.is_pinned(p));
  EXPECT_EQ(a.device_pointer(p), p);
  EXPECT_EQ(a.pinned_bytes(), bytes);
  EXPECT_EQ(a.pageable_bytes(), 0u);
  EXPECT_FALSE(a.fell_back());
  // 10 MiB + 3 rounds to 12 MiB of 2 MiB pages: three 4 MiB slabs, back to back from p.
  ASSERT_EQ(s->ranges.size(), 3u);
  char* next = p;
  for (const auto& [q, len] : s->ranges) {
    EXPECT_EQ(q, next);
    EXPECT_LE(len, o.slab_bytes);
    next = static_cast<char*>(q) + len;
  }
  EXPECT_GE(static_cast<size_t>(next - p), bytes);
  EXPECT_EQ(a.piece_bytes(p), o.slab_bytes);
  std::memset(p, 0x5a, bytes);
  a.deallocate(p, bytes);
  EXPECT_TRUE(s->ranges.empty());
  EXPECT_EQ(a.pinned_bytes(), 0u);
}

TEST(PinnedAllocator, OnePieceWhenSlabsCannotBeJoined) {
  for (const bool host_is_device : {false, true}) {
    auto s = std::make_shared<FakeState>();
    s->host_is_device = host_is_device;
    PinnedAllocatorOptions o;
    o.slab_bytes = host_is_device ? 0 : 2 * kMiB;  // slab 0: one piece by request
    PinnedAllocator a = fake_allocator(s, o);
    void* p = a.allocate(9 * kMiB);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(s->ranges.size(), 1u);
    EXPECT_TRUE(a.is_pinned(p));
    EXPECT_GE(a.piece_bytes(p), 9 * kMiB);
    a.deallocate(p, 9 * kMiB);
    EXPECT_TRUE(s->ranges.empty());
  }
}

TEST(PinnedAllocator, FallBackSaysSoOnceAndUndoesPartialLocks) {
  auto s = std::make_shared<FakeState>();
  s->budget = 6 * kMiB;
  Log log;
  PinnedAllocatorOptions o;
  o.slab_bytes = 4 * kMiB;
  o.on_failure = PinFailure::kFallBack;
  o.log = log.f;
  PinnedAllocator a = fake_allocator(s, o);
  const size_t bytes = 10 * kMiB;
  char* p = static_cast<char*>(a.allocate(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(s->ranges.empty()) << "the slab locked before the failure must be released";
  EXPECT_FALSE(a.is_pinned(p));
  EXPECT_EQ(a.device_pointer(p), nullptr);
  EXPECT_EQ(a.piece_bytes(p), 0u);
  EXPECT_TRUE(a.fell_back());
  EXPECT_EQ(a.pageable_bytes(), bytes);
  std::memset(p, 0x33, bytes);  // the fallback memory is usable
  char* q = static_cast<char*>(a.allocate(bytes));
  ASSERT_NE(q, nullptr);
  // A table that fits is still pinned after a fallback.
  char* small = static_cast<char*>(a.allocate(3 * kMiB));
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(a.is_pinned(small));
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 1u) << "one line per allocator, however many tables fall back";
  EXPECT_NE(lines[0].find("cannot pin"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("pageable"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("fake: out of lockable memory"), std::string::npos) << lines[0];
  a.deallocate(p, bytes);
  a.deallocate(q, bytes);
  a.deallocate(small, 3 * kMiB);
  EXPECT_EQ(a.pageable_bytes(), 0u);
  EXPECT_EQ(a.pinned_bytes(), 0u);
  EXPECT_TRUE(s->ranges.empty());
}

TEST(PinnedAllocator, StopThrowsNamingTheFlag) {
  for (const PinMethod method :
       {PinMethod::kRegisterSlabs, PinMethod::kHostAlloc, PinMethod::kHostPool}) {
    auto s = std::make_shared<FakeState>();
    s->budget = 5 * kMiB;
    Log log;
    PinnedAllocatorOptions o;
    o.slab_bytes = 2 * kMiB;
    o.method = method;
    o.on_failure = PinFailure::kStop;
    o.hint = "lower --the-flag";
    o.log = log.f;
    PinnedAllocator a = fake_allocator(s, o);
    try {
      a.allocate(8 * kMiB);
      FAIL() << "expected Error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("cannot pin"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--the-flag"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
    }
    EXPECT_TRUE(s->ranges.empty());
    EXPECT_TRUE(s->allocs.empty());
    EXPECT_EQ(a.pinned_bytes() + a.pageable_bytes(), 0u);
    EXPECT_TRUE(log.lines().empty());
    // HostTable passes the error on instead of crashing.
    EXPECT_THROW(HostTable(1u << 20, 8, "input table", "hint", a), Error);
  }
}

TEST(PinnedAllocator, HostAllocRoundsToSlabsAndFallsBack) {
  auto s = std::make_shared<FakeState>();
  s->budget = 8 * kMiB;
  Log log;
  PinnedAllocatorOptions o;
  o.slab_bytes = 4 * kMiB;
  o.method = PinMethod::kHostAlloc;
  o.log = log.f;
  PinnedAllocator a = fake_allocator(s, o);
  void* p = a.allocate(5 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(s->last_host_alloc, 8 * kMiB);
  EXPECT_TRUE(a.is_pinned(p));
  void* q = a.allocate(kMiB);  // nothing left to lock
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(a.is_pinned(q));
  EXPECT_EQ(log.lines().size(), 1u);
  a.deallocate(p, 5 * kMiB);
  a.deallocate(q, kMiB);
  EXPECT_TRUE(s->allocs.empty());
}

TEST(PinnedAllocator, HostTableOnPinnedMemory) {
  auto s = std::make_shared<FakeState>();
  PinnedAllocatorOptions o;
  o.slab_bytes = 2 * kMiB;
  PinnedAllocator a = fake_allocator(s, o);
  {
    HostTable t(70001, 33, "input table", "hint", a);
    EXPECT_TRUE(a.is_pinned(t.data()));
    EXPECT_EQ(a.pinned_bytes(), t.bytes());
    for (uint64_t r = 0; r < t.rows(); r += 997) {
      for (uint32_t c = 0; c < t.dim(); ++c) EXPECT_EQ(t.row(r)[c], 0.0f);
    }
    t.row(70000)[32] = 3.5f;
    HostTable moved = std::move(t);
    EXPECT_EQ(moved.row(70000)[32], 3.5f);
  }
  EXPECT_TRUE(s->ranges.empty());
  EXPECT_EQ(a.pinned_bytes(), 0u);
}

TEST(PinnedAllocator, MoveAndDestructionRelease) {
  auto s = std::make_shared<FakeState>();
  PinnedAllocatorOptions o;
  o.slab_bytes = 2 * kMiB;
  {
    PinnedAllocator a = fake_allocator(s, o);
    PinnedAllocator b = std::move(a);
    void* p = b.allocate(5 * kMiB);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(b.is_pinned(p));
    PinnedAllocator c = fake_allocator(s, o);
    c = std::move(b);
    EXPECT_TRUE(c.is_pinned(p));
    EXPECT_FALSE(s->ranges.empty());
  }  // allocations still live when the allocator goes are released with it
  EXPECT_TRUE(s->ranges.empty());
}

// The allocator's tables and training's pinned ranges go through the one PinnedRegion: slabs
// back to back from the first page, the piece a copy may not cross, a refusal part-way undone
// and reported with how much had been locked, and one unlock per slab when the region goes.
TEST(PinnedRegion, LocksSlabsThroughItsLocker) {
  auto s = std::make_shared<FakeState>();
  FakePinBackend locker(s);
  std::vector<char> memory(12 * kMiB);
  char* const page = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(memory.data()) + 4095) &
                                             ~uintptr_t{4095});
  std::string error;
  {
    PinnedRegion r = PinnedRegion::try_pin(page + 100, 5 * kMiB, 2 * kMiB, locker, &error);
    ASSERT_TRUE(r.pinned()) << error;
    EXPECT_EQ(r.bytes(), 5 * kMiB);
    EXPECT_EQ(r.piece_bytes(), 2 * kMiB);
    ASSERT_EQ(s->ranges.size(), 3u);  // 5 MiB + 100 bytes, widened to pages: 2 + 2 + 1 MiB
    char* next = page;
    for (const auto& [q, len] : s->ranges) {
      EXPECT_EQ(q, next);
      next = static_cast<char*>(q) + len;
    }
    EXPECT_GE(next, page + 100 + 5 * kMiB);
    PinnedRegion moved = std::move(r);
    EXPECT_FALSE(r.pinned());
    EXPECT_EQ(s->ranges.size(), 3u);
  }
  EXPECT_TRUE(s->ranges.empty());
  // One piece when asked for slab 0.
  {
    PinnedRegion r = PinnedRegion::try_pin(page, 5 * kMiB, 0, locker, &error);
    ASSERT_TRUE(r.pinned());
    EXPECT_EQ(s->ranges.size(), 1u);
    EXPECT_EQ(r.piece_bytes(), 5 * kMiB);
  }
  // The third slab does not fit: the first two are unlocked again.
  s->budget = 5 * kMiB;
  const PinnedRegion refused = PinnedRegion::try_pin(page, 10 * kMiB, 2 * kMiB, locker, &error);
  EXPECT_FALSE(refused.pinned());
  EXPECT_EQ(refused.piece_bytes(), 0u);
  EXPECT_TRUE(s->ranges.empty());
  EXPECT_EQ(s->locked, 0u);
  EXPECT_NE(error.find("fake: out of lockable memory"), std::string::npos) << error;
  EXPECT_NE(error.find("after 0.00 GiB were locked"), std::string::npos) << error;
}

TEST(PinnedAllocatorCuda, SlabbedTableIsOneDeviceRange) {
  PAGEDW2V_REQUIRE_GPU();
  PinnedAllocatorOptions o;
  o.slab_bytes = 8 * kMiB;
  o.on_failure = PinFailure::kStop;
  PinnedAllocator a(o);
  const uint32_t dim = 100;  // 400-byte rows: some rows straddle slab boundaries
  const uint64_t rows = 3 * o.slab_bytes / (dim * sizeof(float)) + 77;
  HostTable table(rows, dim, "test table", "hint", a);
  ASSERT_TRUE(a.is_pinned(table.data()));
  const float* d_table = static_cast<const float*>(a.device_pointer(table.data()));
  ASSERT_NE(d_table, nullptr);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (uint64_t i = 0; i < rows * dim; ++i) table.data()[i] = value(rng);
  // Every row that touches a slab boundary, plus random rows.
  std::vector<uint32_t> ids;
  const uint64_t row_bytes = dim * sizeof(float);
  for (uint64_t b = o.slab_bytes; b < rows * row_bytes; b += o.slab_bytes) {
    ids.push_back(static_cast<uint32_t>(b / row_bytes));
    if (b % row_bytes == 0) ids.push_back(static_cast<uint32_t>(b / row_bytes - 1));
  }
  std::uniform_int_distribution<uint32_t> pick(0, static_cast<uint32_t>(rows - 1));
  for (int i = 0; i < 500; ++i) ids.push_back(pick(rng));
  const uint32_t n = static_cast<uint32_t>(ids.size());
  DeviceBuffer<uint32_t> d_ids(n, "ids");
  DeviceBuffer<float> d_out(size_t{n} * dim, "rows");
  std::vector<float> out(size_t{n} * dim, std::nanf(""));
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_ids.data(), ids.data(), n * 4, cudaMemcpyHostToDevice));
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_out.data(), out.data(), out.size() * 4, cudaMemcpyHostToDevice));
  launch_gather_rows(d_table, dim, d_ids.data(), n, nullptr, d_out.data(), nullptr);
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  PAGEDW2V_CUDA_TRY(cudaMemcpy(out.data(), d_out.data(), out.size() * 4, cudaMemcpyDeviceToHost));
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < dim; ++c) {
      ASSERT_EQ(out[size_t{i} * dim + c], table.row(ids[i])[c]) << "row " << ids[i] << " col " << c;
    }
  }
  // Copy-engine copies land in place when split at piece boundaries, as the header says.
  const size_t piece = a.piece_bytes(table.data()) / sizeof(float);
  ASSERT_EQ(piece * sizeof(float), o.slab_bytes);
  const size_t off = piece - 1000;
  std::vector<float> src(4000);
  for (float& x : src) x = value(rng);
  DeviceBuffer<float> d_src(src.size(), "src");
  PAGEDW2V_CUDA_TRY(cudaMemcpy(d_src.data(), src.data(), src.size() * 4, cudaMemcpyHostToDevice));
  for (size_t done = 0; done < src.size();) {
    const size_t len = std::min(src.size() - done, piece - (off + done) % piece);
    PAGEDW2V_CUDA_TRY(cudaMemcpy(table.data() + off + done, d_src.data() + done, len * 4,
                                 cudaMemcpyDeviceToHost));
    done += len;
  }
  for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(table.data()[off + i], src[i]);
}

TEST(PinnedAllocatorCuda, OtherMethodsAreMapped) {
  PAGEDW2V_REQUIRE_GPU();
  for (const PinMethod method : {PinMethod::kHostAlloc, PinMethod::kHostPool}) {
    PinnedAllocatorOptions o;
    o.method = method;
    o.slab_bytes = 4 * kMiB;
    o.on_failure = PinFailure::kStop;
    PinnedAllocator a(o);
    HostTable table(1000, 128, "test table", "hint", a);
    EXPECT_TRUE(a.is_pinned(table.data()));
    const float* d_table = static_cast<const float*>(a.device_pointer(table.data()));
    ASSERT_NE(d_table, nullptr);
    for (uint32_t i = 0; i < 1000 * 128; ++i) table.data()[i] = static_cast<float>(i) + 0.5f;
    const std::vector<uint32_t> ids = {999, 0, 512, 3};
    DeviceBuffer<uint32_t> d_ids(ids.size(), "ids");
    DeviceBuffer<float> d_out(ids.size() * 128, "rows");
    PAGEDW2V_CUDA_TRY(cudaMemcpy(d_ids.data(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    launch_gather_rows(d_table, 128, d_ids.data(), 4, nullptr, d_out.data(), nullptr);
    std::vector<float> out(ids.size() * 128);
    PAGEDW2V_CUDA_TRY(cudaMemcpy(out.data(), d_out.data(), out.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ids.size(); ++i) {
      for (uint32_t c = 0; c < 128; ++c) ASSERT_EQ(out[i * 128 + c], table.row(ids[i])[c]);
    }
  }
}

// PinnedRegion (gpu/pinned_region.hpp) pins memory already allocated, in slabs.

/// Whether the runtime sees `p` as registered host memory.
bool registered(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

// A range that starts and ends inside pages and spans several slabs is locked whole, mapped for
// kernels at every slab, unlocked when the region goes, and moves without a second unlock.
TEST(PinnedRegion, PinsARangeInSlabsUntilItGoes) {
  PAGEDW2V_REQUIRE_GPU();
  std::vector<float> table(11 * kMiB / 8 + 123);  // 5.5 MiB and a bit
  float* p = table.data() + 3;                    // not on a page boundary
  const size_t bytes = (table.size() - 5) * sizeof(float);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  {
    PinnedRegion region(p, bytes, "test table", "hint", kMiB);
    ASSERT_TRUE(region.pinned());
    EXPECT_EQ(region.bytes(), bytes);
    // Every slab is registered and mapped: the device reads the host bytes through it.
    for (size_t at = 0; at < bytes / sizeof(float); at += kMiB / sizeof(float) / 2) {
      ASSERT_TRUE(registered(p + at)) << at;
      void* device = nullptr;
      ASSERT_EQ(cudaHostGetDevicePointer(&device, p + at, 0), cudaSuccess) << at;
      float got = -1;
      PAGEDW2V_CUDA_TRY(cudaMemcpy(&got, device, sizeof got, cudaMemcpyDeviceToHost));
      EXPECT_EQ(got, p[at]) << at;
    }
    ASSERT_TRUE(registered(p + bytes / sizeof(float) - 1));
    PinnedRegion moved(std::move(region));
    EXPECT_FALSE(region.pinned());
    EXPECT_TRUE(moved.pinned());
    EXPECT_TRUE(registered(p));
    PinnedRegion assigned;
    assigned = std::move(moved);
    EXPECT_TRUE(assigned.pinned());
    EXPECT_TRUE(registered(p));
  }
  EXPECT_FALSE(registered(p));
  EXPECT_FALSE(registered(p + bytes / sizeof(float) - 1));
}

// A refused lock is one Error naming what and how big, with the hint, and nothing stays locked;
// try_pin gives an empty region instead. Without a GPU the driver refuses every lock; with one,
// a range locked already is refused.
TEST(PinnedRegion, RefusalIsOneErrorOrAnEmptyRegion) {
  std::vector<float> table(kMiB / 4);
  PinnedRegion first;
  if (query_device().usable) {
    first = PinnedRegion(table.data(), kMiB, "first", "hint");
    ASSERT_TRUE(first.pinned());
  }
  try {
    PinnedRegion again(table.data(), kMiB, "test table", "lower --dim");
    FAIL() << "a second lock of the same range, or a lock without a GPU, was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cannot pin the test table (0.00 GiB) in host memory: ", 0), 0u) << what;
    EXPECT_NE(what.find("; lower --dim"), std::string::npos) << what;
  }
  const PinnedRegion tried = PinnedRegion::try_pin(table.data(), kMiB);
  EXPECT_FALSE(tried.pinned());
  EXPECT_EQ(tried.bytes(), 0u);
  EXPECT_EQ(first.pinned(), query_device().usable);  // the refused attempts left it locked
  // Nothing to lock is no error.
  EXPECT_FALSE(PinnedRegion(nullptr, 0, "nothing", "").pinned());
}

}  // namespace
}  // namespace pagedw2v
