#include "kernels/sgns.hpp"

#include <algorithm>
#include <string>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_draws.cuh"
#include "kernels/device_limits.hpp"
#include "kernels/sgns_shared_window.cuh"
#include "kernels/sgns_targets.cuh"
#include "kernels/sgns_warp.cuh"

namespace pagedw2v {
namespace {

/// The context slot of example `sr` of centre `i` whose window starts at kept index `lo` (the
/// centre itself is skipped); 0 for CBOW.
__device__ __forceinline__ uint32_t slot_of(const SgnsArgs& a, int i, int lo, bool skip_gram,
                                            int sr) {
  if (!skip_gram) return 0;
  int j = lo + sr;
  if (j >= i) ++j;
  return static_cast<uint32_t>(j - i + a.window);
}

/// Lane t's share of draw_negatives: (slot, call) number t, t + 32, … into `negs`, from the pool
/// (kPool) or the noise table.
template <bool kPool, bool kDup, bool kParts>
__device__ __forceinline__ void fill_negatives(const SgnsArgs& a, const RingEntry& c,
                                               const RingEntry* ring, uint32_t ring_mask, int i,
                                               int lo, bool skip_gram, int ncalls, int total,
                                               uint32_t* negs, uint32_t* dup, int lane,
                                               uint32_t pool_off) {
  for (int t = lane; t < total; t += kWarp) {
    const int sr = t / ncalls;
    const int call = t - sr * ncalls;
    const uint32_t slot = slot_of(a, i, lo, skip_gram, sr);
    // Partitioned tables: a context outside the input part does not train here; its
    // negatives are not drawn.
    if (kParts) {
      const int j = i + static_cast<int>(slot) - static_cast<int>(a.window);
      if (ring[j & ring_mask].id % a.parts != a.input_part) continue;
    }
    uint32_t x, y;
    const Philox4 r = detail::negative_draw(a.seed, c.pos, a.epoch, slot, call);
    if (kPool) {
      detail::pool_negatives(r, c.id, a.pool + pool_off, a.pool_size,
                             a.pool_rows != nullptr ? a.pool_rows + pool_off : nullptr, &x, &y);
    } else if (kParts) {
      detail::part_noise_negatives(r, c.id, a.noise, a.noise_columns, a.parts, a.output_part, &x,
                                   &y);
    } else {
      detail::noise_negatives(r, c.id, a.noise, a.noise_columns, &x, &y);
    }
    uint32_t* list = negs + slot * a.negative;
    list[2 * call] = x;
    if (2 * call + 1 < static_cast<int>(a.negative)) list[2 * call + 1] = y;
    if (kDup && call == 0) dup[slot] = 0;
  }
}

/// Draws the negatives of every context slot of centre `i` (kept index) in parallel — lane t
/// takes (slot, call) number t — into negs[slot · negative + k] in draw_targets' order: the
/// table row of each negative, or kSkippedNegative where the centre's id was drawn. From the
/// pool when a.pool is set (a uniform branch around the whole loop), else noise-table draws whose
/// row is the id. With kDup, dup[slot] says whether a row repeats in the list (gradient mode reads
/// the tables only, so repeats need no care there).
template <bool kDup, bool kParts>
__device__ __forceinline__ void draw_negatives(const SgnsArgs& a, const RingEntry& c,
                                               const RingEntry* ring, uint32_t ring_mask, int i,
                                               int lo, int hi, bool skip_gram, uint32_t* negs,
                                               uint32_t* dup, int lane, uint32_t pool_off) {
  const int ncalls = static_cast<int>((a.negative + 1) / 2);
  const int nslots = skip_gram ? static_cast<int>(hi - lo) : 1;
  const int total = nslots * ncalls;
  if (a.pool != nullptr) {
    fill_negatives<true, kDup, kParts>(a, c, ring, ring_mask, i, lo, skip_gram, ncalls, total, negs,
                                       dup, lane, pool_off);
  } else {
    fill_negatives<false, kDup, kParts>(a, c, ring, ring_mask, i, lo, skip_gram, ncalls, total,
                                        negs, dup, lane, 0);
  }
  __syncwarp();
  if (kDup) {
    for (int t = lane; t < total; t += kWarp) {
      const int sr = t / ncalls;
      const int call = t - sr * ncalls;
      const uint32_t slot = slot_of(a, i, lo, skip_gram, sr);
      const uint32_t* list = negs + slot * a.negative;
      const int k0 = 2 * call, k1 = k0 + 1 < static_cast<int>(a.negative) ? k0 + 1 : k0;
      bool repeated = false;
      for (int k = k0; k <= k1; ++k) {
        const uint32_t id = list[k];
        if (id == detail::kSkippedNegative) continue;
        for (int m = 0; m < k; ++m) repeated |= list[m] == id;
      }
      if (repeated) dup[slot] = 1;
    }
    __syncwarp();
  }
}

/// Skip-gram for kept centre `i` of the ring: each context row against the centre's output row
/// (kept in registers across the window) and that pair's negatives, in the CPU's order. `rows`
/// is the ring of table rows beside `ring`. Gradient mode: the centre row stays as loaded, and
/// its gradient, summed over the window, is added once at the end.
template <int kV, int kB, bool kGrad, bool kParts>
__device__ __forceinline__ void train_centre_skipgram(const SgnsArgs& a, const RingEntry* ring,
                                                      const uint32_t* rows, float4* centre0,
                                                      uint32_t ring_mask, uint32_t* negs,
                                                      uint32_t* dup, int i, int n, int lane, int nq,
                                                      float& loss, unsigned& terms,
                                                      uint32_t pool_off) {
  const RingEntry c = ring[i & ring_mask];
  const auto [lo, hi] = window_bounds(a.window, c, i, n);
  if (hi <= lo) return;
  // Partitioned tables: a centre outside the output part trains on another rank or launch.
  if (kParts && c.id % a.parts != a.output_part) return;
  const float lr = kGrad ? -1.0f : a.schedule.at(a.epoch_base + c.pos);
  draw_negatives<!kGrad, kParts>(a, c, ring, ring_mask, i, lo, hi, true, negs, dup, lane, pool_off);

  const size_t centre_off = static_cast<size_t>(rows[i & ring_mask]) * a.pitch;
  const int nn = static_cast<int>(a.negative);
  // Without negatives (hierarchical softmax alone) the centre's output row takes no part.
  Slice<kV> oc, gc;
  zero_slice(oc);
  zero_slice(gc);
  if (nn > 0) load_slice<kGrad>(oc, a.output + centre_off, lane, nq);
  if (!kGrad && nn > 0) {
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      if (lane + kWarp * v < nq) centre0[lane + kWarp * v] = oc.x[v];
    }
  }
  // Hierarchical softmax: the centre's path, walked once for its window.
  HsPath path;
  if (a.hs_word_links != nullptr) path = hs_walk(a, c.id, lane);
  for (int j = lo; j <= hi; ++j) {
    if (j == i) continue;
    // Partitioned tables: a context outside the input part trains on the rank that holds it.
    if (kParts && ring[j & ring_mask].id % a.parts != a.input_part) continue;
    const uint32_t slot = static_cast<uint32_t>(j - i + a.window);
    const uint32_t ctx = rows[j & ring_mask];
    const size_t ctx_off = static_cast<size_t>(ctx) * a.pitch;
    Slice<kV> h, err;
    load_slice<kGrad>(h, a.input + ctx_off, lane, nq);
    zero_slice(err);
    const uint32_t* ids = negs + slot * a.negative;
    // Hierarchical softmax first, then negative sampling, into one err (word2vec's order).
    if (a.hs_word_links != nullptr) train_path<kV, kGrad>(a, h, err, path, lr, lane, nq, loss);
    if (nn > 0 && !kGrad && dup[slot]) {
      train_example<kV, 1, kGrad>(a, h, err, oc, kGrad ? gc : oc, true, ids, nn, lr, lane, nq,
                                  loss);
    } else if (nn > 0) {
      train_example<kV, kB, kGrad>(a, h, err, oc, kGrad ? gc : oc, true, ids, nn, lr, lane, nq,
                                   loss);
    }
    add_to_row(err, (kGrad ? a.input_grad : a.input) + ctx_off, lane, nq);
    if (kGrad) touch(a.touched_input, ctx, lane);
    ++terms;
  }
  if (nn > 0 && kGrad) {
    add_to_row(gc, a.output_grad + centre_off, lane, nq);
    touch(a.touched_output, rows[i & ring_mask], lane);
  } else if (nn > 0) {
    // The centre row was private to this warp for the window; other warps' changes to it
    // meanwhile survive because only this warp's own change is added.
    Slice<kV> oc0;
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      oc0.x[v] =
          lane + kWarp * v < nq ? centre0[lane + kWarp * v] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    difference(oc, oc0, oc);
    add_to_row(oc, a.output + centre_off, lane, nq);
  }
  __syncwarp();
}

/// CBOW for kept centre `i`: the mean of the window's input rows against the centre and its
/// negatives; the error is added to every context row, in the CPU's order. Gradient mode: the
/// mean stands for its rows, so each context row's gradient is the error divided by their count.
template <int kV, int kB, bool kGrad>
__device__ __forceinline__ void train_centre_cbow(const SgnsArgs& a, const RingEntry* ring,
                                                  const uint32_t* rows, uint32_t ring_mask,
                                                  uint32_t* negs, uint32_t* dup, int i, int n,
                                                  int lane, int nq, float& loss, unsigned& terms,
                                                  uint32_t pool_off) {
  const RingEntry c = ring[i & ring_mask];
  const auto [lo, hi] = window_bounds(a.window, c, i, n);
  if (hi <= lo) return;
  const float lr = kGrad ? -1.0f : a.schedule.at(a.epoch_base + c.pos);
  draw_negatives<!kGrad, false>(a, c, ring, ring_mask, i, lo, hi, false, negs, dup, lane, pool_off);

  Slice<kV> h;
  zero_slice(h);
#pragma unroll 4
  for (int j = lo; j <= hi; ++j) {
    if (j == i) continue;
    Slice<kV> x;
    load_slice<kGrad>(x, a.input + static_cast<size_t>(rows[j & ring_mask]) * a.pitch, lane, nq);
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      h.x[v].x += x.x[v].x;
      h.x[v].y += x.x[v].y;
      h.x[v].z += x.x[v].z;
      h.x[v].w += x.x[v].w;
    }
  }
  const float cw = static_cast<float>(hi - lo);
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    h.x[v].x /= cw;
    h.x[v].y /= cw;
    h.x[v].z /= cw;
    h.x[v].w /= cw;
  }
  const uint32_t centre = rows[i & ring_mask];
  const size_t centre_off = static_cast<size_t>(centre) * a.pitch;
  const int nn = static_cast<int>(a.negative);
  Slice<kV> oc, oc0, err;
  zero_slice(oc0);
  // Without negatives (hierarchical softmax alone) the centre's output row takes no part.
  if (nn > 0) load_slice<kGrad>(oc0, a.output + centre_off, lane, nq);
  oc = oc0;
  zero_slice(err);
  // Hierarchical softmax first, then negative sampling, into one err (word2vec's order).
  if (a.hs_word_links != nullptr) {
    train_path<kV, kGrad>(a, h, err, hs_walk(a, c.id, lane), lr, lane, nq, loss);
  }
  if (kGrad) {
    if (nn > 0) {
      // oc0 becomes the centre's gradient; oc stays as loaded.
      zero_slice(oc0);
      train_example<kV, kB, kGrad>(a, h, err, oc, oc0, true, negs, nn, lr, lane, nq, loss);
      add_to_row(oc0, a.output_grad + centre_off, lane, nq);
      touch(a.touched_output, centre, lane);
    }
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      err.x[v].x /= cw;
      err.x[v].y /= cw;
      err.x[v].z /= cw;
      err.x[v].w /= cw;
    }
  } else if (nn > 0) {
    if (dup[0]) {
      train_example<kV, 1, kGrad>(a, h, err, oc, oc, true, negs, nn, lr, lane, nq, loss);
    } else {
      train_example<kV, kB, kGrad>(a, h, err, oc, oc, true, negs, nn, lr, lane, nq, loss);
    }
    difference(oc, oc0, oc);
    add_to_row(oc, a.output + centre_off, lane, nq);
  }
  float* const dst = kGrad ? a.input_grad : a.input;
  for (int j = lo; j <= hi; ++j) {
    if (j == i) continue;
    const uint32_t ctx = rows[j & ring_mask];
    add_to_row(err, dst + static_cast<size_t>(ctx) * a.pitch, lane, nq);
    if (kGrad) touch(a.touched_input, ctx, lane);
  }
  ++terms;
  __syncwarp();
}

