#include "train/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "base/error.hpp"
#include "dist/ranks.hpp"
#include "gpu/gpu_plan.hpp"
#include "model/storage.hpp"
#include "train/backend_factory.hpp"
#include "train/continue_from.hpp"
#include "train/run_setup.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

using run_steps::resume_rate;
using run_steps::seconds_since;

TrainingRun::TrainingRun(const Config& requested, std::FILE* log, const std::atomic<int>* stop,
                         dist::Ranks* ranks, const DeviceFacts& device)
    : requested(requested),
      log(log),
      stop(stop),
      ranks(ranks),
      writes_files(ranks == nullptr || ranks->writes_files()),
      device_facts(device) {}

void TrainingRun::make_model_and_backend() {
  t = Clock::now();
  if (ranks != nullptr && config.kernel == SgnsKernel::kSharedNegatives) {
    throw UsageError(
        "--kernel shared-negatives trains in one process; over MPI ranks leave --kernel out");
  }
  // Ranks hold fp32 rows on either device: refused before a rank allocates or trains a row.
  if (ranks != nullptr && config.storage != Storage::kFp32) {
    throw UsageError(storage_refusal(config.storage, StorageRefusal::kOverRanks));
  }
  // The run's plan (run_plan.hpp): its device, placement and budget (a resumed run made them
  // before reading its checkpoint), then the sizes the run left to it and the GPU plan.
  const bool resumed = ck.has_value();
  if (!plan)
    plan = plan_device(config, vocab.size(), device_facts, ranks ? ranks->size() : 1, resumed);
  plan_sizes(*plan, config, run_data(set.train_data(config)), resumed);
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
      model = continued_model(start->model, row_of_old, vocab.size(), config, plan->paged());
      start.reset();
    } else {
      model = make_run_model(config, vocab.size(), plan->gpu);
    }
  }
  threads = config.effective_threads();
  const GpuGrant grant = plan->grant();
  backend = ranks ? ranks->make_backend(model, data, threads, plan->rank_gpus ? &grant : nullptr,
                                        config.deterministic, plan->rank_backend)
                  : make_backend(*plan, model, data, threads);
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
                          dist::Ranks* ranks, const DeviceFacts* device) {
  TrainingRun run(requested, log, stop, ranks,
                  device != nullptr ? *device : query_run_device(requested));
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
