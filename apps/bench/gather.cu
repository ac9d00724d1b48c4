#include <cstdint>
#include <string>
#include <type_traits>

#include "base/error.hpp"
#include "bench/gather.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_limits.hpp"
#include "kernels/work_claim.cuh"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

/// Thread mapping of the coalesced kernels: a row of `row_v` elements of V (float4 when the
/// shape allows, else float) is cut into pieces of 32 elements; the n·pieces items are dealt to
/// warps kUnroll consecutive items at a time, and lane l moves element l of its piece. For dim
/// 128 a piece is a whole row, 32 lanes × 16 B = 512 B in one coalesced access, and consecutive
/// items of a warp are consecutive (sorted, so nearby) rows. A warp issues all kUnroll loads
/// before its first store: a load from host memory waits a PCIe round trip.
/// Who takes which items: with a claim counter (work_claim.cuh), each warp takes the next kUnroll
/// items from it when it is done with its last ones, so the items in flight are always a narrow
/// window that walks the sorted ids in order; without one, warp w takes items w·kUnroll, then
/// every (warps·kUnroll)-th batch after it (grid-stride), and warps that run at different
/// speeds drift apart over the table.
template <typename V, int kUnroll>
__global__ void gather_rows_kernel(const V* __restrict__ table, uint32_t row_v, uint32_t pieces,
                                   const uint32_t* __restrict__ ids, uint32_t n_max,
                                   const uint32_t* __restrict__ d_n, V* __restrict__ out,
                                   unsigned long long* claim) {
  const uint32_t n = d_n != nullptr ? min(*d_n, n_max) : n_max;
  const uint64_t items = uint64_t{n} * pieces;
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  for (uint64_t base = claim != nullptr ? detail::claim_batch(claim, kUnroll) : warp * kUnroll;
       base < items;
       base = claim != nullptr ? detail::claim_batch(claim, kUnroll) : base + warps * kUnroll) {
    V v[kUnroll];
    uint64_t dst[kUnroll];
    bool ok[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t item = base + u;
      const uint32_t row = static_cast<uint32_t>(item / pieces);
      const uint32_t c = static_cast<uint32_t>(item % pieces) * 32 + lane;
      ok[u] = item < items && c < row_v;
      if (ok[u]) {
        v[u] = table[uint64_t{ids[row]} * row_v + c];
        dst[u] = uint64_t{row} * row_v + c;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (ok[u]) out[dst[u]] = v[u];
    }
  }
}

/// The same mapping as gather_rows_kernel, with the roles of table and buffer swapped.
template <typename V, int kUnroll>
__global__ void scatter_rows_kernel(V* __restrict__ table, uint32_t row_v, uint32_t pieces,
                                    const uint32_t* __restrict__ ids, uint32_t n_max,
                                    const uint32_t* __restrict__ d_n, const V* __restrict__ in,
                                    unsigned long long* claim) {
  const uint32_t n = d_n != nullptr ? min(*d_n, n_max) : n_max;
  const uint64_t items = uint64_t{n} * pieces;
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  for (uint64_t base = claim != nullptr ? detail::claim_batch(claim, kUnroll) : warp * kUnroll;
       base < items;
       base = claim != nullptr ? detail::claim_batch(claim, kUnroll) : base + warps * kUnroll) {
    V v[kUnroll];
    uint64_t dst[kUnroll];
    bool ok[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t item = base + u;
      const uint32_t row = static_cast<uint32_t>(item / pieces);
      const uint32_t c = static_cast<uint32_t>(item % pieces) * 32 + lane;
      ok[u] = item < items && c < row_v;
      if (ok[u]) {
        v[u] = in[uint64_t{row} * row_v + c];
        dst[u] = uint64_t{ids[row]} * row_v + c;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (ok[u]) table[dst[u]] = v[u];
    }
  }
}

/// The naive mapping: thread i copies row ids[i] alone, element by element, so the 32 lanes of
/// a warp touch 32 rows at once and no access is coalesced (the baseline being measured).
template <typename V>
__global__ void gather_thread_per_row_kernel(const V* __restrict__ table, uint32_t row_v,
                                             const uint32_t* __restrict__ ids, uint32_t n,
                                             V* __restrict__ out) {
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const V* src = table + uint64_t{ids[i]} * row_v;
    V* dst = out + i * row_v;
    for (uint32_t c = 0; c < row_v; ++c) dst[c] = src[c];
  }
}

/// Thread i writes row ids[i] alone (the naive baseline).
template <typename V>
__global__ void scatter_thread_per_row_kernel(V* __restrict__ table, uint32_t row_v,
                                              const uint32_t* __restrict__ ids, uint32_t n,
                                              const V* __restrict__ in) {
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    V* dst = table + uint64_t{ids[i]} * row_v;
    const V* src = in + i * row_v;
    for (uint32_t c = 0; c < row_v; ++c) dst[c] = src[c];
  }
}

/// Enough blocks for every item, at most `blocks_per_sm` per multiprocessor (0: as many as fit)
/// — a persistent grid, so large batches loop instead of paying launch and tail costs.
template <typename Kernel>
unsigned grid_for_items(Kernel kernel, uint64_t items, uint64_t items_per_block,
                        int blocks_per_sm = 0) {
  const detail::DeviceLimits& device = detail::device_limits();
  const int sms = device.sms;
  int per_sm = detail::blocks_per_sm(device, reinterpret_cast<const void*>(kernel), kThreads, 0);
  if (blocks_per_sm > 0 && blocks_per_sm < per_sm) per_sm = blocks_per_sm;
  const uint64_t want = (items + items_per_block - 1) / items_per_block;
  const uint64_t cap = uint64_t(sms) * static_cast<uint64_t>(per_sm > 0 ? per_sm : 1);
  return static_cast<unsigned>(want < cap ? (want > 0 ? want : 1) : cap);
}

