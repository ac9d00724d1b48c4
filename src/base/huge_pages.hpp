#pragma once
/// @file huge_pages.hpp
/// An allocator for large tables probed at random (the word tables of counting and encoding):
/// blocks of 2 MiB and more start on a 2 MiB boundary and ask the kernel for transparent huge
/// pages, so that a probe costs one TLB entry per 2 MiB instead of one per 4 KiB page.
/// Smaller blocks come from std::allocator. Where the kernel has no huge pages to give, the
/// request is ignored and the memory is ordinary.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace pagedw2v {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding converts implicitly

  /// Whether a block of `n` T lies on pages no other allocation shares (those of kHugePage
  /// bytes and more), so that locking its pages for the GPU locks nothing else.
  static bool owns_its_pages(size_t n) { return n * sizeof(T) >= kHugePage; }

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T) - kHugePage) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return std::allocator<T>().allocate(n);
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: its failure changes nothing else
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePage) {
      std::allocator<T>().deallocate(p, n);
    } else {
      std::free(p);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};

/// A vector whose large buffers get huge pages.
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

/// A fixed number of T whose bytes start zero, for hash tables whose empty slot is all zero
/// bytes: blocks of 2 MiB and more are fresh anonymous mappings on a 2 MiB boundary with huge
/// pages asked for, which the kernel gives zeroed, so that no pass over the table precedes its
/// use (a vector would write every element once, then the table every slot again); smaller
/// blocks come from calloc.
template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable<T>::value, "zero bytes must be a valid T");

 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  ZeroedArray() = default;
  explicit ZeroedArray(size_t n) : size_(n) {
    if (n == 0) return;
    if (n > (static_cast<size_t>(-1) - 2 * kHugePage) / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      data_ = static_cast<T*>(std::calloc(n, sizeof(T)));
      if (data_ == nullptr) throw std::bad_alloc();
      return;
    }
    mapped_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = mmap(nullptr, mapped_ + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // Keep the 2 MiB-aligned part only.
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(p, aligned - start);
    const uintptr_t tail = start + mapped_ + kHugePage - (aligned + mapped_);
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + mapped_), tail);
    data_ = reinterpret_cast<T*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(data_, mapped_, MADV_HUGEPAGE);  // advice only: its failure changes nothing else
#endif
  }
  ZeroedArray(ZeroedArray&& o) noexcept { swap(o); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    ZeroedArray(std::move(o)).swap(*this);
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ~ZeroedArray() {
    if (data_ == nullptr) return;
    if (mapped_ > 0) {
      munmap(data_, mapped_);
    } else {
      std::free(data_);
    }
  }

  void swap(ZeroedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(mapped_, o.mapped_);
  }
  size_t size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  ///< bytes mapped (0: from calloc)
};

}  // namespace pagedw2v
