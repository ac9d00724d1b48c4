#pragma once
/// @file sgns.hpp
/// Host launcher of the fused negative-sampling training kernels (skip-gram and CBOW): one
/// launch trains a range of sentences — subsampling, dynamic window, negative draws, forward,
/// backward and the SGD update of both tables — with the same draws and arithmetic as the CPU
/// reference (backend/cpu/sgns_cpu.hpp, backend/cpu/cpu_backend.cpp). A warp trains one sentence in
/// the CPU's order, so a sentence alone gives the CPU's result; sentences run concurrently and add
/// their changes to the tables atomically (no update is lost, reads may be stale: Hogwild).
///
/// Ids and rows: a token's id (its vocabulary index) decides its subsampling (keep[id]), keys
/// every Philox draw (with its corpus position) and is what a negative is compared with to skip
/// the centre; its row is where its vectors are in the tables. Without row maps the row is the
/// id (resident tables); paged tables pass token_rows and pool_rows, and the result is then the
/// same as by id, bit for bit, with the rows moved (what a single-warp launch shows).
///
/// Two modes:
/// - SGD (input_grad null): word2vec's per-example update of both tables with the schedule's
///   learning rate, as train_sentence_cpu does.
/// - Gradient (input_grad set): the tables are only read. Each example adds the gradient of its
///   loss, with no learning rate, exactly what the CPU's batched pass accumulates
///   (backend/cpu/cpu_backend.cpp, accumulate_gradients_cpu): for each target t of label y,
///   s = σ(h·out[t]) − y (σ clipped at ±6), out[t]'s gradient gains s·h and h's gains s·out[t];
///   a skip-gram context row receives h's gradient, a CBOW context row h's gradient divided by the
///   number of context rows. All of a launch's examples see the tables as they were (the skip-gram
///   centre row too: its gradient over the window is summed apart and added once). Gradients go
///   to the same row of input_grad / output_grad (adding to what is there), and touched_input /
///   touched_output[row] is set to 1 for every row that receives one (a zero gradient counts; a
///   negative skipped for equalling the centre does not); flags are never cleared here.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "model/params.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {

/// Device-side counters of one training span. `next_sentence` hands out work inside a launch
/// (unless SgnsArgs::next_sentence names another) and is reset by every launch; the statistics
/// accumulate until the caller zeroes them.
struct SgnsCounters {
  unsigned long long next_sentence;
  unsigned long long words;
  unsigned long long trained;
  unsigned long long loss_terms;
  double loss;
};

/// Everything one launch reads. All pointers are device pointers.
struct SgnsArgs {
  ModelKind model = ModelKind::kSkipGram;
  /// Skip-gram's window update (TrainParams::kernel). kSharedNegatives: one set of negatives per
  /// centre (DrawKind::kWindowNegative), the window's output rows read once and their summed
  /// change added once (the CPU's shared_window_update / shared_window_gradient); needs
  /// skip-gram and whole tables (parts 0 or 1).
  SgnsKernel kernel = SgnsKernel::kPerPair;
  float* input = nullptr;   ///< row r at input + r · pitch, padded with zeros from dim to stride
  float* output = nullptr;  ///< row r at output + r · pitch
  uint32_t stride = 0;      ///< floats per row on the device: sgns_row_stride(dim)
  /// Floats from one row to the next in every table, gradients included (≥ stride; 0: stride).
  /// Interleaved tables (gpu/device_tables.hpp) put a word's output row right after its input
  /// row: pitch 2 · stride, output = input + stride.
  uint32_t pitch = 0;
  uint32_t vocab = 0;
  const uint32_t* tokens = nullptr;  ///< tokens[p − token_base] is corpus token p
  uint64_t token_base = 0;
  const uint64_t* sentence_starts = nullptr;  ///< sentences + 1 global token positions
  uint64_t sentences = 0;
  const float* keep = nullptr;  ///< keep probability of words 0 … keep_count − 1
  /// Words from keep_count on are always kept (their keep probability is at least 1), so the
  /// table need not hold the vocabulary's long tail.
  uint32_t keep_count = 0xFFFFFFFFu;
  const NoiseColumn* noise = nullptr;  ///< the noise table's columns (sampler.hpp)
  uint32_t noise_columns = 0;          ///< how many
  uint64_t seed = 1;
  uint32_t epoch = 0;
  uint32_t window = 5;
  uint32_t negative = 5;
  LrSchedule schedule;
  uint64_t epoch_base = 0;  ///< epoch × words_per_epoch: the schedule's position of token 0
  SgnsCounters* counters = nullptr;
  /// The counter that hands out this launch's sentences (reset by the launch); nullptr:
  /// counters->next_sentence. Launches that may run at once need counters of their own.
  unsigned long long* next_sentence = nullptr;

