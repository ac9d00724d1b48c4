#include "dist/sharded_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"
#include "config/config.hpp"
#include "dist/needed_rows.hpp"
#include "dist/owned_rows.hpp"
#include "dist/owner_steps.hpp"
#include "dist/replica_backend.hpp"
#include "dist/row_exchange.hpp"
#include "dist/row_owners.hpp"
#include "dist/working_set.hpp"
#ifdef PAGEDW2V_HAVE_CUDA
#include "dist/gpu_replica_backend.hpp"
#include "dist/part_backend.hpp"
#include "gpu/row_set_trainer.hpp"
#endif

namespace pagedw2v::dist {
namespace {

/// The vocabulary's size.
uint64_t words_of(const TrainData& data) { return data.keep->words(); }

class RankBackend final : public ShardedBackend {
 public:
  RankBackend(MpiComm& comm, Model& model, const TrainData& data, uint32_t threads,
              const GpuGrant* gpu, bool single_warp, std::atomic<int>& agreed_stop,
              const std::atomic<int>* stop)
      : comm_(comm),
        model_(model),
        data_(data),
        threads_(threads),
        owned_{&model, comm.size()},
        need_(words_of(data)),
        work_(owned_, RowOwners{comm.size()}, comm.rank(), words_of(data), data.params.dim),
        exchange_(comm, data.params.dim),
        agreed_stop_(agreed_stop),
        stop_(stop) {
    const uint64_t words = words_of(data);
    if (words >= 0x80000000u) throw Error("distributed training takes at most 2^31 - 1 words");
    if (words < comm.size()) {
      throw UsageError("a vocabulary of " + std::to_string(words) + " words cannot be shared by " +
                       std::to_string(comm.size()) + " ranks; run fewer ranks");
    }
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_refusal(model.input.storage(), StorageRefusal::kOverRanks));
    }
    const uint64_t expected = RowOwners{comm.size()}.owned(words, comm.rank());
    if (model.input.rows() != expected || model.output.rows() != expected) {
      throw Error("rank " + std::to_string(comm.rank()) + " holds " +
                  std::to_string(model.input.rows()) + " rows, not the " +
                  std::to_string(expected) + " it owns");
    }
    (void)single_warp;  // one warp per launch: the GPU's; the CPU's threads are `threads`
    if (gpu) {
#ifdef PAGEDW2V_HAVE_CUDA
      gpu_.emplace(data, single_warp, *gpu);
      row_of_.assign(words, WorkingSet::kNoSlot);
#else
      throw UsageError("--device cuda: this build has no CUDA backend (use --device cpu)");
#endif
    } else if (data.optimizer.kind != OptimizerKind::kSgd) {
      steps_.emplace(comm, data.params.dim);
    } else {
      cpu_ = make_cpu_backend(model, data, threads, &work_.rows());
    }
  }

  std::string name() const override { return on_gpu() ? "cuda" : "cpu"; }
  std::string describe() const override {
#ifdef PAGEDW2V_HAVE_CUDA
    if (gpu_) {
      return "cuda on " + gpu_->device_name() + ", " + std::to_string(comm_.size()) +
             " ranks (rank r owns rows id % " + std::to_string(comm_.size()) +
             " == r), each span's rows trained on the rank's GPU, rows exchanged every " +
             std::to_string(rank_span_words()) + " words per rank";
    }
#endif
    return "cpu, " + std::to_string(comm_.size()) + " ranks (rank r owns rows id % " +
           std::to_string(comm_.size()) + " == r), " + std::to_string(steps_ ? 1 : threads_) +
           (steps_ ? " thread per rank (the owners apply the optimizer steps)"
                   : " threads per rank") +
           ", rows exchanged every " + std::to_string(rank_span_words()) + " words per rank" +
           too_short_to_replicate();
  }
  uint64_t span_words() const override { return rank_span_words() * comm_.size(); }

  /// Why sgd over a small vocabulary is sharded (replica_span.hpp): its run is too short for
  /// replicated tables; else empty.
  std::string too_short_to_replicate() const {
    const uint64_t words = words_of(data_);
    if (steps_ || words > kReplicaMostRows) return {};
    const uint64_t spans =
        replica_run_spans(data_, comm_.size(), replica_span_words(words, threads_));
    if (spans >= kReplicaLeastSpans) return {};
    return "; the run's " + std::to_string(spans) + " spans are too few for replicated tables (" +
           std::to_string(kReplicaLeastSpans) + "; --rank-tables replicated asks for them)";
  }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    comm_.training_started();
    const BlockRange mine = share_of_span(first_block, last_block, comm_.rank(), comm_.size());
    need_.collect(data_, epoch, mine.first, mine.last);
    work_.assign(need_);
    peak_working_rows_ = std::max(peak_working_rows_, work_.capacity());
    exchange_.fetch(owned_, work_, need_);
    SpanStats s;
    if (steps_) {
      s = steps_->train(data_, owned_, work_, epoch, mine);
#ifdef PAGEDW2V_HAVE_CUDA
    } else if (on_gpu()) {
      if (mine.first < mine.last) s = train_on_gpu(epoch, mine);
      exchange_.return_deltas(owned_, work_);
#endif
    } else {
      if (mine.first < mine.last) s = cpu_->train(epoch, mine.first, mine.last);
      exchange_.return_deltas(owned_, work_);
    }
    return end_span(comm_, s, agreed_stop_, stop_);
  }

  // Every rank's model is its owned rows, trained in place: the checkpoints and the export gather
  // them block by block (Ranks::gather_rows). Every rank starts from its rows of the same tables
  // (initialised alike, or loaded from one checkpoint).
  void sync_to_host() override {}
  void sync_from_host() override {}

  uint64_t table_rows() const override { return model_.input.rows(); }
  uint64_t peak_working_rows() const override { return peak_working_rows_; }

 private:
  uint64_t rank_span_words() const {
    if (on_gpu()) return gpu_rank_span_words(words_of(data_));
    return steps_ ? kRankSpanWords : std::max<uint64_t>(kRankSpanWords, threads_ * kBlockWords);
  }

  bool on_gpu() const {
#ifdef PAGEDW2V_HAVE_CUDA
    return gpu_.has_value();
#else
    return false;
#endif
  }

