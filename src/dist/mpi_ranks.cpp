// The ranks of a distributed run over MPI (ranks.hpp), built when MPI is found.
#include <cstdio>
#include "dist/mpi_comm.hpp"
#include "dist/ranks.hpp"
#include "dist/sharded_backend.hpp"
#include "error.hpp"

namespace pagedw2v::dist {
namespace {

class MpiRanks final : public Ranks {
 public:
  MpiRanks(const std::atomic<int>* stop, const std::string& output)
      : comm_(stop, output), stop_(stop) {}

  uint32_t rank() const override { return comm_.rank(); }
  uint32_t size() const override { return comm_.size(); }

  bool rank0_decides(bool value) override {
    unsigned char v = value ? 1 : 0;
    comm_.broadcast(&v, 1);
    return v != 0;
  }

  void check_same(uint64_t value, const std::string& what) override {
    uint64_t first = value;
    comm_.broadcast(&first, sizeof first);
    const int differs = comm_.max(first != value ? 1 : 0);
    if (differs != 0) {
      throw Error("the ranks of this run do not see the same " + what +
                  " (every rank must read the same files)");
    }
  }

  std::unique_ptr<Backend> make_backend(Model& model, const TrainData& data,
                                        uint32_t threads) override {
    return make_sharded_backend(comm_, model, data, threads, agreed_stop_, stop_);
  }

  const std::atomic<int>* agreed_stop() const override { return &agreed_stop_; }

  [[noreturn]] void abort(int code) { comm_.abort(code); }

 private:
  MpiComm comm_;
  const std::atomic<int>* stop_;
  std::atomic<int> agreed_stop_{0};
};

}  // namespace

std::unique_ptr<Ranks> join_ranks(const std::atomic<int>* stop, const std::string& output) {
  if (!launched_with_ranks()) return nullptr;
  return std::make_unique<MpiRanks>(stop, output);
}

void abort_job(Ranks& ranks, const std::string& message, int code) {
  std::fprintf(stderr, "pagedw2v: %s%s\n",
               ranks.rank() == 0 ? "" : ("rank " + std::to_string(ranks.rank()) + ": ").c_str(),
               message.c_str());
  static_cast<MpiRanks&>(ranks).abort(code);
}

}  // namespace pagedw2v::dist
