#include "gpu/paged_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v {

namespace {

/// How far behind the newest piece one may still be training: a cache slot is evicted only
/// once every piece up to kDepth behind the one that evicts it has trained
/// (kernels/paging.hpp). With two launches sharing the GPU each lasts about two pieces' time,
/// so a depth of 2 would make every row move wait for the launch just before it. With one
/// training stream (an optimizer, or serial runs) pieces train one after the other, and a depth
/// of 2 lets a piece's moves run while the piece before it trains: the cache then holds two
/// pieces' rows instead of three, which for an optimizer's whole super-batches decides whether
/// they overlap at all.
constexpr uint32_t kDepth = 3;
constexpr uint32_t kDepthOneStream = 2;

/// Words of a unit of the host's cuts (PieceCutInput::unit_blocks), or one super-batch when
/// that is longer: the pieces at a unit's start do not know the last ones of the unit before,
/// so longer units fit more pieces to the slots their predecessors leave, but a thread cuts a
/// unit whole (mix5m: ~50 M words a second) while the device trains twice as fast, so a span
/// waits for its first long unit; units double up to this from one super-batch.
constexpr uint64_t kCutUnitWords = uint64_t{1} << 17;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

PagedPipeline::PagedPipeline(const TrainData& data, const GpuPlan& plan,
                             const CudaBackendOptions& options, DeviceTables& tables,
                             SgnsLauncher& launcher, Stream& compute, CudaBackendReport& report)
    : data_(data),
      options_(options),
      tables_(tables),
      launcher_(launcher),
      report_(report),
      rows_(data.keep->words()),
      hot_(plan.hot_rows),
      batch_blocks_(plan.batch_blocks),
      pool_size_(data.params.negative_pool),
      optimizer_(data.optimizer.kind != OptimizerKind::kSgd),
      compute_(compute),
      cache_(rows_, plan.hot_rows, plan.cache_rows, plan.max_list, plan.scratch_bytes,
             plan.host_cuts, compute.get()) {
  move_entry_bytes_ = uint64_t{data.params.dim} * tables.host_value_bytes() *
                      (2 + 2 * state_tables(data.optimizer.kind));
  move_claims_ = DeviceBuffer<unsigned long long>(kMoveStreams, "the moves' claim counters");
  bytes_ = cache_.bytes() + move_claims_.bytes();
  const uint64_t max_list = plan.max_list, pool_entries = plan.max_pools * pool_size_;
  const uint64_t max_tokens = plan.max_piece_tokens;
  const uint64_t max_sentences = plan.max_piece_sentences;
  max_tokens_ = max_tokens;
  max_sentences_ = max_sentences;
  max_list_ = max_list;
  max_pool_entries_ = pool_entries;
  // A packed piece in 8-byte words: its starts, then four lists each padded to 16 bytes.
  const uint64_t packed_words =
      (max_sentences + 2) + (max_tokens + max_list + pool_entries + max_sentences + 4 * 3) / 2 + 2;
  for (Stage& s : stages_) {
    s.rows = DeviceBuffer<uint32_t>(max_tokens, "super-batch rows");
    s.fresh = DeviceBuffer<uint32_t>(max_list, "super-batch row lists");
    s.evicted = DeviceBuffer<uint32_t>(max_list, "super-batch row lists");
    s.fresh_rows = DeviceBuffer<uint32_t>(max_list, "super-batch row lists");
    s.pool_rows = DeviceBuffer<uint32_t>(pool_entries, "the negative pool rows");
    s.next_sentence = DeviceBuffer<unsigned long long>(1, "a work counter");
    bytes_ += s.rows.bytes() + s.fresh.bytes() * 3 + s.pool_rows.bytes();
    // The corpus is copied a piece at a time through pinned staging, so the copies are
    // asynchronous (the corpus itself stays pageable: registering part of a page of the heap
    // would make copies of its neighbours fail).
    if (plan.host_cuts) {
      s.packed = DeviceBuffer<uint64_t>(packed_words, "super-batch pieces");
      s.host_packed = PinnedBuffer<uint64_t>(packed_words, "super-batch pieces");
      bytes_ += s.packed.bytes();
      continue;
    }
    s.tokens = DeviceBuffer<uint32_t>(max_tokens, "super-batch tokens");
    s.starts = DeviceBuffer<uint64_t>(max_sentences + 1, "super-batch sentences");
    s.list = DeviceBuffer<uint32_t>(max_list, "super-batch row lists");
    s.pool = DeviceBuffer<uint32_t>(pool_entries, "the negative pools");
    s.sentence_pool = DeviceBuffer<uint32_t>(std::max<uint64_t>(max_sentences, 1), "pool numbers");
    s.counts = DeviceBuffer<uint32_t>(3, "row counts");
    s.host_tokens = PinnedBuffer<uint32_t>(max_tokens, "super-batch tokens");
    s.host_starts = PinnedBuffer<uint64_t>(max_sentences + 1, "super-batch sentences");
    s.host_sentence_pool =
        PinnedBuffer<uint32_t>(std::max<uint64_t>(max_sentences, 1), "pool numbers");
    s.d_starts = s.starts.data();
    s.d_tokens = s.tokens.data();
    s.d_list = s.list.data();
    s.d_pool = s.pool.data();
    s.d_sentence_pool = s.sentence_pool.data();
    bytes_ += s.tokens.bytes() + s.starts.bytes() + s.list.bytes() + s.pool.bytes() +
              s.sentence_pool.bytes() + s.counts.bytes();
  }
  host_counts_ = PinnedBuffer<uint32_t>(3, "row counts");
  if (plan.host_cuts) {
    PieceCutInput in;
    in.blocks = data.blocks;
    in.batch_blocks = static_cast<uint32_t>(batch_blocks_);
    in.unit_blocks = static_cast<uint32_t>(
        std::clamp<uint64_t>(kCutUnitWords / kBlockWords, batch_blocks_, UINT32_MAX / 2));
    in.pool_blocks = std::max<uint32_t>(1, data.params.pool_blocks);
    in.pool_size = pool_size_;
    in.seed = data.params.seed;
    in.noise = data.noise;
    in.rows = rows_;
    in.hot = hot_;
    // The pieces that may hold slots at once share them. A small cache (kHostCutMaxSlots: the
    // pieces then hold a few thousand words) counts them by the union of their cold rows, so
    // that a row several of them use holds one slot and each piece grows by what the others
    // already hold; one piece lists at most what a stage holds, and units grow from one
    // super-batch to kCutUnitWords. A large cache's pieces hold tens of thousands of words,
    // share few rows, and are cut to a third of the slots each (units of a super-batch), whose
    // cuts cost less (docs/notebook.md, "Paged tables").
    in.depth = two_training_streams() ? kDepth : kDepthOneStream;
    if (plan.cache_rows <= kHostCutMaxSlots) {
      in.slots = plan.cache_rows;
      in.share = std::max<uint64_t>(1, std::min<uint64_t>(max_list, plan.cache_rows));
    } else {
      in.slots = 0;
      in.share = std::max<uint64_t>(1, plan.cache_rows / in.depth);
      in.unit_blocks = in.batch_blocks;
    }
    in.max_tokens = max_tokens;
    in.max_sentences = max_sentences;
    in.max_periods = plan.max_pools;
    // A thread cuts a piece of a small cache in about the time the GPU trains it.
    const uint32_t threads =
        options.cut_threads > 0
            ? options.cut_threads
            : std::clamp<uint32_t>(std::thread::hardware_concurrency() / 4, 1, 4);
    cuts_ = std::make_unique<PieceCuts>(in, threads);
  }
  if (!options_.paging_trace.empty()) {
    // Refused now rather than at the first span's end.
    std::FILE* f = std::fopen(options_.paging_trace.c_str(), "a");
    if (f == nullptr) {
      throw Error("cannot open the paging trace " + options_.paging_trace + " for writing");
    }
    std::fclose(f);
  }
  tables_.pin_host();
}

uint64_t PagedPipeline::union_with_recent(const std::vector<uint32_t>& cold, uint64_t number,
                                          uint32_t back) {
  // At most their sizes together: then no merge is needed to know they fit.
  uint64_t sum = cold.size();
  for (uint64_t k = 1; k <= back && k <= number; ++k) {
    sum += recent_cold_[(number - k) % recent_cold_.size()].size();
  }
  if (sum <= cache_.slots()) return sum;
  // Merges of ascending lists.
  union_scratch_.assign(cold.begin(), cold.end());
  for (uint64_t k = 1; k <= back && k <= number; ++k) {
    const std::vector<uint32_t>& other = recent_cold_[(number - k) % recent_cold_.size()];
    union_merged_.clear();
    std::set_union(union_scratch_.begin(), union_scratch_.end(), other.begin(), other.end(),
                   std::back_inserter(union_merged_));
    union_scratch_.swap(union_merged_);
  }
  return union_scratch_.size();
}

cudaStream_t PagedPipeline::compute_of(uint64_t number) {
  return two_training_streams() && number % 2 == 1 ? compute2_.get() : compute_.get();
}

bool PagedPipeline::two_training_streams() const { return !optimizer_ && !options_.serial; }

MoveArgs PagedPipeline::moves(const uint32_t* host_rows, const uint32_t* dev_rows, uint32_t n,
                              uint32_t dev_base, MoveStream claim) {
  MoveArgs m = tables_.move_args(host_rows, dev_rows, n, dev_base);
  m.claim = move_claims_.data() + claim;
  return m;
}

void PagedPipeline::hot_rows_to_host() {
  // By the move kernel: pinned tables are registered slab by slab, and a copy-engine copy must
  // not span two registrations.
  launch_move_rows(MoveKind::kToHost,
                   moves(nullptr, nullptr, static_cast<uint32_t>(hot_), 0, kMoveOnCompute),
                   compute_.get());
  compute_.synchronize();
}

void PagedPipeline::reload_from_host() {
  launch_move_rows(MoveKind::kToDevice,
                   moves(nullptr, nullptr, static_cast<uint32_t>(hot_), 0, kMoveOnCompute),
                   compute_.get());
  compute_.synchronize();
  // Cached rows are stale now: the next piece reads every cold row from the host.
  cache_.invalidate(compute_.get());
}

void PagedPipeline::stage_tokens(Stage& s, uint64_t first, uint64_t end, cudaStream_t stream) {
  // The corpus may be a window of it (streamed): sentence s starts at starts[s], token p is
  // tokens[p]; both are copied to the stage's pinned buffers here, never read later.
  const uint64_t* starts = data_.corpus->sentence_starts.data() - data_.corpus->sentence_base;
  const uint32_t* tokens = data_.corpus->tokens.data() - data_.corpus->token_base;
  const uint64_t first_token = starts[first], end_token = starts[end];
  const uint64_t piece_tokens = end_token - first_token, piece_sentences = end - first;
  if (piece_tokens > s.host_tokens.size() || piece_sentences + 1 > s.host_starts.size()) {
    // Pieces are sized by the plan: for a streamed corpus, from the largest blocks there can be.
    throw Error("paged tables: a piece of " + std::to_string(piece_tokens) + " words in " +
                std::to_string(piece_sentences) + " sentences is larger than planned");
  }
  s.wait_host_copies();
  std::copy_n(tokens + first_token, piece_tokens, s.host_tokens.data());
  std::copy_n(starts + first, piece_sentences + 1, s.host_starts.data());
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.tokens.data(), s.host_tokens.data(), piece_tokens * 4,
                                    cudaMemcpyHostToDevice, stream));
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.starts.data(), s.host_starts.data(),
                                    (piece_sentences + 1) * 8, cudaMemcpyHostToDevice, stream));
  s.token_base = first_token;
  s.tokens_n = piece_tokens;
}