#ifdef PAGEDW2V_HAVE_CUDA
  /// Lays the share's rows out as one compact pair of tables (row k: the k-th word that got a
  /// slot), trains them on the GPU, and puts them back where the working set keeps them: the
  /// rank's own rows in place, the others' in the copy rows whose deltas go back to the owners.
  SpanStats train_on_gpu(uint32_t epoch, BlockRange mine) {
    const std::vector<uint32_t>& words = work_.words();
    const uint32_t dim = data_.params.dim;
    const size_t n = words.size();
    if (set_input_.size() < n * dim) {
      set_input_.resize(n * dim + n * dim / 4);
      set_output_.resize(set_input_.size());
    }
    for (size_t k = 0; k < n; ++k) {
      const uint32_t id = words[k];
      row_of_[id] = static_cast<uint32_t>(k);
      std::copy_n(work_.input(id), dim, set_input_.data() + k * dim);
      std::copy_n(work_.output(id), dim, set_output_.data() + k * dim);
    }
    const SpanStats s = gpu_->train(epoch, mine.first, mine.last, row_of_.data(), set_input_.data(),
                                    set_output_.data(), n);
    for (size_t k = 0; k < n; ++k) {
      const uint32_t id = words[k];
      std::copy_n(set_input_.data() + k * dim, dim, work_.input(id));
      std::copy_n(set_output_.data() + k * dim, dim, work_.output(id));
      row_of_[id] = WorkingSet::kNoSlot;
    }
    return s;
  }
#endif

  MpiComm& comm_;
  Model& model_;
  const TrainData& data_;
  uint32_t threads_;
  OwnedRows owned_;
  NeededRows need_;
  WorkingSet work_;
  std::unique_ptr<Backend> cpu_;  ///< sgd: trains the rows work_ lays out
  RowExchange exchange_;
  uint64_t peak_working_rows_ = 0;
  std::optional<OwnerSteps> steps_;  ///< optimizers other than sgd
#ifdef PAGEDW2V_HAVE_CUDA
  std::optional<RowSetTrainer> gpu_;           ///< --device cuda: trains each share on the GPU
  std::vector<uint32_t> row_of_;               ///< word → row of the span's compact tables (gpu_)
  std::vector<float> set_input_, set_output_;  ///< the span's rows, compact (gpu_)
#endif
  std::atomic<int>& agreed_stop_;
  const std::atomic<int>* stop_;
};

}  // namespace

SpanStats end_span(MpiComm& comm, const SpanStats& mine, std::atomic<int>& agreed_stop,
                   const std::atomic<int>* stop) {
  double v[4] = {static_cast<double>(mine.words), static_cast<double>(mine.trained), mine.loss,
                 static_cast<double>(mine.loss_terms)};
  comm.sum(v, 4);
  agreed_stop = comm.max(stop != nullptr ? stop->load() : 0);
  return {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), v[2],
          static_cast<uint64_t>(v[3])};
}

std::unique_ptr<ShardedBackend> make_sharded_backend(MpiComm& comm, Model& model,
                                                     const TrainData& data, uint32_t threads,
                                                     const GpuGrant* gpu, bool single_warp,
                                                     RankBackendKind kind,
                                                     std::atomic<int>& agreed_stop,
                                                     const std::atomic<int>* stop) {
  const bool gpu_kind = kind == RankBackendKind::kGpuReplica || kind == RankBackendKind::kGpuParts;
  if (gpu_kind && gpu == nullptr) {
    throw Error("the run's plan chose the " + to_string(kind) + " backend for ranks without a GPU");
  }
  if (kind == RankBackendKind::kCpuReplica && gpu != nullptr) {
    throw Error("the run's plan chose the " + to_string(kind) + " backend for ranks with a GPU");
  }
  switch (kind) {
    case RankBackendKind::kGpuReplica:
#ifdef PAGEDW2V_HAVE_CUDA
      return make_gpu_replica_backend(comm, model, data, *gpu, single_warp, agreed_stop, stop);
#else
      break;  // the rows' backend says that this build has no CUDA backend
#endif
    case RankBackendKind::kGpuParts:
#ifdef PAGEDW2V_HAVE_CUDA
      return make_part_backend(comm, model, data, *gpu, single_warp, agreed_stop, stop);
#else
      break;
#endif
    case RankBackendKind::kCpuReplica:
      return make_replica_backend(comm, model, data, threads, agreed_stop, stop);
    case RankBackendKind::kRankRows:
      break;
  }
  return std::make_unique<RankBackend>(comm, model, data, threads, gpu, single_warp, agreed_stop,
                                       stop);
}

}  // namespace pagedw2v::dist
