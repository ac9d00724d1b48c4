#include "gpu/paged_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/paging.hpp"

namespace pagedw2v {

namespace {

/// Words of a unit of the host's cuts (PieceCutInput::unit_blocks), or one super-batch when
/// that is longer: the pieces at a unit's start do not know the last ones of the unit before,
/// so longer units fit more pieces to the slots their predecessors leave, but a thread cuts a
/// unit whole (mix5m: ~50 M words a second) while the device trains twice as fast, so a span
/// waits for its first long unit; units double up to this from one super-batch.
constexpr uint64_t kCutUnitWords = uint64_t{1} << 17;

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
      // Without negatives (hierarchical softmax alone) no pool is drawn.
      pool_size_(data.params.negative > 0 ? data.params.negative_pool : 0),
      optimizer_(data.optimizer.kind != OptimizerKind::kSgd),
      compute_(compute),
      cache_(rows_, plan.hot_rows, plan.cache_rows, plan.max_list, plan.scratch_bytes,
             plan.host_cuts, compute.get()) {
  // Every table of an id: input, output, their state (and the inner nodes' and theirs).
  const uint64_t tables_per_id = (2 + 2 * state_tables(data.optimizer.kind)) *
                                 (needs_node_table(data.params.hs, data.params.negative) ? 3 : 2) /
                                 2;
  move_entry_bytes_ = uint64_t{data.params.dim} * tables.host_value_bytes() * tables_per_id;
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
    if (data.params.hs) {
      // Pieces cut on the host list no inner nodes: the plan cuts them on the device (gpu_plan).
      if (plan.host_cuts) throw Error("paged tables: --hs pieces are cut on the device");
      s.node_rows = DeviceBuffer<uint32_t>(rows_, "the inner-node rows of a piece");
      bytes_ += s.node_rows.bytes();
    }
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
    if (data_.params.hs) a.hs_node_rows = s.node_rows.data();
    if (data_.params.negative == 0) {
      a.pool = nullptr;
      a.pool_rows = nullptr;
      a.sentence_pool = nullptr;
    }
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
  const uint64_t row_bytes = uint64_t{data_.params.dim} * tables_.host_value_bytes() *
                             (2 + 2 * nstate) *
                             (needs_node_table(data_.params.hs, data_.params.negative) ? 3 : 2) / 2;
  report_.pcie_bytes = (report_.rows_from_host + c.to_host) * row_bytes + pcie_corpus_bytes_;
}

}  // namespace pagedw2v
