#pragma once
/// @file gpu_plan.hpp
/// Where the CUDA backend keeps the tables and how large each of its buffers is, decided once
/// per run from the model's shape, the corpus's shape, the GPU memory budget and a few device
/// facts. A pure function: it allocates nothing and calls no CUDA API (the device facts come in
/// as values and one size function), so tests run it without a GPU over any shape and budget.
///
/// Owns: the placement rule (resident when everything fits, else paged), the byte accounting of
/// resident and paged tables, the split of a paged budget into hot rows and cache slots, the
/// piece and stage sizes, and the training sizes a paged run leaves to it (the negative pool,
/// the pool period, an optimizer's super-batch), the margin a run leaves free on the device
/// (gpu_memory_margin) and the resident corpus's sizes. The counts of what the corpus's pieces
/// touch are row_counts.hpp's; the run's plan (train/run_plan.hpp) makes this plan once, from the
/// run's one device query. May not touch: device memory, streams, the model's values.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/options.hpp"
#include "corpus/corpus.hpp"
#include "gpu/row_counts.hpp"
#include "model/huffman.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {

class KeepTable;
class NoiseTable;

/// The gap between the device's input and output vectors by default (one allocation holds both;
/// CudaBackendOptions::table_skew_bytes): half a 2 MiB page and one 64 KiB and one 128-byte step
/// more, so that a row and the same row of the other table differ in every range of address
/// bits that a cache or memory channel might index by.
inline constexpr uint64_t kDefaultTableGap = (uint64_t{1} << 20) + (uint64_t{1} << 16) + 128;

/// How the device holds the two tables of each pair (the vectors, each optimizer state, the
/// gradients; gpu/device_tables.hpp). kApart: one table after the other, the second
/// CudaBackendOptions::table_skew_bytes past the end of the first, so that the distance between
/// a word's two rows grows with the rows on the device. kInterleaved: a word's output row right
/// after its input row (rows 2 · stride floats apart), the same distance whatever the rows
/// (docs/design-kernels.md, "Table placement").
enum class TableLayout { kApart, kInterleaved };

/// Scratch bytes of the paging selects over `select_n` ids and of the slot-order sort of
/// `order_n` keys of `key_bits` bits (kernels/paging.hpp; CUB decides them); `order_n` 0: the
/// selects' alone (no slot order is sorted: an optimizer's step of resident tables).
using GpuScratchBytes =
    std::function<uint64_t(uint64_t select_n, uint32_t order_n, uint32_t key_bits)>;

/// What the plan needs to know about the device: the facts of the run's one device query
/// (device_facts.hpp; plan_input.hpp's plan_device_facts) and the budget the run resolved.
struct GpuDeviceFacts {
  std::string name;     ///< for messages
  uint64_t budget = 0;  ///< GPU memory the backend may use (gpu_budget)
  /// Whether the GPU addresses registered host memory by its host pointer (paged tables need it).
  bool host_pointers = true;
  GpuScratchBytes scratch_bytes;  ///< see GpuScratchBytes
};

/// The negative pool a paged run draws when none is given, per kAutoPoolWordsPerEntry × its
/// size words: one entry per four words, the least that kept mix5m's quality (docs/notebook.md,
/// "pool N/W"; 1024 per 4096 words is the setting measured most).
inline constexpr uint32_t kAutoNegativePool = 1024;
inline constexpr uint32_t kAutoPoolWordsPerEntry = 4;

/// The one rule of a pool left to the plan, for a paged run (plan_gpu) and for GPU ranks that
/// train rows through host memory (train/run_plan.hpp): `pool` entries when the run has some,
/// else kAutoNegativePool; drawn every auto_pool_words of them.
inline uint32_t auto_negative_pool(uint32_t pool) { return pool > 0 ? pool : kAutoNegativePool; }
inline uint64_t auto_pool_words(uint32_t pool) { return uint64_t{kAutoPoolWordsPerEntry} * pool; }

/// Where the pieces of paged sgd are cut: on the device, each try's rows counted there and sent
/// back (kernels/paging.hpp's steps), or on the host ahead of the device by their cold rows
/// (gpu/piece_cuts.hpp); kAuto: as the plan decides (GpuPlan::host_cuts).
enum class PieceCutting { kAuto, kHost, kDevice };

