#pragma once
/// @file sgns_warp.cuh
/// What a warp of the training kernel (sgns.cu) works with: its shared-memory layout, a table
/// row's slice in the lanes' registers, and the row operations on it (loads through L2, atomic
/// adds, dot products, word2vec's clipped sigmoid and loss). Device code, included by sgns.cu
/// only (nvcc).

#include "kernels/sgns.hpp"

namespace pagedw2v {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxWarpsPerBlock = 8;
constexpr unsigned kFull = 0xFFFFFFFFu;

/// One kept token of the sentence a warp trains: a ring of these holds the window around the
/// centre while the sentence is read 32 tokens at a time.
struct RingEntry {
  uint32_t id;
  uint32_t shrink;
  unsigned long long pos;
};

/// The window of kept position `i` among a sentence's `n` kept tokens, word2vec's window less the
/// centre's random shrink: positions [lo, hi], the centre among them; no context when hi <= lo.
struct WindowBounds {
  int lo, hi;
};
__device__ __forceinline__ WindowBounds window_bounds(uint32_t window, const RingEntry& c, int i,
                                                      int n) {
  const int w = static_cast<int>(window) - static_cast<int>(c.shrink);
  return {i - w > 0 ? i - w : 0, i + w < n - 1 ? i + w : n - 1};
}

/// The part of a work item a warp trains: centres at positions [c0, c1) of sentence s, and where
/// the item ends. Kept in shared memory, not registers, which the centre loop needs.
struct WorkPart {
  unsigned long long c0, c1, item_end, s;
};

/// Per-warp shared memory: the work part, the skip-gram centre row as it was loaded (one float4 per
/// lane and vector slot; kept here rather than in registers), with shared negatives the window's
/// output rows as loaded and their summed changes (window_rows rows each), the ring of kept tokens
/// and beside it their table rows, then for each context slot of the current centre the rows of
/// its negatives and whether a row repeats among them.
struct WarpLayout {
  uint32_t row_quads;    // float4s per row
  uint32_t window_rows;  // shared negatives: 1 + negative; else 0
  uint32_t ring_size;    // power of two ≥ 2·window + 32
  uint32_t slots;        // 2·window + 1
  uint32_t negative;
  __host__ __device__ size_t bytes() const {
    const size_t b = sizeof(WorkPart) + row_quads * sizeof(float4) +
                     size_t{2} * window_rows * row_quads * sizeof(float4) +
                     ring_size * sizeof(RingEntry) + ring_size * sizeof(uint32_t) +
                     size_t{slots} * negative * sizeof(uint32_t) + slots * sizeof(uint32_t);
    return (b + 15) & ~size_t{15};
  }
};

WarpLayout make_layout(uint32_t stride, uint32_t window, uint32_t negative, bool shared) {
  WarpLayout l;
  l.row_quads = stride / 4;
  l.window_rows = shared ? negative + 1 : 0;
  l.ring_size = 32;
  while (l.ring_size < 2 * window + 32) l.ring_size *= 2;
  l.slots = 2 * window + 1;
  l.negative = negative;
  return l;
}

/// Table rows are read through L2 only (ld.cg): rows are updated by warps on every
/// multiprocessor, and a row cached in one SM's L1 would go stale (Hogwild tolerates races, not
/// a cache that never sees the other writers). In gradient mode (kReadOnly) nothing writes the
/// tables during a launch, so L1 may keep them.
template <bool kReadOnly>
__device__ __forceinline__ float4 load_row4(const float* p) {
  return kReadOnly ? __ldg(reinterpret_cast<const float4*>(p))
                   : __ldcg(reinterpret_cast<const float4*>(p));
}

/// The slice of one row that a lane holds: float4 number lane + 32·v for v < kV.
template <int kV>
struct Slice {
  float4 x[kV];
};

template <bool kReadOnly, int kV>
__device__ __forceinline__ void load_slice(Slice<kV>& s, const float* row, int lane, int nq) {
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    const int q = lane + kWarp * v;
    s.x[v] = q < nq ? load_row4<kReadOnly>(row + 4 * q) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

/// row += s, as atomic adds (16 bytes at a time on sm_90): a hot row (a frequent word drawn as a
/// negative by thousands of warps at once) then loses no update, where plain Hogwild
/// read-modify-write would keep only one of the concurrent writers' changes.
template <int kV>
__device__ __forceinline__ void add_to_row(const Slice<kV>& s, float* row, int lane, int nq) {
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    const int q = lane + kWarp * v;
    if (q < nq) {
      float* p = row + 4 * q;
#if __CUDA_ARCH__ >= 900
      // One 16-byte red (no return value): the warp does not wait for the L2 round trip.
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(s.x[v].x),
                   "f"(s.x[v].y), "f"(s.x[v].z), "f"(s.x[v].w)
                   : "memory");
#else
      atomicAdd(p, s.x[v].x);
      atomicAdd(p + 1, s.x[v].y);
      atomicAdd(p + 2, s.x[v].z);
      atomicAdd(p + 3, s.x[v].w);
#endif
    }
  }
}

