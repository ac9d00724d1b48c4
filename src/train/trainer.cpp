#include "train/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "base/error.hpp"
#include "dist/ranks.hpp"
#include "gpu/gpu_plan.hpp"
#include "train/backend_factory.hpp"
#include "train/continue_from.hpp"
#include "train/run_setup.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

using run_steps::resume_rate;
using run_steps::seconds_since;

TrainingRun::TrainingRun(const Config& requested, std::FILE* log, const std::atomic<int>* stop,
                         dist::Ranks* ranks)
    : requested(requested),
      log(log),
      stop(stop),
      ranks(ranks),
      writes_files(ranks == nullptr || ranks->writes_files()) {}

void TrainingRun::make_model_and_backend() {
  t = Clock::now();
  warm_up->wait();
  if (ranks != nullptr && config.kernel == SgnsKernel::kSharedNegatives) {
    throw UsageError(
        "--kernel shared-negatives trains in one process; over MPI ranks leave --kernel out");
  }
  // Over ranks with a GPU each: skip-gram sgd keeps its rows on the GPUs in parts and draws
  // its negatives from each part's noise table (dist/part_backend.hpp); other sgd runs train
  // each span's rows on the GPU with negatives from a pool, as for paged tables (an explicit
  // --negative-pool asks skip-gram for that way too). --device auto takes the GPUs for sgd
  // (a resumed run: when its checkpoint was trained on parts or with a pool), else the CPU.
  const bool on_parts = config.model == ModelKind::kSkipGram &&
                        config.optimizer == OptimizerKind::kSgd &&
                        (ck ? config.negative_pool == 0 : config.given.count("negative-pool") == 0);
  const bool rank_gpus =
      ranks != nullptr && device == DeviceKind::kCuda &&
      (config.device == DeviceKind::kCuda ||
       (config.optimizer == OptimizerKind::kSgd && (!ck || config.negative_pool > 0 || on_parts)));
  if (!ck && rank_gpus) {
    if (on_parts) {
      config.negative_pool = 0;
    } else if (config.negative_pool == 0 && config.given.count("negative-pool") == 0) {
      config.negative_pool = kAutoNegativePool;
      if (config.given.count("pool-words") == 0) {
        config.pool_words = uint64_t{kAutoPoolWordsPerEntry} * kAutoNegativePool;
      }
    }
  } else if (!ck) {
    // Placement first, then the sizes paged tables leave to the plan (a checkpoint fixes them).
    gpu = plan_placement(config, set, [this](TrainData d) { return run_data(d); });
  }
  data = run_data(set.train_data(config));

  if (ck) {
    model = std::move(ck->model);
    pos = ck->position;
    resume_rate(config, *ck, data, out);
    ck.reset();
  } else {
    const std::string hint = "lower --dim or --max-vocab";
    if (owned_rows_only) {
      model = ranks->allocate_owned_rows(vocab.size(), config.dim, config.optimizer, config.seed,
                                         config.effective_threads(), hint);
      if (start) {
        carry_rows(start->model, row_of_old, model, ranks->rank(), ranks->size());
        start.reset();
      }
    } else if (start) {
      model = continued_model(start->model, row_of_old, vocab.size(), config,
                              gpu->placement == Placement::kPaged);
      start.reset();
    } else {
      model = make_run_model(config, vocab.size(), *gpu);
    }
  }
  threads = config.effective_threads();
  GpuOptions gpu_settings = gpu.value_or(config.gpu_options());
  gpu_settings.deterministic = config.deterministic;  // a resumed run's may be the checkpoint's
  backend = ranks ? ranks->make_backend(model, data, threads, rank_gpus, config.deterministic,
                                        config.rank_tables)
                  : make_backend(config.device, model, data, threads, gpu_settings);
  if (ranks) stop = ranks->agreed_stop();
  if (out) std::fprintf(out, "backend: %s\n", backend->describe().c_str());
  checkpoints.emplace(config.output, config.keep_checkpoints, p.words_per_epoch);
  // Made once the corpus's fingerprint is known (a streamed corpus: after its first pass).
  if (hashing.valid()) corpus_id = hashing.get();
  if (corpus_id) writer.emplace(*checkpoints, config, vocab, *corpus_id);
  // The last checkpoint's file (its vocabulary and settings) is made while the run trains, so
  // that the run's end writes only its tables (over ranks, rank 0 writes it from the blocks it
  // gathers).
  if (writes_files && writer && config.keep_checkpoints > 0 && !ranks) {
    writer->prepare({p.epochs, 0, 0}, model.input.rows(), model.input.dim());
  }
  times.setup += seconds_since(t);
}

void TrainingRun::ensure_writer() {
  if (writer) return;
  // Stopped during the first pass of a streamed corpus: one pass of its own says.
  std::unique_ptr<BlockReader> r = open_pass();
  const StreamSummary f = scan_blocks(*r);
  corpus_id = CorpusFingerprint{f.words, f.sentences, f.hash};
  writer.emplace(*checkpoints, config, vocab, *corpus_id);
}

TrainSummary run_training(const Config& requested, std::FILE* log, const std::atomic<int>* stop,
                          dist::Ranks* ranks) {
  TrainingRun run(requested, log, stop, ranks);
  run.settle_settings();
  run.read_corpus();
  run.encode_corpus();
  run.prepare_stream();
  run.report_vocabulary();
  run.make_model_and_backend();
  run.plan_spans();
  run.train_epochs();
  if (run.write_outputs()) run.record_run();
  return std::move(run.summary);
}

}  // namespace pagedw2v