bool vectorizable(uint32_t dim, const void* a, const void* b) {
  return dim % 4 == 0 &&
         ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15u) == 0;
}

template <typename V, int kUnroll>
void gather_as(const float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
               const uint32_t* d_n, float* out, cudaStream_t stream, int blocks_per_sm,
               unsigned long long* claim) {
  const uint32_t row_v = dim * sizeof(float) / sizeof(V), pieces = (row_v + 31) / 32;
  const unsigned grid = grid_for_items(gather_rows_kernel<V, kUnroll>, uint64_t{n_max} * pieces,
                                       kWarpsPerBlock * kUnroll, blocks_per_sm);
  gather_rows_kernel<V, kUnroll><<<grid, kThreads, 0, stream>>>(reinterpret_cast<const V*>(table),
                                                                row_v, pieces, ids, n_max, d_n,
                                                                reinterpret_cast<V*>(out), claim);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

template <typename V, int kUnroll>
void scatter_as(float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
                const uint32_t* d_n, const float* in, cudaStream_t stream, int blocks_per_sm,
                unsigned long long* claim) {
  const uint32_t row_v = dim * sizeof(float) / sizeof(V), pieces = (row_v + 31) / 32;
  const unsigned grid = grid_for_items(scatter_rows_kernel<V, kUnroll>, uint64_t{n_max} * pieces,
                                       kWarpsPerBlock * kUnroll, blocks_per_sm);
  scatter_rows_kernel<V, kUnroll>
      <<<grid, kThreads, 0, stream>>>(reinterpret_cast<V*>(table), row_v, pieces, ids, n_max, d_n,
                                      reinterpret_cast<const V*>(in), claim);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

/// Calls fn(V{}, std::integral_constant<int, unroll>{}) for the unroll asked for.
template <typename V, typename Fn>
void with_unroll(int unroll, Fn&& fn) {
  switch (unroll) {
    case 1:
      return fn(V{}, std::integral_constant<int, 1>{});
    case 2:
      return fn(V{}, std::integral_constant<int, 2>{});
    case 4:
      return fn(V{}, std::integral_constant<int, 4>{});
    case 8:
      return fn(V{}, std::integral_constant<int, 8>{});
    default:
      throw Error("GatherTuning::unroll must be 1, 2, 4 or 8, not " + std::to_string(unroll));
  }
}

}  // namespace

void launch_gather_rows(const float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
                        const uint32_t* d_n, float* out, cudaStream_t stream,
                        const GatherTuning& tuning, unsigned long long* claim) {
  if (n_max == 0 || dim == 0) return;
  detail::reset_claim(claim, stream);
  const auto go = [&](auto v, auto unroll) {
    gather_as<decltype(v), decltype(unroll)::value>(table, dim, ids, n_max, d_n, out, stream,
                                                    tuning.blocks_per_sm, claim);
  };
  if (vectorizable(dim, table, out)) {
    with_unroll<float4>(tuning.unroll, go);
  } else {
    with_unroll<float>(tuning.unroll, go);
  }
}

void launch_scatter_rows(float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
                         const uint32_t* d_n, const float* in, cudaStream_t stream,
                         const GatherTuning& tuning, unsigned long long* claim) {
  if (n_max == 0 || dim == 0) return;
  detail::reset_claim(claim, stream);
  const auto go = [&](auto v, auto unroll) {
    scatter_as<decltype(v), decltype(unroll)::value>(table, dim, ids, n_max, d_n, in, stream,
                                                     tuning.blocks_per_sm, claim);
  };
  if (vectorizable(dim, table, in)) {
    with_unroll<float4>(tuning.unroll, go);
  } else {
    with_unroll<float>(tuning.unroll, go);
  }
}

void launch_gather_rows_thread_per_row(const float* table, uint32_t dim, const uint32_t* ids,
                                       uint32_t n, float* out, cudaStream_t stream) {
  if (n == 0 || dim == 0) return;
  if (vectorizable(dim, table, out)) {
    const unsigned grid = grid_for_items(gather_thread_per_row_kernel<float4>, n, kThreads);
    gather_thread_per_row_kernel<float4><<<grid, kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(table), dim / 4, ids, n, reinterpret_cast<float4*>(out));
  } else {
    const unsigned grid = grid_for_items(gather_thread_per_row_kernel<float>, n, kThreads);
    gather_thread_per_row_kernel<float><<<grid, kThreads, 0, stream>>>(table, dim, ids, n, out);
  }
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_scatter_rows_thread_per_row(float* table, uint32_t dim, const uint32_t* ids, uint32_t n,
                                        const float* in, cudaStream_t stream) {
  if (n == 0 || dim == 0) return;
  if (vectorizable(dim, table, in)) {
    const unsigned grid = grid_for_items(scatter_thread_per_row_kernel<float4>, n, kThreads);
    scatter_thread_per_row_kernel<float4><<<grid, kThreads, 0, stream>>>(
        reinterpret_cast<float4*>(table), dim / 4, ids, n, reinterpret_cast<const float4*>(in));
  } else {
    const unsigned grid = grid_for_items(scatter_thread_per_row_kernel<float>, n, kThreads);
    scatter_thread_per_row_kernel<float><<<grid, kThreads, 0, stream>>>(table, dim, ids, n, in);
  }
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
