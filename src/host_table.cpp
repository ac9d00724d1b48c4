#include "host_table.hpp"

#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "error.hpp"

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

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

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

HostTable::HostTable(uint64_t rows, uint32_t dim, const std::string& what, const std::string& hint,
                     HostAllocator& allocator)
    : rows_(rows), dim_(dim), allocator_(&allocator) {
  const long double want = static_cast<long double>(rows) * dim * sizeof(float);
  if (want > static_cast<long double>(SIZE_MAX / 2)) {
    throw Error("not enough memory for the " + what + " (" +
                human_bytes(static_cast<double>(want)) + "); " + hint);
  }
  // Overcommitted memory would be handed out here and the process killed while zeroing it.
  const uint64_t available = available_memory();
  if (available > 0 && want > static_cast<long double>(available)) {
    throw Error("not enough memory for the " + what + " (" +
                human_bytes(static_cast<double>(want)) + " needed, " +
                human_bytes(static_cast<double>(available)) + " available); " + hint);
  }
  data_ = static_cast<float*>(allocator.allocate(bytes()));
  if (data_ == nullptr) {
    throw Error("not enough memory for the " + what + " (" +
                human_bytes(static_cast<double>(want)) + ", " + allocator.name() + "); " + hint);
  }
  if (!allocator.zeroes()) std::memset(data_, 0, bytes());
}

HostTable::~HostTable() { release(); }

HostTable::HostTable(HostTable&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      rows_(std::exchange(other.rows_, 0)),
      dim_(std::exchange(other.dim_, 0)),
      allocator_(other.allocator_) {}

HostTable& HostTable::operator=(HostTable&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    rows_ = std::exchange(other.rows_, 0);
    dim_ = std::exchange(other.dim_, 0);
    allocator_ = other.allocator_;
  }
  return *this;
}

void HostTable::release() noexcept {
  if (data_ != nullptr) allocator_->deallocate(data_, bytes());
  data_ = nullptr;
}

}  // namespace pagedw2v
