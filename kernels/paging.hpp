#pragma once
/// @file paging.hpp
/// The named steps of paging the rows of a piece of training (a super-batch, or part of one)
/// between host tables (pinned, mapped host memory) and the GPU's device table
/// (gpu/cuda_backend.cpp drives them):
///   collect ids (mark_cold_ids) → sort/unique (select_marked_ids) → which are new
///   (flag_new_ids, select_flagged) → which cache slots may take them (flag_free_slots) →
///   evict and install (install_rows) → claim (claim_rows) → map tokens to rows (map_rows) →
///   write back the evicted rows and gather the new ones (move_rows) → train.
///
/// The device table holds `hot` rows — ids 0 … hot − 1, the most frequent words, at row = id for
/// the whole run — then a cache of C slots: slot s is device row hot + s. Three arrays describe
/// the cache:
///   where[id]    device row of cold id `id`, or kNoRow when it is not cached;
///   slot_id[s]   the id slot s holds, or kNoRow;
///   slot_use[s]  1 + the number of the last piece that used slot s (0: never).
/// Pieces are numbered globally and never reused. A row stays in its slot for as long as pieces
/// keep using it, so two consecutive pieces train the same copy of a shared row and their
/// launches may overlap. The rules that keep every read fresh, for a pipeline in which pieces
/// up to `depth` − 1 behind the current one may still be training:
///  - piece m may evict only a slot that no piece after m − depth used (slot_use + depth ≤
///    m + 1) and that holds none of m's own rows; it writes the evicted row back to the host and
///    reads the new one on one stream, in that order, after every piece up to m − depth has
///    trained (order_free_slots pairs the new ids with the slots so that both lists ascend);
///  - a row that is not cached is current on the host: it was never on the device, or its
///    eviction's write-back precedes, on the same stream, any later read of it.
/// The clock hand (hand[m % 2] read, hand[(m + 1) % 2] written by piece m) makes evictions walk
/// the slots in a circle, skipping slots in use: first in, first out with second chances.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "model/storage.hpp"

