/// @file run_setup.cpp
/// The shared steps of a fresh run's set-up (run_setup.hpp).

#include "train/run_setup.hpp"

#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "train/backend_factory.hpp"

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

GpuOptions plan_placement(Config& config, const TrainingSet& set,
                          const std::function<TrainData(TrainData)>& view) {
  const GpuOptions gpu = resolve_gpu_options(config.device, set.vocab.size(), config.dim,
                                             config.optimizer, config.gpu_options());
  const TrainData data = set.train_data(config);
  config = plan_train_sizes(config, view ? view(data) : data, gpu);
  return gpu;
}

Model make_run_model(const Config& config, uint64_t rows, const GpuOptions& gpu) {
  Model model = allocate_model(rows, config.dim, config.optimizer,
                               gpu.placement == Placement::kPaged, "lower --dim or --max-vocab",
                               config.storage, needs_node_table(config.hs, config.negative));
  init_model(model, config.seed, config.effective_threads());
  return model;
}

}  // namespace pagedw2v
