#include "paging.cuh"

#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include <algorithm>

#include "error.hpp"
#include "gpu/cuda_check.hpp"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(uint64_t items, int per_thread = 1) {
  int device = 0, sms = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  PAGEDW2V_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
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

// The element-wise steps map one thread to one id (grid-stride): each reads and writes only
// what belongs to its id, and ids within a list are distinct, so no atomics are needed. Marking
// repeats ids, but every writer stores the same 1.

__global__ void mark_cold_kernel(const uint32_t* __restrict__ ids, uint64_t n, uint32_t hot,
                                 uint8_t* __restrict__ marks, unsigned long long* cold_refs) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t id = ids[i];
    if (id >= hot) marks[id] = 1;
    count_lanes(id >= hot, cold_refs);
  }
}

__global__ void clear_marks_kernel(const uint32_t* __restrict__ list, uint32_t n,
                                   uint8_t* __restrict__ marks) {
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < n;
       k += uint64_t{gridDim.x} * blockDim.x) {
    marks[list[k]] = 0;
  }
}

__global__ void assign_slots_kernel(const uint32_t* __restrict__ list, uint32_t n, uint64_t number,
                                    uint64_t first_valid, uint32_t base,
                                    uint32_t* __restrict__ owner, uint32_t* __restrict__ where,
                                    uint8_t* __restrict__ marks, uint32_t* __restrict__ src,
                                    unsigned long long* from_host) {
  const uint64_t oldest = number >= 2 ? number - 2 : 0;
  const uint64_t lo = oldest > first_valid ? oldest : first_valid;
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < n;
       k += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t id = list[k];
    const uint32_t o = owner[id];
    const bool on_device = o != 0 && uint64_t{o} - 1 >= lo && uint64_t{o} - 1 < number;
    src[k] = on_device ? where[id] : kFromHostSlot;
    count_lanes(!on_device, from_host);
    owner[id] = static_cast<uint32_t>(number + 1);
    where[id] = base + static_cast<uint32_t>(k);
    marks[id] = 0;
  }
}

__global__ void map_rows_kernel(const uint32_t* __restrict__ ids, uint64_t n, uint32_t hot,
                                const uint32_t* __restrict__ where, uint32_t* __restrict__ rows,
                                unsigned long long* cold_refs) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t id = ids[i];
    rows[i] = id < hot ? id : where[id];
    count_lanes(id >= hot, cold_refs);
  }
}

__global__ void mark_leaving_kernel(const uint32_t* __restrict__ list, uint32_t n, uint64_t number,
                                    const uint32_t* __restrict__ owner, uint8_t* __restrict__ leave,
                                    unsigned long long* to_host) {
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < n;
       k += uint64_t{gridDim.x} * blockDim.x) {
    const bool leaves = owner[list[k]] == static_cast<uint32_t>(number + 1);
    leave[k] = leaves ? 1 : 0;
    count_lanes(leaves, to_host);
  }
}

/// Thread mapping of the row moves: a warp moves whole rows, lane l taking element l, l + 32, …
/// of each (16-byte elements when the row allows, so a 128-float row is one 512-byte coalesced
/// access). A warp handles kUnroll consecutive list entries and issues all of their loads, for
/// every table, before its first store: a load from host memory waits a PCIe round trip, so the
/// more loads in flight the closer to the link's rate. Consecutive entries are consecutive
/// sorted ids, so host addresses are walked in order (fewer address-translation misses).
template <typename V, int kUnroll>
__global__ void move_rows_kernel(MoveKind kind, MoveArgs a, uint32_t row_v, uint32_t host_v,
                                 uint32_t dev_v) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  for (uint64_t k0 = warp * kUnroll; k0 < a.n; k0 += warps * kUnroll) {
    bool go[kUnroll];
    uint64_t from[kUnroll], to[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t k = k0 + u;
      go[u] = false;
      from[u] = to[u] = 0;
      if (k < a.n) {
        const uint64_t slot = uint64_t{a.base} + k;
        if (kind == MoveKind::kFromHost) {
          go[u] = a.src[k] == kFromHostSlot;
          from[u] = uint64_t{a.list[k]} * host_v;
          to[u] = slot * dev_v;
        } else if (kind == MoveKind::kFromDevice) {
          const uint32_t s = a.src[k];
          go[u] = s != kFromHostSlot;
          from[u] = uint64_t{s} * dev_v;
          to[u] = slot * dev_v;
        } else {
          go[u] = a.leave[k] != 0;
          from[u] = slot * dev_v;
          to[u] = uint64_t{a.list[k]} * host_v;
        }
      }
    }
    for (int t = 0; t < a.table_count; ++t) {
      const V* src = reinterpret_cast<const V*>(kind == MoveKind::kFromHost ? a.tables[t].host
                                                                            : a.tables[t].device);
      V* dst =
          reinterpret_cast<V*>(kind == MoveKind::kToHost ? a.tables[t].host : a.tables[t].device);
      for (uint32_t c0 = 0; c0 < row_v; c0 += 32) {
        const uint32_t c = c0 + lane;
        V v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (go[u] && c < row_v) v[u] = src[from[u] + c];
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (go[u] && c < row_v) dst[to[u] + c] = v[u];
        }
      }
    }
  }
}

}  // namespace

