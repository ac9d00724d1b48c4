#include "kernels/paging.hpp"

#include <thrust/iterator/counting_iterator.h>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_limits.hpp"
#include "kernels/work_claim.cuh"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(uint64_t items, int per_thread = 1) {
  const int sms = detail::device_limits().sms;
  const uint64_t want =
      (items + uint64_t{kThreads} * per_thread - 1) / (uint64_t{kThreads} * per_thread);
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, uint64_t(sms) * 16)));
}

/// Adds the number of lanes of the calling warp with `flag` set to *counter (one atomic a warp).
__device__ __forceinline__ void count_lanes(bool flag, unsigned long long* counter) {
  if (counter == nullptr) return;
  const unsigned active = __activemask();
  const unsigned m = __ballot_sync(active, flag);
  if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(active) - 1) && m != 0) {
    atomicAdd(counter, static_cast<unsigned long long>(__popc(m)));
  }
}

// The element-wise steps map one thread to one entry (grid-stride): each reads and writes only
// what belongs to its entry, and the entries of a list are distinct ids in distinct slots, so no
// atomics are needed. Marking repeats ids, but every writer stores the same 1.

#define PAGEDW2V_GRID_STRIDE(k, n)                                            \
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < (n); \
       k += uint64_t{gridDim.x} * blockDim.x)

__global__ void mark_cold_kernel(const uint32_t* __restrict__ ids, uint64_t n, uint32_t hot,
                                 uint8_t* __restrict__ marks, unsigned long long* cold_refs) {
  PAGEDW2V_GRID_STRIDE(i, n) {
    const uint32_t id = ids[i];
    if (id >= hot) marks[id] = 1;
    count_lanes(id >= hot, cold_refs);
  }
}

__global__ void clear_marks_kernel(const uint32_t* __restrict__ list, uint32_t n,
                                   uint8_t* __restrict__ marks) {
  PAGEDW2V_GRID_STRIDE(k, n) { marks[list[k]] = 0; }
}

__global__ void flag_new_kernel(const uint32_t* __restrict__ list, const uint32_t* d_n,
                                uint32_t capacity, const uint32_t* __restrict__ where,
                                uint8_t* __restrict__ flags) {
  const uint32_t n = *d_n;
  PAGEDW2V_GRID_STRIDE(k, capacity) { flags[k] = k < n && where[list[k]] == kNoRow ? 1 : 0; }
}

__global__ void flag_free_kernel(const uint32_t* __restrict__ slot_id,
                                 const uint32_t* __restrict__ slot_use,
                                 const uint8_t* __restrict__ marks, uint32_t slots,
                                 const uint32_t* hand, uint64_t number, uint32_t depth,
                                 uint8_t* __restrict__ flags) {
  const uint32_t h = *hand;
  PAGEDW2V_GRID_STRIDE(i, slots) {
    uint64_t s = h + i;
    if (s >= slots) s -= slots;
    const uint32_t id = slot_id[s];
    const bool free =
        id == kNoRow || (marks[id] == 0 && uint64_t{slot_use[s]} + depth <= number + 1);
    flags[i] = free ? 1 : 0;
  }
}

__global__ void free_slot_keys_kernel(const uint32_t* __restrict__ free, uint32_t n, uint32_t slots,
                                      const uint32_t* hand, uint32_t* next_hand,
                                      const uint32_t* __restrict__ slot_id, uint32_t no_row,
                                      uint32_t* __restrict__ keys, uint32_t* __restrict__ taken) {
  const uint32_t h = *hand;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    uint64_t next = n == 0 ? h : uint64_t{h} + free[n - 1] + 1;
    while (next >= slots) next -= slots;
    *next_hand = static_cast<uint32_t>(next);
  }
  PAGEDW2V_GRID_STRIDE(k, n) {
    uint64_t s = uint64_t{h} + free[k];
    if (s >= slots) s -= slots;
    const uint32_t id = slot_id[s];
    keys[k] = id == kNoRow ? no_row : id;
    taken[k] = static_cast<uint32_t>(s);
  }
}