/// Paged sgd with a row cache of at most this many slots cuts its pieces on the host: each
/// piece of such a cache is small (its cold rows are a third of the slots), so the device's
/// steps per piece, a dozen launches and a round trip whatever its size, bound the run, while
/// the one-block take of a listed piece stays short (launch_take_listed_rows). A larger cache
/// cuts its pieces on the host too where it would cut them short (cache_cuts_pieces: each try
/// on the device costs its steps and round trip whether the piece fits or not); one whose
/// pieces keep their size (the most words a piece may take) cuts them on the device, whose
/// one pass per piece was faster there than the one-block take of a long list.
inline constexpr uint64_t kHostCutMaxSlots = 16384;

/// The run as the plan sees it. Pointers are borrowed for the call.
struct GpuPlanInput {
  uint64_t rows = 0;        ///< vocabulary rows of each table
  uint32_t dim = 0;         ///< floats a row holds
  uint32_t row_stride = 0;  ///< floats a row takes on the device (sgns_row_stride)
  /// Bytes one row of one device table takes; 0 = row_stride floats.
  uint64_t row_bytes = 0;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  uint32_t negative_pool = 0;  ///< TrainParams::negative_pool
  uint32_t batch_blocks = 1;   ///< work blocks per super-batch
  uint32_t pool_blocks = 1;    ///< work blocks per pool period
  /// What the run left to the plan (the flag was not given); the plan chooses it when the
  /// tables are paged. False: the value above is taken as it is, and checked.
  bool choose_pool = false, choose_pool_blocks = false, choose_batch = false;
  Placement placement = Placement::kAuto;
  /// Paged: fixed hot rows and cache slots (CudaBackendOptions); 0 = sized from the budget.
  uint64_t hot_rows = 0, cache_rows = 0;
  /// Bytes between the device's input and output vectors (CudaBackendOptions::table_skew_bytes).
  uint64_t table_gap_bytes = kDefaultTableGap;
  /// Paged with sgd: longest piece in words (CudaBackendOptions::sgd_piece_words); 0 = no cap.
  uint64_t sgd_piece_words = 0;
  /// Paged with sgd: where pieces are cut (kAuto: kHostCutMaxSlots and cache_cuts_pieces decide).
  PieceCutting piece_cutting = PieceCutting::kAuto;
  /// Paged sgd, a small cache cut on the host: pieces capped by the cache's slots
  /// (host_cut_piece_blocks); false keeps sgd_piece_words as the only cap.
  bool cap_host_cut_pieces = true;
  /// The corpus is streamed (TrainData::streamed): its blocks are not known when the plan is
  /// made, so `blocks`, `sentence_starts` and `tokens` are not read, and pieces are sized for
  /// the largest blocks there can be (kMaxBlockTokens, kMaxBlockSentences).
  bool streamed = false;
  const std::vector<uint64_t>* blocks = nullptr;           ///< block boundaries (sentences)
  const std::vector<uint64_t>* sentence_starts = nullptr;  ///< token offset of each sentence
  const KeepTable* keep = nullptr;                         ///< subsampling keep probabilities
  /// The corpus's ids: paged with an optimizer, the plan counts the rows each super-batch
  /// touches (max_super_batch_rows); null = bounded by its tokens.
  const std::vector<uint32_t>* tokens = nullptr;
  /// The noise distribution the pools draw from (TrainData::noise): with it, the cache is
  /// sized for the pool entries of two super-batches likely to be cold (drawn at or above the
  /// hot rows), one super-batch still with every entry; null = every entry for both. Its
  /// columns lie on the GPU in both placements.
  const NoiseTable* noise = nullptr;
  /// Hierarchical softmax (TrainParams::hs): a piece also reads the inner-node rows of its
  /// words' paths, which may be more distinct rows than its tokens, so its row lists are sized
  /// for every row, its pieces are cut on the device, and each stage maps the nodes in a table
  /// of one entry per row.
  bool hs = false;
  /// Hierarchical softmax: the most distinct rows one sentence reads, its words' and their
  /// paths' inner nodes (hs_sentence_rows), which the cache must hold at once: the reserve where
  /// the plan cannot count the corpus (streamed, or no tree), which it does otherwise, by the hot
  /// rows (hs_rows_from).
  uint64_t hs_sentence_rows = 0;
  /// Hierarchical softmax: the tree whose paths a piece's rows include (counted over the pieces
  /// and sentences as hs_sentence_rows counts them); null = every row.
  const HuffmanTree* hs_tree = nullptr;
  /// Hierarchical softmax alone (--negative 0): no negative pool is drawn or paged, whatever
  /// negative_pool says (the pieces' rows are their words' and paths').
  bool hs_alone = false;
  /// Resident: the corpus on the GPU (CudaBackendOptions::resident_corpus_max_bytes,
  /// chunk_tokens, force_stream) and a streamed corpus's stage (TrainData::stage_tokens; 0:
  /// none), for resident_corpus_sizes.
  uint64_t resident_corpus_max_bytes = 0;
  uint64_t chunk_tokens = uint64_t{32} << 20;
  bool force_stream = false;
  uint64_t stage_tokens = 0;
};