void launch_mark_cold_ids(const uint32_t* ids, uint64_t n, uint32_t hot, uint8_t* marks,
                          unsigned long long* cold_refs, cudaStream_t stream) {
  if (n == 0) return;
  mark_cold_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(ids, n, hot, marks, cold_refs);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

size_t select_marked_ids_temp_bytes(uint64_t vocab) {
  size_t bytes = 0;
  thrust::counting_iterator<uint32_t> first(0);
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(
      nullptr, bytes, first, static_cast<const uint8_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<int64_t>(vocab)));
  return bytes;
}

void launch_select_marked_ids(const uint8_t* marks, uint64_t vocab, uint32_t* list,
                              uint32_t* d_count, void* temp, size_t temp_bytes,
                              cudaStream_t stream) {
  thrust::counting_iterator<uint32_t> first(0);
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Flagged(temp, temp_bytes, first, marks, list, d_count,
                                               static_cast<int64_t>(vocab), stream));
}

void launch_clear_marks(const uint32_t* list, uint32_t n, uint8_t* marks, cudaStream_t stream) {
  if (n == 0) return;
  clear_marks_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(list, n, marks);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_assign_slots(const uint32_t* list, uint32_t n, uint64_t number, uint64_t first_valid,
                         uint32_t base, uint32_t* owner, uint32_t* where, uint8_t* marks,
                         uint32_t* src, unsigned long long* from_host, cudaStream_t stream) {
  if (n == 0) return;
  if (number + 1 > 0xFFFFFFFEull) throw Error("paged tables: too many super-batches");
  assign_slots_kernel<<<grid_for(n), kThreads, 0, stream>>>(list, n, number, first_valid, base,
                                                            owner, where, marks, src, from_host);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_map_rows(const uint32_t* ids, uint64_t n, uint32_t hot, const uint32_t* where,
                     uint32_t* rows, unsigned long long* cold_refs, cudaStream_t stream) {
  if (n == 0) return;
  map_rows_kernel<<<grid_for(n, 4), kThreads, 0, stream>>>(ids, n, hot, where, rows, cold_refs);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_mark_leaving_rows(const uint32_t* list, uint32_t n, uint64_t number,
                              const uint32_t* owner, uint8_t* leave, unsigned long long* to_host,
                              cudaStream_t stream) {
  if (n == 0) return;
  mark_leaving_kernel<<<grid_for(n), kThreads, 0, stream>>>(list, n, number, owner, leave, to_host);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_move_rows(MoveKind kind, const MoveArgs& a, cudaStream_t stream) {
  if (a.n == 0 || a.table_count == 0) return;
  if (a.table_count > kMaxPagedTables || a.stride < a.dim) {
    throw Error("paged tables: bad move arguments");
  }
  constexpr int kUnroll = 4;
  int device = 0, sms = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  PAGEDW2V_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const uint64_t warps_wanted = (uint64_t{a.n} + kUnroll - 1) / kUnroll;
  // Reads of host memory: one block of 8 warps per multiprocessor keeps the host addresses in
  // flight close together (bench transfer); device-to-device moves take more.
  const uint64_t cap = uint64_t(sms) * (kind == MoveKind::kFromDevice ? 8 : 1);
  const unsigned grid =
      static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>((warps_wanted + 7) / 8, cap)));
  bool aligned = a.dim % 4 == 0;
  for (int t = 0; t < a.table_count; ++t) {
    aligned = aligned && ((reinterpret_cast<uintptr_t>(a.tables[t].host) |
                           reinterpret_cast<uintptr_t>(a.tables[t].device)) &
                          15u) == 0;
  }
  if (aligned) {
    move_rows_kernel<float4, kUnroll>
        <<<grid, kThreads, 0, stream>>>(kind, a, a.dim / 4, a.dim / 4, a.stride / 4);
  } else {
    move_rows_kernel<float, kUnroll>
        <<<grid, kThreads, 0, stream>>>(kind, a, a.dim, a.dim, a.stride);
  }
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