// `taken` may be `rows`: entry k reads taken[k] before it writes rows[k].
__global__ void install_kernel(const uint32_t* __restrict__ ids, uint32_t n, const uint32_t* taken,
                               uint32_t hot, uint32_t* __restrict__ slot_id,
                               uint32_t* __restrict__ where, uint32_t* __restrict__ evicted,
                               uint32_t* rows, unsigned long long* evictions) {
  PAGEDW2V_GRID_STRIDE(k, n) {
    const uint32_t s = taken[k];
    const uint32_t id = ids[k], old = slot_id[s];
    if (old != kNoRow) where[old] = kNoRow;
    evicted[k] = old;
    count_lanes(old != kNoRow, evictions);
    slot_id[s] = id;
    const uint32_t row = hot + s;
    where[id] = row;
    rows[k] = row;
  }
}

__global__ void claim_kernel(const uint32_t* __restrict__ list, uint32_t n,
                             const uint32_t* __restrict__ where, uint32_t hot, uint64_t number,
                             uint32_t* __restrict__ slot_use, uint8_t* __restrict__ marks) {
  PAGEDW2V_GRID_STRIDE(k, n) {
    const uint32_t id = list[k];
    slot_use[where[id] - hot] = static_cast<uint32_t>(number + 1);
    marks[id] = 0;
  }
}

__global__ void map_rows_kernel(const uint32_t* __restrict__ ids, uint64_t n, uint32_t hot,
                                const uint32_t* __restrict__ where, uint32_t* __restrict__ rows,
                                unsigned long long* cold_refs) {
  PAGEDW2V_GRID_STRIDE(i, n) {
    const uint32_t id = ids[i];
    rows[i] = id < hot ? id : where[id];
    count_lanes(id >= hot, cold_refs);
  }
}

constexpr int kTakeThreads = 1024;

// One block: its phases are ordered by __syncthreads, which also makes each phase's writes to
// global memory visible to the next.
__global__ void __launch_bounds__(kTakeThreads) take_listed_kernel(TakeListedArgs a) {
  using Scan = cub::BlockScan<uint32_t, kTakeThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ uint32_t last_taken;
  const uint32_t tid = threadIdx.x;
  const uint32_t use = static_cast<uint32_t>(a.number + 1);
  // The cached rows claim their slots; the others are new, listed in order.
  uint32_t fresh_n = 0;
  for (uint32_t base = 0; base < a.n; base += kTakeThreads) {
    const uint32_t k = base + tid;
    uint32_t id = 0, flag = 0;
    if (k < a.n) {
      id = a.list[k];
      const uint32_t w = a.where[id];
      if (w == kNoRow) {
        flag = 1;
      } else {
        a.slot_use[w - a.hot] = use;
      }
    }
    uint32_t at = 0, total = 0;
    Scan(scan).ExclusiveSum(flag, at, total);
    if (flag != 0) a.fresh[fresh_n + at] = id;
    fresh_n += total;
    __syncthreads();
  }
  for (uint32_t k = fresh_n + tid; k < a.n; k += kTakeThreads) {
    a.fresh[k] = kNoRow;
    a.evicted[k] = kNoRow;
    a.fresh_rows[k] = 0;
  }
  // The free slots in clock order from the hand; the k-th takes the k-th new id.
  const uint32_t h = a.hand[a.number % 2];
  uint32_t found = 0;
  for (uint32_t base = 0; base < a.slots && found < fresh_n; base += kTakeThreads) {
    const uint32_t i = base + tid;
    uint32_t flag = 0, s = 0;
    if (i < a.slots) {
      s = h + i < a.slots ? h + i : h + i - a.slots;
      flag = a.slot_id[s] == kNoRow || uint64_t{a.slot_use[s]} + a.depth <= a.number + 1;
    }
    uint32_t at = 0, total = 0;
    Scan(scan).ExclusiveSum(flag, at, total);
    const uint32_t k = found + at;
    bool evicts = false;
    if (flag != 0 && k < fresh_n) {
      const uint32_t id = a.fresh[k], old = a.slot_id[s];
      evicts = old != kNoRow;
      if (evicts) a.where[old] = kNoRow;
      a.evicted[k] = old;
      a.slot_id[s] = id;
      a.slot_use[s] = use;
      a.where[id] = a.hot + s;
      a.fresh_rows[k] = a.hot + s;
      if (k + 1 == fresh_n) last_taken = s;
    }
    count_lanes(evicts, a.evictions);
    found += total;
    __syncthreads();
  }
  if (tid == 0) {
    if (found < fresh_n) {
      atomicAdd(a.failures, 1ull);
    } else {
      a.hand[(a.number + 1) % 2] =
          fresh_n == 0 ? h : (last_taken + 1 == a.slots ? 0 : last_taken + 1);
    }
    atomicAdd(a.fresh_count, static_cast<unsigned long long>(fresh_n));
  }
  __syncthreads();
  // Every id's device row.
  for (int part = 0; part < 2; ++part) {
    for (uint64_t i = tid; i < a.ids_n[part]; i += kTakeThreads) {
      const uint32_t id = a.ids[part][i];
      a.rows[part][i] = id < a.hot ? id : a.where[id];
      count_lanes(id >= a.hot, a.cold_refs);
    }
  }
}

