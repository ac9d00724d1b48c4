#include "train/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "train/sgns_cpu.hpp"

namespace pagedw2v {
namespace detail {
namespace {

struct Kept {
  uint32_t id;
  uint32_t shrink;  ///< dynamic-window reduction b: the window is `window − b`
  uint64_t pos;
};

/// Per-thread buffers, reused across sentences.
struct Scratch {
  std::vector<Kept> kept;
  std::vector<uint32_t> targets;
  Eigen::VectorXf h, err;
};

void train_sentence(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                    uint64_t last, Scratch& s, SpanStats* stats) {
  const TrainParams& p = data.params;
  const uint32_t* tokens = data.corpus->tokens.data();
  const float* keep = data.keep->data();
  const AliasEntry* noise = data.noise->entries().data();
  const uint32_t vocab = data.noise->size();
  const LrSchedule schedule = make_schedule(p);
  const uint64_t epoch_base = static_cast<uint64_t>(epoch) * p.words_per_epoch;
  const uint32_t dim = p.dim;
  float* in = model.input.data();
  float* out = model.output.data();

  s.kept.clear();
  for (uint64_t pos = first; pos < last; ++pos) {
    const uint32_t id = tokens[pos];
    const Philox4 r = draw(p.seed, pos, epoch, DrawKind::kSubsample);
    if (keep[id] < 1.0f && to_unit_float(r.v[0]) >= keep[id]) continue;
    s.kept.push_back({id, p.window > 0 ? r.v[1] % p.window : 0, pos});
  }
  stats->words += last - first;
  stats->trained += s.kept.size();

  const int64_t n = static_cast<int64_t>(s.kept.size());
  s.targets.resize(p.negative + 1);
  uint32_t* targets = s.targets.data();
  for (int64_t i = 0; i < n; ++i) {
    const Kept& c = s.kept[i];
    const float lr = schedule.at(epoch_base + c.pos);
    const int64_t w = static_cast<int64_t>(p.window) - c.shrink;
    const int64_t lo = std::max<int64_t>(0, i - w), hi = std::min<int64_t>(n - 1, i + w);
    if (p.model == ModelKind::kSkipGram) {
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        const uint32_t slot = static_cast<uint32_t>(j - i + static_cast<int64_t>(p.window));
        const uint32_t nt = draw_targets(c.id, c.pos, epoch, slot, p.seed, p.negative, noise,
                                         vocab, targets);
        float* h = in + static_cast<size_t>(s.kept[j].id) * dim;
        s.err.setZero();
        stats->loss += sgns_update(h, s.err.data(), out, targets, nt, dim, lr, true);
        ++stats->loss_terms;
        VecMap(h, dim) += s.err;
      }
    } else {
      s.h.setZero();
      int64_t cw = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        s.h += ConstVecMap(in + static_cast<size_t>(s.kept[j].id) * dim, dim);
        ++cw;
      }
      if (cw == 0) continue;
      s.h /= static_cast<float>(cw);
      const uint32_t nt =
          draw_targets(c.id, c.pos, epoch, 0, p.seed, p.negative, noise, vocab, targets);
      s.err.setZero();
      stats->loss += sgns_update(s.h.data(), s.err.data(), out, targets, nt, dim, lr, true);
      ++stats->loss_terms;
      for (int64_t j = lo; j <= hi; ++j) {
        if (j == i) continue;
        VecMap(in + static_cast<size_t>(s.kept[j].id) * dim, dim) += s.err;
      }
    }
  }
}

Scratch make_scratch(uint32_t dim) {
  Scratch s;
  s.h.resize(dim);
  s.err.resize(dim);
  return s;
}

}  // namespace

void train_sentence_cpu(const TrainData& data, Model& model, uint32_t epoch, uint64_t first,
                        uint64_t last, SpanStats* stats) {
  Scratch s = make_scratch(data.params.dim);
  train_sentence(data, model, epoch, first, last, s, stats);
}

}  // namespace detail

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(Model& model, const TrainData& data, uint32_t threads)
      : model_(model), data_(data), threads_(std::max<uint32_t>(1, threads)) {}

  std::string name() const override { return "cpu"; }
  uint64_t span_words() const override { return uint64_t{1} << 17 << (threads_ > 1 ? 2 : 0); }

  SpanStats train(uint32_t epoch, uint64_t first_block, uint64_t last_block) override {
    std::atomic<uint64_t> next{first_block};
    const uint32_t nthreads =
        static_cast<uint32_t>(std::min<uint64_t>(threads_, last_block - first_block));
    std::vector<SpanStats> stats(std::max<uint32_t>(1, nthreads));
    auto work = [&](uint32_t t) {
      detail::Scratch s = detail::make_scratch(data_.params.dim);
      const auto& blocks = *data_.blocks;
      const auto& starts = data_.corpus->sentence_starts;
      for (uint64_t b = next++; b < last_block; b = next++) {
        for (uint64_t sent = blocks[b]; sent < blocks[b + 1]; ++sent) {
          detail::train_sentence(data_, model_, epoch, starts[sent], starts[sent + 1], s,
                                 &stats[t]);
        }
      }
    };
    if (nthreads <= 1) {
      work(0);
    } else {
      std::vector<std::thread> pool;
      for (uint32_t t = 0; t < nthreads; ++t) pool.emplace_back(work, t);
      for (auto& th : pool) th.join();
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
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(Model& model, const TrainData& data, uint32_t threads) {
  return std::make_unique<CpuBackend>(model, data, threads);
}

}  // namespace pagedw2v