/// The sentence of launch position `t`: the largest s < n with starts[s] ≤ t (starts[0] ≤ t <
/// starts[n]), found by the whole warp 32 ways at a time (about five rounds of loads for two
/// million sentences, where a binary search by one lane would wait on twenty).
__device__ __forceinline__ uint64_t sentence_of(const uint64_t* starts, uint64_t n, uint64_t t,
                                                int lane) {
  uint64_t lo = 0, hi = n;  // starts[lo] ≤ t < starts[hi]
  while (hi - lo > 1) {
    const uint64_t step = (hi - lo + kWarp - 1) / kWarp;
    const uint64_t probe = lo + static_cast<uint64_t>(lane) * step;
    // Starts do not decrease, so the lanes whose probe is ≤ t are a prefix of the warp.
    const unsigned le = __ballot_sync(kFull, probe < hi && starts[probe] <= t);
    lo += static_cast<uint64_t>(31 - __clz(le)) * step;
    hi = lo + step < hi ? lo + step : hi;
  }
  return lo;
}

/// Whether corpus token `pos` survives subsampling (the lane's share of a 32-token step).
__device__ __forceinline__ detail::KeepDecision keep_decision(const SgnsArgs& a, uint64_t pos,
                                                              uint32_t* id) {
  *id = a.tokens[pos - a.token_base];
  const float keep_p = *id < a.keep_count ? __ldg(a.keep + *id) : 1.0f;
  return detail::subsample_token(a.seed, pos, a.epoch, keep_p, a.window);
}