__global__ void flag_used_kernel(const uint32_t* __restrict__ slot_id,
                                 const uint32_t* __restrict__ slot_use, uint32_t slots,
                                 uint64_t since, uint32_t* __restrict__ ids,
                                 unsigned long long* used) {
  PAGEDW2V_GRID_STRIDE(s, slots) {
    const bool u = slot_use[s] > since && slot_id[s] != kNoRow;
    ids[s] = u ? slot_id[s] : kNoRow;
    count_lanes(u, used);
  }
}

#undef PAGEDW2V_GRID_STRIDE

/// Thread mapping of the row moves: an entry's row in one table is cut into pieces of 32
/// elements (16-byte elements when the rows allow, so a 128-float row is one 512-byte coalesced
/// access), lane l moving element l of a piece. The items (entry, table, piece) are dealt to warps
/// kBatch consecutive ones at a time, entry by entry, table by table: with interleaved host
/// tables the items of one entry are one contiguous run of host memory, and PCIe moves few large
/// runs far faster than many rows apart (bench transfer, bench train). A warp issues all loads of
/// its batch before its first store: a load from host memory waits a PCIe round trip. Sorted
/// entries walk host addresses in order; with a claim counter (MoveArgs::claim) each warp takes
/// the next batch when done with its last, so the batches in flight stay a narrow window of
/// host addresses, which the GPU translates far faster than addresses spread over the table.
template <typename V, int kBatch>
__global__ void move_rows_kernel(MoveKind kind, MoveArgs a, uint32_t row_v, uint32_t pieces,
                                 uint32_t host_v, uint32_t dev_v) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  const bool swap = kind == MoveKind::kSwap;
  const bool to_host = kind == MoveKind::kToHost;
  const uint32_t per_entry = static_cast<uint32_t>(a.table_count) * pieces;
  const uint64_t items = uint64_t{a.n} * per_entry;
  const auto next = [&](uint64_t g) -> uint64_t {
    return a.claim != nullptr ? detail::claim_batch(a.claim, kBatch) : g + warps * kBatch;
  };
  for (uint64_t g0 = a.claim != nullptr ? next(0) : warp * kBatch; g0 < items; g0 = next(g0)) {
    bool in[kBatch], out[kBatch];
    uint64_t host_in[kBatch], host_out[kBatch], dev[kBatch];
    int table[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const uint64_t g = g0 + b;
      in[b] = out[b] = false;
      host_in[b] = host_out[b] = dev[b] = 0;
      table[b] = 0;
      if (g >= items) continue;
      const uint32_t k = static_cast<uint32_t>(g / per_entry);
      const uint32_t r = static_cast<uint32_t>(g % per_entry);
      const uint32_t c = (r % pieces) * 32 + lane;
      if (c >= row_v) continue;
      table[b] = static_cast<int>(r / pieces);
      const uint32_t h = a.host_rows != nullptr ? a.host_rows[k] : k;
      const uint32_t o = swap ? a.out_rows[k] : kNoRow;
      // kToHost moves host_rows[k] out; kToDevice and kSwap bring it in.
      in[b] = !to_host && h != kNoRow;
      out[b] = to_host ? h != kNoRow : o != kNoRow;
      host_in[b] = uint64_t{h} * host_v + c;
      host_out[b] = uint64_t{to_host ? h : o} * host_v + c;
      const uint64_t d = a.dev_rows != nullptr ? a.dev_rows[k] : uint64_t{a.dev_base} + k;
      dev[b] = d * dev_v + c;
    }
    V v[kBatch];
    // Out first: a slot's old row is read before anything writes the slot (same thread).
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (out[b]) v[b] = reinterpret_cast<const V*>(a.tables[table[b]].device)[dev[b]];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (out[b]) reinterpret_cast<V*>(a.tables[table[b]].host)[host_out[b]] = v[b];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (in[b]) v[b] = reinterpret_cast<const V*>(a.tables[table[b]].host)[host_in[b]];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (in[b]) reinterpret_cast<V*>(a.tables[table[b]].device)[dev[b]] = v[b];
    }
  }
}

