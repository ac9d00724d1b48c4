#pragma once
/// @file row_cache.hpp
/// The GPU's row cache of paged tables: device rows hot … hot + slots − 1 hold cold rows that
/// pieces in flight use. Owns the slot map (id → slot, slot → id), each slot's last user, the
/// clock hand that hands out free slots, the marks and lists of one piece's rows, the scratch
/// of their selects, and the paging counters; and the steps over them (kernels/paging.hpp
/// describes the steps and the rules that keep rows fresh): mark, find, take, map, flush,
/// invalidate.
///
/// May not touch: the table values (device_tables.hpp moves rows; the cache only says which
/// and where), the corpus, the pieces' buffers (the caller passes them), the order of streams.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/device_buffer.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v {

/// Statistics the paging kernels count on the device.
struct PagingCounters {
  unsigned long long refs_cold;  ///< token and pool references to cold rows
  unsigned long long to_host;    ///< rows written back (evicted, or flushed at a span's end)
  unsigned long long fresh;      ///< rows read from the host by take_listed
  unsigned long long failures;   ///< take_listed calls whose new rows did not find free slots
};

class RowCache {
 public:
  /// A cache of `slots` slots beside `hot` hot rows, for tables of `rows` rows; pieces touch at
  /// most `max_list` distinct rows; the selects and the slot order need `scratch_bytes`.
  /// `listed`: every piece comes with its rows listed (take_listed), so the marks, flags, slot
  /// order and scratch of the other steps, which may then not be called, are not allocated.
  RowCache(uint64_t rows, uint64_t hot, uint64_t slots, uint64_t max_list, size_t scratch_bytes,
           bool listed, cudaStream_t stream);

  size_t bytes() const;
  uint64_t slots() const { return slots_; }

  /// Marks the cold rows among `ids`.
  void mark_cold(const uint32_t* ids, uint64_t n, cudaStream_t stream);
  /// Lists the marked rows in `list` (count in counts[0]), those of them not cached in `fresh`
  /// (counts[1]), and the slots piece `number` may take, evicting only slots no piece up to
  /// `depth` behind it uses (counts[2]).
  void find(uint32_t* list, uint32_t* fresh, uint32_t* counts, uint64_t number, uint32_t depth,
            cudaStream_t stream);
  /// Clears the marks of the `n` rows of `list` (a piece that did not fit).
  void clear_marks(const uint32_t* list, uint32_t n, cudaStream_t stream);
  /// Gives the `fresh_n` new rows of piece `number` free slots, the lowest ids first, and
  /// claims the slots of its `cold` rows. Writes the ids the slots held to `evicted` and the
  /// slots to `fresh_rows` (device rows), in the order of `fresh`.
  void take(const uint32_t* fresh, uint32_t fresh_n, const uint32_t* list, uint32_t cold,
            uint64_t number, uint32_t* evicted, uint32_t* fresh_rows, cudaStream_t stream);
  /// The steps above for a piece whose `n` cold rows are listed, ascending, in `list`, in one
  /// launch (launch_take_listed_rows): claims the cached ones, gives the new ones free slots,
  /// writes `fresh`, `fresh_rows` and `evicted` (n entries: the new rows first, then entries a
  /// move skips), and maps the piece's `tokens_n` tokens and `pool_n` pool entries to device
  /// rows. The cut of the piece (gpu/piece_cuts.hpp) must leave its new rows room; a piece that
  /// found none is counted in the counters' failures.
  void take_listed(const uint32_t* list, uint32_t n, uint64_t number, uint32_t depth,
                   const uint32_t* tokens, uint64_t tokens_n, uint32_t* token_rows,
                   const uint32_t* pool, uint64_t pool_n, uint32_t* pool_rows, uint32_t* fresh,
                   uint32_t* fresh_rows, uint32_t* evicted, cudaStream_t stream);
  /// The device row of each of the `n` ids (hot or cached) in `rows`.
  void map(const uint32_t* ids, uint64_t n, uint32_t* rows, cudaStream_t stream);
  /// Hierarchical softmax (kernels/hs_paths.hpp): marks the cold inner-node rows of the paths
  /// (`word_links`, `node_links`: the device tree) of the words of the `n` tokens, as mark_cold
  /// marks the tokens' own.
  void mark_cold_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                       const uint32_t* node_links, cudaStream_t stream);
  /// The device row of every inner-node row of those paths, at its row in `node_rows` (once
  /// the piece's rows are taken).
  void map_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                 const uint32_t* node_links, uint32_t* node_rows, cudaStream_t stream);
  /// Writes back every slot a piece from `first_number` on used, by the row move `move`
  /// (its tables and claim; the cache fills in which rows), and keeps the rows cached.
  void flush(MoveArgs move, uint64_t first_number, cudaStream_t stream);
  /// Forgets every cached row (the host holds the current values); waits for `stream`.
  void invalidate(cudaStream_t stream);
  /// The counters so far (waits for the device).
  PagingCounters counters() const;

 private:
  uint64_t rows_ = 0, hot_ = 0, slots_ = 0, max_list_ = 0;
  DeviceBuffer<uint32_t> where_, slot_id_, slot_use_, free_, hand_, order_keys_, order_slots_;
  DeviceBuffer<uint8_t> marks_, flags_;
  DeviceBuffer<unsigned char> select_temp_;
  size_t select_temp_bytes_ = 0;
  DeviceBuffer<PagingCounters> counters_;
};

}  // namespace pagedw2v