/// Trains the centres at positions [c0, c1) of sentence `s` (tokens [first, last)), their
/// windows reaching over the whole sentence: the ring is filled from far enough before c0 to
/// hold a full window of kept tokens ahead of the first centre (a backward scan of the
/// subsampling draws, which depend on the position only), and reading goes on past c1 while a
/// window after the last centre is still short. The centres train in the sentence's order,
/// so parts trained one after another equal the sentence trained whole.
template <int kV, int kB, bool kSkipGram, bool kGrad, bool kParts, bool kShared>
__device__ __forceinline__ void train_part(const SgnsArgs& a, const WorkPart* part, RingEntry* ring,
                                           uint32_t* rows, float4* centre0, float4* wout,
                                           float4* wdelta, uint32_t ring_mask, uint32_t* negs,
                                           uint32_t* dup, int lane, int nq) {
  const uint64_t s = part->s;
  const uint64_t first = a.sentence_starts[s], last = a.sentence_starts[s + 1];
  // The pool of this sentence's period, when the launch spans several.
  const uint32_t pool_off = a.sentence_pool != nullptr ? a.sentence_pool[s] * a.pool_size : 0u;
  uint64_t from = part->c0;
  for (uint32_t before = 0; from > first && before < a.window;) {
    const uint64_t step_first = from - first > kWarp ? from - kWarp : first;
    const uint64_t pos = step_first + lane;
    bool keep = false;
    if (pos < from) {
      uint32_t id;
      keep = keep_decision(a, pos, &id).keep;
    }
    before += __popc(__ballot_sync(kFull, keep));
    from = step_first;
  }
  int kept = 0, next = 0;
  unsigned centres = 0;
  float loss = 0.f;
  unsigned terms = 0;
  bool done = false;
  for (uint64_t base = from; base < last && !done; base += kWarp) {
    const uint64_t pos = base + lane;
    detail::KeepDecision d{false, 0};
    uint32_t id = 0, row = 0;
    if (pos < last) {
      d = keep_decision(a, pos, &id);
      row =
          a.token_rows != nullptr ? a.token_rows[pos - a.token_base] : (kParts ? id / a.parts : id);
    }
    const unsigned mask = __ballot_sync(kFull, d.keep);
    __syncwarp();
    if (d.keep) {
      const int rank = __popc(mask & ((1u << lane) - 1u));
      ring[(kept + rank) & ring_mask] = RingEntry{id, d.shrink, pos};
      rows[(kept + rank) & ring_mask] = row;
    }
    kept += __popc(mask);
    __syncwarp();
    const bool tail = base + kWarp >= last;
    while (next < kept && (tail || next + static_cast<int>(a.window) < kept)) {
      const unsigned long long at = ring[next & ring_mask].pos;
      if (at >= part->c1) {
        done = true;
        break;
      }
      if (at >= part->c0) {
        if constexpr (kShared) {
          train_centre_shared<kV, kB, kGrad>(a, ring, rows, ring_mask, negs, wout, wdelta, next,
                                             kept, lane, nq, loss, terms, pool_off);
        } else if (kSkipGram) {
          train_centre_skipgram<kV, kB, kGrad, kParts>(a, ring, rows, centre0, ring_mask, negs, dup,
                                                       next, kept, lane, nq, loss, terms, pool_off);
        } else {
          train_centre_cbow<kV, kB, kGrad>(a, ring, rows, ring_mask, negs, dup, next, kept, lane,
                                           nq, loss, terms, pool_off);
        }
        if (!kParts || ring[next & ring_mask].id % a.parts == a.output_part) ++centres;
      }
      ++next;
    }
  }
#pragma unroll
  for (int m = kWarp / 2; m >= 1; m /= 2) loss += __shfl_xor_sync(kFull, loss, m);
  if (lane == 0) {
    // Partitioned tables: the caller counts the words; the launch whose parts are the same
    // counts the centres of its part.
    if (!kParts) atomicAdd(&a.counters->words, part->c1 - part->c0);
    if (!kParts || a.input_part == a.output_part) atomicAdd(&a.counters->trained, centres);
    atomicAdd(&a.counters->loss_terms, static_cast<unsigned long long>(terms));
    atomicAdd(&a.counters->loss, static_cast<double>(loss));
  }
}