PagedPipeline::PieceTimes& PagedPipeline::next_piece_times() {
  if (piece_times_n_ == piece_times_.size()) piece_times_.emplace_back();
  return piece_times_[piece_times_n_++];
}

bool PagedPipeline::prepare(uint32_t epoch, uint64_t number) {
  if (cursor_ >= span_end_) return false;
  if (cuts_) return prepare_cut(number);
  const cudaStream_t st = prep_.get();
  Stage& s = stage_of(number);
  // The buffers of this stage were last used by number − kPagedStages.
  if (s.trained_recorded) PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(st, s.trained.get(), 0));
  const auto host_start = std::chrono::steady_clock::now();
  PieceTimes& times = next_piece_times();
  times.prep0.record(st);
  const auto& blocks = *data_.blocks;
  const uint64_t block = static_cast<uint64_t>(
      std::upper_bound(blocks.begin(), blocks.end(), cursor_) - blocks.begin() - 1);
  const uint64_t super_batch = block / batch_blocks_;
  const uint64_t batch_end_block =
      std::min<uint64_t>((super_batch + 1) * batch_blocks_, span_last_block_);
  // The piece is sentences [cursor_, piece_end): the rest of the super-batch, or less.
  uint64_t piece_end = std::min<uint64_t>(blocks[batch_end_block], span_end_);
  const uint64_t batch_end = piece_end;
  if (fit_sentences_ > 0) piece_end = std::min(piece_end, cursor_ + fit_sentences_);
  bool split = false;
  uint32_t depth = two_training_streams() ? kDepth : kDepthOneStream;
  uint32_t* counts = s.counts.data();
  uint32_t* host_counts = host_counts_.data();
  for (;;) {
    stage_tokens(s, cursor_, piece_end, st);
    const uint64_t piece_tokens = s.tokens_n, piece_sentences = piece_end - cursor_;
    cache_.mark_cold(s.tokens.data(), piece_tokens, st);
    launcher_.draw_pools(epoch, cursor_, piece_end, s, st);
    cache_.mark_cold(s.pool.data(), s.pools * pool_size_, st);
    cache_.find(s.list.data(), s.fresh.data(), counts, number, depth, st);
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(host_counts, counts, 12, cudaMemcpyDeviceToHost, st));
    const auto wait_start = std::chrono::steady_clock::now();
    prep_.synchronize();
    prepare_blocked_seconds_ += seconds_since(wait_start);
    const uint32_t cold_rows = host_counts[0], new_rows = host_counts[1];
    const uint32_t free_slots = host_counts[2];
    // The piece fits when its new rows find free slots.
    if (new_rows <= free_slots) {
      s.cold = cold_rows;
      s.fresh_n = new_rows;
      refs_ += piece_tokens + s.pools * pool_size_;
      // A piece that fit at the size of the last split with 15 % of the free slots to spare:
      // try a little more next time. One that filled more of them keeps its size, so that the
      // pieces settle just below the size that splits (a split aims at 90 %) instead of
      // growing into it again.
      if (!split && fit_sentences_ > 0 && piece_end < batch_end &&
          uint64_t{new_rows} * 20 <= uint64_t{free_slots} * 17) {
        fit_sentences_ += fit_sentences_ / 16 + 1;
      }
      pcie_corpus_bytes_ += piece_tokens * 4 + (piece_sentences + 1) * 8;
      break;
    }
    cache_.clear_marks(s.list.data(), cold_rows, st);
    // An optimizer steps once per piece, so its pieces are whole super-batches, as resident
    // training steps: one is never split. A piece that cannot be split (that, or a single
    // sentence) which the slots of the pieces still training leave no room for waits until
    // they have trained, and every slot but its own is free.
    if ((piece_sentences <= 1 || optimizer_) && depth > 1) {
      compute_.synchronize();
      compute2_.synchronize();
      depth = 1;
      ++report_.drains;
      continue;
    }
    const std::string room = std::to_string(free_slots) + " of " + std::to_string(cache_.slots()) +
                             " slots); raise --gpu-memory or lower ";
    if (optimizer_) {
      throw Error("paged tables with --optimizer " + to_string(data_.optimizer.kind) +
                  ": a super-batch touches " + std::to_string(cold_rows) +
                  " rows, more than the GPU row cache can take (" + room + "--batch-words");
    }
    if (piece_sentences <= 1) {
      throw Error("paged tables: one sentence and the negative pool touch " +
                  std::to_string(cold_rows) + " rows, more than the GPU row cache can take now (" +
                  room + "--negative-pool");
    }
    // Rows grow about linearly with the sentences at this size: aim at 90 % of what fits,
    // and start the next pieces at that size too.
    const double fit = 0.9 * double(free_slots) / std::max(1.0, double(new_rows));
    const uint64_t take = std::max<uint64_t>(
        1, std::min<uint64_t>(piece_sentences - 1, uint64_t(double(piece_sentences) * fit)));
    piece_end = cursor_ + take;
    fit_sentences_ = take;
    split = true;
    ++report_.splits;
  }
  s.number = number;
  s.first_sentence = cursor_;
  s.last_sentence = piece_end;
  s.super_batch = super_batch;
  cache_.take(s.fresh.data(), s.fresh_n, s.list.data(), s.cold, number, s.evicted.data(),
              s.fresh_rows.data(), st);
  cache_.map(s.tokens.data(), s.tokens_n, s.rows.data(), st);
  cache_.map(s.pool.data(), s.pools * pool_size_, s.pool_rows.data(), st);
  s.prepped.record(st);
  times.prep1.record(st);
  report_.rows_from_host += s.fresh_n;
  move_rows(s, number, depth, piece_end, times, host_start);
  return true;
}