  /// Paged tables: the table row of token p is token_rows[p − token_base] (the tables hold a
  /// subset of the vocabulary, see gpu/cuda_backend.cpp); nullptr: the row is the token's id.
  const uint32_t* token_rows = nullptr;
  /// Negative pool (TrainParams::negative_pool, negative_pool.hpp): when not null, the
  /// negatives are picks from pool[0 … pool_size) (ids; launch_draw_pool draws a super-batch's
  /// pool) on the per-example Philox counters, instead of alias draws from `noise`. Without a
  /// pool a negative's row is its id, so row maps need a pool.
  const uint32_t* pool = nullptr;
  uint32_t pool_size = 0;
  /// The table row of pool[k]; nullptr: the row is the id.
  const uint32_t* pool_rows = nullptr;
  /// A launch that spans several pool periods (TrainParams::pool_blocks): `pool` and `pool_rows`
  /// hold their pools one after the other, pool_size entries each, and sentence s of the launch
  /// draws from pool number sentence_pool[s]. nullptr: every sentence uses the first.
  const uint32_t* sentence_pool = nullptr;

  /// Partitioned tables (skip-gram sgd, no pool and no row maps): the input table holds the
  /// words id % parts == input_part and the output table those of output_part, each word at row
  /// id / parts (a rank of a run over GPUs, dist/part_backend.hpp). Only the pairs whose context
  /// is in the input part and whose centre is in the output part train, and the negatives are
  /// drawn from `noise` as the output part's table (NoiseTable::part: a draw is the local row j
  /// of id output_part + j·parts). The counters count words and centres only when input_part ==
  /// output_part (a centre counts when it is in the part), so that the N·N launches of a span
  /// over N ranks count each once. 0 or 1: whole tables.
  uint32_t parts = 0;
  uint32_t input_part = 0;
  uint32_t output_part = 0;

  /// Gradient mode (see above), for the non-sgd optimizers: when not null, the tables are only
  /// read and gradients are added to these rows × stride tables (padding stays as it is);
  /// touched_input and touched_output (one byte per row) must then be set too.
  float* input_grad = nullptr;
  float* output_grad = nullptr;
  uint8_t* touched_input = nullptr;
  uint8_t* touched_output = nullptr;

  /// Hierarchical softmax (TrainParams::hs, model/huffman.hpp's HuffmanTree): when hs_word_links
  /// is set, every example first trains its input vector against the inner nodes of the centre
  /// word's path, root first (hs_cpu.hpp's arithmetic: a node with |h·node| ≥ 6 is skipped),
  /// then against the centre and its negatives when `negative` > 0, both into one error of the
  /// input rows. Inner-node row r of the tree is row r of `hs_nodes` (pitch `pitch`), or row
  /// hs_node_rows[r] when that is set (paged tables: the rows the launch's paths reach, mapped
  /// by the paged pipeline). `hs_nodes` is `output` with --negative 0 (the nodes are its rows,
  /// model.hpp), a table of its own beside negative sampling. The tree is huffman_links' array:
  /// word w's link (its parent's row and its code) is hs_word_links[w], inner-node row r's
  /// hs_node_links[r]; a path is walked up from the word's link to kHuffmanRootLink.
  const uint32_t* hs_word_links = nullptr;
  const uint32_t* hs_node_links = nullptr;
  float* hs_nodes = nullptr;
  /// Gradient mode: the inner nodes' gradient rows and touched flags (output_grad and
  /// touched_output when the nodes are output rows).
  float* hs_nodes_grad = nullptr;
  uint8_t* touched_nodes = nullptr;
  const uint32_t* hs_node_rows = nullptr;
  /// SGD: the inner nodes' steps are damped as for this many warps in flight (kHsDampLaunchWarps
  /// in model/params.hpp: the launch's own warps); 0: word2vec's steps, which single-warp launches
  /// keep (deterministic runs compare their bytes). Gradient mode ignores it.
  uint32_t hs_damp_warps = 0;

