#pragma once
/// @file cuda_options.hpp
/// The CUDA backend's tuning (CudaBackendOptions) and where the time of a run went
/// (CudaBackendReport): apart from the backend (cuda_backend.hpp), so that the parts it drives
/// take them without including it. Host-only header.

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/options.hpp"
#include "gpu/gpu_plan.hpp"
#include "model/params.hpp"

namespace pagedw2v {

/// The environment variable that overrides CudaBackendOptions::hs_damp_warps, read once by the
/// backend as it starts: `add` (word2vec's steps, 0), `damp` (the launch's warps, the default) or
/// `damp:W` (as for W warps). A measurement knob, not an option of the product.
inline constexpr const char* kHsTopVariable = "PAGEDW2V_HS_TOP";
/// The environment variable that caps the warps in flight of a hierarchical-softmax run's
/// Hogwild launches (CudaBackendOptions::hs_max_warps): fewer warps, a shorter delay
/// between a node's read and its update, at a cost in speed. A measurement knob as above.
inline constexpr const char* kHsWarpsVariable = "PAGEDW2V_HS_WARPS";

/// Tuning of the CUDA backend; the defaults are what `--device cuda` uses.
/// CudaBackendOptions::table_skew_bytes by default (gpu_plan.hpp's kDefaultTableGap).
inline constexpr size_t kDefaultTableSkew = kDefaultTableGap;

struct CudaBackendOptions {
  /// Keep the corpus on the GPU when it needs at most this many bytes; 0 = half of what the
  /// budget leaves beside the tables (gpu_plan.hpp's resident_corpus_sizes).
  size_t resident_corpus_max_bytes = 0;
  /// Stream the corpus in chunks even when it would fit.
  bool force_stream = false;
  /// Tokens per streamed chunk.
  size_t chunk_tokens = size_t{32} << 20;
  /// Resident or paged tables, and the GPU memory budget (options.hpp).
  GpuOptions gpu;
  /// Paged placement: rows kept on the GPU for the whole run (the most frequent words, ids
  /// 0 … hot_rows − 1) and the slots of the row cache beside them (kernels/paging.hpp); 0 = sized
  /// from the budget. Tests set both to
  /// force paging on small vocabularies.
  uint64_t hot_rows = 0;
  uint64_t cache_rows = 0;
  /// One warp trains the sentences of a launch in order (SgnsArgs::max_warps = 1): a run is then
  /// deterministic, which the paged-versus-resident equivalence test needs.
  bool serial = false;
  /// One warp per launch as with `serial`, but with the training streams and eviction depth of
  /// a default run: each launch waits for the launch before it on the other stream. The run is
  /// deterministic, so the paged pipeline as users run it can be compared bit for bit.
  bool ordered = false;
  /// Paged: multiprocessors the training kernel leaves to the row moves that run beside it (the
  /// moves take three blocks of 8 warps on each, more for pieces that bring many rows:
  /// piece_move_blocks in gpu_plan.hpp). The default is the best measured
  /// (docs/design-kernels.md, "Paged tables").
  uint32_t paging_sms = 4;
  /// Paged: blocks of 8 warps every piece's row moves take; 0 = as piece_move_blocks decides.
  uint32_t move_blocks = 0;
  /// Paged with sgd: pieces of at most this many words (whole work blocks), however long
  /// --batch-words makes a super-batch; 0 = no limit. Optimizers step once per super-batch and
  /// are never cut. The default is the best measured (docs/design-kernels.md, "Paged tables").
  uint64_t sgd_piece_words = 262144;
  /// Paged with sgd: where pieces are cut (gpu_plan.hpp); kAuto: by the cache's size.
  PieceCutting piece_cutting = PieceCutting::kAuto;
  /// Pieces cut on the host: threads that cut them (0: a quarter of the host's, 1 to 4), and
  /// whether they cut the next span's first pieces while a span trains (a corpus in memory).
  uint32_t cut_threads = 0;
  bool cut_ahead = true;
  /// Paged: a file to which each span appends its pieces' device times (bench --paging-trace).
  std::string paging_trace;
  /// SgnsArgs::item_tokens of every launch: 0 = sized per launch (sgns_item_tokens);
  /// kSentenceItems keeps each sentence on one warp, as the tests on disjoint sentences need.
  uint32_t item_tokens = 0;
  /// Tables apart: bytes between the end of the input vectors and the start of the output
  /// vectors on the device. With both tables starting on a 2 MiB page, a row of one and the same
  /// row of the other share their address bits below 2 MiB, and training, which reads such pairs of
  /// hot rows together, ran up to 8 % slower depending on where the driver placed the pages; the
  /// default shifts the output rows against the input rows (docs/design-kernels.md, "Table
  /// placement").
  size_t table_skew_bytes = kDefaultTableSkew;
  /// How the device holds each pair of tables (gpu_plan.hpp); interleaved tables have no gap
  /// and train 7 % faster resident and up to 27 % paged on mix5m (docs/design-kernels.md).
  TableLayout table_layout = TableLayout::kInterleaved;
  /// Hierarchical softmax in Hogwild launches (not `serial` or `ordered`, which keep word2vec's
  /// steps): the inner nodes' steps are damped as for this many warps (SgnsArgs::hs_damp_warps);
  /// kHsDampLaunchWarps: the launch's own; by default (kHsDampByModel) CBOW's are damped for the
  /// launch's own and skip-gram's are not. kHsTopVariable overrides it.
  uint32_t hs_damp_warps = kHsDampByModel;
  /// Hierarchical softmax in Hogwild launches: at most this many warps in flight (0: as many as
  /// stay resident); by default (kHsWarpsByModel) kHsCbowMaxWarps for CBOW and no cap for
  /// skip-gram. kHsWarpsVariable overrides it.
  uint32_t hs_max_warps = kHsWarpsByModel;
};

/// Where the time of a CUDA run went, for `pagedw2v bench`.
struct CudaBackendReport {
  double upload_seconds = 0;  ///< copy-engine time of corpus uploads (overlapped when streamed)
  double kernel_seconds = 0;  ///< GPU time inside the training kernels
  double train_seconds = 0;   ///< wall time inside train()
  uint64_t launches = 0;
  size_t backend_bytes = 0;  ///< GPU memory the backend allocated (tables, corpus, samplers)
  /// Resident: GPU memory the tables and samplers took, and what the plan counted for them
  /// (GpuPlan::table_bytes, beside which it sized the corpus).
  uint64_t table_bytes = 0, planned_table_bytes = 0;
  size_t device_used_bytes = 0;  ///< the device's used memory at its peak, context included
  bool corpus_resident = false;
  std::string device_name;
  bool paged = false;
  uint64_t hot_rows = 0;       ///< rows kept on the GPU for the run (paged)
  uint64_t cache_rows = 0;     ///< slots of the GPU's row cache (paged)
  uint64_t budget_bytes = 0;   ///< the GPU memory budget the backend planned with
  uint64_t super_batches = 0;  ///< pieces trained (paged: after splits to fit the cache)
  uint64_t splits = 0;         ///< times a piece was cut to fit the cache
  /// Pieces whose rows took their slots only once the piece two back had trained: with the
  /// pieces before them they needed more rows than the cache has (pieces cut on the host).
  uint64_t narrowed = 0;
  uint64_t drains = 0;          ///< times a piece waited for every piece in flight to train, to fit
  uint64_t row_lookups = 0;     ///< row references of the pieces: tokens and pool entries
  uint64_t cold_lookups = 0;    ///< of those, references to rows outside the hot cache
  uint64_t cold_rows = 0;       ///< distinct cold rows staged, summed over pieces
  uint64_t rows_from_host = 0;  ///< cold rows read from host memory
  uint64_t rows_to_host = 0;    ///< cold rows written back
  uint64_t pcie_bytes = 0;      ///< bytes moved over PCIe for rows and state, both directions
  // Paged: where the time went.
  double kernel_busy_seconds = 0;   ///< time at least one training launch was in flight
  double prep_seconds = 0;          ///< device time collecting pieces (summed)
  double move_seconds = 0;          ///< device time of the row moves (summed)
  double prepare_host_seconds = 0;  ///< host time preparing pieces
  /// of which waiting for the device: its counts of a piece's rows (cut on the device), or the
  /// copies from a stage's staging (cut on the host)
  double prepare_blocked_seconds = 0;
  double prepare_cut_wait_seconds = 0;  ///< waiting for the cuts of pieces (cut on the host)
};

}  // namespace pagedw2v
