#include "dist/replica_backend.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"
#include "dist/row_owners.hpp"

namespace pagedw2v::dist {
namespace {

/// Floats summed over the ranks at a time (16 MiB).
constexpr uint64_t kCombineFloats = uint64_t{1} << 22;

class ReplicaBackend final : public ShardedBackend {
 public:
  ReplicaBackend(MpiComm& comm, Model& model, const TrainData& data, uint32_t threads,
                 std::atomic<int>& agreed_stop, const std::atomic<int>* stop)
      : comm_(comm),
        model_(model),
        data_(data),
        threads_(threads),
        words_(data.keep->words()),
        dim_(data.params.dim),
        agreed_stop_(agreed_stop),
        stop_(stop) {
    if (data.optimizer.kind != OptimizerKind::kSgd) {
      throw UsageError("replicated tables over ranks train sgd only");
    }
    if (words_ < comm.size()) {
      throw UsageError("a vocabulary of " + std::to_string(words_) + " words cannot be shared by " +
                       std::to_string(comm.size()) + " ranks; run fewer ranks");
    }
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_refusal(model.input.storage(), StorageRefusal::kOverRanks));
    }
    const uint64_t expected = RowOwners{comm.size()}.owned(words_, comm.rank());
    if (model.input.rows() != expected || model.output.rows() != expected ||
        !model.input.contiguous() || !model.output.contiguous()) {
      throw Error("rank " + std::to_string(comm.rank()) + " holds " +
                  std::to_string(model.input.rows()) + " rows, not the " +
                  std::to_string(expected) + " it owns");
    }
    const std::string hint = "; replicated tables hold 4 copies of a row on every rank";
    copy_ = allocate_model(words_, dim_, OptimizerKind::kSgd, false, hint);
    try {
      snapshot_input_.resize(words_ * dim_);
      snapshot_output_.resize(words_ * dim_);
      sums_.resize(std::min<uint64_t>(kCombineFloats, words_ * dim_));
    } catch (const std::bad_alloc&) {
      throw Error("not enough memory for the replicated tables' snapshot (" +
                  std::to_string(2 * words_ * dim_ * sizeof(float)) + " bytes)" + hint);
    }
    gather_copy();
    cpu_ = make_cpu_backend(copy_, data, threads);
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    const std::string span = std::to_string(rank_span_words()) + " words a rank";
    return "cpu, " + std::to_string(comm_.size()) +
           " ranks on replicated tables (every rank trains its share on whole copies; " +
           (words_ <= kReplicaHotRows
                ? "their changes summed every " + span
                : "the " + std::to_string(kReplicaHotRows) +
                      " most frequent rows' changes summed every " + span + ", every row's every " +
                      std::to_string(kReplicaColdSpans) + " spans") +
           "), " + std::to_string(threads_) + " threads per rank";
  }
  uint64_t span_words() const override { return rank_span_words() * comm_.size(); }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    comm_.training_started();
    const BlockRange mine = share_of_span(first_block, last_block, comm_.rank(), comm_.size());
    SpanStats s;
    if (mine.first < mine.last) s = cpu_->train(epoch, mine.first, mine.last);
    changed_ = true;
    if (replica_sums_every_row(first_block, last_block, data_.blocks->size() - 1, span_words())) {
      combine_every_row();
    } else {
      combine(std::min(words_, kReplicaHotRows));
    }
    return end_span(comm_, s, agreed_stop_, stop_);
  }

  void sync_to_host() override { combine_every_row(); }
  void sync_from_host() override {
    gather_copy();
    changed_ = false;
  }

  uint64_t table_rows() const override { return model_.input.rows(); }
  uint64_t peak_working_rows() const override { return words_; }

 private:
  uint64_t rank_span_words() const { return replica_span_words(words_, threads_); }

  /// The copies and the snapshot from the owned rows of every rank.
  void gather_copy() {
    gather_whole_tables(comm_, model_, words_, copy_);
    std::copy_n(copy_.input.data(), words_ * dim_, snapshot_input_.data());
    std::copy_n(copy_.output.data(), words_ * dim_, snapshot_output_.data());
  }

  /// Rows [0, rows) of both tables: every rank's change since the last combine, summed.
  void combine(uint64_t rows) {
    for (int t = 0; t < 2; ++t) {
      float* copy = t == 0 ? copy_.input.data() : copy_.output.data();
      float* snap = t == 0 ? snapshot_input_.data() : snapshot_output_.data();
      const uint64_t total = rows * dim_;
      for (uint64_t at = 0; at < total; at += kCombineFloats) {
        const uint64_t count = std::min(kCombineFloats, total - at);
        for (uint64_t i = 0; i < count; ++i) sums_[i] = copy[at + i] - snap[at + i];
        comm_.sum(sums_.data(), count);
        for (uint64_t i = 0; i < count; ++i) {
          snap[at + i] += sums_[i];
          copy[at + i] = snap[at + i];
        }
      }
    }
  }

  /// Every row combined (unless nothing trained since the last time), and the owned rows
  /// refreshed from the copy: row k of this rank's tables is word rank + k·N.
  void combine_every_row() {
    if (changed_) combine(words_);
    changed_ = false;
    const uint32_t n = comm_.size(), r = comm_.rank();
    for (uint64_t k = 0; k < model_.input.rows(); ++k) {
      std::copy_n(copy_.input.row(r + k * n), dim_, model_.input.row(k));
      std::copy_n(copy_.output.row(r + k * n), dim_, model_.output.row(k));
    }
  }

  MpiComm& comm_;
  Model& model_;
  const TrainData& data_;
  uint32_t threads_;
  uint64_t words_;
  uint32_t dim_;
  Model copy_;  ///< the whole tables, as this rank trains them
  std::vector<float> snapshot_input_, snapshot_output_;  ///< the tables at the last combine
  std::vector<float> sums_;                              ///< one piece of a combine
  bool changed_ = false;  ///< trained since every row was last combined
  std::unique_ptr<Backend> cpu_;
  std::atomic<int>& agreed_stop_;
  const std::atomic<int>* stop_;
};

}  // namespace

