#pragma once
/// @file params.hpp
/// What a backend needs to know about the model and the schedule; shared by host and device code
/// (layer model: the CPU reference and the kernels compute with the same definitions).

#include <cstdint>
#include <string>

#include "base/philox.hpp"

namespace pagedw2v {

/// Words per work block: small enough to balance threads, large enough to amortise a block.
inline constexpr uint64_t kBlockWords = 4096;

/// Row length on the device for `dim`: a multiple of 4 floats so every lane of the kernels
/// (kernels/sgns.hpp) moves 16 bytes. Here, below the kernels, so that the plan counts the same
/// bytes in a build without CUDA.
inline uint32_t sgns_row_stride(uint32_t dim) { return (dim + 3u) & ~3u; }

enum class ModelKind : uint32_t { kSkipGram = 0, kCbow = 1 };

inline std::string to_string(ModelKind model) {
  return model == ModelKind::kCbow ? "cbow" : "skipgram";
}

/// How skip-gram trains a centre's window (docs/design-kernels.md, "Shared negatives").
/// kPerPair: word2vec's update, each (context, centre) pair with negatives of its own, the
/// centre's output row changed pair after pair. kSharedNegatives: one set of negatives per
/// centre, shared by every context of its window; the window's output rows (centre and
/// negatives) are read once, every pair of the window is taken against them, and their summed
/// change is added once at the window's end (Ji et al., arXiv 1604.04661). CBOW already draws
/// one set per window, so it has only kPerPair.
enum class SgnsKernel : uint32_t { kPerPair = 0, kSharedNegatives = 1 };

inline std::string to_string(SgnsKernel kernel) {
  return kernel == SgnsKernel::kSharedNegatives ? "shared-negatives" : "per-pair";
}

/// "per-pair" or "shared-negatives"; false for anything else.
inline bool parse_sgns_kernel(const std::string& text, SgnsKernel* out) {
  for (SgnsKernel k : {SgnsKernel::kPerPair, SgnsKernel::kSharedNegatives}) {
    if (text == to_string(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

/// Hierarchical softmax in a Hogwild launch of the CUDA kernels (SgnsArgs::hs_damp_warps,
/// docs/design-hierarchical-softmax.md, "Hogwild at the top of the tree"): every example's path
/// starts at the root, so a node at depth d (the root 0) is on about 2^−d of the paths near the
/// top, and of W warps in flight about W·2^−d hold it between their read and their atomic add at
/// once; the adds sum that many changes, each computed from the same stale row. A launch damped
/// for W warps divides each node's step by √(W·2^−d) where that is above 1 (the square-root rule
/// of a batch's size and its learning rate); this value stands for the launch's own warps
/// (blocks × warps per block).
inline constexpr uint32_t kHsDampLaunchWarps = 0xFFFFFFFFu;
/// The CUDA backend's default (CudaBackendOptions::hs_damp_warps): CBOW damped for the launch's
/// own warps, skip-gram not damped (hs_damp_warps_for): damping brought CBOW's quality on the GPU
/// towards word2vec's and took skip-gram's WordSim-353 away from it (docs/performance.md,
/// "Hierarchical softmax on the GPU").
inline constexpr uint32_t kHsDampByModel = 0xFFFFFFFEu;

/// `warps` (CudaBackendOptions::hs_damp_warps) for a run of `model`: kHsDampByModel resolved,
/// any other value as it is.
inline uint32_t hs_damp_warps_for(uint32_t warps, ModelKind model) {
  if (warps != kHsDampByModel) return warps;
  return model == ModelKind::kCbow ? kHsDampLaunchWarps : 0;
}

/// Hierarchical softmax's CBOW in Hogwild launches: at most this many warps in flight
/// (CudaBackendOptions::hs_max_warps, SgnsArgs::max_warps): fewer warps shorten the delay
/// between a top node's read and its update, which damping alone did not make up for; the
/// measurements that chose 512 are in docs/performance.md ("Hierarchical softmax on the GPU").
inline constexpr uint32_t kHsCbowMaxWarps = 512;
/// The CUDA backend's default (CudaBackendOptions::hs_max_warps): kHsCbowMaxWarps for CBOW,
/// no cap for skip-gram (hs_max_warps_for).
inline constexpr uint32_t kHsWarpsByModel = 0xFFFFFFFEu;

/// `warps` (CudaBackendOptions::hs_max_warps) for a run of `model`: kHsWarpsByModel resolved,
/// any other value (0: no cap) as it is.
inline uint32_t hs_max_warps_for(uint32_t warps, ModelKind model) {
  if (warps != kHsWarpsByModel) return warps;
  return model == ModelKind::kCbow ? kHsCbowMaxWarps : 0;
}

/// word2vec's MAX_EXP: the sigmoid is 0 or 1 beyond ±6.
inline constexpr float kMaxExp = 6.0f;

struct TrainParams {
  ModelKind model = ModelKind::kSkipGram;
  uint32_t dim = 100;
  uint32_t window = 5;
  uint32_t negative = 5;  ///< 0: no negative sampling (hierarchical softmax alone)
  SgnsKernel kernel = SgnsKernel::kPerPair;  ///< skip-gram's window update
  /// Hierarchical softmax (TrainData::tree): with negative 0 its inner nodes are rows of the
  /// output table (huffman.hpp's inner_node_row); beside negative sampling, rows of the model's
  /// inner-node table (Model::nodes).
  bool hs = false;
  uint32_t epochs = 5;
  uint64_t seed = 1;
  float alpha = 0.025f;           ///< starting learning rate
  float min_alpha_ratio = 1e-4f;  ///< the rate decays linearly to alpha * this
  uint64_t words_per_epoch = 0;   ///< in-vocabulary tokens of one pass over the corpus
  /// 0: every negative is drawn from the noise distribution on its own (word2vec). N > 0: each
  /// pool period (pool_blocks) draws N negatives from the noise distribution up front (its pool,
  /// keyed by seed, epoch and period), and every example picks its negatives uniformly from the
  /// pool — the same marginal distribution, but a super-batch touches at most N output rows per
  /// period as negatives, so its rows are known before it trains (what paged tables need).
  uint32_t negative_pool = 0;
  /// Work blocks (training_set.hpp's kBlockWords words each) per super-batch: block b belongs to
  /// super-batch b / batch_blocks of its epoch. A super-batch is what paged tables stage at once
  /// and, on the GPU, the batch of one optimizer step.
  uint32_t batch_blocks = 256;
  /// Work blocks per period of the negative pool: block b draws its negatives from the pool of
  /// period b / pool_blocks (negative_pool.hpp). Much shorter than a super-batch: a pool shared
  /// by too many examples costs quality (mix5m, CPU, pool 4096: 11.3 % analogy with a period of
  /// 4 k words, 10.9 % with 16 k, 8.7 % with 262 k). A super-batch gathers the rows of all its
  /// periods' pools.
  uint32_t pool_blocks = 1;
  /// A resumed run that starts its decay anew (Config::lr_schedule): the rate is alpha ·
  /// decay_scale at word `decay_from` and falls linearly to the floor (alpha · min_alpha_ratio)
  /// at the run's end. decay_scale 0: the schedule of the whole run, from word 0 at alpha.
  uint64_t decay_from = 0;
  float decay_scale = 0.0f;
};

/// Linear decay from alpha to alpha·min_ratio over `epochs × words_per_epoch` words, as
/// word2vec.c does; `progress` is the global index of the word being trained. A decay begun anew
/// by a resumed run starts at word `start_words` (and at its own alpha).
struct LrSchedule {
  float alpha = 0.025f;
  float min_ratio = 1e-4f;
  uint64_t total_words = 1;
  uint64_t start_words = 0;

  PAGEDW2V_HD float at(uint64_t progress) const {
    const uint64_t done = progress > start_words ? progress - start_words : 0;
    const double r =
        1.0 - static_cast<double>(done) / static_cast<double>(total_words - start_words + 1);
    const float ratio = static_cast<float>(r);
    return alpha * (ratio > min_ratio ? ratio : min_ratio);
  }
};

inline LrSchedule make_schedule(const TrainParams& p) {
  LrSchedule s;
  s.alpha = p.alpha;
  s.min_ratio = p.min_alpha_ratio;
  s.total_words = static_cast<uint64_t>(p.epochs) * p.words_per_epoch;
  if (p.decay_scale > 0.0f && p.decay_from < s.total_words) {
    // The floor stays alpha · min_alpha_ratio, whatever rate the decay starts from.
    s.alpha = p.alpha * p.decay_scale;
    s.min_ratio = p.min_alpha_ratio / p.decay_scale;
    s.start_words = p.decay_from;
  }
  return s;
}

}  // namespace pagedw2v