/// y = g·x
template <int kV>
__device__ __forceinline__ void scale(float g, const Slice<kV>& x, Slice<kV>& y) {
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    y.x[v].x = g * x.x[v].x;
    y.x[v].y = g * x.x[v].y;
    y.x[v].z = g * x.x[v].z;
    y.x[v].w = g * x.x[v].w;
  }
}

/// y = a − b
template <int kV>
__device__ __forceinline__ void difference(const Slice<kV>& a, const Slice<kV>& b, Slice<kV>& y) {
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    y.x[v].x = a.x[v].x - b.x[v].x;
    y.x[v].y = a.x[v].y - b.x[v].y;
    y.x[v].z = a.x[v].z - b.x[v].z;
    y.x[v].w = a.x[v].w - b.x[v].w;
  }
}

template <int kV>
__device__ __forceinline__ void zero_slice(Slice<kV>& s) {
#pragma unroll
  for (int v = 0; v < kV; ++v) s.x[v] = make_float4(0.f, 0.f, 0.f, 0.f);
}

template <int kV>
__device__ __forceinline__ float partial_dot(const Slice<kV>& a, const Slice<kV>& b) {
  float d = 0.f;
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    d = fmaf(a.x[v].x, b.x[v].x, d);
    d = fmaf(a.x[v].y, b.x[v].y, d);
    d = fmaf(a.x[v].z, b.x[v].z, d);
    d = fmaf(a.x[v].w, b.x[v].w, d);
  }
  return d;
}

/// y += g·x
template <int kV>
__device__ __forceinline__ void axpy(float g, const Slice<kV>& x, Slice<kV>& y) {
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    y.x[v].x = fmaf(g, x.x[v].x, y.x[v].x);
    y.x[v].y = fmaf(g, x.x[v].y, y.x[v].y);
    y.x[v].z = fmaf(g, x.x[v].z, y.x[v].z);
    y.x[v].w = fmaf(g, x.x[v].w, y.x[v].w);
  }
}

/// word2vec's sigmoid, 0/1 beyond ±kMaxExp.
__device__ __forceinline__ float clipped_sigmoid(float f) {
  if (f > kMaxExp) return 1.0f;
  if (f < -kMaxExp) return 0.0f;
  return __fdividef(1.0f, 1.0f + __expf(-f));
}

/// −log σ(±f) with f clipped to ±kMaxExp.
__device__ __forceinline__ float example_loss(float f, bool positive) {
  float x = positive ? f : -f;
  x = fminf(fmaxf(x, -kMaxExp), kMaxExp);
  return log1pf(__expf(-x));
}

/// Marks `row` of a touched table (gradient mode): one lane stores, every lane may call.
__device__ __forceinline__ void touch(uint8_t* touched, uint32_t row, int lane) {
  if (lane == 0) touched[row] = 1;
}

}  // namespace
}  // namespace pagedw2v