namespace pagedw2v {

/// An empty slot, an id without a slot, or an entry of a move list to skip.
inline constexpr uint32_t kNoRow = 0xFFFFFFFFu;

/// marks[ids[i]] = 1 for every i < n with ids[i] ≥ hot (a cold row the piece touches);
/// adds the number of such i to *cold_refs when it is not null.
void launch_mark_cold_ids(const uint32_t* ids, uint64_t n, uint32_t hot, uint8_t* marks,
                          unsigned long long* cold_refs, cudaStream_t stream);

/// Bytes of temporary storage select_marked_ids and select_flagged need for n flags.
size_t select_marked_ids_temp_bytes(uint64_t n);

/// list[0 … *d_count) = every i < n with marks[i] ≠ 0, ascending (a stream compaction: sorted
/// and unique without a sort).
void launch_select_marked_ids(const uint8_t* marks, uint64_t n, uint32_t* list, uint32_t* d_count,
                              void* temp, size_t temp_bytes, cudaStream_t stream);

/// out[0 … *d_count) = items[i] for every i < n with flags[i] ≠ 0, in order.
void launch_select_flagged(const uint32_t* items, const uint8_t* flags, uint64_t n, uint32_t* out,
                           uint32_t* d_count, void* temp, size_t temp_bytes, cudaStream_t stream);

/// marks[list[k]] = 0 for k < n (undoes mark_cold_ids without touching the whole array).
void launch_clear_marks(const uint32_t* list, uint32_t n, uint8_t* marks, cudaStream_t stream);

/// flags[k] = 1 when k < *d_n and list[k] is not cached (where[list[k]] = kNoRow), else 0, for
/// k < capacity (so a select over `capacity` flags sees only the first *d_n entries).
void launch_flag_new_ids(const uint32_t* list, const uint32_t* d_n, uint32_t capacity,
                         const uint32_t* where, uint8_t* flags, cudaStream_t stream);

/// flags[i] = 1 when slot s = (*hand + i) mod slots may take a row of piece `number`: it is
/// empty, or its row is not marked (not one of the piece's) and slot_use[s] + depth ≤
/// number + 1. Selecting the flags gives the free slots in clock order from the hand.
void launch_flag_free_slots(const uint32_t* slot_id, const uint32_t* slot_use, const uint8_t* marks,
                            uint32_t slots, const uint32_t* hand, uint64_t number, uint32_t depth,
                            uint8_t* flags, cudaStream_t stream);

/// Bytes of temporary storage order_free_slots needs for up to n slots and ids below
/// 2^key_bits.
size_t order_free_slots_temp_bytes(uint32_t n, uint32_t key_bits);

/// The n slots a piece takes, s_k = (*hand + free[k]) mod slots for k < n, in the order of the
/// ids they hold: ascending slot_id, empty slots last in clock order. Returns where that list
/// is: slots_a or slots_b (n entries each; keys_a and keys_b, n each, are working space). Paired
/// with the piece's new ids, which ascend too, the evicted rows go back in address order, and
/// the swap runs far faster than with the evictions in clock order (random addresses):
/// docs/design-kernels.md. Sets *next_hand = the slot after s_{n−1} (*hand when n = 0). Every
/// id must be below `no_row` < 2^key_bits.
const uint32_t* launch_order_free_slots(const uint32_t* free, uint32_t n, uint32_t slots,
                                        const uint32_t* hand, uint32_t* next_hand,
                                        const uint32_t* slot_id, uint32_t no_row, uint32_t key_bits,
                                        uint32_t* keys_a, uint32_t* keys_b, uint32_t* slots_a,
                                        uint32_t* slots_b, void* temp, size_t temp_bytes,
                                        cudaStream_t stream);

/// For k < n: slot s = taken[k] takes new id ids[k]: the id it held (if any) loses its place
/// (where = kNoRow) and goes to evicted[k] (kNoRow when the slot was empty); slot_id[s] = ids[k],
/// where[ids[k]] = rows[k] = hot + s. `taken` may be `rows`. Adds the number of evicted rows to
/// *evictions when it is not null.
void launch_install_rows(const uint32_t* ids, uint32_t n, const uint32_t* taken, uint32_t hot,
                         uint32_t* slot_id, uint32_t* where, uint32_t* evicted, uint32_t* rows,
                         unsigned long long* evictions, cudaStream_t stream);

/// For k < n: slot_use[where[list[k]] − hot] = number + 1 and marks[list[k]] = 0 (every id of the
/// list is cached once install_rows has run).
void launch_claim_rows(const uint32_t* list, uint32_t n, const uint32_t* where, uint32_t hot,
                       uint64_t number, uint32_t* slot_use, uint8_t* marks, cudaStream_t stream);

/// rows[i] = ids[i] < hot ? ids[i] : where[ids[i]] for i < n: the device row of each token (or
/// pool entry) of a piece whose rows are cached; adds the number of cold ids among them to
/// *cold_refs when it is not null.
void launch_map_rows(const uint32_t* ids, uint64_t n, uint32_t hot, const uint32_t* where,
                     uint32_t* rows, unsigned long long* cold_refs, cudaStream_t stream);

/// What launch_take_listed_rows reads and writes.
struct TakeListedArgs {
  /// The piece's cold rows: n distinct ids ≥ hot, ascending (gpu/piece_cuts.hpp).
  const uint32_t* list = nullptr;
  uint32_t n = 0;
  uint32_t hot = 0, slots = 0;
  uint64_t number = 0;  ///< the piece
  uint32_t depth = 1;   ///< pieces up to depth − 1 behind it may still train
  // The cache (as above).
  uint32_t* where = nullptr;
  uint32_t* slot_id = nullptr;
  uint32_t* slot_use = nullptr;
  uint32_t* hand = nullptr;  ///< hand[number % 2] read, hand[(number + 1) % 2] written
  // Outputs, n entries each: the piece's new ids ascending, then kNoRow; the device row each
  // came to; the id its slot held (kNoRow when empty, and past the new ids).
  uint32_t* fresh = nullptr;
  uint32_t* fresh_rows = nullptr;
  uint32_t* evicted = nullptr;
  /// The ids to map to device rows (a piece's tokens, then its pool entries): rows[i] for ids[i].
  const uint32_t* ids[2] = {nullptr, nullptr};
  uint64_t ids_n[2] = {0, 0};
  uint32_t* rows[2] = {nullptr, nullptr};
  // Counters, each added to: new ids read from the host, rows written back (evicted), cold
  // references among the mapped ids, and 1 when the free slots did not take the new ids (the
  // cut was wrong; the piece must not train).
  unsigned long long* fresh_count = nullptr;
  unsigned long long* evictions = nullptr;
  unsigned long long* cold_refs = nullptr;
  unsigned long long* failures = nullptr;
};

/// The take of a piece whose cold rows are listed, in one launch of one block: each listed row
/// that is cached claims its slot (slot_use = number + 1); the others are new and take the
/// free slots in clock order from the hand (empty, or no piece after number − depth used it;
/// the piece's own are claimed first, so never taken), writing back the ids they held; then
/// every id of `ids` gets its device row. The same rules as the steps above (mark, find, take,
/// map), without marks over all rows or a count sent to the host: the cut guarantees the room
/// (gpu/piece_cuts.hpp). The rows written back are in clock order, not sorted: pieces cut
/// this way are small (row_cache.hpp says when).
void launch_take_listed_rows(const TakeListedArgs& args, cudaStream_t stream);

/// ids[s] = slot_id[s] when slot_use[s] > since (a piece numbered `since` or later used it: a
/// flush writes back only rows that may have changed), else kNoRow, for s < slots; adds the
/// number of such slots to *used when it is not null.
void launch_flag_used_slots(const uint32_t* slot_id, const uint32_t* slot_use, uint32_t slots,
                            uint64_t since, uint32_t* ids, unsigned long long* used,
                            cudaStream_t stream);

/// One table moved with the others: `host` (row r at host + r · host_stride values, mapped host
/// memory addressed by its host pointer, or device memory; floats or 16-bit values as
/// MoveArgs::host_storage says) and `device` (fp32, row r at device + r · stride).
struct PagedTable {
  void* host = nullptr;
  float* device = nullptr;
};

/// Input and output vectors and two state tables of each (Adam), and with hierarchical softmax
/// beside negative sampling the inner nodes' vectors and their two state tables.
inline constexpr int kMaxPagedTables = 9;

enum class MoveKind {
  kToDevice,  ///< device[dev_row(k)] = host[host_rows[k]]
  kToHost,    ///< host[host_rows[k]] = device[dev_row(k)]
  /// host[out_rows[k]] = device[dev_row(k)], then device[dev_row(k)] = host[host_rows[k]]: an
  /// evicted row goes back while its slot's new row comes in, both directions of the link at once
  /// (the same thread reads the slot before it writes it).
  kSwap,
};

/// Entry k < n moves host row host_rows[k] (k when host_rows is null; and out_rows[k] for kSwap;
/// either is skipped when kNoRow) and device row dev_rows[k], or dev_base + k when dev_rows is
/// null. Host rows should ascend: host pages are walked in order. Interleaved host tables (each
/// table at base + t · dim, host_stride = table_count · dim) are moved one contiguous run of
/// host memory per entry.
///
///
/// 16-bit host storage (host_storage bf16 or fp16, storage.hpp): a row coming in is widened to
/// fp32 (exact); a row going out is rounded stochastically, value v of table t, column c, with
/// half_write_back(storage, v, round_seed, t, c), bits hashed from v's own bits and its
/// place, so a value is rounded the same whenever and wherever it goes back. kToHost also
/// writes the rounded values back to the device row, so that after a write-back the device and
/// host copies agree (a flushed row trains on from the value a checkpoint holds).
struct MoveArgs {
  PagedTable tables[kMaxPagedTables];
  int table_count = 0;
  uint32_t dim = 0;
  uint32_t stride = 0;       ///< floats between device rows
  uint32_t host_stride = 0;  ///< values between host rows (0: dim)
  Storage host_storage = Storage::kFp32;
  uint64_t round_seed = 0;
  /// The table index the rounding of tables[t] uses: round_table_base + t (a copy of one table
  /// of the model rounds as a move of all of them does).
  uint32_t round_table_base = 0;
  const uint32_t* host_rows = nullptr;
  const uint32_t* out_rows = nullptr;  ///< kSwap
  const uint32_t* dev_rows = nullptr;
  uint32_t dev_base = 0;
  uint32_t n = 0;
  /// Blocks of 8 warps at most; 0: one per multiprocessor. Moves that run beside training take
  /// only the room it leaves, so that they do not hold places its next launch needs.
  uint32_t max_blocks = 0;
  /// One device word that no move running at the same time uses, or null. When given, the
  /// launch zeroes it on its stream and warps take their batches from it in ascending order
  /// (see move_rows_kernel in paging.cu); without it they stride over the entries.
  unsigned long long* claim = nullptr;
};

/// Moves the selected rows of every table in one launch (asynchronous on `stream`).
void launch_move_rows(MoveKind kind, const MoveArgs& args, cudaStream_t stream);

/// Rounds device rows rows[0 … *d_count) of `table` (row r at table + r · stride, dim values)
/// in place to values of 16-bit storage `storage`, as a write-back of them would
/// (half_write_back with key `seed` and table index `table_index`): after it the device rows
/// hold what the host tables can, so that moving them to the host loses nothing. `capacity`
/// bounds *d_count; rows null: rows 0, 1, …; d_count null: `capacity` rows.
void launch_round_rows(Storage storage, uint64_t seed, uint32_t table_index, float* table,
                       uint32_t stride, uint32_t dim, const uint32_t* rows, const uint32_t* d_count,
                       uint64_t capacity, cudaStream_t stream);

}  // namespace pagedw2v