/// Eight fp32 values of a device row: what a lane of the 16-bit move carries for 16 bytes of
/// host memory.
struct Float8 {
  float4 lo, hi;
};

/// Host values of 16-bit storage as the move kernel carries them: kVec consecutive values of
/// one row (8: 16 bytes of host memory against two float4 of device memory; 4: 8 bytes against
/// a float4; 1: one value).
template <int kVec>
struct HalfVec;
template <>
struct HalfVec<8> {
  using Host = uint4;
  using Dev = Float8;
};
template <>
struct HalfVec<4> {
  using Host = uint2;
  using Dev = float4;
};
template <>
struct HalfVec<1> {
  using Host = uint16_t;
  using Dev = float;
};

/// Loads and stores of kVec device values at `p` (aligned to 16 bytes for kVec ≥ 4).
template <typename Dev>
__device__ __forceinline__ Dev load_dev(const float* p) {
  return *reinterpret_cast<const Dev*>(p);
}
template <>
__device__ __forceinline__ Float8 load_dev<Float8>(const float* p) {
  const float4* q = reinterpret_cast<const float4*>(p);
  return {q[0], q[1]};
}
template <typename Dev>
__device__ __forceinline__ void store_dev(float* p, const Dev& v) {
  *reinterpret_cast<Dev*>(p) = v;
}
template <>
__device__ __forceinline__ void store_dev<Float8>(float* p, const Float8& v) {
  float4* q = reinterpret_cast<float4*>(p);
  q[0] = v.lo;
  q[1] = v.hi;
}

__device__ __forceinline__ float4 widen(Storage s, uint2 h) {
  return make_float4(half_to_float(s, static_cast<uint16_t>(h.x)),
                     half_to_float(s, static_cast<uint16_t>(h.x >> 16)),
                     half_to_float(s, static_cast<uint16_t>(h.y)),
                     half_to_float(s, static_cast<uint16_t>(h.y >> 16)));
}
__device__ __forceinline__ Float8 widen(Storage s, uint4 h) {
  return {widen(s, make_uint2(h.x, h.y)), widen(s, make_uint2(h.z, h.w))};
}
__device__ __forceinline__ float widen(Storage s, uint16_t h) { return half_to_float(s, h); }

/// The 16-bit value v of table t, column c goes back as (storage.hpp's half_write_back).
__device__ __forceinline__ uint16_t write_back(Storage s, float v, uint64_t seed, uint32_t t,
                                               uint32_t c) {
  return half_write_back(s, v, seed, t, c);
}

/// Rounds the kVec values of columns c … of table t going back; `v` becomes the rounded values
/// as fp32.
__device__ __forceinline__ uint2 narrow(Storage s, float4& v, uint64_t seed, uint32_t t,
                                        uint32_t c) {
  const uint16_t h0 = write_back(s, v.x, seed, t, c);
  const uint16_t h1 = write_back(s, v.y, seed, t, c + 1);
  const uint16_t h2 = write_back(s, v.z, seed, t, c + 2);
  const uint16_t h3 = write_back(s, v.w, seed, t, c + 3);
  v = make_float4(half_to_float(s, h0), half_to_float(s, h1), half_to_float(s, h2),
                  half_to_float(s, h3));
  return make_uint2(h0 | (uint32_t{h1} << 16), h2 | (uint32_t{h3} << 16));
}
__device__ __forceinline__ uint4 narrow(Storage s, Float8& v, uint64_t seed, uint32_t t,
                                        uint32_t c) {
  const uint2 lo = narrow(s, v.lo, seed, t, c);
  const uint2 hi = narrow(s, v.hi, seed, t, c + 4);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}
