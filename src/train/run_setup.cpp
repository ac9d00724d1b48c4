/// @file run_setup.cpp
/// The shared steps of a fresh run's set-up (run_setup.hpp).

#include "train/run_setup.hpp"

#include "base/error.hpp"
#include "base/free_heap.hpp"

namespace pagedw2v {

Vocab count_corpus_vocabulary(CorpusText& text, const std::vector<std::string_view>& parts,
                              const Config& config, bool keep_tokens) {
  return count_vocabulary(parts, config, keep_tokens,
                          [&text](std::string_view read) { text.release(read); });
}

void pack_vocabulary(TrainingSet& set, uint32_t threads) {
  try {
    set.vocab.pack_words(threads);
    release_free_heap();
  } catch (const Error&) {
    // Kept as they are: packing only saves memory.
  }
}

RunPlan plan_run(Config& config, const TrainingSet& set, const DeviceFacts& facts,
                 const std::function<TrainData(TrainData)>& view,
                 const CudaBackendOptions& tuning) {
  RunPlan plan = plan_device(config, set.vocab.size(), facts, /*ranks=*/1,
                             /*resumed=*/false);
  const TrainData data = set.train_data(config);
  plan_sizes(plan, config, view ? view(data) : data, /*resumed=*/false, tuning);
  return plan;
}

Model make_run_model(const Config& config, uint64_t rows, const GpuOptions& gpu) {
  Model model = allocate_model(rows, config.dim, config.optimizer,
                               gpu.placement == Placement::kPaged, "lower --dim or --max-vocab",
                               config.storage, needs_node_table(config.hs, config.negative));
  init_model(model, config.seed, config.effective_threads());
  return model;
}

}  // namespace pagedw2v
