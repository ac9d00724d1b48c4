#include "model/host_table.hpp"

#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "base/worker_threads.hpp"

namespace pagedw2v {
namespace {

/// Whole pages from the kernel for every table: page-aligned, so a table can later be pinned in
/// place (gpu/pinned_region.hpp) without locking a page it shares with other data, and huge
/// pages are asked for (fewer TLB misses for the CPU and fewer page translations for a GPU
/// reading the table over PCIe).
class PageAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    const size_t len = bytes == 0 ? 1 : bytes;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
    if (len >= (size_t{2} << 20)) madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
  }
  void deallocate(void* p, size_t bytes) noexcept override {
    if (p != nullptr) munmap(p, bytes == 0 ? 1 : bytes);
  }
  std::string name() const override { return "pageable"; }
  bool zeroes() const override { return true; }
};

/// Memory the kernel says can be had without swapping (MemAvailable), or 0 when unknown.
uint64_t available_memory() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<uint64_t>(kib) * 1024;
}

}  // namespace

HostAllocator& default_host_allocator() {
  static PageAllocator allocator;
  return allocator;
}

/// One allocation, freed when the last table in it goes.
struct HostTable::Block {
  void* data = nullptr;
  size_t bytes = 0;
  HostAllocator* allocator = nullptr;