__device__ __forceinline__ uint16_t narrow(Storage s, float& v, uint64_t seed, uint32_t t,
                                           uint32_t c) {
  const uint16_t h = write_back(s, v, seed, t, c);
  v = half_to_float(s, h);
  return h;
}

/// move_rows_kernel for host tables of 16-bit storage: the same order of loads and stores and
/// the same dealing of items to warps, but an item is a piece of 32 lanes over the rows of *all*
/// tables of one entry, lane l carrying kVec values (unit l of the piece; the units of table 0's
/// row first, then table 1's, …): with kVec = 8 each lane loads 16 bytes of host memory, as the
/// fp32 kernel's float4 does, and at dim 128 the two 256-byte rows of an entry in interleaved
/// host tables are one 512-byte access. `row_u` is units a row, `host_v` and `dev_v` values
/// between rows. Values are widened on the way in and rounded stochastically on the way out
/// (MoveArgs), and kToHost writes the rounded values back to the device row as well. The
/// rounding bits are a few integer multiplies a value (storage.hpp's round_bits), small beside
/// a PCIe round trip.
template <int kVec, int kBatch>
__global__ void move_half_rows_kernel(MoveKind kind, MoveArgs a, uint32_t row_u, uint32_t pieces,
                                      uint32_t host_v, uint32_t dev_v) {
  using Host = typename HalfVec<kVec>::Host;
  using Dev = typename HalfVec<kVec>::Dev;
  const Storage st = a.host_storage;
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  const bool swap = kind == MoveKind::kSwap;
  const bool to_host = kind == MoveKind::kToHost;
  const uint32_t units = static_cast<uint32_t>(a.table_count) * row_u;
  const uint64_t items = uint64_t{a.n} * pieces;
  const auto next = [&](uint64_t g) -> uint64_t {
    return a.claim != nullptr ? detail::claim_batch(a.claim, kBatch) : g + warps * kBatch;
  };
  for (uint64_t g0 = a.claim != nullptr ? next(0) : warp * kBatch; g0 < items; g0 = next(g0)) {
    bool in[kBatch], out[kBatch];
    uint64_t host_in[kBatch], host_out[kBatch], dev[kBatch];
    uint32_t column[kBatch];
    int table[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const uint64_t g = g0 + b;
      in[b] = out[b] = false;
      host_in[b] = host_out[b] = dev[b] = 0;
      column[b] = 0;
      table[b] = 0;
      if (g >= items) continue;
      const uint32_t k = static_cast<uint32_t>(g / pieces);
      const uint32_t unit = static_cast<uint32_t>(g % pieces) * 32 + lane;
      if (unit >= units) continue;
      table[b] = static_cast<int>(unit / row_u);
      const uint32_t c = (unit % row_u) * kVec;
      const uint32_t h = a.host_rows != nullptr ? a.host_rows[k] : k;
      const uint32_t o = swap ? a.out_rows[k] : kNoRow;
      in[b] = !to_host && h != kNoRow;
      out[b] = to_host ? h != kNoRow : o != kNoRow;
      column[b] = c;
      host_in[b] = uint64_t{h} * host_v + c;
      host_out[b] = uint64_t{to_host ? h : o} * host_v + c;
      const uint64_t d = a.dev_rows != nullptr ? a.dev_rows[k] : uint64_t{a.dev_base} + k;
      dev[b] = d * dev_v + c;
    }
    Dev v[kBatch];
    Host h[kBatch];
    // Out first: a slot's old row is read before anything writes the slot (same thread).
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (out[b]) v[b] = load_dev<Dev>(a.tables[table[b]].device + dev[b]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (!out[b]) continue;
      const Host x = narrow(st, v[b], a.round_seed,
                            a.round_table_base + static_cast<uint32_t>(table[b]), column[b]);
      *reinterpret_cast<Host*>(static_cast<uint16_t*>(a.tables[table[b]].host) + host_out[b]) = x;
      if (to_host) store_dev(a.tables[table[b]].device + dev[b], v[b]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (in[b]) {
        h[b] = *reinterpret_cast<const Host*>(
            static_cast<const uint16_t*>(a.tables[table[b]].host) + host_in[b]);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (in[b]) store_dev(a.tables[table[b]].device + dev[b], widen(st, h[b]));
    }
  }
}

/// One warp a listed row at a time (rows strided over the warps), lanes over its columns:
/// coalesced reads and writes of each row.
__global__ void round_rows_kernel(Storage s, uint64_t seed, uint32_t table_index,
                                  float* __restrict__ table, uint32_t stride, uint32_t dim,
                                  const uint32_t* __restrict__ rows, const uint32_t* d_count,
                                  uint64_t capacity) {
  const uint64_t n = d_count != nullptr ? min(uint64_t{*d_count}, capacity) : capacity;
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  for (uint64_t k = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5; k < n; k += warps) {
    float* row = table + (rows != nullptr ? uint64_t{rows[k]} : k) * stride;
    for (uint32_t c = lane; c < dim; c += 32) {
      row[c] = half_to_float(s, write_back(s, row[c], seed, table_index, c));
    }
  }
}

}  // namespace

void launch_round_rows(Storage storage, uint64_t seed, uint32_t table_index, float* table,
                       uint32_t stride, uint32_t dim, const uint32_t* rows, const uint32_t* d_count,
                       uint64_t capacity, cudaStream_t stream) {
  if (capacity == 0 || dim == 0 || storage == Storage::kFp32) return;
  const int sms = detail::device_limits().sms;
  const uint64_t blocks = (capacity * 32 + kThreads - 1) / kThreads;
  const unsigned grid =
      static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(blocks, uint64_t(sms) * 8)));
  round_rows_kernel<<<grid, kThreads, 0, stream>>>(storage, seed, table_index, table, stride, dim,
                                                   rows, d_count, capacity);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_mark_cold_ids(const uint32_t* ids, uint64_t n, uint32_t hot, uint8_t* marks,
                          unsigned long long* cold_refs, cudaStream_t stream) {
  if (n == 0) return;
  mark_cold_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(ids, n, hot, marks, cold_refs);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

size_t select_marked_ids_temp_bytes(uint64_t n) {
  size_t counting = 0, items = 0;
  thrust::counting_iterator<uint32_t> first(0);
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(
      nullptr, counting, first, static_cast<const uint8_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n)));
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(
      nullptr, items, static_cast<const uint32_t*>(nullptr), static_cast<const uint8_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n)));
  return std::max(counting, items);
}