/// Thread mapping: one warp per work item, taken from a global counter until none are left (a
/// persistent grid; items differ in work, so static assignment would leave warps idle). An item
/// is a sentence, or with SgnsArgs::item_tokens a run of that many consecutive positions of the
/// launch, cut at sentence ends into parts (train_part): a sentence longer than the launch's
/// share per warp then no longer holds one warp busy after the others have finished — what
/// bounds short launches such as a paged piece, and a launch's tail.
/// Inside a sentence the warp works in the CPU's order — centre after centre, context after
/// context — so a sentence's result equals the CPU reference when its parts train in order (a
/// single-warp launch); warps race only with other items (Hogwild, as word2vec's threads do:
/// reads may be stale, but every update is an atomic add of this warp's own change, so none is
/// lost on hot rows; hierarchical softmax damps the steps of its top inner nodes,
/// SgnsArgs::hs_damp_warps). Lanes split the vector: lane
/// l holds float4 number l + 32·v of every row (dim 128: one float4 per lane, 512-byte coalesced
/// row loads), and dot products are warp butterfly reductions. The 32 lanes also subsample 32
/// tokens at a time into a shared-memory ring (with each token's table row beside it), and draw a
/// centre's negatives in parallel (one Philox call per lane). The centre's output row stays in
/// registers across its window (skip-gram). Hierarchical softmax (SgnsArgs::hs_word_links) adds
/// no mapping of its own: the warp that trains an example walks its centre's path, the lanes
/// splitting each inner node's row as any other row, a few nodes loaded at once (train_path).
/// Ids decide subsampling, Philox keys and equality with the centre; rows (SgnsArgs::token_rows,
/// pool_rows, or the ids) address the tables. Table rows are looked up once per token as it
/// enters the ring, so the training loop reads a row index from shared memory either way; the
/// pool is a uniform branch around the negative draws; both cost little, and less than a template
/// parameter for each (docs/design-kernels.md, "Kernel choices").
/// kGrad: gradient mode (SgnsArgs::input_grad); the tables are only read.
/// kMinBlocks: blocks of 8 warps that must fit on one SM; it caps the registers per thread
/// (2 → 128, 3 → 80) so that more warps are resident to hide the L2 latency of row loads; 3 is
/// used for dim ≤ 128 (docs/design-kernels.md, "Kernel choices").
/// kShared: skip-gram with negatives shared by each window (train_centre_shared): the same warp
/// per item and lanes per vector, the window's output rows held in the warp's shared memory.
template <int kV, int kB, bool kSkipGram, bool kGrad, int kMinBlocks, bool kParts = false,
          bool kShared = false>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp, kMinBlocks)
    sgns_kernel(const SgnsArgs a, const WarpLayout layout) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  unsigned char* mine = smem + warp * layout.bytes();
  WorkPart* part = reinterpret_cast<WorkPart*>(mine);
  float4* centre0 = reinterpret_cast<float4*>(part + 1);
  float4* wout = centre0 + layout.row_quads;
  float4* wdelta = wout + layout.window_rows * layout.row_quads;
  RingEntry* ring = reinterpret_cast<RingEntry*>(wdelta + layout.window_rows * layout.row_quads);
  uint32_t* rows = reinterpret_cast<uint32_t*>(ring + layout.ring_size);
  uint32_t* negs = rows + layout.ring_size;
  uint32_t* dup = negs + layout.slots * layout.negative;
  const uint32_t ring_mask = layout.ring_size - 1;
  const int nq = static_cast<int>(a.stride / 4);
  const uint64_t* starts = a.sentence_starts;
  const uint64_t span_first = starts[0], span_last = starts[a.sentences];
  const uint64_t k = a.item_tokens == kSentenceItems ? 0 : a.item_tokens;
  const uint64_t items = k == 0 ? a.sentences : (span_last - span_first + k - 1) / k;

  for (;;) {
    unsigned long long u = 0;
    if (lane == 0) u = atomicAdd(a.next_sentence, 1ull);
    u = __shfl_sync(kFull, u, 0);
    if (u >= items) break;
    uint64_t s = u, c0 = 0, item_end = 0;
    if (k == 0) {
      c0 = starts[s];
      item_end = starts[s + 1];
    } else {
      c0 = span_first + u * k;
      item_end = c0 + k < span_last ? c0 + k : span_last;
      s = sentence_of(starts, a.sentences, c0, lane);
    }
    if (lane == 0) {
      part->c0 = c0;
      part->item_end = item_end;
      part->s = s;
    }
    __syncwarp();
    while (part->c0 < part->item_end) {
      const uint64_t last = starts[part->s + 1];
      const uint64_t c1 = last < part->item_end ? last : part->item_end;
      if (c1 > part->c0) {  // else an empty sentence
        if (lane == 0) part->c1 = c1;
        __syncwarp();
        train_part<kV, kB, kSkipGram, kGrad, kParts, kShared>(
            a, part, ring, rows, centre0, wout, wdelta, ring_mask, negs, dup, lane, nq);
      }
      __syncwarp();
      if (lane == 0) {
        part->c0 = c1 > part->c0 ? c1 : part->c0;
        ++part->s;
      }
      __syncwarp();
    }
  }
}