/// How resident tables hold the corpus on the GPU (gpu/device_corpus.hpp): whole when it needs
/// at most `resident_max_bytes`, else streamed in chunks of `chunk_tokens` (resident_corpus_sizes).
struct CorpusSizes {
  uint64_t resident_max_bytes = 0;
  uint64_t chunk_tokens = 0;
};

/// Bytes of the training counters on the device (kernels/sgns.hpp's SgnsCounters, which the
/// CUDA build checks against this).
inline constexpr uint64_t kSgnsCounterBytes = 40;

/// What the backend allocates and how it trains.
struct GpuPlan {
  bool paged = false;
  uint64_t budget = 0;  ///< the budget planned with
  /// The training sizes: as given, or as the plan chose them (GpuPlanInput::choose_*).
  uint32_t negative_pool = 0, pool_blocks = 1, super_batch_blocks = 1;
  uint64_t hot_rows = 0;     ///< rows on the GPU for the whole run (all rows when resident)
  uint64_t cache_rows = 0;   ///< slots of the row cache (paged)
  uint64_t device_rows = 0;  ///< hot_rows + cache_rows: rows of every device table
  /// Work blocks per piece: the input's, or fewer for paged sgd (sgd_piece_words).
  uint32_t batch_blocks = 1;
  /// The largest piece in tokens, sentences and pool periods; sizes the per-piece buffers.
  uint64_t max_piece_tokens = 0, max_piece_sentences = 0, max_pools = 1;
  uint64_t max_list = 0;       ///< paged: the most distinct rows one piece can touch
  uint64_t keep_count = 0;     ///< words whose keep probability is below 1, and those before
  uint64_t scratch_bytes = 0;  ///< paged: scratch of the selects and the slot-order sort
  /// Paged sgd: pieces are cut on the host by their cold rows (PieceCutting).
  bool host_cuts = false;
  /// Paged sgd on a corpus in memory: the most cold rows that kPagedStages pieces of
  /// kSgdPieceFloorWords words in a row touch (their distinct ids at or above the hot rows a
  /// third of the rows for the cache leaves, counted, and their pool entries likely cold under
  /// the noise distribution); 0 when not counted (a streamed corpus, given cache rows).
  uint64_t piece_cold_rows = 0;
  /// Resident: device bytes of the tables and the samplers, as the backend allocates them
  /// (resident_table_bytes; the backend checks its own against it), and the corpus's sizes in
  /// what the budget leaves beside them (resident_corpus_sizes).
  uint64_t table_bytes = 0;
  CorpusSizes corpus;
};

/// Whether a cache of `cache_rows` slots would cut the plan's largest pieces short: their cold
/// rows (GpuPlan::piece_cold_rows) more than a quarter above the share of the slots one of the
/// three pieces that hold slots at once may take. Pieces so cut are then cut on the host
/// (GpuPlan::host_cuts) whatever the cache's size: cut on the device, each try of a piece costs
/// a dozen steps and a round trip whether it fits or not. Measured on one NVIDIA H200, 10 % of
/// the tables, bf16 (docs/notebook.md, "Paged tables"): the 2 M-word walks 67.6 → 79.4 M words/s,
/// Zipf 0.7 62.1 → 69.9 M; Zipf 1.0, whose pieces keep their size, was faster cut on the device
/// (111.0 against 106.7 M; fp32 110.5 against 97.2 M).
inline bool cache_cuts_pieces(uint64_t piece_cold_rows, uint64_t cache_rows) {
  return piece_cold_rows * 12 > cache_rows * 5;
}

/// Pieces in flight at once in the paged pipeline, each with its own buffers.
inline constexpr uint64_t kPagedStages = 4;

