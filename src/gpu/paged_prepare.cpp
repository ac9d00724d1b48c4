/// @file paged_prepare.cpp
/// The paged pipeline's preparation of a piece (PagedPipeline, paged_pipeline.hpp): its tokens
/// staged, its cold rows found in the cache on the device a try at a time (prepare) or taken as
/// the host cut them (prepare_cut), and the row moves that bring them in. The ring, the span's
/// loop and the report stay in paged_pipeline.cpp.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "base/error.hpp"
#include "base/seconds_since.hpp"
#include "gpu/paged_pipeline.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v {

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
    if (data_.params.hs) {
      cache_.mark_cold_paths(s.tokens.data(), piece_tokens, launcher_.hs_word_links(),
                             launcher_.hs_node_links(), st);
    }
    // Without negatives (hierarchical softmax alone) no pool is drawn: its rows would only
    // take slots.
    s.pools = 0;
    if (data_.params.negative > 0) {
      launcher_.draw_pools(epoch, cursor_, piece_end, s, st);
      cache_.mark_cold(s.pool.data(), s.pools * pool_size_, st);
    }
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
  if (data_.params.hs) {
    cache_.map_paths(s.tokens.data(), s.tokens_n, launcher_.hs_word_links(),
                     launcher_.hs_node_links(), s.node_rows.data(), st);
  }
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
}  // namespace pagedw2v
