#pragma once
/// @file string_index.hpp
/// An open-addressing hash index from byte strings to dense ids 0..n-1. Keys are views whose
/// bytes the caller keeps alive (the mapped corpus while counting, the vocabulary afterwards), so
/// inserting or finding a word allocates nothing per token.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace pagedw2v {
namespace detail {

/// A fast 64-bit hash over bytes (8 bytes per step, multiply-xorshift mixing).
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

class StringIndex {
 public:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  explicit StringIndex(size_t expected = 1024) { rehash(capacity_for(expected)); }

  size_t size() const { return keys_.size(); }
  std::string_view key(uint32_t id) const { return keys_[id]; }

  /// Id of `s`, or kEmpty.
  uint32_t find(std::string_view s) const {
    const uint64_t h = hash_bytes(s);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) return kEmpty;
      if (hashes_[id] == h && keys_[id] == s) return id;
    }
  }

  /// Id of `s`, inserting it (with the next dense id) when absent. `*inserted` tells which.
  uint32_t insert(std::string_view s, bool* inserted) {
    const uint64_t h = hash_bytes(s);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) break;
      if (hashes_[id] == h && keys_[id] == s) {
        *inserted = false;
        return id;
      }
    }
    const uint32_t id = static_cast<uint32_t>(keys_.size());
    keys_.push_back(s);
    hashes_.push_back(h);
    slots_[i] = id;
    *inserted = true;
    if (keys_.size() * 2 > slots_.size()) rehash(slots_.size() * 2);
    return id;
  }

 private:
  static size_t capacity_for(size_t n) {
    size_t c = 64;
    while (c < n * 2) c <<= 1;
    return c;
  }
  void rehash(size_t capacity) {
    slots_.assign(capacity, kEmpty);
    mask_ = capacity - 1;
    for (uint32_t id = 0; id < keys_.size(); ++id) {
      size_t i = hashes_[id] & mask_;
      while (slots_[i] != kEmpty) i = (i + 1) & mask_;
      slots_[i] = id;
    }
  }

  std::vector<uint32_t> slots_;
  std::vector<std::string_view> keys_;
  std::vector<uint64_t> hashes_;
  size_t mask_ = 0;
};

}  // namespace detail
}  // namespace pagedw2v