  Block(size_t n, const std::string& what, const std::string& hint, HostAllocator& a)
      : bytes(n), allocator(&a) {
    const long double want = static_cast<long double>(n);
    // Overcommitted memory would be handed out here and the process killed while zeroing it.
    const uint64_t available = available_memory();
    if (available > 0 && want > static_cast<long double>(available)) {
      throw Error("not enough memory for the " + what + " (" +
                  format_bytes_rounded(static_cast<double>(want)) + " needed, " +
                  format_bytes_rounded(static_cast<double>(available)) + " available); " + hint);
    }
    data = a.allocate(n);
    if (data == nullptr) {
      throw Error("not enough memory for the " + what + " (" +
                  format_bytes_rounded(static_cast<double>(want)) + ", " + a.name() + "); " + hint);
    }
    if (!a.zeroes()) std::memset(data, 0, n);
  }
  ~Block() { allocator->deallocate(data, bytes); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
};

namespace {

/// Bytes of `count` tables of rows × dim values of `storage`; throws when that cannot be
/// addressed.
size_t table_bytes(uint64_t rows, uint32_t dim, uint32_t count, Storage storage,
                   const std::string& what, const std::string& hint) {
  const uint32_t value = storage_bytes(storage);
  const long double want = static_cast<long double>(rows) * dim * count * value;
  if (want > static_cast<long double>(SIZE_MAX / 2)) {
    throw Error("not enough memory for the " + what + " (" +
                format_bytes_rounded(static_cast<double>(want)) + "); " + hint);
  }
  return static_cast<size_t>(rows) * dim * count * value;
}

}  // namespace

HostTable::HostTable(uint64_t rows, uint32_t dim, const std::string& what, const std::string& hint,
                     HostAllocator& allocator, Storage storage)
    : block_(std::make_shared<Block>(table_bytes(rows, dim, 1, storage, what, hint), what, hint,
                                     allocator)),
      raw_(block_->data),
      data_(storage == Storage::kFp32 ? static_cast<float*>(block_->data) : nullptr),
      storage_(storage),
      rows_(rows),
      dim_(dim),
      stride_(dim) {}

HostTable::HostTable(std::shared_ptr<Block> block, void* raw, uint64_t rows, uint32_t dim,
                     uint64_t stride, Storage storage)
    : block_(std::move(block)),
      raw_(raw),
      data_(storage == Storage::kFp32 ? static_cast<float*>(raw) : nullptr),
      storage_(storage),
      rows_(rows),
      dim_(dim),
      stride_(stride) {}

std::vector<HostTable> HostTable::interleaved(uint64_t rows, uint32_t dim, uint32_t count,
                                              const std::string& what, const std::string& hint,
                                              HostAllocator& allocator, Storage storage) {
  if (count == 0) throw Error("HostTable::interleaved: no tables");
  auto block = std::make_shared<Block>(table_bytes(rows, dim, count, storage, what, hint), what,
                                       hint, allocator);
  std::vector<HostTable> tables;
  tables.reserve(count);
  const size_t value = storage_bytes(storage);
  for (uint32_t t = 0; t < count; ++t) {
    tables.push_back(HostTable(block, static_cast<char*>(block->data) + uint64_t{t} * dim * value,
                               rows, dim, uint64_t{count} * dim, storage));
  }
  return tables;
}

HostTable::HostTable(HostTable&& other) noexcept
    : block_(std::move(other.block_)),
      raw_(std::exchange(other.raw_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      storage_(std::exchange(other.storage_, Storage::kFp32)),
      rows_(std::exchange(other.rows_, 0)),
      dim_(std::exchange(other.dim_, 0)),
      stride_(std::exchange(other.stride_, 0)) {}

HostTable& HostTable::operator=(HostTable&& other) noexcept {
  if (this != &other) {
    block_ = std::move(other.block_);
    raw_ = std::exchange(other.raw_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    storage_ = std::exchange(other.storage_, Storage::kFp32);
    rows_ = std::exchange(other.rows_, 0);
    dim_ = std::exchange(other.dim_, 0);
    stride_ = std::exchange(other.stride_, 0);
  }
  return *this;
}

void* HostTable::block() const { return block_ ? block_->data : nullptr; }

size_t HostTable::block_bytes() const { return block_ ? block_->bytes : 0; }

void HostTable::read_row(uint64_t r, float* out) const {
  if (storage_ == Storage::kFp32) {
    std::memcpy(out, row(r), dim_ * sizeof(float));
    return;
  }
  const auto* h = static_cast<const uint16_t*>(raw_row(r));
  for (uint32_t c = 0; c < dim_; ++c) out[c] = half_to_float(storage_, h[c]);
}

void HostTable::write_row(uint64_t r, const float* in) {
  if (storage_ == Storage::kFp32) {
    std::memcpy(row(r), in, dim_ * sizeof(float));
    return;
  }
  auto* h = static_cast<uint16_t*>(raw_row(r));
  for (uint32_t c = 0; c < dim_; ++c) h[c] = half_round_nearest(storage_, in[c]);
}

void HostTable::read_rows(uint64_t first, uint64_t n, float* out) const {
  if (storage_ == Storage::kFp32 && contiguous()) {
    std::memcpy(out, row(first), n * dim_ * sizeof(float));
    return;
  }
  for (uint64_t i = 0; i < n; ++i) read_row(first + i, out + i * dim_);
}

void HostTable::copy_to(float* out) const { read_rows(0, rows_, out); }

void HostTable::copy_from(const float* in) {
  if (storage_ == Storage::kFp32 && contiguous()) {
    std::memcpy(data_, in, bytes());
    return;
  }
  for (uint64_t r = 0; r < rows_; ++r) write_row(r, in + r * dim_);
}

void HostTable::copy_values_to(HostTable& out) const {
  if (out.rows_ != rows_ || out.dim_ != dim_ || out.storage_ != storage_) {
    throw Error("HostTable::copy_values_to: tables differ in shape or storage");
  }
  if (contiguous() && out.contiguous()) {
    std::memcpy(out.raw_, raw_, bytes());
    return;
  }
  const size_t row_bytes = size_t{dim_} * value_bytes();
  for (uint64_t r = 0; r < rows_; ++r) std::memcpy(out.raw_row(r), raw_row(r), row_bytes);
}

void HostTable::fill(float value) {
  if (storage_ == Storage::kFp32) {
    for (uint64_t r = 0; r < rows_; ++r) std::fill(row(r), row(r) + dim_, value);
    return;
  }
  const uint16_t h = half_round_nearest(storage_, value);
  for (uint64_t r = 0; r < rows_; ++r) {
    auto* p = static_cast<uint16_t*>(raw_row(r));
    std::fill(p, p + dim_, h);
  }
}

bool HostTable::all_zero(uint32_t threads) const {
  const size_t row_bytes = size_t{dim_} * value_bytes();
  const auto n = static_cast<uint32_t>(std::clamp<uint64_t>(
      std::min<uint64_t>(threads, rows_ * row_bytes / (size_t{4} << 20) + 1), 1, 64));
  std::atomic<bool> zero{true};
  run_workers(n, [&](uint32_t k) {
    for (uint64_t r = rows_ * k / n; r < rows_ * (k + 1) / n; ++r) {
      const auto* p = static_cast<const unsigned char*>(raw_row(r));
      unsigned char any = 0;
      for (size_t i = 0; i < row_bytes; ++i) any |= p[i];
      if (any != 0) {
        zero = false;
        return;
      }
      if ((r & 1023) == 0 && !zero) return;
    }
  });
  return zero;
}

}  // namespace pagedw2v