template <int kV, int kB, bool kGrad, int kMinBlocks>
void launch_mode(const SgnsArgs& a, cudaStream_t stream) {
  const bool shared = a.kernel == SgnsKernel::kSharedNegatives;
  const WarpLayout layout = make_layout(a.stride, a.window, a.negative, shared);
  const detail::DeviceLimits& device = detail::device_limits();
  const int sms = device.sms;
  int warps = static_cast<int>(std::min<size_t>(
      kMaxWarpsPerBlock, static_cast<size_t>(device.max_shared_optin) / layout.bytes()));
  if (warps < 1) {
    throw UsageError("--window " + std::to_string(a.window) + " with --negative " +
                     std::to_string(a.negative) + " needs more shared memory than the GPU has");
  }
  if (a.max_warps > 0) warps = static_cast<int>(std::min<uint32_t>(warps, a.max_warps));
  const size_t smem = static_cast<size_t>(warps) * layout.bytes();
  // Partitioned tables (skip-gram sgd only) have a kernel of their own, so that the checks
  // cost the others nothing.
  auto kernel =
      a.model == ModelKind::kSkipGram
          ? (shared                  ? sgns_kernel<kV, kB, true, kGrad, kMinBlocks, false, true>
             : !kGrad && a.parts > 1 ? sgns_kernel<kV, kB, true, kGrad, kMinBlocks, !kGrad>
                                     : sgns_kernel<kV, kB, true, kGrad, kMinBlocks>)
          : sgns_kernel<kV, kB, false, kGrad, kMinBlocks>;
  const void* const key = reinterpret_cast<const void*>(kernel);
  detail::allow_dynamic_shared(device, key, smem);
  const int per_sm = detail::blocks_per_sm(device, key, warps * kWarp, smem);
  // Multiprocessors left free run the paging kernels (gathers, scatters) beside training: the
  // persistent blocks of this kernel would otherwise hold every SM until the launch ends.
  const int usable = std::max(1, sms - static_cast<int>(std::min<uint32_t>(a.reserved_sms, sms)));
  uint64_t resident = static_cast<uint64_t>(std::max(per_sm, 1)) * usable;
  if (a.max_warps > 0) resident = std::min<uint64_t>(resident, a.max_warps / warps);
  SgnsArgs b = a;
  if (b.item_tokens == 0 && b.token_count > 0) {
    b.item_tokens = sgns_item_tokens(b.token_count, resident * static_cast<uint64_t>(warps));
  }
  if (b.item_tokens == kSentenceItems) b.item_tokens = 0;
  // Items of a given size over an unstated number of tokens: as many blocks as stay resident.
  const uint64_t items = b.item_tokens == 0   ? a.sentences
                         : a.token_count == 0 ? resident * static_cast<uint64_t>(warps)
                                              : (a.token_count + b.item_tokens - 1) / b.item_tokens;
  const uint64_t needed = (items + warps - 1) / warps;
  const unsigned blocks = static_cast<unsigned>(std::max<uint64_t>(1, std::min(needed, resident)));
  if (b.hs_damp_warps == kHsDampLaunchWarps) b.hs_damp_warps = blocks * warps;
  if (b.next_sentence == nullptr) b.next_sentence = &b.counters->next_sentence;
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(b.next_sentence, 0, sizeof(*b.next_sentence), stream));
  kernel<<<blocks, warps * kWarp, smem, stream>>>(b, layout);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