bool PagedPipeline::prepare_cut(uint64_t number) {
  PieceCut cut;
  const auto wait_start = std::chrono::steady_clock::now();
  const double asked =
      std::chrono::duration<double, std::milli>(wait_start - span_host_start_).count();
  const bool more = cuts_->next(cut);
  prepare_cut_wait_seconds_ += seconds_since(wait_start);
  if (!more) return false;
  if (cut.first_sentence != cursor_ || cut.last_sentence > span_end_ ||
      cut.last_sentence <= cursor_) {
    throw Error("paged tables: the pieces cut on the host lost their place in the corpus");
  }
  const cudaStream_t st = prep_.get();
  Stage& s = stage_of(number);
  // The buffers of this stage were last used by number − kPagedStages.
  if (s.trained_recorded) PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(st, s.trained.get(), 0));
  const auto host_start = std::chrono::steady_clock::now();
  PieceTimes& times = next_piece_times();
  times.host_asked = asked;
  times.prep0.record(st);
  const auto& blocks = *data_.blocks;
  const uint64_t* starts = data_.corpus->sentence_starts.data() - data_.corpus->sentence_base;
  const uint32_t* tokens = data_.corpus->tokens.data() - data_.corpus->token_base;
  uint64_t block = static_cast<uint64_t>(std::upper_bound(blocks.begin(), blocks.end(), cursor_) -
                                         blocks.begin() - 1);
  const uint64_t piece_end = cut.last_sentence, sentences = piece_end - cursor_;
  const uint64_t first_token = starts[cursor_], tokens_n = starts[piece_end] - first_token;
  const uint64_t n = cut.cold.size(), pool_n = cut.pools.size();
  if (n > max_list_ || n > cache_.slots()) {
    throw Error("paged tables: one sentence and the negative pool touch " + std::to_string(n) +
                " rows, more than the GPU row cache can take (" + std::to_string(cache_.slots()) +
                " slots); raise --gpu-memory or lower --negative-pool");
  }
  if (tokens_n > max_tokens_ || sentences > max_sentences_ || pool_n > max_pool_entries_) {
    throw Error("paged tables: a piece of " + std::to_string(tokens_n) + " words in " +
                std::to_string(sentences) + " sentences is larger than planned");
  }
  // The pieces that may still hold slots (up to depth − 1 behind) and this one need at most
  // every slot together (the union of their cold rows: a row two of them use holds one slot).
  // Pieces are cut so within a unit; where the union with the pieces of the unit before does
  // not fit, the piece takes its slots once the piece two back has trained (its moves wait for
  // it, as the launch on its training stream does anyway), and only a piece after an
  // oversized sentence waits for every piece in flight to train.
  uint32_t depth = two_training_streams() ? kDepth : kDepthOneStream;
  while (depth > 1 && cut.fits_with + 1 < depth &&
         union_with_recent(cut.cold, number, depth - 1) > cache_.slots()) {
    if (--depth > 1) {
      ++report_.narrowed;
    } else {
      compute_.synchronize();
      compute2_.synchronize();
      ++report_.drains;
    }
  }
  // One copy: starts, tokens, cold rows, pools, each sentence's pool.
  const auto staged = std::chrono::steady_clock::now();
  s.wait_host_copies();
  prepare_blocked_seconds_ += seconds_since(staged);
  uint64_t* const h = s.host_packed.data();
  std::copy_n(starts + cursor_, sentences + 1, h);
  const uint64_t starts_words = (sentences + 2) & ~uint64_t{1};  // the lists 16-byte aligned
  uint32_t* const lists = reinterpret_cast<uint32_t*>(h + starts_words);
  const auto padded = [](uint64_t k) { return (k + 3) & ~uint64_t{3}; };
  const uint64_t at_list = padded(tokens_n), at_pool = at_list + padded(n);
  const uint64_t at_sentence_pool = at_pool + padded(pool_n);
  std::copy_n(tokens + first_token, tokens_n, lists);
  std::copy(cut.cold.begin(), cut.cold.end(), lists + at_list);
  recent_cold_[number % recent_cold_.size()] = std::move(cut.cold);
  std::copy(cut.pools.begin(), cut.pools.end(), lists + at_pool);
  const uint64_t pool_blocks = std::max<uint32_t>(1, data_.params.pool_blocks);
  for (uint64_t t = cursor_; t < piece_end; ++t) {
    while (block + 1 < blocks.size() && blocks[block + 1] <= t) ++block;
    lists[at_sentence_pool + (t - cursor_)] =
        static_cast<uint32_t>(block / pool_blocks - cut.first_period);
  }
  const uint64_t bytes = starts_words * 8 + (at_sentence_pool + sentences) * 4;
  PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(s.packed.data(), h, bytes, cudaMemcpyHostToDevice, st));
  s.host_copied.record(st);
  s.host_copy_recorded = true;
  const uint32_t* d = reinterpret_cast<const uint32_t*>(s.packed.data() + starts_words);
  s.d_starts = s.packed.data();
  s.d_tokens = d;
  s.d_list = d + at_list;
  s.d_pool = d + at_pool;
  s.d_sentence_pool = d + at_sentence_pool;
  s.pools = pool_size_ > 0 ? pool_n / pool_size_ : 0;
  s.token_base = first_token;
  s.tokens_n = tokens_n;
  s.number = number;
  s.first_sentence = cursor_;
  s.last_sentence = piece_end;
  s.super_batch = static_cast<uint64_t>(std::upper_bound(blocks.begin(), blocks.end(), cursor_) -
                                        blocks.begin() - 1) /
                  batch_blocks_;
  const uint64_t batch_end_block =
      std::min<uint64_t>((s.super_batch + 1) * batch_blocks_, span_last_block_);
  if (piece_end < std::min<uint64_t>(blocks[batch_end_block], span_end_)) ++report_.splits;
  s.cold = static_cast<uint32_t>(n);
  s.fresh_n = static_cast<uint32_t>(n);  // at most; the device counts them
  refs_ += tokens_n + pool_n;
  pcie_corpus_bytes_ += bytes;
  cache_.take_listed(s.d_list, static_cast<uint32_t>(n), number, depth, s.d_tokens, tokens_n,
                     s.rows.data(), s.d_pool, pool_n, s.pool_rows.data(), s.fresh.data(),
                     s.fresh_rows.data(), s.evicted.data(), st);
  s.prepped.record(st);
  times.prep1.record(st);
  move_rows(s, number, depth, piece_end, times, host_start);
  return true;
}