void launch_select_marked_ids(const uint8_t* marks, uint64_t vocab, uint32_t* list,
                              uint32_t* d_count, void* temp, size_t temp_bytes,
                              cudaStream_t stream) {
  thrust::counting_iterator<uint32_t> first(0);
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(temp, temp_bytes, first, marks, list, d_count,
                                               static_cast<int64_t>(vocab), stream));
}

void launch_select_flagged(const uint32_t* items, const uint8_t* flags, uint64_t n, uint32_t* out,
                           uint32_t* d_count, void* temp, size_t temp_bytes, cudaStream_t stream) {
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(temp, temp_bytes, items, flags, out, d_count,
                                               static_cast<int64_t>(n), stream));
}

void launch_clear_marks(const uint32_t* list, uint32_t n, uint8_t* marks, cudaStream_t stream) {
  if (n == 0) return;
  clear_marks_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(list, n, marks);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_flag_new_ids(const uint32_t* list, const uint32_t* d_n, uint32_t capacity,
                         const uint32_t* where, uint8_t* flags, cudaStream_t stream) {
  if (capacity == 0) return;
  flag_new_kernel<<<grid_for(capacity, 4), kThreads, 0, stream>>>(list, d_n, capacity, where,
                                                                  flags);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_flag_free_slots(const uint32_t* slot_id, const uint32_t* slot_use, const uint8_t* marks,
                            uint32_t slots, const uint32_t* hand, uint64_t number, uint32_t depth,
                            uint8_t* flags, cudaStream_t stream) {
  if (slots == 0) return;
  flag_free_kernel<<<grid_for(slots, 4), kThreads, 0, stream>>>(slot_id, slot_use, marks, slots,
                                                                hand, number, depth, flags);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

size_t order_free_slots_temp_bytes(uint32_t n, uint32_t key_bits) {
  size_t bytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), slots(nullptr, nullptr);
  PAGEDW2V_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, slots,
                                                    static_cast<int>(std::max<uint32_t>(n, 1)), 0,
                                                    static_cast<int>(key_bits)));
  return bytes;
}

