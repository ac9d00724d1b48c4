#pragma once
/// @file sgns_targets.cuh
/// One example's output targets, as the CPU reference trains them: negative sampling's centre and
/// negatives (train_example) and hierarchical softmax's path of inner nodes (train_path).
/// Device code, included by sgns.cu only (nvcc).

#include "kernels/device_draws.cuh"
#include "kernels/sgns_warp.cuh"
#include "model/huffman.hpp"

namespace pagedw2v {
namespace {

/// One negative-sampling example of input vector `h` (sgns_cpu.hpp's sgns_update): the centre
/// (label 1, its output row `oc` held by the caller) when `with_centre`, then the `n` negatives
/// whose table rows are `rows` (label 0; kSkippedNegative entries are not targets). Targets are
/// taken kB at a time: their rows are loaded together, their dot products reduced together,
/// then updated; rows within a group are distinct (the caller drops to kB = 1 otherwise), so
/// this equals the CPU's one-target-at-a-time loop.
/// SGD (kGrad false): `lr` is the learning rate; the centre's change goes to `oc` itself (the
/// caller adds it to the table, and passes oc as `gc`), each negative's to its row of `output`.
/// Gradient mode: the caller passes lr = −1, which makes g = σ(f) − label, the loss's derivative
/// (the CPU's sgns_gradient); `oc` and the tables stay as they are, the centre's gradient g·h
/// goes to `gc` and each negative's to its row of a.output_grad, marked in a.touched_output.
template <int kV, int kB, bool kGrad>
__device__ __forceinline__ void train_example(const SgnsArgs& a, const Slice<kV>& h, Slice<kV>& err,
                                              Slice<kV>& oc, Slice<kV>& gc, bool with_centre,
                                              const uint32_t* rows, int n, float lr, int lane,
                                              int nq, float& loss) {
  for (int s = 0; s == 0 || s < n; s += kB) {
    const bool centre = with_centre && s == 0;
    Slice<kV> o[kB];
    uint32_t row[kB];
#pragma unroll
    for (int k = 0; k < kB; ++k) {
      row[k] = s + k < n ? rows[s + k] : detail::kSkippedNegative;
      if (row[k] != detail::kSkippedNegative) {
        load_slice<kGrad>(o[k], a.output + static_cast<size_t>(row[k]) * a.pitch, lane, nq);
      } else {
        zero_slice(o[k]);
      }
    }
    float d[kB + 1];
#pragma unroll
    for (int k = 0; k < kB; ++k) d[k] = partial_dot(h, o[k]);
    d[kB] = centre ? partial_dot(h, oc) : 0.f;
#pragma unroll
    for (int m = kWarp / 2; m >= 1; m /= 2) {
#pragma unroll
      for (int k = 0; k <= kB; ++k) d[k] += __shfl_xor_sync(kFull, d[k], m);
    }
    // Lane k takes value k (the centre is value kB): one sigmoid and one loss term per lane
    // instead of every lane computing all of them; the gradients are broadcast back.
    float mine = d[0];
    bool valid = row[0] != detail::kSkippedNegative;
#pragma unroll
    for (int k = 1; k < kB; ++k) {
      mine = lane == k ? d[k] : mine;
      valid = lane == k ? row[k] != detail::kSkippedNegative : valid;
    }
    mine = lane == kB ? d[kB] : mine;
    valid = lane == kB ? centre : (lane < kB && valid);
    const bool positive = lane == kB;
    const float g_mine = ((positive ? 1.0f : 0.0f) - clipped_sigmoid(mine)) * lr;
    if (valid) loss += example_loss(mine, positive);
    if (centre) {
      const float g = __shfl_sync(kFull, g_mine, kB);
      axpy(g, oc, err);
      axpy(g, h, kGrad ? gc : oc);
    }
    float* const dst = kGrad ? a.output_grad : a.output;
#pragma unroll
    for (int k = 0; k < kB; ++k) {
      const float g = __shfl_sync(kFull, g_mine, k);
      if (row[k] == detail::kSkippedNegative) continue;
      axpy(g, o[k], err);
      scale(g, h, o[k]);
      add_to_row(o[k], dst + static_cast<size_t>(row[k]) * a.pitch, lane, nq);
      if (kGrad) touch(a.touched_output, row[k], lane);
    }
  }
}

/// SgnsArgs::hs_damp_warps' factor for a node at `depth` of the path (the root 0) in a launch of
/// `warps` warps: 1/√(warps·2^−depth) where that load is above 1, else 1.
__device__ __forceinline__ float hs_damping(uint32_t warps, int depth) {
  const uint32_t load = depth < 32 ? warps >> depth : 0u;
  return load > 1 ? rsqrtf(static_cast<float>(load)) : 1.0f;
}

/// Nodes of one path a warp trains at once (their rows loaded and their dot products reduced
/// together): as many as the registers allow for the row width.
template <int kV>
constexpr int path_batch() {
  return kV <= 1 ? 4 : (kV <= 2 ? 2 : 1);
}

/// A word's path through the Huffman tree, as a warp holds it (hs_walk): lane l holds the link l
/// steps up from the word in `near` and the one kWarp + l steps up in `far`; `length` nodes.
struct HsPath {
  uint32_t near = 0, far = 0;
  int length = 0;
};

/// Walks word `word`'s path up its links (SgnsArgs::hs_word_links) to the root, every lane
/// loading the same links, so that train_path can then read it root first, as the CPU trains
/// it, each node by one shuffle. Paths are at most kMaxCodeLength long.
__device__ __forceinline__ HsPath hs_walk(const SgnsArgs& a, uint32_t word, int lane) {
  static_assert(kMaxCodeLength <= 2 * kWarp, "a path's links fit two registers of a warp");
  HsPath p;
  for (uint32_t link = __ldg(a.hs_word_links + word);
       link != kHuffmanRootLink && p.length < 2 * kWarp;
       link = __ldg(a.hs_node_links + (link & kHuffmanLinkRow))) {
    if (p.length == lane) p.near = link;
    if (p.length == lane + kWarp) p.far = link;
    ++p.length;
  }
  return p;
}

/// Hierarchical softmax of one example (hs_cpu.hpp's hs_update_rows and hs_gradient): input
/// vector `h` against the inner nodes of a word's path (walked by hs_walk), root first; for each
/// node d, f = h·node[d], its loss term (every node), and when |f| < kMaxExp,
/// g = (1 − code − σ(f))·lr, err += g·node[d], node[d] += g·h (an atomic add of this warp's change
/// to its row of a.hs_nodes, damped at the top of the tree as a.hs_damp_warps says: hs_damping).
/// The nodes of one path are distinct rows, so loading kH of them together and then updating them
/// in order equals the CPU's node-at-a-time loop. Gradient mode: lr = −1 makes g = σ(f) − (1 −
/// code), the loss's derivative; the node's gradient g·h goes to its row of a.hs_nodes_grad, marked
/// in a.touched_nodes. The loss is counted by lane 0 only (the caller sums the lanes).
template <int kV, bool kGrad>
__device__ __forceinline__ void train_path(const SgnsArgs& a, const Slice<kV>& h, Slice<kV>& err,
                                           const HsPath& path, float lr, int lane, int nq,
                                           float& loss) {
  constexpr int kH = path_batch<kV>();
  const int length = path.length;
  float* const dst = kGrad ? a.hs_nodes_grad : a.hs_nodes;
  for (int d0 = 0; d0 < length; d0 += kH) {
    Slice<kV> node[kH];
    uint32_t row[kH];
    float code[kH], f[kH];
#pragma unroll
    for (int k = 0; k < kH; ++k) {
      const bool in = d0 + k < length;
      // Node d0 + k from the root is `up` links up from the word; the same on every lane, so
      // every lane passes the register that holds it.
      const int up = in ? length - 1 - (d0 + k) : 0;
      const uint32_t link = __shfl_sync(kFull, up < kWarp ? path.near : path.far, up & (kWarp - 1));
      row[k] = 0;
      code[k] = 0.f;
      if (in) {
        row[k] = link & kHuffmanLinkRow;
        if (a.hs_node_rows != nullptr) row[k] = __ldg(a.hs_node_rows + row[k]);
        code[k] = static_cast<float>(link >> 31);
        load_slice<kGrad>(node[k], a.hs_nodes + static_cast<size_t>(row[k]) * a.pitch, lane, nq);
      } else {
        zero_slice(node[k]);
      }
      f[k] = partial_dot(h, node[k]);
    }
#pragma unroll
    for (int m = kWarp / 2; m >= 1; m /= 2) {
#pragma unroll
      for (int k = 0; k < kH; ++k) f[k] += __shfl_xor_sync(kFull, f[k], m);
    }
#pragma unroll
    for (int k = 0; k < kH; ++k) {
      if (d0 + k >= length) break;
      if (lane == 0) loss += example_loss(f[k], code[k] == 0.f);
      // Every lane holds the same f (a butterfly sum adds the same pairs on each lane), so the
      // branch is uniform.
      if (!(f[k] > -kMaxExp && f[k] < kMaxExp)) continue;
      const float g = (1.0f - code[k] - clipped_sigmoid(f[k])) * lr;
      axpy(g, node[k], err);
      // The node's own step, damped at the top of the tree in Hogwild launches (the input's
      // error keeps g).
      const float gn = !kGrad && a.hs_damp_warps > 0 ? g * hs_damping(a.hs_damp_warps, d0 + k) : g;
      scale(gn, h, node[k]);
      add_to_row(node[k], dst + static_cast<size_t>(row[k]) * a.pitch, lane, nq);
      if (kGrad) touch(a.touched_nodes, row[k], lane);
    }
  }
}

}  // namespace
}  // namespace pagedw2v