/// Paged sgd: a corpus whose pieces a cache of a third of the rows would cut below half this
/// many words gets a cache of kSgdCacheMostShare of the rows (plan_gpu), or of
/// kSgdCacheHostCutShare when that cache would be small enough for its pieces to be cut on the
/// host (kHostCutMaxSlots). Pieces collected on the device cost device time each, which bounds
/// such a run: on the 2 M-word walks at 10 % of the tables (bf16), shares of 0.75, 0.90, 0.95
/// and 0.98 gave 63.1, 63.9, 66.1 and 67.4 M words/s, fewer, larger pieces saving more than the
/// hot rows' hits (0.24 of the lookups at 0.75) save of the moves. Pieces cut on the host cost
/// little each, and there the hot rows matter more: mix5m at 16.2 MB, 100.3 M words/s with 0.75,
/// 83.0 M with 0.98 (docs/notebook.md, "Paged tables").
inline constexpr uint64_t kSgdPieceFloorWords = 65536;
inline constexpr double kSgdCacheMostShare = 0.98;
inline constexpr double kSgdCacheHostCutShare = 0.75;

/// Paged sgd with a cache of at most kHostCutMaxSlots slots, pieces cut on the host: a piece
/// takes about this many words per slot of the cache before its cold rows and those of the
/// pieces beside it fill the slots (mix5m at 30 % of its tables: 1.7 words a slot at 4048 slots
/// with pieces of at most 16,384 words), so the plan caps the pieces there
/// (host_cut_piece_blocks) instead of sizing every stage for pieces that never come: on one
/// NVIDIA H100, 2026-12-05, mix5m at 8.1 MB, pieces of at most 8192 words left 7754 rows on the
/// GPU (against 7288) and trained 0.0503 s an epoch against 0.053 (docs/design-kernels.md).
inline constexpr uint64_t kHostCutPieceWordsPerSlot = 2;

/// The work blocks a piece of such a cache of `cache_rows` slots is capped at: its words per
/// slot, in whole blocks, at least one.
inline uint64_t host_cut_piece_blocks(uint64_t cache_rows) {
  return std::max<uint64_t>(
      1, (kHostCutPieceWordsPerSlot * cache_rows + kBlockWords - 1) / kBlockWords);
}

/// Bytes of hierarchical softmax's tree of `words` words on the device: one link a node
/// (huffman_links), 2 · words − 1 of them, in a buffer of at least one.
inline uint64_t hs_tree_bytes(uint64_t words) {
  return (words > 0 ? 2 * words - 1 : 1) * sizeof(uint32_t);
}

/// Bytes of one row on the device in every table (input, output, optimizer state and, for the
/// dense optimizers, gradient rows, touched flags and step lists), a table's row taking
/// `table_row_bytes`; the first form for rows of `row_stride` floats.
uint64_t device_row_bytes(uint32_t row_stride, OptimizerKind kind);
uint64_t device_row_bytes_of(uint64_t table_row_bytes, OptimizerKind kind);

/// GPU memory resident tables need: every row, the subsampling table (at most a float a row),
/// the noise table's `noise_bytes`, a margin.
uint64_t resident_bytes(uint64_t rows, uint32_t row_stride, OptimizerKind kind,
                        uint64_t noise_bytes = 0);

/// What a paged budget keeps back for what the plan does not count (the gap of `gap_bytes`
/// between the tables, allocations rounded up, small buffers of the backend): a 32nd of it,
/// from 1 MiB to 16 MiB, so that a small budget keeps its rows (at 41 MB, 16 MiB held back cost
/// about two thirds of the rows it could hold), and at least the gap and 64 KiB, so that the
/// backend stays within the budget (an 8.1 MB budget once allocated 8.13 MB).
uint64_t paged_margin(uint64_t budget, uint64_t gap_bytes = kDefaultTableGap);

/// What a run leaves free of a device's `free_bytes` for what it does not count (the kernels'
/// own memory, staging, what CUDA allocates itself): a 20th of it, at least 256 MiB. The one
/// margin rule: the plan's budget and the partitioned tables over ranks (gpu/part_trainer.hpp)
/// both take it through gpu_budget.
uint64_t gpu_memory_margin(uint64_t free_bytes);

/// The budget: `requested` bytes when not 0, else what is free minus gpu_memory_margin (half
/// of what is free when that is less than the margin).
uint64_t gpu_budget(uint64_t requested, uint64_t free_bytes);