void PagedPipeline::move_rows(Stage& s, uint64_t number, uint32_t depth, uint64_t piece_end,
                              PieceTimes& times, std::chrono::steady_clock::time_point host_start) {
  // Move the rows on their own stream, once every piece that may have used the evicted slots
  // (up to number − depth, on either training stream) has trained: each evicted row goes back
  // as its slot's new row comes in.
  const cudaStream_t gs = gather_.get();
  PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(gs, s.prepped.get(), 0));
  for (uint64_t back = depth; back <= depth + 1; ++back) {
    if (number >= first_number_ + back) {
      PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(gs, stage_of(number - back).trained.get(), 0));
    }
  }
  MoveArgs swap = moves(s.fresh.data(), s.fresh_rows.data(), s.fresh_n, static_cast<uint32_t>(hot_),
                        kMoveOnGather);
  swap.out_rows = s.evicted.data();
  swap.max_blocks =
      options_.move_blocks > 0
          ? options_.move_blocks
          : piece_move_blocks(s.fresh_n, s.tokens_n, move_entry_bytes_, options_.paging_sms);
  times.move0.record(gs);
  launch_move_rows(MoveKind::kSwap, swap, gs);
  times.move1.record(gs);
  s.gathered.record(gs);
  times.host_prepared =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - span_host_start_)
          .count();
  times.words = s.tokens_n;
  times.fresh = s.fresh_n;
  prepare_host_seconds_ += seconds_since(host_start);
  cursor_ = piece_end;
  ++report_.super_batches;
  report_.cold_rows += s.cold;
}

