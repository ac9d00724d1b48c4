/// @file resume_merge.cpp
/// A run's settings: the checkpoint a resumed run starts from, its settings merged with the
/// command's (merge_for_resume), the checks before anything is read, the learning rate a resumed
/// run goes on with, and the command that resumes a stopped run (resume_command).

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "dist/ranks.hpp"
#include "gpu/gpu_plan.hpp"
#include "model/sampler.hpp"
#include "train/continue_from.hpp"
#include "train/trainer.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

namespace {

using run_steps::Clock;
using run_steps::seconds_since;

/// `text` quoted for a POSIX shell where it needs it.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("-_./=:,+@%", c) != nullptr;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

namespace run_steps {

std::string finished_epochs(const TrainPosition& position) {
  return "the checkpoint has finished " + std::to_string(position.epoch) +
         " epochs; raise --epochs to train longer";
}

/// The learning rate of a resumed run, as --lr-schedule chooses (options.hpp): `rejoin` keeps the
/// schedule of the whole run; the others start a decay at the checkpoint's position. Said when
/// the rate does not go on as it stood (a raised --epochs, or another schedule).
void resume_rate(const Config& config, const Checkpoint& ck, TrainData& data, std::FILE* out) {
  TrainParams& p = data.params;
  TrainParams before = p;
  before.epochs = ck.config.epochs;
  const float stood =
      ck.lr > 0.0f ? ck.lr : make_schedule(before, data.optimizer).at(ck.position.words_done);
  const float start = make_schedule(p, data.optimizer).alpha;
  if (config.lr_schedule != LrResume::kRejoin) {
    p.decay_from = ck.position.words_done;
    p.decay_scale = config.lr_schedule == LrResume::kRestart ? 1.0f : stood / start;
  }
  if (out == nullptr ||
      (config.epochs == ck.config.epochs && config.given.count("lr-schedule") == 0)) {
    return;
  }
  const LrSchedule now = make_schedule(p, data.optimizer);
  std::fprintf(out,
               "learning rate: %g at epoch %u of %u (it stood at %g, the checkpoint's run had %u "
               "epochs), down to %g at the end (--lr-schedule %s)\n",
               static_cast<double>(now.at(ck.position.words_done)), ck.position.epoch + 1,
               config.epochs, static_cast<double>(stood), ck.config.epochs,
               static_cast<double>(now.alpha * now.min_ratio),
               option_value(config, "lr-schedule").c_str());
}

}  // namespace run_steps

using run_steps::claim_run_output;
using run_steps::finished_epochs;

std::string resume_command(const Config& config, const std::string& checkpoint) {
  std::string command = "pagedw2v train --output " + shell_word(config.output);
  for (const OptionSpec& spec : train_options()) {
    if (config.given.count(spec.name) == 0 || checkpoint_records(spec.name) ||
        spec.name == "resume" || spec.name == "output") {
      continue;
    }
    std::string value = spec.get(config);
    // A decay begun anew by this run goes on from the rate it reaches, on the same line.
    if (spec.name == "lr-schedule" && config.lr_schedule != LrResume::kRejoin) value = "continue";
    command += spec.is_flag ? " --" + spec.name + "=" + shell_word(value)
                            : " --" + spec.name + " " + shell_word(value);
  }
  // Standard input is not read again by itself: the same text is piped to the command.
  if (config.corpus == "-") {
    return command + " --corpus - --resume " + shell_word(checkpoint) +
           " (with the same text on standard input)";
  }
  return command + " --resume " + shell_word(checkpoint);
}

Config merge_for_resume(const Config& saved, const Config& requested) {
  Config merged = requested;
  // The thread count and determinism go together: given either, the request decides both.
  const bool cpu_given =
      requested.given.count("threads") > 0 || requested.given.count("deterministic") > 0;
  for (const OptionSpec& spec : train_options()) {
    const bool given = requested.given.count(spec.name) > 0;
    if (spec.is_model) {
      const std::string have = spec.get(saved);
      if (given && spec.get(requested) != have) {
        throw UsageError("--" + spec.name + " cannot change when resuming (the checkpoint has " +
                         have + ")");
      }
      spec.set(merged, have);
    } else if (spec.name == "vocab") {
      // The checkpoint holds the vocabulary: another file would be ignored, so it is refused,
      // and run.json keeps the file the vocabulary came from.
      if (given && requested.vocab_file != saved.vocab_file) {
        throw UsageError(
            "--vocab cannot be given when resuming: the checkpoint holds its "
            "vocabulary" +
            (saved.vocab_file.empty() ? std::string(" (counted from the corpus)")
                                      : " (read from '" + saved.vocab_file + "')"));
      }
      spec.set(merged, spec.get(saved));
    } else if (spec.name == "continue-from" || spec.name == "continue-count") {
      // A continued run resumes as the run it is: started from the same run.
      spec.set(merged, spec.get(saved));
    } else if ((spec.name == "corpus" || spec.name == "epochs") && !given) {
      spec.set(merged, spec.get(saved));
    } else if ((spec.name == "threads" || spec.name == "deterministic") && !cpu_given) {
      spec.set(merged, spec.get(saved));
    } else if ((spec.name == "rank-tables" || spec.name == "device" || spec.name == "placement") &&
               !given) {
      // Where the run trained and how the ranks held the tables decide what it trains next:
      // the same, to resume exactly, unless the command chooses again.
      spec.set(merged, spec.get(saved));
    }
  }
  merged.continued = saved.continued;
  merged.given = requested.given;
  return merged;
}

void TrainingRun::settle_settings() {
  check_continue_settings(requested);
  if (!requested.resume.empty()) {
    if (requested.output.empty()) throw UsageError("--output is required");
    // The tables' layout follows the placement the merged settings resolve to: the run's plan
    // of its device, made once here.
    const auto paged = [&](uint64_t rows, const Config& recorded) {
      plan = plan_device(merge_for_resume(recorded, requested), rows, device_facts,
                         ranks ? ranks->size() : 1, /*resumed=*/true);
      return plan->paged();
    };
    const RowSelection rows =
        owned_rows_only ? RowSelection{ranks->rank(), ranks->size()} : RowSelection{};
    ck = requested.resume_file ? load_checkpoint(*requested.resume_file, paged, rows)
                               : load_checkpoint(requested.resume, paged, rows);
  }
  if (!requested.continue_from.empty() && requested.resume.empty()) {
    // Said before the run's tables are read: what the request alone shows (its settings are
    // checked once merged with the run's: --lr, say, is right for the run's optimizer).
    if (requested.corpus.empty()) throw UsageError("--corpus is required with --continue-from");
    if (requested.output.empty()) throw UsageError("--output is required");
    const std::string path = continue_checkpoint(requested.continue_from);
    // Read whole, its tables apart: this run's plan decides the layout of the grown tables (over
    // ranks, each rank takes the rows it owns).
    start = load_checkpoint(path);
    config = merge_for_continue(start->config, requested);
    config.continued = ContinueOrigin{path, run_output_set(path), start->vocab.size(), 0, 0};
  } else {
    config = ck ? merge_for_resume(ck->config, requested) : requested;
  }
  validate(config);
  if (config.hs && ranks != nullptr) {
    throw UsageError("--hs (hierarchical softmax) trains in one process, not over MPI ranks");
  }
  // Said before the corpus is read: a checkpoint that has trained every epoch asked for.
  if (ck && ck->position.epoch >= config.epochs) throw UsageError(finished_epochs(ck->position));
  if (config.keep_checkpoints == 0 && config.checkpoint_interval > 0) {
    throw UsageError("--checkpoint-interval needs --keep-checkpoints 1 or more");
  }
  out = config.quiet || !writes_files ? nullptr : log;
  if (writes_files) lock.emplace(claim_run_output(config, requested.resume));
  if (!config.eval_analogies.empty()) MappedFile check(config.eval_analogies);
  if (!config.eval_similarity.empty()) MappedFile check(config.eval_similarity);
  times.setup += seconds_since(t0);
}

}  // namespace pagedw2v