/// How resident tables hold the corpus in what the budget leaves beside the `allocated` bytes
/// of the tables and launch buffers: resident when it needs at most `resident_max_bytes` (given
/// > 0: that; else half of what is left), else streamed in chunks of `chunk_tokens`, fewer (a
/// 48th of what is left, at least 2^20) where two chunks' buffers, 24 bytes a token, would take
/// more than half of it, and at most `stage_tokens` (a streamed corpus's stage; 0 = no bound).
/// plan_gpu applies it to a resident plan (GpuPlan::corpus).
CorpusSizes resident_corpus_sizes(uint64_t budget, uint64_t allocated, uint64_t resident_max_bytes,
                                  uint64_t chunk_tokens, bool force_stream, uint64_t stage_tokens);

/// Device bytes of resident tables of `device_rows` rows and their samplers, as the CUDA backend
/// allocates them (gpu/device_tables.hpp's DeviceTables::bytes and gpu/sgns_launcher.hpp's
/// SgnsLauncher::bytes): the vectors (with the gap between them where the tables lie apart) and
/// each optimizer state, an optimizer's gradients, touched flags, step lists and the scratch of
/// its select (GpuDeviceFacts::scratch_bytes with no sort), `keep_count` subsampling
/// probabilities, the noise table's columns, the counters and hierarchical softmax's tree.
uint64_t resident_table_bytes(const GpuPlanInput& in, uint64_t device_rows, uint64_t keep_count,
                              const GpuDeviceFacts& device);

/// Whether the tables will be paged: the placement rule of plan_gpu, which needs only the
/// model's shape, so that the host tables can be allocated interleaved before the corpus is read.
bool plan_pages_tables(uint64_t rows, uint32_t row_stride, OptimizerKind kind, Placement placement,
                       uint64_t budget);

/// Bits of a slot-order key: every id, and `rows` for an empty slot.
uint32_t order_key_bits(uint64_t rows);

/// Blocks of 8 warps for the row moves of a paged piece of `tokens` words that brings `fresh`
/// rows of `entry_bytes` host bytes each (an id's row in every table): three on each of the
/// `paging_sms` multiprocessors training leaves to them, which fit beside it; when the piece
/// brings more than a row for every three words, four a multiprocessor for each row a word,
/// up to eight a multiprocessor and up to a third more than the blocks whose row rate reaches
/// the bytes the path carries. A block moves rows at about a fixed rate whatever their bytes
/// (the moves wait on host round trips): three blocks a multiprocessor move rows of
/// kMoveBoundRowBytes at the path's bound already, smaller rows below it (bf16 at dim 128, 0.72
/// rows a word, pieces cut on the host: 24 blocks 78.7 M words/s on the walks and 69.9 M on
/// Zipf 0.7, 32 blocks 85.0–85.5 M and 73.8 M, 48 blocks 81.5 M and 75.1 M). Blocks beyond the room
/// left run as training launches end, which delays the next launch, so pieces that bring few rows
/// keep to that room (docs/notebook.md, "Paged tables", has the measurements).
uint32_t piece_move_blocks(uint64_t fresh, uint64_t tokens, uint64_t entry_bytes,
                           uint32_t paging_sms);
inline constexpr uint64_t kMoveBoundRowBytes = 1024;

/// Device bytes of a plan with host_cuts that do not grow with its rows: the slot map, the
/// subsampling table, the stages (their lists sized by plan.max_list), the margin.
uint64_t host_cut_fixed_bytes(const GpuPlanInput& in, const GpuPlan& plan);

/// The plan. Paged tables: a negative pool of kAutoNegativePool when the run left it to the
/// plan, its period kAutoPoolWordsPerEntry words an entry; with an optimizer (whose
/// super-batches train whole), a cache that takes two super-batches' cold rows (a super-batch's
/// cold rows: its distinct token ids at or above the hot rows, counted, and its pool entries,
/// every one or, given the noise, those likely cold; one super-batch's with every entry; a
/// third of the rows when that holds them, else as many more as they need) and, when the run
/// left the
/// super-batch to the plan, the largest one, halving from the input's, whose two fit in two
/// thirds of the rows the budget holds (else the largest of which one fits). Throws Error when
/// resident tables are asked for and do not fit, when the budget is too small for paged tables
/// (or for a given super-batch's rows) or the device cannot page; UsageError when paged tables
/// are given no negative pool.
GpuPlan plan_gpu(const GpuPlanInput& in, const GpuDeviceFacts& device);

}  // namespace pagedw2v
