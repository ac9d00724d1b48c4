#include "dist/sharded_backend.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "dist/needed_rows.hpp"
#include "dist/owned_rows.hpp"
#include "dist/owner_steps.hpp"
#include "dist/row_exchange.hpp"
#include "dist/row_owners.hpp"
#include "dist/working_set.hpp"
#include "error.hpp"
#include "train/cpu_backend.hpp"

namespace pagedw2v::dist {
namespace {

/// The vocabulary's size.
uint64_t words_of(const TrainData& data) { return data.keep->words(); }

class RankBackend final : public ShardedBackend {
 public:
  RankBackend(MpiComm& comm, Model& model, const TrainData& data, uint32_t threads,
              std::atomic<int>& agreed_stop, const std::atomic<int>* stop)
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
      throw UsageError(storage_needs_cuda(model.input.storage()));
    }
    const uint64_t expected = RowOwners{comm.size()}.owned(words, comm.rank());
    if (model.input.rows() != expected || model.output.rows() != expected) {
      throw Error("rank " + std::to_string(comm.rank()) + " holds " +
                  std::to_string(model.input.rows()) + " rows, not the " +
                  std::to_string(expected) + " it owns");
    }
    if (data.optimizer.kind != OptimizerKind::kSgd) {
      steps_.emplace(comm, data.params.dim);
    } else {
      cpu_ = make_cpu_backend(model, data, threads, &work_.rows());
    }
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    return "cpu, " + std::to_string(comm_.size()) + " ranks (rank r owns rows id % " +
           std::to_string(comm_.size()) + " == r), " + std::to_string(steps_ ? 1 : threads_) +
           (steps_ ? " thread per rank (the owners apply the optimizer steps)"
                   : " threads per rank") +
           ", rows exchanged every " + std::to_string(rank_span_words()) + " words per rank";
  }
  uint64_t span_words() const override { return rank_span_words() * comm_.size(); }

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
    } else {
      if (mine.first < mine.last) s = cpu_->train(epoch, mine.first, mine.last);
      exchange_.return_deltas(owned_, work_);
    }
    // The span's statistics, summed; a loss that is not finite on one rank is so on all.
    double v[4] = {static_cast<double>(s.words), static_cast<double>(s.trained), s.loss,
                   static_cast<double>(s.loss_terms)};
    comm_.sum(v, 4);
    agreed_stop_ = comm_.max(stop_ != nullptr ? stop_->load() : 0);
    return {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), v[2],
            static_cast<uint64_t>(v[3])};
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
    return steps_ ? kRankSpanWords : std::max<uint64_t>(kRankSpanWords, threads_ * kBlockWords);
  }

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
  std::atomic<int>& agreed_stop_;
  const std::atomic<int>* stop_;
};

}  // namespace

std::unique_ptr<ShardedBackend> make_sharded_backend(MpiComm& comm, Model& model,
                                                     const TrainData& data, uint32_t threads,
                                                     std::atomic<int>& agreed_stop,
                                                     const std::atomic<int>* stop) {
  return std::make_unique<RankBackend>(comm, model, data, threads, agreed_stop, stop);
}

}  // namespace pagedw2v::dist