const uint32_t* launch_order_free_slots(const uint32_t* free, uint32_t n, uint32_t slots,
                                        const uint32_t* hand, uint32_t* next_hand,
                                        const uint32_t* slot_id, uint32_t no_row, uint32_t key_bits,
                                        uint32_t* keys_a, uint32_t* keys_b, uint32_t* slots_a,
                                        uint32_t* slots_b, void* temp, size_t temp_bytes,
                                        cudaStream_t stream) {
  if (slots == 0) return slots_a;
  if (key_bits == 0 || key_bits > 32 || (key_bits < 32 && no_row >> key_bits != 0) ||
      n > 0x7FFFFFFFu) {
    throw Error("paged tables: bad slot-order arguments");
  }
  free_slot_keys_kernel<<<grid_for(std::max<uint32_t>(n, 1)), kThreads, 0, stream>>>(
      free, n, slots, hand, next_hand, slot_id, no_row, keys_a, slots_a);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
  if (n == 0) return slots_a;
  // Stable: empty slots (all keyed no_row) keep their clock order.
  cub::DoubleBuffer<uint32_t> k(keys_a, keys_b), v(slots_a, slots_b);
  PAGEDW2V_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k, v, static_cast<int>(n), 0,
                                                    static_cast<int>(key_bits), stream));
  return v.Current();
}

