// The ranks of a distributed run over MPI (ranks.hpp), built when MPI is found.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

#include "base/error.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/owned_rows.hpp"
#include "dist/ranks.hpp"
#include "dist/sharded_backend.hpp"

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

  std::unique_ptr<Backend> make_backend(Model& model, const TrainData& data, uint32_t threads,
                                        const GpuGrant* gpu, bool single_warp,
                                        RankBackendKind kind) override {
    std::unique_ptr<ShardedBackend> b = make_sharded_backend(
        comm_, model, data, threads, gpu, single_warp, kind, agreed_stop_, stop_);
    backend_ = b.get();
    return b;
  }

  Model allocate_owned_rows(uint64_t rows, uint32_t dim, OptimizerKind kind, uint64_t seed,
                            uint32_t threads, const std::string& hint) override {
    return dist::allocate_owned_rows(rows, dim, kind, RowOwners{size()}, rank(), seed, threads,
                                     hint);
  }

  void gather_rows(const std::vector<const HostTable*>& tables, uint64_t rows,
                   const std::function<void(const RowBlock&)>& take) override {
    if (tables.empty() || rows == 0) return;
    const uint32_t n = size(), dim = tables[0]->dim();
    std::vector<const float*> mine;
    for (const HostTable* t : tables) {
      // A rank's tables hold at least its rows of [0, rows): all of them for the vocabulary,
      // the first ones for an evaluation.
      if (t->storage() != Storage::kFp32 || !t->contiguous() || t->dim() != dim ||
          t->rows() < RowOwners{n}.owned(rows, rank())) {
        throw Error("rank " + std::to_string(rank()) + " cannot send its rows of a table of " +
                    std::to_string(t->rows()) + " rows");
      }
      mine.push_back(t->data());
    }
    // About 4 MiB of each table a block (a whole number of rounds of the ranks).
    const uint64_t per_block =
        std::max<uint64_t>(n, (uint64_t{4} << 20) / (uint64_t{dim} * sizeof(float)) / n * n);
    std::vector<float> buffer(rank() == 0 ? std::min(per_block, rows) * dim * tables.size() : 0);
    RowBlock block;
    block.dim = dim;
    for (uint64_t first = 0; first < rows; first += per_block) {
      const uint64_t last = std::min(rows, first + per_block);
      comm_.gather_rows(mine, first, last, dim, buffer.data());
      if (rank() != 0) continue;
      block.first = first;
      block.rows = last - first;
      block.tables.clear();
      for (size_t t = 0; t < tables.size(); ++t) {
        block.tables.push_back(buffer.data() + t * block.rows * dim);
      }
      take(block);
    }
  }

  std::vector<RankMemory> memory_of_ranks() override {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    const uint64_t mine[3] = {backend_ != nullptr ? backend_->table_rows() : 0,
                              backend_ != nullptr ? backend_->peak_working_rows() : 0,
                              static_cast<uint64_t>(usage.ru_maxrss) * 1024};
    const std::vector<uint64_t> all = comm_.gather(mine, 3);
    std::vector<RankMemory> out;
    for (size_t r = 0; r * 3 < all.size(); ++r) {
      out.push_back({static_cast<uint32_t>(r), all[3 * r], all[3 * r + 1], all[3 * r + 2]});
    }
    return out;
  }

  const std::atomic<int>* agreed_stop() const override { return &agreed_stop_; }

  [[noreturn]] void abort(int code) { comm_.abort(code); }

 private:
  MpiComm comm_;
  const std::atomic<int>* stop_;
  std::atomic<int> agreed_stop_{0};
  const ShardedBackend* backend_ = nullptr;  ///< the trainer's, for memory_of_ranks()
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
