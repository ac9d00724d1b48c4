#include "dist/part_backend.hpp"

#include <string>

#include "base/error.hpp"
#include "dist/part_rotation.hpp"
#include "dist/row_owners.hpp"
#include "gpu/part_trainer.hpp"
#include "gpu/stream.hpp"
#include "kernels/sgns.hpp"

namespace pagedw2v::dist {
namespace {

class PartBackend final : public ShardedBackend {
 public:
  PartBackend(MpiComm& comm, Model& model, const TrainData& data, const GpuGrant& gpu,
              bool single_warp, std::atomic<int>& agreed_stop, const std::atomic<int>* stop)
      : comm_(comm),
        model_(model),
        data_(data),
        trainer_(data, comm.size(), comm.rank(), single_warp, gpu),
        rotation_(comm, trainer_.part_bytes(0), gpu.device.uuid),
        agreed_stop_(agreed_stop),
        stop_(stop) {
    const uint64_t words = data.keep->words();
    if (words >= 0x80000000u) throw Error("distributed training takes at most 2^31 - 1 words");
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_refusal(model.input.storage(), StorageRefusal::kOverRanks));
    }
    const uint64_t expected = RowOwners{comm.size()}.owned(words, comm.rank());
    if (model.input.rows() != expected || model.output.rows() != expected ||
        trainer_.part_rows(comm.rank()) != expected) {
      throw Error("rank " + std::to_string(comm.rank()) + " holds " +
                  std::to_string(model.input.rows()) + " rows, not the " +
                  std::to_string(expected) + " it owns");
    }
    if (!model.input.contiguous() || !model.output.contiguous()) {
      throw Error("a rank's tables must be contiguous in host memory");
    }
    trainer_.upload(model.input.data(), model.output.data(), comm.rank());
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    const std::string n = std::to_string(comm_.size());
    return "cuda on " + trainer_.device_name() + ", " + n +
           " ranks on partitioned tables (rank r holds the input rows id % " + n +
           " == r on its GPU; the output parts go round the ranks through " + rotation_.describe() +
           ", " + n + " launches a span of " + std::to_string(span_words()) + " words)";
  }
  uint64_t span_words() const override {
    return part_span_words(data_.keep->words(), kPartSpanLeastWords);
  }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    comm_.training_started();
    const auto& blocks = *data_.blocks;
    const uint64_t s0 = blocks[first_block], s1 = blocks[last_block];
    const uint32_t n = comm_.size(), r = comm_.rank();
    SpanStats s;
    // The span against every output part in turn, starting from the one this rank holds; the
    // parts move between launches only, so a span ends holding the part it trained last.
    for (uint32_t k = 0; k < n; ++k) {
      s += trainer_.train(epoch, s0, s1, held());
      if (k + 1 < n) rotate();
    }
    // Every rank read the span; the words are counted once.
    if (r == 0) {
      const auto& starts = data_.corpus->sentence_starts;
      const uint64_t base = data_.corpus->sentence_base;
      s.words = starts[s1 - base] - starts[s0 - base];
    }
    return end_span(comm_, s, agreed_stop_, stop_);
  }

  // The rank's own output part comes home first (every rank calls this at the same point).
  void sync_to_host() override {
    while (held() != comm_.rank()) rotate();
    trainer_.download(model_.input.data(), model_.output.data(), comm_.rank());
  }
  void sync_from_host() override {
    while (held() != comm_.rank()) rotate();
    trainer_.upload(model_.input.data(), model_.output.data(), comm_.rank());
  }

  uint64_t table_rows() const override { return model_.input.rows(); }
  uint64_t peak_working_rows() const override { return 0; }

 private:
  /// The output part on this rank's GPU.
  uint32_t held() const { return (comm_.rank() + moves_) % comm_.size(); }
  /// Every rank sends the part it holds to the rank before it and takes the next rank's.
  void rotate() {
    const uint32_t n = comm_.size();
    const uint32_t mine = held(), next = (mine + 1) % n;
    rotation_.rotate(trainer_.output_rows(), trainer_.part_bytes(mine), trainer_.part_bytes(next),
                     stream_.get());
    moves_ = (moves_ + 1) % n;
  }

  MpiComm& comm_;
  Model& model_;
  const TrainData& data_;
  PartTrainer trainer_;
  PartRotation rotation_;
  Stream stream_;
  uint32_t moves_ = 0;  ///< rotations so far, modulo the ranks
  std::atomic<int>& agreed_stop_;
  const std::atomic<int>* stop_;
};

}  // namespace

std::unique_ptr<ShardedBackend> make_part_backend(MpiComm& comm, Model& model,
                                                  const TrainData& data, const GpuGrant& gpu,
                                                  bool single_warp, std::atomic<int>& agreed_stop,
                                                  const std::atomic<int>* stop) {
  return std::make_unique<PartBackend>(comm, model, data, gpu, single_warp, agreed_stop, stop);
}

}  // namespace pagedw2v::dist