void PagedPipeline::train_span(uint32_t epoch, uint64_t first_block, uint64_t last_block) {
  const auto& blocks = *data_.blocks;
  cursor_ = blocks[first_block];
  span_end_ = blocks[last_block];
  span_last_block_ = last_block;
  first_number_ = next_number_;
  for (Stage& s : stages_) s.trained_recorded = false;
  piece_times_n_ = 0;
  harvested_ = 0;
  busy_.clear();
  span_kernel_seconds_ = span_prep_seconds_ = span_move_seconds_ = 0;
  span_host_start_ = std::chrono::steady_clock::now();
  span_start_.record(compute_.get());
  if (cuts_) {
    cuts_->start(epoch, first_block, last_block,
                 data_.corpus->tokens.data() - data_.corpus->token_base,
                 data_.corpus->sentence_starts.data() - data_.corpus->sentence_base);
    // The span likely to come next (the trainer's spans are of one length, cut at the epoch's
    // end), cut while this one trains so that its first pieces are ready when it starts: a
    // corpus in memory only, whose tokens stay where they are.
    const uint64_t nblocks = blocks.size() - 1;
    span_blocks_ = std::max(span_blocks_, last_block - first_block);
    if (options_.cut_ahead && !data_.streamed && span_blocks_ > 0) {
      if (last_block < nblocks) {
        cuts_->expect(epoch, last_block, std::min(nblocks, last_block + span_blocks_));
      } else if (epoch + 1 < data_.params.epochs) {
        cuts_->expect(epoch + 1, 0, std::min(nblocks, span_blocks_));
      }
    }
  }
  // The cutting threads read the span's corpus: they stop before it may change.
  struct EndCuts {
    PieceCuts* cuts;
    ~EndCuts() {
      if (cuts != nullptr) cuts->end();
    }
  } end_cuts{cuts_.get()};
  uint64_t n = first_number_;
  for (bool more = prepare(epoch, n); more; more = prepare(epoch, ++n)) {
    Stage& s = stage_of(n);
    const cudaStream_t cs = compute_of(n);
    PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(cs, s.gathered.get(), 0));
    if (options_.ordered && n > first_number_) {
      PAGEDW2V_CUDA_TRY(cudaStreamWaitEvent(cs, stage_of(n - 1).trained.get(), 0));
    }
    SgnsArgs a = launcher_.base_args(epoch);
    a.tokens = s.d_tokens;
    a.token_rows = s.rows.data();
    a.token_base = s.token_base;
    a.sentence_starts = s.d_starts;
    a.sentences = s.last_sentence - s.first_sentence;
    a.token_count = s.tokens_n;
    a.pool = s.d_pool;
    a.pool_rows = s.pool_rows.data();
    a.pool_size = pool_size_;
    a.sentence_pool = s.d_sentence_pool;
    a.reserved_sms = options_.paging_sms;
    a.next_sentence = s.next_sentence.data();
    launcher_.train_piece(a, epoch, s.super_batch, s.token_base, cs);
    s.trained.record(cs);
    s.trained_recorded = true;
    if (!options_.paging_trace.empty() && n - first_number_ < piece_times_n_) {
      piece_times_[n - first_number_].host_launched =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                    span_host_start_)
              .count();
    }
    harvest_times(false);
  }
  next_number_ = n;
  span_host_marks_[0] = host_ms();
  // Flush: every cached row a piece of this span may have changed goes back to the host, so
  // that checkpoints and exports read current tables; the rows stay cached.
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  span_host_marks_[1] = host_ms();
  if (cuts_ && cache_.counters().failures > 0) {
    throw Error("paged tables: a piece cut on the host found no room in the GPU row cache");
  }
  if (next_number_ > first_number_) {
    const cudaStream_t st = prep_.get();
    cache_.flush(moves(nullptr, nullptr, 0, static_cast<uint32_t>(hot_), kMoveOnPrep),
                 first_number_, st);
    prep_.synchronize();
    // 16-bit storage, sgd: evictions round rows, so the next span starts from an empty cache,
    // as a resumed run does, for the same bits (optimizer steps round every row they change).
    if (tables_.host_storage() != Storage::kFp32 && !optimizer_) cache_.invalidate(st);
  }
  span_host_marks_[2] = host_ms();
}

