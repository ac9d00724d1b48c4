#pragma once
/// @file word_table.hpp
/// The hash table one counting thread fills: word -> (dense id in first-occurrence order, value).
/// A slot holds the hash tag, the length, the first 16 bytes of the word and the value, so that a
/// probe for a word of up to 16 bytes reads one cache line and nothing else; longer words finish
/// the comparison in the table's own key arena (never in the corpus, which may be gone or far).
/// ShardedWordTable splits the words over several such tables by hash bits, so that threads can
/// fill, merge or search the shards independently.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_pages.hpp"
#include "base/string_index.hpp"

namespace pagedw2v {
namespace detail {

class WordTable {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  static constexpr size_t kHeadBytes = 16;

  struct Slot {
    uint64_t value;  ///< a count while counting, a vocabulary row while encoding
    uint32_t id;
    uint32_t tag;  ///< hash bits 40..63 << 8 | length (1 to 255 bytes); 0: the slot is empty
    char head[kHeadBytes];
  };
  static_assert(sizeof(Slot) == 32, "two slots per cache line");

  explicit WordTable(size_t expected = 1 << 12) { rehash(capacity_for(expected)); }

  size_t size() const { return offsets_.size() - 1; }
  std::string_view key(uint32_t id) const {
    return std::string_view(arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  uint64_t hash(uint32_t id) const { return hashes_[id]; }

  static uint32_t tag_of(uint64_t h, size_t len) {
    return static_cast<uint32_t>(h >> 40) << 8 | static_cast<uint32_t>(len);
  }
  /// The hash bits that place a word: bits 40..63, then 0..31 (32..39 pick a ShardedWordTable's
  /// shard). A table of 2^k slots puts a word's home at the top k of them, so a table of up to
  /// 2^24 slots finds it in the tag, and doubling a table sends the words of each slot to two
  /// neighbouring slots: a rehash streams through both tables and reads no hash.
  static uint64_t place_bits(uint64_t h) { return (h >> 40) << 40 | (h & 0xFFFFFFFFull) << 8; }
  size_t home(uint64_t h) const { return static_cast<size_t>(place_bits(h) >> shift_); }
  void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[home(h)]); }

  /// The slot of `w` (hash `h`), inserting it with value 0 and the next id when absent. `w` is
  /// 1 to 255 bytes long (no word of a text is empty).
  Slot& insert(std::string_view w, uint64_t h) {
    char head[kHeadBytes] = {};
    std::memcpy(head, w.data(), w.size() < kHeadBytes ? w.size() : kHeadBytes);
    const uint32_t tag = tag_of(h, w.size());
    for (size_t i = home(h);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.tag == 0) {
        if ((size() + 1) * 2 > slots_.size()) {
          rehash(slots_.size() * 2);
          return insert(w, h);
        }
        s.id = static_cast<uint32_t>(size());
        s.tag = tag;
        s.value = 0;
        std::memcpy(s.head, head, kHeadBytes);
        arena_.append(w.data(), w.size());
        offsets_.push_back(arena_.size());
        hashes_.push_back(h);
        return s;
      }
      if (s.tag == tag && same_key(s, head, w)) return s;
    }
  }

  /// The slot of `w` (hash `h`), or nullptr.
  const Slot* find(std::string_view w, uint64_t h) const {
    char head[kHeadBytes] = {};
    std::memcpy(head, w.data(), w.size() < kHeadBytes ? w.size() : kHeadBytes);
    const uint32_t tag = tag_of(h, w.size());
    for (size_t i = home(h);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.tag == 0) return nullptr;
      if (s.tag == tag && same_key(s, head, w)) return &s;
    }
  }

  /// The first `capacity` ids reserved for, so that filling that many words does not rehash.
  void reserve(size_t capacity) {
    if (capacity * 2 > slots_.size()) rehash(capacity_for(capacity));
    offsets_.reserve(capacity + 1);
    hashes_.reserve(capacity);
  }

  /// Calls f(slot) for every occupied slot.
  template <class F>
  void for_each(F&& f) {
    for (Slot& s : slots_) {
      if (s.tag != 0) f(s);
    }
  }

 private:
  static size_t capacity_for(size_t n) {
    size_t c = 64;
    while (c < n * 2) c <<= 1;
    return c;
  }
  bool same_key(const Slot& s, const char* head, std::string_view w) const {
    if (std::memcmp(s.head, head, kHeadBytes) != 0) return false;
    if (w.size() <= kHeadBytes) return true;
    return std::memcmp(arena_.data() + offsets_[s.id] + kHeadBytes, w.data() + kHeadBytes,
                       w.size() - kHeadBytes) == 0;
  }
  void rehash(size_t capacity) {
    ZeroedArray<Slot> old(capacity);  // every slot empty
    old.swap(slots_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<uint32_t>(__builtin_ctzll(capacity));
    const bool tag_places = shift_ >= 40;  // at most 2^24 slots
    for (const Slot& s : old) {
      if (s.tag == 0) continue;
      size_t i = tag_places ? (s.tag >> 8) >> (shift_ - 40) : home(hashes_[s.id]);
      while (slots_[i].tag != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  ZeroedArray<Slot> slots_;
  size_t mask_ = 0;
  uint32_t shift_ = 64;  ///< 64 - log2(slots)
  // Large ones get huge pages too: a table of millions of words would otherwise take a page
  // fault every 4 KiB of them.
  std::basic_string<char, std::char_traits<char>, HugePageAllocator<char>>
      arena_;                               ///< the words, in id order
  HugePageVector<uint64_t> offsets_ = {0};  ///< size() + 1 offsets into arena_
  HugePageVector<uint64_t> hashes_;         ///< by id, for rehashing
};

/// Words spread over 2^k WordTables by hash bits 32..39, which neither a table's slot index
/// (low bits) nor its tag (bits 40..63) uses. Ids are per shard.
class ShardedWordTable {
 public:
  static constexpr size_t kMaxShards = 256;

  /// `shards` is rounded up to a power of two, at most kMaxShards.
  explicit ShardedWordTable(size_t shards = 1, size_t expected = 1 << 12) {
    size_t n = 1;
    while (n < shards && n < kMaxShards) n <<= 1;
    mask_ = n - 1;
    shards_.reserve(n);
    for (size_t i = 0; i < n; ++i) shards_.emplace_back(expected / n + 1);
  }

  size_t shard_count() const { return shards_.size(); }
  size_t shard_of(uint64_t h) const { return (h >> 32) & mask_; }
  WordTable& shard(size_t i) { return shards_[i]; }
  const WordTable& shard(size_t i) const { return shards_[i]; }
  size_t size() const {
    size_t n = 0;
    for (const WordTable& t : shards_) n += t.size();
    return n;
  }

  void prefetch(uint64_t h) const { shards_[shard_of(h)].prefetch(h); }
  WordTable::Slot& insert(std::string_view w, uint64_t h) {
    return shards_[shard_of(h)].insert(w, h);
  }
  const WordTable::Slot* find(std::string_view w, uint64_t h) const {
    return shards_[shard_of(h)].find(w, h);
  }

 private:
  std::vector<WordTable> shards_;
  size_t mask_ = 0;
};

}  // namespace detail
}  // namespace pagedw2v
