/// @file run_outputs.cpp
/// What a run writes besides its checkpoints during training: the claim of the output
/// directory at the start, the last checkpoint and the export files at the end (gathered from
/// the ranks over MPI), run.json with them, and the log's closing lines.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "base/path_parts.hpp"
#include "base/string_index.hpp"
#include "dist/ranks.hpp"
#include "io/embeddings.hpp"
#include "io/export.hpp"
#include "model/sampler.hpp"
#include "train/run_check.hpp"
#include "train/run_record.hpp"
#include "train/training_run.hpp"

#ifndef PAGEDW2V_VERSION
#define PAGEDW2V_VERSION "unknown"
#endif

namespace pagedw2v {

namespace {

using run_steps::Clock;
using run_steps::seconds_since;

/// The names in `dir` that `keep` accepts.
std::vector<std::string> entries(const std::string& dir, bool (*keep)(const std::string&)) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (keep(e->d_name)) names.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool is_checkpoint_file(const std::string& name) {
  return name == "latest.h5" || checkpoint_words(name, 1).has_value();
}

}  // namespace

namespace run_steps {

/// Creates `dir` (and its parents) and checks that it can be written, before any training.
void prepare_output_dir(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        throw Error("cannot create output directory '" + partial + "': " + std::strerror(errno));
      }
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("output '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Error("cannot write to output directory '" + dir + "': " + std::strerror(errno));
  }
}

/// Claims the output directory for this run (output_claim.hpp: its lock, and the rule that no
/// input, no file of another run and no other existing file is replaced unless --overwrite says
/// so). A run resumed from a checkpoint of this directory continues that run. With --overwrite,
/// the other run's checkpoints go now, so that they never mix with this run's; its set's files
/// are replaced together at the end.
OutputLock claim_run_output(const Config& config, const std::string& resume_from) {
  const std::string& out = config.output;
  const std::string checkpoints = out + "/checkpoints";
  OutputClaim claim;
  claim.dir = out;
  claim.overwrite = config.overwrite;
  claim.continues = !resume_from.empty() && same_directory(dir_of(resume_from), checkpoints);
  for (const std::string& path : corpus_paths(config)) claim.inputs.push_back({"--corpus", path});
  claim.inputs.push_back({"--vocab", config.vocab_file});
  claim.inputs.push_back({"--eval-analogies", config.eval_analogies});
  claim.inputs.push_back({"--eval-similarity", config.eval_similarity});
  if (!claim.continues) claim.inputs.push_back({"--resume", resume_from});
  claim.inputs.push_back({"--continue-from", config.continued.checkpoint});
  claim.other_outputs.push_back({"--save-vocab", config.save_vocab});
  for (const std::string& n : entries(checkpoints, is_checkpoint_file)) {
    claim.earlier_files.push_back(checkpoints + "/" + n);
  }
  OutputLock lock = claim_output(claim);
  if (!claim.continues && config.overwrite) {
    for (const std::string& path : claim.earlier_files) {
      if (path != resume_from && std::remove(path.c_str()) != 0) {
        throw Error("cannot remove the older '" + path + "': " + std::strerror(errno));
      }
    }
  }
  return lock;
}

}  // namespace run_steps