void PagedPipeline::write_trace() {
  std::FILE* f = std::fopen(options_.paging_trace.c_str(), "a");
  if (f == nullptr) {
    throw Error("cannot open the paging trace " + options_.paging_trace + " for writing");
  }
  if (spans_ == 0) {
    std::fprintf(f,
                 "# span piece words fresh_rows | device ms since the span began: prep0 prep1 "
                 "move0 move1 train0 train1 | host ms: asked prepared launched\n");
  }
  std::fprintf(f,
               "# span %llu host ms: last launch %.4f, idle %.4f, written back %.4f, report %.4f\n",
               static_cast<unsigned long long>(spans_), span_host_marks_[0], span_host_marks_[1],
               span_host_marks_[2], span_host_marks_[3]);
  for (size_t k = 0; k < harvested_; ++k) {
    const PieceTimes& t = piece_times_[k];
    const double prep0 = t.prep0.elapsed_ms_since(span_start_);
    const double move0 = t.move0.elapsed_ms_since(span_start_);
    std::fprintf(f, "%llu %zu %llu %llu | %.4f %.4f %.4f %.4f %.4f %.4f | %.4f %.4f %.4f\n",
                 static_cast<unsigned long long>(spans_), k,
                 static_cast<unsigned long long>(t.words), static_cast<unsigned long long>(t.fresh),
                 prep0, prep0 + t.prep_ms, move0, move0 + t.move_ms, t.train0, t.train1,
                 t.host_asked, t.host_prepared, t.host_launched);
  }
  std::fclose(f);
}

