#pragma once
/// @file paging.cuh
/// The named steps of paging a super-batch's rows between host tables (pinned, mapped host
/// memory) and the GPU's device table (gpu/cuda_backend.cpp drives them):
///   collect ids (mark_cold_ids) → sort/unique (select_marked_ids) → map id → slot
///   (assign_slots, map_rows) → gather rows and optimizer state (move_rows, kFromHost and
///   kFromDevice) → train → scatter (mark_leaving_rows, move_rows kToHost).
///
/// The device table holds `hot` rows — ids 0 … hot − 1, the most frequent words, at row = id for
/// the whole run — then three staging buffers of `capacity` rows each. Super-batch number n (a
/// global count, never reused) stages its cold rows in buffer n mod 3: slot base + k holds
/// cold id list[k] (list sorted ascending). Two vocabulary-sized arrays remember where each
/// cold row was staged last: owner[id] = 1 + the number of the last super-batch that staged it
/// (0: never), where[id] = that slot.
///
/// While super-batch n trains, n + 1 is gathered and n − 1 is scattered, so a row may be in
/// flight. The rules that keep every read fresh:
///  - a row staged by n − 1 or n − 2 (and staged since `first_valid`) is copied device to
///    device (kFromDevice) after n − 1 has trained, never read from the host, whose copy may
///    be stale; every other row is read from the host (kFromHost), whose copy is current
///    because the scatter of n − 3 (the last that could hold it) has finished;
///  - super-batch j writes back (kToHost) only the rows that neither j + 1 nor j + 2 staged
///    (the later one writes them); which ones is decided when j + 2 is assigned
///    (mark_leaving_rows), before j + 3 can stage them again.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace pagedw2v {

/// Marks a slot whose row comes from the host, not from another slot.
inline constexpr uint32_t kFromHostSlot = 0xFFFFFFFFu;

/// marks[ids[i]] = 1 for every i < n with ids[i] ≥ hot (a cold row this super-batch touches);
/// adds the number of such i to *cold_refs when it is not null.
void launch_mark_cold_ids(const uint32_t* ids, uint64_t n, uint32_t hot, uint8_t* marks,
                          unsigned long long* cold_refs, cudaStream_t stream);

/// Bytes of temporary storage select_marked_ids needs for `vocab` marks.
size_t select_marked_ids_temp_bytes(uint64_t vocab);

/// list[0 … *d_count) = every id < vocab with marks[id] ≠ 0, ascending (a stream compaction:
/// sorted and unique without a sort).
void launch_select_marked_ids(const uint8_t* marks, uint64_t vocab, uint32_t* list,
                              uint32_t* d_count, void* temp, size_t temp_bytes,
                              cudaStream_t stream);

/// marks[list[k]] = 0 for k < n (undoes mark_cold_ids without touching the whole array).
void launch_clear_marks(const uint32_t* list, uint32_t n, uint8_t* marks, cudaStream_t stream);

/// For k < n, cold id = list[k] goes to slot base + k of super-batch `number`:
///   src[k] = where[id] when owner[id] − 1 ∈ [max(number − 2, first_valid), number), else
///            kFromHostSlot;
///   owner[id] = number + 1, where[id] = base + k, marks[id] = 0;
/// adds the number of rows to read from the host to *from_host when it is not null.
void launch_assign_slots(const uint32_t* list, uint32_t n, uint64_t number, uint64_t first_valid,
                         uint32_t base, uint32_t* owner, uint32_t* where, uint8_t* marks,
                         uint32_t* src, unsigned long long* from_host, cudaStream_t stream);

/// rows[i] = ids[i] < hot ? ids[i] : where[ids[i]] for i < n: the device row of each token (or
/// pool entry) of a super-batch whose slots are assigned; adds the number of cold ids among
/// them to *cold_refs when it is not null.
void launch_map_rows(const uint32_t* ids, uint64_t n, uint32_t hot, const uint32_t* where,
                     uint32_t* rows, unsigned long long* cold_refs, cudaStream_t stream);

/// leave[k] = 1 when owner[list[k]] = number + 1 (no later super-batch staged it), else 0;
/// adds the number of leaving rows to *to_host when it is not null.
void launch_mark_leaving_rows(const uint32_t* list, uint32_t n, uint64_t number,
                              const uint32_t* owner, uint8_t* leave, unsigned long long* to_host,
                              cudaStream_t stream);

/// One table moved with the others: `host` (rows × dim, mapped host memory, addressed by its
/// device pointer) and `device` (rows × stride).
struct PagedTable {
  float* host = nullptr;
  float* device = nullptr;
};

inline constexpr int kMaxPagedTables = 6;

enum class MoveKind {
  kFromHost,    ///< device[base + k] = host[list[k]] where src[k] = kFromHostSlot
  kFromDevice,  ///< device[base + k] = device[src[k]] where src[k] ≠ kFromHostSlot
  kToHost,      ///< host[list[k]] = device[base + k] where leave[k] ≠ 0
};

struct MoveArgs {
  PagedTable tables[kMaxPagedTables];
  int table_count = 0;
  uint32_t dim = 0;
  uint32_t stride = 0;
  const uint32_t* list = nullptr;
  uint32_t n = 0;
  uint32_t base = 0;
  const uint32_t* src = nullptr;   ///< kFromHost, kFromDevice
  const uint8_t* leave = nullptr;  ///< kToHost
};

/// Moves the selected rows of every table in one launch (asynchronous on `stream`).
void launch_move_rows(MoveKind kind, const MoveArgs& args, cudaStream_t stream);

}  // namespace pagedw2v