namespace {

/// A number as JSON has it: NaN and infinities become null.
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

/// run.json's record of --phrases: each pass's phrases and the words it counted, the tokens
/// joined, and the file that holds the phrases; null without phrases.
nlohmann::ordered_json phrases_record(const Config& config, const PhraseSummary& summary) {
  using json = nlohmann::ordered_json;
  if (config.phrases == 0 && config.phrases_from.empty()) return json();
  json passes = json::array();
  for (size_t k = 0; k < summary.phrases.size(); ++k) {
    json pass = {{"pass", k + 1}, {"phrases", summary.phrases[k]}};
    if (k < summary.words.size()) pass["words_counted"] = summary.words[k];
    passes.push_back(pass);
  }
  return {{"learned", config.phrases_from.empty()},
          {"passes", passes},
          {"joined_tokens", summary.joined},
          {"file", kPhraseFileName}};
}

/// The record of a finished run (run.json).
std::string run_record(const Config& config, const TrainSummary& s, const std::string& backend,
                       uint32_t threads, const std::vector<std::string>& files,
                       const std::string& set_id, const nlohmann::ordered_json& phrases) {
  using json = nlohmann::ordered_json;
  const json settings = settings_json(config);
  const StageTimes& t = s.times;
  json evaluations = json::array();
  for (const EpochEvaluation& e : s.evaluations) {
    json entry = {{"epoch", e.epoch}};
    if (e.has_analogies) {
      entry["analogies"] = {{"accuracy_pct", number(e.analogy_accuracy_pct)},
                            {"correct", e.analogy_correct},
                            {"evaluated", e.analogy_evaluated}};
    }
    if (e.has_similarity) entry["similarity"] = {{"spearman", number(e.similarity_spearman)}};
    evaluations.push_back(entry);
  }
  // Every epoch of the run, those of earlier commands of a resumed run first.
  json losses = json::array();
  for (const double l : s.earlier_epoch_loss) losses.push_back(number(l));
  for (const double l : s.epoch_loss) losses.push_back(number(l));
  json record = {
      {"pagedw2v_version", PAGEDW2V_VERSION},
      {"settings", settings},
      {"device", s.device},
      {"backend", backend},
      {"threads", threads},
      {"vocabulary",
       {{"words", s.vocab_size},
        {"corpus_tokens", s.corpus_tokens},
        {"distinct_words", s.distinct_words},
        {"dropped_words", s.distinct_words > s.vocab_size ? s.distinct_words - s.vocab_size : 0},
        {"dropped_tokens", s.corpus_tokens > s.kept_tokens ? s.corpus_tokens - s.kept_tokens : 0}}},
      {"words_per_epoch", s.words_per_epoch},
      {"words_trained", s.words},
      {"words_trained_by_this_command", s.words_trained_now},
      {"words_per_second",
       number(s.train_seconds > 0 ? static_cast<double>(s.words_trained_now) / s.train_seconds
                                  : 0.0)},
      {"loss_per_epoch", losses},
      {"epochs_before_this_command", s.earlier_epoch_loss.size()},
      {"final_loss", number(s.final_loss)},
      {"seconds",
       {{"read", t.read},
        {"phrases", t.phrases},
        {"vocabulary", t.vocabulary},
        {"encoding", t.encoding},
        {"setup", t.setup},
        {"training", t.training},
        {"checkpoints", t.checkpoints},
        {"checkpoint_writing", t.checkpoint_writing},
        {"evaluation", t.evaluation},
        {"export", t.export_files},
        {"total", t.total}}},
      {"evaluation", evaluations},
      {"checkpoint", s.last_checkpoint.empty() ? json() : json(s.last_checkpoint)},
      {"files", files},
      {"output_set", set_id},
  };
  if (!phrases.is_null()) record["phrases"] = phrases;
  // A run continued from another: which, and what it kept and added.
  if (!config.continue_from.empty()) {
    const ContinueOrigin& c = config.continued;
    record["continued_from"] = {{"path", config.continue_from},
                                {"checkpoint", c.checkpoint},
                                {"output_set", c.output_set.empty() ? json() : json(c.output_set)},
                                {"words_kept", c.words_kept},
                                {"words_added", c.words_added},
                                {"new_words_left_out", c.words_left_out},
                                {"new_tokens_left_out", c.tokens_left_out},
                                {"count", to_string(config.continue_count)}};
  }
  // Over ranks: what each rank held.
  if (!s.ranks.empty()) {
    json ranks = json::array();
    for (const dist::RankMemory& r : s.ranks) {
      ranks.push_back({{"rank", r.rank},
                       {"table_rows", r.table_rows},
                       {"working_rows", r.working_rows},
                       {"peak_rss_bytes", r.peak_rss_bytes}});
    }
    record["ranks"] = ranks;
  }
  // Paths and words are bytes, not always UTF-8: invalid sequences become U+FFFD.
  return record.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

bool TrainingRun::write_outputs() {
  // Over ranks, the last checkpoint and the export are written as rank 0 gathers the rows (below):
  // every table when a checkpoint is kept, else the input vectors and, with --save-context, the
  // output vectors.
  const uint32_t final_tables = keep_any              ? checkpoint_tables(config.optimizer)
                                : config.save_context ? 2
                                                      : 1;
  if (!writes_files) {
    ranks->gather_rows(rank_tables(final_tables), vocab.size(), {});
    summary.ranks = ranks->memory_of_ranks();
    summary.vocab_size = vocab.size();
    summary.words = pos.words_done;
    summary.words_trained_now = pos.words_done - words_at_start;
    summary.train_seconds = times.training;
    summary.device = backend->name();
    return false;
  }
  if (!ranks) check_run_outcome(examples, model);
  if (const std::string warning = untrained_warning(examples); !warning.empty() && log) {
    std::fprintf(log, "pagedw2v: %s\n", warning.c_str());
    std::fflush(log);
  }
  // Training is over: what the last checkpoint and the export do not read goes before they are
  // written, so that their buffers take its place at the peak of host memory: the backend (its
  // device memory, pinned staging and threads) and the encoded corpus (4 bytes a word).
  device_name = backend->name();
  backend_description = backend->describe();
  if (!ranks) {
    backend.reset();
    stream.reset();
    set.corpus = EncodedCorpus{};
    release_free_heap();
  }

  // The last checkpoint needs no copy: nothing trains any more. It is written from the tables
  // while the export files are. These files are atomic, but fsync'ed only with --fsync-outputs
  // (as numpy, gensim and word2vec.c write theirs); checkpoints written during training are,
  // since they are there to survive a failure mid-run.
  const auto t_export = Clock::now();
  ensure_writer();
  writer->release_snapshot();
  final_writes.emplace(config.fsync_outputs);
  if (keep_any && !ranks) {
    writer->write_in_place(true, model, pos, schedule.at(pos.words_done));
  }
  ExportOptions export_options;
  export_options.formats = config.formats;
  export_options.save_context = config.save_context;
  export_options.attributes = {
      {"model", to_string(config.model)},
      {"dim", static_cast<int64_t>(config.dim)},
      {"window", static_cast<int64_t>(config.window)},
      {"negative", static_cast<int64_t>(config.negative)},
      {"sample", config.sample},
      {"min_count", static_cast<int64_t>(config.min_count)},
      {"max_vocab", static_cast<int64_t>(config.max_vocab)},
      {"alpha", static_cast<double>(p.alpha)},
      {"epochs", static_cast<int64_t>(config.epochs)},
      {"seed", static_cast<int64_t>(config.seed)},
      {"device", device_name},
      {"corpus", config.corpus},
      {"words_trained", static_cast<int64_t>(pos.words_done)},
      {"optimizer", to_string(config.optimizer)},
      {"pagedw2v_version", std::string(PAGEDW2V_VERSION)},
  };
  if (config.optimizer != OptimizerKind::kSgd) {
    const OptimizerParams& o = data.optimizer;
    const std::tuple<const char*, const char*, float> hyper[] = {
        {"lr", "lr", o.lr},
        {"beta1", "beta1", o.beta1},
        {"beta2", "beta2", o.beta2},
        {"eps", "eps", o.eps},
        {"weight-decay", "weight_decay", o.weight_decay},
        {"rho", "rho", o.rho}};
    for (const auto& [option, attribute, value] : hyper) {
      if (uses_hyperparameter(config.optimizer, option)) {
        export_options.attributes.push_back({attribute, static_cast<double>(value)});
      }
    }
  }
  staged.emplace(config.output);
  if (ranks) {
    std::unique_ptr<CheckpointRowWriter> ck_rows;
    if (keep_any) ck_rows = writer->open_rows(true, pos, schedule.at(pos.words_done));
    ExportRowWriter export_rows(*staged, vocab, config.dim, export_options);
    uint64_t nonfinite = 0;
    ranks->gather_rows(rank_tables(final_tables), vocab.size(), [&](const RowBlock& b) {
      nonfinite += nonfinite_rows(b.tables[0], b.rows, b.dim);
      if (ck_rows) ck_rows->write(b);
      export_rows.write(b);
    });
    summary.ranks = ranks->memory_of_ranks();
    // As one process checks before it writes; the files written are staged, and go.
    check_finite_rows(nonfinite, vocab.size());
    export_rows.finish();
    if (ck_rows) writer->commit_rows(*ck_rows, /*beside_other_files=*/true);
  } else {
    write_export(*staged, vocab, model, export_options);
  }
  summary.last_checkpoint = writer->wait();
  times.export_files = seconds_since(t_export);
  times.checkpoints = writer->caller_seconds();
  times.checkpoint_writing = writer->write_seconds();
  return true;
}

void TrainingRun::record_run() {
  summary.vocab_size = vocab.size();
  summary.corpus_tokens = vocab.corpus_tokens();
  summary.distinct_words = vocab.distinct_words();
  summary.kept_tokens = vocab.total_count();
  summary.words_per_epoch = p.words_per_epoch;
  summary.words = pos.words_done;
  summary.words_trained_now = pos.words_done - words_at_start;
  summary.train_seconds = times.training;
  summary.final_loss = progress->smoothed_loss();
  summary.device = device_name;
  // The phrases the run joined, to read again with --phrases-from.
  if (config.phrases > 0 || !config.phrases_from.empty()) {
    staged->add(kPhraseFileName, phrase_summary.file_text);
  }
  // run.json goes in with the export files; its own writing is not timed.
  std::vector<std::string> files;
  for (const std::string& n : staged->names()) files.push_back(staged->dir() + "/" + n);
  files.push_back(staged->dir() + "/" + kRunRecordName);
  times.total = seconds_since(t0);
  summary.times = times;
  summary.total_seconds = times.total;
  staged->add(kRunRecordName, run_record(config, summary, backend_description, threads, files,
                                         staged->set_id(), phrases_record(config, phrase_summary)));
  summary.files = staged->commit(output_set_names());

  if (out) {
    const uint64_t trained = summary.words_trained_now;
    std::fprintf(out,
                 "trained %llu words in %.2f s on %s: %.0f words/s (%.2f s in all, loss %.4f)\n",
                 static_cast<unsigned long long>(trained), times.training, summary.device.c_str(),
                 times.training > 0 ? static_cast<double>(trained) / times.training : 0.0,
                 times.total, summary.final_loss);
    std::fprintf(out,
                 "time: read %.2f s, phrases %.2f s, vocabulary %.2f s, encoding %.2f s, setup "
                 "%.2f s, training %.2f s, checkpoints %.2f s (%.2f s written in the background), "
                 "evaluation %.2f s, export %.2f s\n",
                 times.read, times.phrases, times.vocabulary, times.encoding, times.setup,
                 times.training, times.checkpoints, times.checkpoint_writing, times.evaluation,
                 times.export_files);
    if (words_at_start > 0) {
      std::fprintf(out, "resumed at word %llu: %llu words trained in all\n",
                   static_cast<unsigned long long>(words_at_start),
                   static_cast<unsigned long long>(pos.words_done));
    }
    std::string wrote;
    for (const std::string& f : summary.files) wrote += "\n  " + f;
    if (!summary.last_checkpoint.empty()) wrote += "\n  " + summary.last_checkpoint;
    std::fprintf(out, "wrote:%s\n", wrote.c_str());
  }
}

}  // namespace pagedw2v