void gather_whole_tables(MpiComm& comm, const Model& owned, uint64_t words, Model& whole) {
  const uint32_t n = comm.size(), dim = owned.input.dim();
  const uint64_t most = RowOwners{n}.owned(words, 0);
  const uint64_t per_block =
      std::max<uint64_t>(1, (uint64_t{16} << 20) / (uint64_t{dim} * sizeof(float)) / n);
  std::vector<float> mine(std::min(per_block, most) * dim);
  for (int t = 0; t < 2; ++t) {
    const HostTable& own = t == 0 ? owned.input : owned.output;
    HostTable& copy = t == 0 ? whole.input : whole.output;
    for (uint64_t k0 = 0; k0 < most; k0 += per_block) {
      const uint64_t k1 = std::min(most, k0 + per_block), rows = k1 - k0;
      std::fill(mine.begin(), mine.end(), 0.0f);
      const uint64_t have = own.rows() > k0 ? std::min(own.rows(), k1) - k0 : 0;
      if (have > 0) std::copy_n(own.row(k0), have * dim, mine.data());
      const std::vector<uint8_t> all =
          comm.all_gather(mine.data(), static_cast<int>(rows * dim * sizeof(float)));
      const float* f = reinterpret_cast<const float*>(all.data());
      for (uint32_t q = 0; q < n; ++q) {
        const uint64_t count = RowOwners{n}.owned(words, q);
        for (uint64_t k = k0; k < std::min(k1, count); ++k) {
          std::copy_n(f + (q * rows + (k - k0)) * dim, dim, copy.row(q + k * n));
        }
      }
    }
  }
}

std::unique_ptr<ShardedBackend> make_replica_backend(MpiComm& comm, Model& model,
                                                     const TrainData& data, uint32_t threads,
                                                     std::atomic<int>& agreed_stop,
                                                     const std::atomic<int>* stop) {
  return std::make_unique<ReplicaBackend>(comm, model, data, threads, agreed_stop, stop);
}

}  // namespace pagedw2v::dist