template <int kV, int kB, int kMinBlocks>
void launch_shape(const SgnsArgs& a, cudaStream_t stream) {
  if (a.input_grad != nullptr) return launch_mode<kV, kB, true, kMinBlocks>(a, stream);
  launch_mode<kV, kB, false, kMinBlocks>(a, stream);
}

}  // namespace

uint32_t sgns_item_tokens(uint64_t tokens, uint64_t warps) {
  warps = std::max<uint64_t>(warps, 1);
  if (tokens < warps * kMinItemTokens) {
    const uint64_t k =
        tokens * kSmallLaunchTokensPerWarp.num / (warps * kSmallLaunchTokensPerWarp.den);
    return static_cast<uint32_t>(std::clamp<uint64_t>(k, kSmallLaunchItemTokens, kMinItemTokens));
  }
  const uint64_t share = tokens / warps / kItemsPerWarp;
  uint32_t k = kMinItemTokens;
  while (k < kMaxItemTokens && uint64_t{k} * 2 <= share) k *= 2;
  return k;
}

void check_sgns_shape(uint32_t dim, uint32_t window, uint32_t negative, SgnsKernel kernel) {
  if (dim == 0 || dim > kSgnsMaxDim) {
    throw UsageError("--dim " + std::to_string(dim) + ": the CUDA backend supports 1 to " +
                     std::to_string(kSgnsMaxDim));
  }
  if (window > 1000 || negative > 255 * 2) {
    throw UsageError("--window/--negative too large for the CUDA backend");
  }
  const bool shared = kernel == SgnsKernel::kSharedNegatives;
  if (make_layout(sgns_row_stride(dim), window, negative, shared).bytes() > 200 * 1024) {
    throw UsageError("--window " + std::to_string(window) + " with --negative " +
                     std::to_string(negative) + " needs more shared memory than the GPU has");
  }
}