void launch_install_rows(const uint32_t* ids, uint32_t n, const uint32_t* taken, uint32_t hot,
                         uint32_t* slot_id, uint32_t* where, uint32_t* evicted, uint32_t* rows,
                         unsigned long long* evictions, cudaStream_t stream) {
  if (n == 0) return;
  install_kernel<<<grid_for(n), kThreads, 0, stream>>>(ids, n, taken, hot, slot_id, where, evicted,
                                                       rows, evictions);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_claim_rows(const uint32_t* list, uint32_t n, const uint32_t* where, uint32_t hot,
                       uint64_t number, uint32_t* slot_use, uint8_t* marks, cudaStream_t stream) {
  if (n == 0) return;
  if (number + 1 > 0xFFFFFFFEull) throw Error("paged tables: too many pieces");
  claim_kernel<<<grid_for(n), kThreads, 0, stream>>>(list, n, where, hot, number, slot_use, marks);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_map_rows(const uint32_t* ids, uint64_t n, uint32_t hot, const uint32_t* where,
                     uint32_t* rows, unsigned long long* cold_refs, cudaStream_t stream) {
  if (n == 0) return;
  map_rows_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(ids, n, hot, where, rows, cold_refs);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_take_listed_rows(const TakeListedArgs& a, cudaStream_t stream) {
  if (a.number + 1 > 0xFFFFFFFEull) throw Error("paged tables: too many pieces");
  if (a.fresh_count == nullptr || a.evictions == nullptr || a.failures == nullptr ||
      (a.slots == 0 && a.n > 0)) {
    throw Error("paged tables: bad take arguments");
  }
  take_listed_kernel<<<1, kTakeThreads, 0, stream>>>(a);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_flag_used_slots(const uint32_t* slot_id, const uint32_t* slot_use, uint32_t slots,
                            uint64_t since, uint32_t* ids, unsigned long long* used,
                            cudaStream_t stream) {
  if (slots == 0) return;
  flag_used_kernel<<<grid_for(slots, 4), kThreads, 0, stream>>>(slot_id, slot_use, slots, since,
                                                                ids, used);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_move_rows(MoveKind kind, const MoveArgs& a, cudaStream_t stream) {
  if (a.n == 0 || a.table_count == 0) return;
  const uint32_t host_stride = a.host_stride > 0 ? a.host_stride : a.dim;
  if (a.table_count > kMaxPagedTables || a.stride < a.dim || host_stride < a.dim ||
      (kind == MoveKind::kSwap && a.out_rows == nullptr)) {
    throw Error("paged tables: bad move arguments");
  }
  constexpr int kBatch = 8;
  const int sms = detail::device_limits().sms;
  const bool half = a.host_storage != Storage::kFp32;
  // One block of 8 warps per multiprocessor keeps the host addresses in flight close together
  // (bench transfer).
  const uint64_t cap = a.max_blocks > 0 ? a.max_blocks : uint64_t(sms);
  const auto grid_of = [&](uint64_t items) {
    const uint64_t warps_wanted = (items + kBatch - 1) / kBatch;
    return static_cast<unsigned>(
        std::max<uint64_t>(1, std::min<uint64_t>((warps_wanted + 7) / 8, cap)));
  };
  // Whether every table's rows allow vec values a lane: rows and strides in whole vectors,
  // host rows aligned to vec 16-bit values (at most 16 bytes), device rows to 16 bytes.
  const auto allows = [&](uint32_t vec, uint32_t host_bytes) {
    bool ok = a.dim % vec == 0 && a.stride % 4 == 0 && host_stride % vec == 0;
    for (int t = 0; t < a.table_count; ++t) {
      ok = ok && (reinterpret_cast<uintptr_t>(a.tables[t].host) & (host_bytes - 1)) == 0 &&
           (reinterpret_cast<uintptr_t>(a.tables[t].device) & 15u) == 0;
    }
    return ok;
  };
  detail::reset_claim(a.claim, stream);
  if (half) {
    // 16 bytes of host memory a lane where the rows allow it (as fp32's float4), else 8, else 2.
    const uint32_t vec = allows(8, 16) ? 8 : allows(4, 8) ? 4 : 1;
    const uint32_t row_u = a.dim / vec;
    const uint32_t pieces = (static_cast<uint32_t>(a.table_count) * row_u + 31) / 32;
    const unsigned grid = grid_of(uint64_t{a.n} * pieces * (vec == 8 ? 2 : 1));
    if (vec == 8) {
      // Half the batch: a lane's 16 host bytes of an item are the fp32 kernel's, and an
      // entry's rows of every table are one item, not one a table.
      move_half_rows_kernel<8, kBatch / 2>
          <<<grid, kThreads, 0, stream>>>(kind, a, row_u, pieces, host_stride, a.stride);
    } else if (vec == 4) {
      move_half_rows_kernel<4, kBatch>
          <<<grid, kThreads, 0, stream>>>(kind, a, row_u, pieces, host_stride, a.stride);
    } else {
      move_half_rows_kernel<1, kBatch>
          <<<grid, kThreads, 0, stream>>>(kind, a, row_u, pieces, host_stride, a.stride);
    }
    PAGEDW2V_CUDA_CHECK_LAUNCH();
    return;
  }
  // Four values a lane (16 bytes) where the rows allow it.
  bool aligned = a.dim % 4 == 0 && a.stride % 4 == 0 && host_stride % 4 == 0;
  for (int t = 0; t < a.table_count; ++t) {
    aligned = aligned && (reinterpret_cast<uintptr_t>(a.tables[t].host) & 15u) == 0 &&
              (reinterpret_cast<uintptr_t>(a.tables[t].device) & 15u) == 0;
  }
  const uint32_t row_v = aligned ? a.dim / 4 : a.dim;
  const uint32_t pieces = (row_v + 31) / 32;
  const unsigned grid = grid_of(uint64_t{a.n} * static_cast<uint64_t>(a.table_count) * pieces);
  if (aligned) {
    move_rows_kernel<float4, kBatch>
        <<<grid, kThreads, 0, stream>>>(kind, a, row_v, pieces, host_stride / 4, a.stride / 4);
  } else {
    move_rows_kernel<float, kBatch>
        <<<grid, kThreads, 0, stream>>>(kind, a, row_v, pieces, host_stride, a.stride);
  }
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
