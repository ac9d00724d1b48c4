#pragma once
/// @file sgns_shared_window.cuh
/// Skip-gram with one set of negatives shared by a centre's window (--kernel shared-negatives;
/// docs/design-kernels.md, "Shared negatives"). Device code, included by sgns.cu only (nvcc).

#include "kernels/device_draws.cuh"
#include "kernels/sgns_warp.cuh"

namespace pagedw2v {
namespace {

/// Skip-gram for kept centre `i` with negatives shared by its window (SgnsKernel::
/// kSharedNegatives; the CPU's shared_window_update, or shared_window_gradient in gradient mode).
/// The window's 1 + negative output rows — the centre's (label 1), then the negatives drawn once
/// for the centre — are loaded once into `wout` and their changes summed in `wdelta` (each lane
/// keeps its own float4s of every row there, so no lane waits on another); each context row is
/// then loaded once, its dot products with all of them taken kB + 1 at a time, its change added to
/// its row at once, and the summed output changes are added once at the window's end. Bytes moved
/// per window: (contexts + outputs) rows read and written, against contexts × (1 + outputs) for the
/// per-pair update. Gradient mode: lr = −1 (train_example says why), gradients go to the grad
/// tables and rows are marked touched.
template <int kV, int kB, bool kGrad>
__device__ __forceinline__ void train_centre_shared(const SgnsArgs& a, const RingEntry* ring,
                                                    const uint32_t* rows, uint32_t ring_mask,
                                                    uint32_t* negs, float4* wout, float4* wdelta,
                                                    int i, int n, int lane, int nq, float& loss,
                                                    unsigned& terms, uint32_t pool_off) {
  constexpr int kG = kB + 1;  // targets per group: with negative 5, the whole window at once
  const RingEntry c = ring[i & ring_mask];
  const auto [lo, hi] = window_bounds(a.window, c, i, n);
  if (hi <= lo) return;
  const float lr = kGrad ? -1.0f : a.schedule.at(a.epoch_base + c.pos);
  // The shared negatives, lane t drawing call t (negatives 2t and 2t + 1), as the CPU's
  // draw_window_targets; a negative equal to the centre comes back as kSkippedNegative.
  const int ncalls = static_cast<int>((a.negative + 1) / 2);
  for (int t = lane; t < ncalls; t += kWarp) {
    const Philox4 r = detail::device_draw(a.seed, c.pos, a.epoch, DrawKind::kWindowNegative,
                                          static_cast<uint32_t>(t));
    uint32_t x, y;
    if (a.pool != nullptr) {
      detail::pool_negatives(r, c.id, a.pool + pool_off, a.pool_size,
                             a.pool_rows != nullptr ? a.pool_rows + pool_off : nullptr, &x, &y);
    } else {
      detail::noise_negatives(r, c.id, a.noise, a.noise_columns, &x, &y);
    }
    negs[2 * t] = x;
    if (2 * t + 1 < static_cast<int>(a.negative)) negs[2 * t + 1] = y;
  }
  __syncwarp();
  const int m_count = 1 + static_cast<int>(a.negative);
  const uint32_t centre_row = rows[i & ring_mask];
  const auto target_row = [&](int m) { return m == 0 ? centre_row : negs[m - 1]; };
  for (int m = 0; m < m_count; ++m) {
    const uint32_t row = target_row(m);
    Slice<kV> o;
    if (row != detail::kSkippedNegative) {
      load_slice<kGrad>(o, a.output + static_cast<size_t>(row) * a.pitch, lane, nq);
    } else {
      zero_slice(o);
    }
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      const int q = lane + kWarp * v;
      if (q < nq) {
        wout[m * nq + q] = o.x[v];
        wdelta[m * nq + q] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }
  float* const in_dst = kGrad ? a.input_grad : a.input;
  for (int j = lo; j <= hi; ++j) {
    if (j == i) continue;
    const uint32_t ctx = rows[j & ring_mask];
    const size_t ctx_off = static_cast<size_t>(ctx) * a.pitch;
    Slice<kV> h, err;
    load_slice<kGrad>(h, a.input + ctx_off, lane, nq);
    zero_slice(err);
    for (int s = 0; s < m_count; s += kG) {
      Slice<kV> o[kG];
      bool valid[kG];
      float d[kG];
#pragma unroll
      for (int k = 0; k < kG; ++k) {
        const int m = s + k;
        valid[k] = m < m_count && target_row(m < m_count ? m : 0) != detail::kSkippedNegative;
#pragma unroll
        for (int v = 0; v < kV; ++v) {
          const int q = lane + kWarp * v;
          o[k].x[v] = valid[k] && q < nq ? wout[m * nq + q] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        d[k] = partial_dot(h, o[k]);
      }
#pragma unroll
      for (int m = kWarp / 2; m >= 1; m /= 2) {
#pragma unroll
        for (int k = 0; k < kG; ++k) d[k] += __shfl_xor_sync(kFull, d[k], m);
      }
      // Lane k takes value k: one sigmoid and one loss term per lane; gradients broadcast back.
      float mine = d[0];
      bool mine_valid = valid[0];
#pragma unroll
      for (int k = 1; k < kG; ++k) {
        mine = lane == k ? d[k] : mine;
        mine_valid = lane == k ? valid[k] : mine_valid;
      }
      mine_valid = lane < kG && mine_valid;
      const bool positive = s == 0 && lane == 0;
      const float g_mine = ((positive ? 1.0f : 0.0f) - clipped_sigmoid(mine)) * lr;
      if (mine_valid) loss += example_loss(mine, positive);
#pragma unroll
      for (int k = 0; k < kG; ++k) {
        const float g = __shfl_sync(kFull, g_mine, k);
        if (!valid[k]) continue;
        axpy(g, o[k], err);
        const int m = s + k;
#pragma unroll
        for (int v = 0; v < kV; ++v) {
          const int q = lane + kWarp * v;
          if (q < nq) {
            float4 dv = wdelta[m * nq + q];
            dv.x = fmaf(g, h.x[v].x, dv.x);
            dv.y = fmaf(g, h.x[v].y, dv.y);
            dv.z = fmaf(g, h.x[v].z, dv.z);
            dv.w = fmaf(g, h.x[v].w, dv.w);
            wdelta[m * nq + q] = dv;
          }
        }
      }
    }
    add_to_row(err, in_dst + ctx_off, lane, nq);
    if (kGrad) touch(a.touched_input, ctx, lane);
    ++terms;
  }
  float* const out_dst = kGrad ? a.output_grad : a.output;
  for (int m = 0; m < m_count; ++m) {
    const uint32_t row = target_row(m);
    if (row == detail::kSkippedNegative) continue;
    Slice<kV> dv;
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      const int q = lane + kWarp * v;
      dv.x[v] = q < nq ? wdelta[m * nq + q] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    add_to_row(dv, out_dst + static_cast<size_t>(row) * a.pitch, lane, nq);
    if (kGrad) touch(a.touched_output, row, lane);
  }
  __syncwarp();
}

}  // namespace
}  // namespace pagedw2v
