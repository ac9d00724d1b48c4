#pragma once
/// @file row_move.cuh
/// The one row mover of the kernels that copy table rows between host and device memory: the
/// paging swap (paging.cu, move_rows) and the benchmark's gather and scatter
/// (apps/bench/gather.cu) all run move_row_items with their own item plan. Device-only: include
/// from .cu files.
///
/// Thread mapping: a row of `row_v` elements of V (float4 when the shapes and pointers allow,
/// else float) is cut into pieces of 32 elements, and lane l moves element l of a piece, so a
/// 128-float row is one 512-byte coalesced access. The caller numbers the items (a piece of one
/// row of one table) so that consecutive items are consecutive memory: with sorted rows the
/// items walk the host table in address order, and PCIe moves few large runs far faster than
/// many rows apart. Warps take kBatch consecutive items at a time and issue the loads of all of
/// them before their first store: a load from host memory waits a PCIe round trip. With a claim
/// counter (work_claim.cuh) each warp takes the next batch when it is done with its last, so
/// the batches in flight stay a narrow window of host addresses, which the GPU translates far
/// faster than addresses spread over the table (kernels/PERFORMANCE.md); without one, warp w
/// takes batch w, then every warps-th batch after it.

#include <cstdint>

#include "kernels/work_claim.cuh"

namespace pagedw2v::detail {

/// One element copy of an item: *dst = *src when `move` is set.
template <typename V>
struct ElementCopy {
  const V* src;
  V* dst;
  bool move;
};

/// Moves items 0 … items − 1. `plan(g, lane, copies)` fills copies[0 … kCopies) with the element
/// copies of lane `lane` in item g (it is called only for g < items, with every `move` false).
/// Within a batch, copy c of every item is done — all loads, then all stores — before copy
/// c + 1 of any: a swap reads a slot's old row out before it writes the new one in. The plans
/// of a batch are all made first, so the index loads they need go out together. Every lane of
/// a warp must call it together (the claim is a warp-wide operation).
template <typename V, int kBatch, int kCopies, typename Plan>
__device__ __forceinline__ void move_row_items(uint64_t items, unsigned long long* claim,
                                               const Plan& plan) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  for (uint64_t g0 = claim != nullptr ? claim_batch(claim, kBatch) : warp * kBatch; g0 < items;
       g0 = claim != nullptr ? claim_batch(claim, kBatch) : g0 + warps * kBatch) {
    ElementCopy<V> copy[kBatch][kCopies];
    V v[kBatch];
    // The first copy's loads go out as its items are planned.
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
#pragma unroll
      for (int c = 0; c < kCopies; ++c) copy[b][c].move = false;
      if (g0 + b < items) plan(g0 + b, lane, copy[b]);
      if (copy[b][0].move) v[b] = *copy[b][0].src;
    }
#pragma unroll
    for (int c = 0; c < kCopies; ++c) {
      if (c > 0) {
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          if (copy[b][c].move) v[b] = *copy[b][c].src;
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (copy[b][c].move) *copy[b][c].dst = v[b];
      }
    }
  }
}

}  // namespace pagedw2v::detail