void PagedPipeline::harvest_times(bool all) {
  const size_t n = std::min(piece_times_n_, launcher_.launches());
  for (; harvested_ < n; ++harvested_) {
    const auto& launch = launcher_.timing(harvested_);
    if (!all) {
      // Its launch's end, and with it the piece's collection and moves, which came before.
      const cudaError_t e = cudaEventQuery(launch.second.get());
      if (e == cudaErrorNotReady) break;
      PAGEDW2V_CUDA_TRY(e);
    }
    PieceTimes& t = piece_times_[harvested_];
    t.train0 = launch.first.elapsed_ms_since(span_start_);
    t.train1 = launch.second.elapsed_ms_since(span_start_);
    t.prep_ms = t.prep1.elapsed_ms_since(t.prep0);
    t.move_ms = t.move1.elapsed_ms_since(t.move0);
    busy_.emplace_back(t.train0, t.train1);
    span_kernel_seconds_ += (t.train1 - t.train0) * 1e-3;
    span_prep_seconds_ += t.prep_ms * 1e-3;
    span_move_seconds_ += t.move_ms * 1e-3;
  }
}

void PagedPipeline::report_span() {
  span_host_marks_[3] = host_ms();
  harvest_times(true);
  std::vector<std::pair<double, double>>& busy = busy_;
  std::sort(busy.begin(), busy.end());
  double covered = 0, end = -1e300;
  for (const auto& [a, b] : busy) {
    if (a > end) {
      covered += b - a;
      end = b;
    } else if (b > end) {
      covered += b - end;
      end = b;
    }
  }
  report_.kernel_busy_seconds += covered * 1e-3;
  report_.prep_seconds += span_prep_seconds_;
  report_.move_seconds += span_move_seconds_;
  if (!options_.paging_trace.empty()) write_trace();
  ++spans_;
  piece_times_n_ = 0;
  report_.prepare_host_seconds = prepare_host_seconds_;
  report_.prepare_blocked_seconds = prepare_blocked_seconds_;
  report_.prepare_cut_wait_seconds = prepare_cut_wait_seconds_;

  const PagingCounters c = cache_.counters();
  report_.row_lookups = refs_;
  report_.cold_lookups = c.refs_cold;
  report_.rows_to_host = c.to_host;
  if (cuts_) report_.rows_from_host = c.fresh;
  const uint32_t nstate = state_tables(data_.optimizer.kind);
  const uint64_t row_bytes =
      uint64_t{data_.params.dim} * tables_.host_value_bytes() * (2 + 2 * nstate);
  report_.pcie_bytes = (report_.rows_from_host + c.to_host) * row_bytes + pcie_corpus_bytes_;
}

}  // namespace pagedw2v