  /// At most this many warps train (0: fill the GPU). 1: one block of one warp trains the
  /// sentences strictly in order, so a launch is deterministic (no races, atomics in a fixed
  /// order) and follows the CPU reference run over the same sentences in order: what the
  /// paged-versus-resident equivalence test runs.
  uint32_t max_warps = 0;
  /// Multiprocessors the launch leaves free for kernels on other streams (paged tables: the
  /// row gathers and scatters of the neighbouring super-batches).
  uint32_t reserved_sms = 0;

  /// Work items (a warp takes one at a time): runs of this many consecutive positions of the
  /// launch, cut at sentence ends, each centre's window still reaching over its whole sentence;
  /// kSentenceItems, or 0 without token_count: a sentence each. In a single-warp launch the
  /// trained values do not depend on it (the parts of a sentence train in order); with many
  /// warps the parts of one sentence train at once (Hogwild, as word2vec's threads, which
  /// start anywhere in the file). Warps take the items in the launch's order, so the warps in
  /// flight train neighbouring text, as one of word2vec's threads does: with a sentence (a
  /// whole document of mix5m) per warp, or the items spread over the launch, the vectors lean
  /// to relatedness, 0.020 lower on SimLex-999 than the CPU backend (docs/notebook.md, "Word
  /// similarity").
  uint32_t item_tokens = 0;
  /// Tokens of the launch's sentences (sentence_starts[sentences] − sentence_starts[0]); when
  /// set and item_tokens is 0, the launch sizes its items with sgns_item_tokens.
  uint64_t token_count = 0;
};

/// SgnsArgs::item_tokens: a sentence per work item.
inline constexpr uint32_t kSentenceItems = 0xFFFFFFFFu;

/// Work items per warp that the launch aims at, and the bounds of their size in tokens: a warp
/// trains its item in order, so a launch lasts at least as long as its longest item, and with
/// sentences as items a short launch (a paged piece) lasts as long as its longest sentence
/// (docs/design-kernels.md, "Work items").
inline constexpr uint64_t kItemsPerWarp = 16;
inline constexpr uint32_t kMinItemTokens = 16;
inline constexpr uint32_t kMaxItemTokens = 4096;
/// A launch too small to give every warp one item of kMinItemTokens (a paged piece of a few
/// thousand to a few tens of thousands of words) takes items of about 5/3 tokens a resident warp,
/// at least kSmallLaunchItemTokens: each of the two launches in flight (the paged pipeline's
/// training streams) then has items for three fifths of the warps, and its items are as long as
/// that allows, since a shorter item adds the scan back to a full window before it (below 4
/// tokens that costs more than the shorter tail saves). Larger launches keep kMinItemTokens
/// (docs/design-kernels.md, "Work items").
inline constexpr uint32_t kSmallLaunchItemTokens = 4;
struct TokensPerWarp {
  uint64_t num, den;
};
inline constexpr TokensPerWarp kSmallLaunchTokensPerWarp{5, 3};

/// The item size for a launch of `tokens` tokens on `warps` resident warps: when tokens < warps ×
/// kMinItemTokens, tokens × kSmallLaunchTokensPerWarp / warps within [kSmallLaunchItemTokens,
/// kMinItemTokens]; else the largest power of two in [kMinItemTokens, kMaxItemTokens] that gives
/// each warp kItemsPerWarp items or more.
uint32_t sgns_item_tokens(uint64_t tokens, uint64_t warps);

/// Row length on the device for `dim`: sgns_row_stride (model/params.hpp).

/// The largest dimension the kernels keep in registers (32 lanes × 8 float4).
inline constexpr uint32_t kSgnsMaxDim = 1024;

/// Throws UsageError when the kernels cannot run this shape (dim, window, negative too large);
/// `kernel` says whether a window's output rows are held in shared memory too.
void check_sgns_shape(uint32_t dim, uint32_t window, uint32_t negative,
                      SgnsKernel kernel = SgnsKernel::kPerPair);

/// Trains args.sentences sentences on `stream` (asynchronous). Throws Error on a launch failure.
void launch_sgns(const SgnsArgs& args, cudaStream_t stream);

}  // namespace pagedw2v