void launch_sgns(const SgnsArgs& args, cudaStream_t stream) {
  SgnsArgs a = args;
  if (a.pitch == 0) a.pitch = a.stride;
  if (a.pitch < a.stride) throw Error("sgns: a row pitch below the row stride");
  if (a.parts > 1 &&
      (a.model != ModelKind::kSkipGram || a.pool != nullptr || a.token_rows != nullptr ||
       a.input_grad != nullptr || a.input_part >= a.parts || a.output_part >= a.parts)) {
    throw Error("partitioned tables train skip-gram sgd without a pool or row maps");
  }
  if (a.kernel == SgnsKernel::kSharedNegatives &&
      (a.model != ModelKind::kSkipGram || a.parts > 1)) {
    throw Error("shared negatives train skip-gram on whole tables");
  }
  if (a.hs_word_links != nullptr &&
      (a.hs_node_links == nullptr || a.hs_nodes == nullptr || a.parts > 1 ||
       (a.input_grad != nullptr && (a.hs_nodes_grad == nullptr || a.touched_nodes == nullptr)))) {
    throw Error(
        "sgns: hierarchical softmax needs its paths, its node table (and gradients) and "
        "whole tables");
  }
  if (a.sentences == 0) return;
  const uint32_t nq = a.stride / 4;
  const uint32_t neg = a.negative;
  if (nq <= 32) {
    if (neg <= 2) return launch_shape<1, 2, 3>(a, stream);
    if (neg == 5) return launch_shape<1, 5, 3>(a, stream);
    return launch_shape<1, 8, 3>(a, stream);
  }
  if (nq <= 64) {
    if (neg <= 2) return launch_shape<2, 2, 2>(a, stream);
    if (neg == 5) return launch_shape<2, 5, 2>(a, stream);
    return launch_shape<2, 8, 2>(a, stream);
  }
  if (nq <= 96) return launch_shape<3, 4, 1>(a, stream);
  if (nq <= 128) return launch_shape<4, 4, 1>(a, stream);
  if (nq <= 256) return launch_shape<8, 2, 1>(a, stream);
  throw UsageError("--dim too large for the CUDA backend");
}

}  // namespace pagedw2v
