#include "dist/gpu_replica_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "dist/nccl_comm.hpp"
#include "dist/replica_backend.hpp"
#include "dist/row_owners.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/part_trainer.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/replica_delta.hpp"

namespace pagedw2v::dist {
namespace {

/// Floats summed at a time (64 MiB).
constexpr uint64_t kSumFloats = uint64_t{1} << 24;

/// Sums `n` floats at device pointer `values` over the ranks through `nccl`, in place, and
/// waits.
void nccl_sum(NcclComm& nccl, float* values, uint64_t n, cudaStream_t stream) {
#ifdef PAGEDW2V_HAVE_NCCL
  try {
    nccl_check(ncclAllReduce(values, values, n, ncclFloat32, ncclSum, nccl.get(), stream),
               "ncclAllReduce");
  } catch (...) {
    nccl.fail();
    throw;
  }
  nccl.wait(stream, "all-reduce (asynchronous error)");
#else
  (void)nccl, (void)values, (void)n, (void)stream;
  throw Error("summing over GPUs through NCCL: this build has no NCCL");
#endif
}

class GpuReplicaBackend final : public ShardedBackend {
 public:
  GpuReplicaBackend(MpiComm& comm, Model& model, const TrainData& data, const GpuGrant& gpu,
                    bool single_warp, std::atomic<int>& agreed_stop, const std::atomic<int>* stop)
      : comm_(comm),
        model_(model),
        data_(data),
        words_(data.keep->words()),
        dim_(data.params.dim),
        trainer_(data, 1, 0, single_warp, gpu),
        agreed_stop_(agreed_stop),
        stop_(stop) {
    if (words_ >= 0x80000000u) throw Error("distributed training takes at most 2^31 - 1 words");
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_refusal(model.input.storage(), StorageRefusal::kOverRanks));
    }
    const uint64_t expected = RowOwners{comm.size()}.owned(words_, comm.rank());
    if (model.input.rows() != expected || model.output.rows() != expected) {
      throw Error("rank " + std::to_string(comm.rank()) + " holds " +
                  std::to_string(model.input.rows()) + " rows, not the " +
                  std::to_string(expected) + " it owns");
    }
    stride_ = trainer_.row_stride();
    copy_ = allocate_model(words_, dim_, OptimizerKind::kSgd, false,
                           "; replicated tables hold a whole copy on every rank");
    const uint64_t floats = words_ * stride_;
    snapshot_input_ = DeviceBuffer<float>(floats, "the input table's snapshot");
    snapshot_output_ = DeviceBuffer<float>(floats, "the output table's snapshot");
    sum_floats_ = std::min(kSumFloats, floats);
    sums_ = DeviceBuffer<float>(sum_floats_, "the replicas' sums");
#ifdef PAGEDW2V_HAVE_NCCL
    nccl_path_ = comm.size() > 1 && every_rank_has_its_gpu(comm, gpu.device.uuid);
    if (nccl_path_) nccl_ = std::make_unique<NcclComm>(comm);
#endif
    if (!nccl_path_) host_ = PinnedBuffer<float>(sum_floats_, "the replicas' sums (host)");
    load_copy();
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    const std::string span = std::to_string(rank_span_words()) + " words a rank";
    return "cuda on " + trainer_.device_name() + ", " + std::to_string(comm_.size()) +
           " ranks on replicated tables (whole copies on every GPU, " +
           (words_ <= kReplicaHotRows
                ? "their changes summed every " + span
                : "the " + std::to_string(kReplicaHotRows) +
                      " most frequent rows' changes summed every " + span + ", every row's every " +
                      std::to_string(kReplicaColdSpans) + " spans") +
           ", through " + (nccl_path_ ? "NCCL" : "host memory (MPI)") + ")";
  }
  uint64_t span_words() const override { return rank_span_words() * comm_.size(); }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    comm_.training_started();
    const BlockRange mine = share_of_span(first_block, last_block, comm_.rank(), comm_.size());
    SpanStats s;
    if (mine.first < mine.last) {
      const auto& blocks = *data_.blocks;
      s = trainer_.train(epoch, blocks[mine.first], blocks[mine.last], 0);
    }
    changed_ = true;
    if (replica_sums_every_row(first_block, last_block, data_.blocks->size() - 1, span_words())) {
      sum_every_row();
    } else {
      sum_rows(std::min(words_, kReplicaHotRows));
    }
    return end_span(comm_, s, agreed_stop_, stop_);
  }

  void sync_to_host() override { sum_every_row(); }
  void sync_from_host() override {
    load_copy();
    changed_ = false;
  }

  uint64_t table_rows() const override { return model_.input.rows(); }
  uint64_t peak_working_rows() const override { return words_; }

 private:
  uint64_t rank_span_words() const { return gpu_replica_span_words(words_); }

  /// The copy on the GPU, and its snapshot, from the owned rows of every rank.
  void load_copy() {
    gather_whole_tables(comm_, model_, words_, copy_);
    trainer_.upload(copy_.input.data(), copy_.output.data(), 0);
    const uint64_t bytes = words_ * stride_ * sizeof(float);
    cudaStream_t st = stream_.get();
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(snapshot_input_.data(), trainer_.input_rows(), bytes,
                                      cudaMemcpyDeviceToDevice, st));
    PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(snapshot_output_.data(), trainer_.output_rows(), bytes,
                                      cudaMemcpyDeviceToDevice, st));
    stream_.synchronize();
  }

  /// Rows [0, rows) of both tables: every rank's change since the last sum, summed.
  void sum_rows(uint64_t rows) {
    cudaStream_t st = stream_.get();
    for (int t = 0; t < 2; ++t) {
      float* copy = static_cast<float*>(t == 0 ? trainer_.input_rows() : trainer_.output_rows());
      float* snap = t == 0 ? snapshot_input_.data() : snapshot_output_.data();
      const uint64_t total = rows * stride_;
      for (uint64_t at = 0; at < total; at += sum_floats_) {
        const uint64_t n = std::min<uint64_t>(sum_floats_, total - at);
        launch_take_delta(copy + at, snap + at, sums_.data(), n, st);
        if (nccl_path_) {
          nccl_sum(*nccl_, sums_.data(), n, st);
        } else {
          PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(host_.data(), sums_.data(), n * sizeof(float),
                                            cudaMemcpyDeviceToHost, st));
          stream_.synchronize();
          comm_.sum(host_.data(), n);
          PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(sums_.data(), host_.data(), n * sizeof(float),
                                            cudaMemcpyHostToDevice, st));
        }
        launch_apply_sum(copy + at, snap + at, sums_.data(), n, st);
      }
    }
    stream_.synchronize();
  }

  /// Every row summed (unless nothing trained since the last time) and the owned rows
  /// refreshed from the GPU: row k of this rank's tables is word rank + k·N.
  void sum_every_row() {
    if (changed_) sum_rows(words_);
    changed_ = false;
    trainer_.download(copy_.input.data(), copy_.output.data(), 0);
    const uint32_t n = comm_.size(), r = comm_.rank();
    for (uint64_t k = 0; k < model_.input.rows(); ++k) {
      std::copy_n(copy_.input.row(r + k * n), dim_, model_.input.row(k));
      std::copy_n(copy_.output.row(r + k * n), dim_, model_.output.row(k));
    }
  }

  MpiComm& comm_;
  Model& model_;
  const TrainData& data_;
  uint64_t words_;
  uint32_t dim_;
  uint32_t stride_ = 0;
  PartTrainer trainer_;  ///< one part: the whole tables on this rank's GPU
  Model copy_;           ///< host staging of the whole tables (loads, checkpoints)
  DeviceBuffer<float> snapshot_input_, snapshot_output_;  ///< the tables at the last sum
  DeviceBuffer<float> sums_;                              ///< one piece of a sum
  uint64_t sum_floats_ = 0;                               ///< floats of that piece
  PinnedBuffer<float> host_;                              ///< host path: that piece
  bool nccl_path_ = false;
  std::unique_ptr<NcclComm> nccl_;
  Stream stream_;
  bool changed_ = false;
  std::atomic<int>& agreed_stop_;
  const std::atomic<int>* stop_;
};

}  // namespace

std::unique_ptr<ShardedBackend> make_gpu_replica_backend(MpiComm& comm, Model& model,
                                                         const TrainData& data, const GpuGrant& gpu,
                                                         bool single_warp,
                                                         std::atomic<int>& agreed_stop,
                                                         const std::atomic<int>* stop) {
  return std::make_unique<GpuReplicaBackend>(comm, model, data, gpu, single_warp, agreed_stop,
                                             stop);
}

}  // namespace pagedw2v::dist
