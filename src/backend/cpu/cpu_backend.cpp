/// @file cpu_backend.cpp
/// The CPU backend itself (cpu_backend.hpp): what it accepts of a model and its data, and its
/// Hogwild over threads taking blocks from one counter, each block trained by the per-example
/// pass (cpu_sgd.hpp) or, for the other optimizers, the batched pass (cpu_gradients.hpp).

#include "backend/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_examples.hpp"
#include "backend/cpu/cpu_gradients.hpp"
#include "backend/cpu/cpu_rows.hpp"
#include "backend/cpu/cpu_sgd.hpp"
#include "base/error.hpp"
#include "base/worker_threads.hpp"
#include "model/negative_pool.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {
namespace detail {

using cpu::collect_kept;
using cpu::Example;
using cpu::for_each_example;
using cpu::id_rows;
using cpu::make_scratch;
using cpu::Scratch;
using cpu::sentence_starts;
using cpu::use_pool_of_block;

std::vector<std::vector<uint32_t>> block_example_targets(const TrainData& data, const Model& model,
                                                         uint32_t epoch, uint64_t block) {
  const auto& blocks = *data.blocks;
  const uint64_t* starts = sentence_starts(data);
  Scratch s = make_scratch(data.params.dim);
  use_pool_of_block(data, epoch, block, s);
  SpanStats stats;
  std::vector<std::vector<uint32_t>> out;
  for (uint64_t sent = blocks[block]; sent < blocks[block + 1]; ++sent) {
    collect_kept(data, epoch, starts[sent], starts[sent + 1], s.kept, &stats);
    for_each_example(data, epoch, id_rows(model), s, [&](const Example& e) {
      out.emplace_back(e.targets, e.targets + e.n_targets);
    });
  }
  return out;
}

}  // namespace detail

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(Model& model, const TrainData& data, uint32_t threads, const RankRows* rank_rows)
      : model_(model),
        data_(data),
        threads_(std::max<uint32_t>(1, threads)),
        rank_rows_(rank_rows) {
    if (model.input.storage() != Storage::kFp32) {
      throw UsageError(storage_refusal(model.input.storage(), StorageRefusal::kCpuBackend));
    }
    bool contiguous =
        model.input.contiguous() && model.output.contiguous() && model.nodes.contiguous();
    for (const HostTable& t : model.input_state) contiguous = contiguous && t.contiguous();
    for (const HostTable& t : model.output_state) contiguous = contiguous && t.contiguous();
    for (const HostTable& t : model.nodes_state) contiguous = contiguous && t.contiguous();
    if (!contiguous) throw Error("the CPU backend needs tables allocated apart, not interleaved");
    if (rank_rows != nullptr && data.optimizer.kind != OptimizerKind::kSgd) {
      throw Error("the CPU backend trains a rank's rows with sgd only");
    }
    if (data.params.hs) {
      if (rank_rows != nullptr) throw Error("the CPU backend trains a rank's rows without --hs");
      if (data.tree == nullptr || data.tree->words() != model.input.rows()) {
        throw Error("hierarchical softmax needs the Huffman tree of the model's " +
                    std::to_string(model.input.rows()) + " words");
      }
      const bool nodes = needs_node_table(true, data.params.negative);
      if ((model.nodes.rows() > 0) != nodes ||
          (nodes && model.nodes.rows() != model.input.rows())) {
        throw Error(nodes ? "--hs beside --negative needs the model's inner-node table"
                          : "--hs with --negative 0 keeps the inner nodes in the output table");
      }
    } else if (data.params.negative == 0) {
      throw Error("--negative 0 trains nothing without --hs");
    }
    const uint32_t n = state_tables(data.optimizer.kind);
    if (model.input_state.size() != n || model.output_state.size() != n ||
        model.nodes_state.size() != (model.nodes.rows() > 0 ? n : 0)) {
      throw Error("the model holds " + std::to_string(model.input_state.size()) +
                  " state tables; optimizer " + to_string(data.optimizer.kind) + " needs " +
                  std::to_string(n));
    }
  }

  std::string name() const override { return "cpu"; }
  uint64_t span_words() const override { return uint64_t{1} << 17 << (threads_ > 1 ? 2 : 0); }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    std::atomic<uint64_t> next{first_block};
    const uint32_t nthreads =
        static_cast<uint32_t>(std::min<uint64_t>(threads_, last_block - first_block));
    std::vector<SpanStats> stats(std::max<uint32_t>(1, nthreads));
    auto work = [&](uint32_t t) {
      detail::cpu::Scratch s = detail::cpu::make_scratch(data_.params.dim);
      if (data_.optimizer.kind != OptimizerKind::kSgd) {
        detail::cpu::BatchGrads g(data_.params.dim);
        for (uint64_t b = next++; b < last_block; b = next++) {
          detail::cpu::train_block_batched(data_, model_, epoch, b, s, g, &stats[t]);
        }
        return;
      }
      const auto& blocks = *data_.blocks;
      const uint64_t* starts = detail::cpu::sentence_starts(data_);
      for (uint64_t b = next++; b < last_block; b = next++) {
        detail::cpu::use_pool_of_block(data_, epoch, b, s);
        for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
          if (rank_rows_ != nullptr) {
            detail::cpu::train_sentence(data_,
                                        detail::cpu::SplitRows{*rank_rows_, data_.params.dim},
                                        epoch, starts[sent], starts[sent + 1], s, &stats[t]);
          } else {
            detail::cpu::train_sentence(data_, detail::cpu::id_rows(model_), epoch, starts[sent],
                                        starts[sent + 1], s, &stats[t]);
          }
        }
      }
    };
    if (nthreads <= 1) {
      work(0);
    } else {
      // A worker that fails (out of memory) ends the others at their next block.
      run_workers(nthreads, [&](uint32_t t) {
        try {
          work(t);
        } catch (...) {
          next = last_block;
          throw;
        }
      });
    }
    SpanStats total;
    for (const auto& s : stats) total += s;
    return total;
  }

  void sync_to_host() override {}
  void sync_from_host() override {}

 private:
  Model& model_;
  const TrainData& data_;
  uint32_t threads_;
  const RankRows* rank_rows_;  ///< null: the rows of `model_`, at their ids
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads,
                                          const RankRows* rank_rows) {
  return std::make_unique<CpuBackend>(model, data, threads, rank_rows);
}

}  // namespace pagedw2v
