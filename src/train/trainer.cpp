#include "train/trainer.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <tuple>

#include "backend/backend.hpp"
#include "base/atomic_file.hpp"
#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "base/mapped_file.hpp"
#include "base/string_index.hpp"
#include "corpus/corpus.hpp"
#include "corpus/corpus_stream.hpp"
#include "dist/ranks.hpp"
#include "eval/analogy.hpp"
#include "eval/similarity.hpp"
#include "gpu/gpu_plan.hpp"
#include "io/embeddings.hpp"
#include "io/export.hpp"
#include "io/output_claim.hpp"
#include "io/output_set.hpp"
#include "model/sampler.hpp"
#include "text/text_source.hpp"
#include "train/backend_factory.hpp"
#include "train/checkpoint.hpp"
#include "train/progress.hpp"
#include "train/run_check.hpp"
#include "train/run_record.hpp"
#include "train/run_setup.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

#ifndef PAGEDW2V_VERSION
#define PAGEDW2V_VERSION "unknown"
#endif

namespace pagedw2v {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
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

/// --max-corpus-memory in bytes: auto is a quarter of the machine's memory.
uint64_t corpus_memory_cap(const Config& config) {
  if (config.max_corpus_memory > 0) return config.max_corpus_memory;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

// A streamed corpus's share of --max-corpus-memory (docs/usage.md, host memory): half for the
// blocks that wait, a quarter for the blocks being trained, a quarter for their sentence offsets
// and the encoder's slice.
uint64_t stream_window_bytes(uint64_t cap) { return cap / 2; }
uint64_t stream_span_blocks(uint64_t cap, uint64_t backend_blocks) {
  return std::clamp<uint64_t>(cap / 4 / (kBlockWords * sizeof(uint32_t)), 1, backend_blocks);
}
// Beside it, the CUDA backend's two pinned chunk buffers (12 bytes a token) take an eighth more.
uint64_t stream_stage_tokens(uint64_t cap) {
  return std::max<uint64_t>(kMaxSentenceLength, cap / 8 / 24);
}
// A block's bytes in the window at most (CorpusStream counts 4 a token, 8 a sentence start).
constexpr uint64_t kMaxBlockBytes = kMaxBlockTokens * 4 + (kMaxBlockSentences + 1) * 8;

/// The fingerprint that checkpoints of versions before streaming recorded (a whole-buffer hash):
/// their checkpoints still resume on a corpus held whole.
CorpusFingerprint legacy_fingerprint(const EncodedCorpus& corpus) {
  CorpusFingerprint f;
  f.words = corpus.size();
  f.sentences = corpus.sentences();
  const uint64_t a =
      detail::hash_bytes(std::string_view(reinterpret_cast<const char*>(corpus.tokens.data()),
                                          corpus.tokens.size() * sizeof(uint32_t)));
  const uint64_t b = detail::hash_bytes(
      std::string_view(reinterpret_cast<const char*>(corpus.sentence_starts.data()),
                       corpus.sentence_starts.size() * sizeof(uint64_t)));
  f.hash = a ^ (b * 0x9E3779B97F4A7C15ull);
  return f;
}

bool same_vocabulary(const Vocab& a, const Vocab& b) {
  return a.words() == b.words() && a.counts() == b.counts();
}

/// The input vectors as evaluation reads them.
LoadedEmbeddings as_embeddings(const Vocab& vocab, const HostTable& table) {
  LoadedEmbeddings e;
  e.words = vocab.word_strings();
  e.counts = vocab.counts().to_vector();
  e.rows = table.rows();
  e.dim = table.dim();
  e.vectors.resize(table.rows() * table.dim());
  table.copy_to(e.vectors.data());
  return e;
}

/// The rows the per-epoch evaluation reads: the analogies search the first 30,000, the
/// similarity pairs look words up among the first 300,000 (gensim's defaults).
constexpr uint64_t kAnalogyRows = 30000;
constexpr uint64_t kSimilarityRows = 300000;

uint64_t evaluated_rows(const Config& config, uint64_t words) {
  uint64_t rows = 0;
  if (!config.eval_analogies.empty()) rows = kAnalogyRows;
  if (!config.eval_similarity.empty()) rows = std::max(rows, kSimilarityRows);
  return std::min(rows, words);
}

/// Over ranks: the input vectors of the words [0, rows), gathered from their owners into rank 0
/// (empty on the others). Collective.
LoadedEmbeddings gathered_embeddings(dist::Ranks& ranks, const Vocab& vocab, const Model& model,
                                     uint64_t rows) {
  LoadedEmbeddings e;
  if (ranks.writes_files()) {
    e.words.reserve(rows);
    for (uint32_t i = 0; i < rows; ++i) e.words.emplace_back(vocab.word(i));
    e.counts = vocab.counts().to_vector(rows);
    e.rows = rows;
    e.dim = model.input.dim();
    e.vectors.resize(rows * e.dim);
  }
  ranks.gather_rows({&model.input}, rows, [&](const RowBlock& b) {
    std::copy_n(b.tables[0], b.rows * b.dim, e.vectors.data() + b.first * b.dim);
  });
  return e;
}

/// Evaluates `e` (the input vectors, or, over ranks, the rows evaluated_rows() says).
std::optional<EpochEvaluation> evaluate_epoch(const Config& config, const LoadedEmbeddings& e,
                                              uint32_t epoch, std::FILE* out) {
  if (config.eval_analogies.empty() && config.eval_similarity.empty()) return std::nullopt;
  EpochEvaluation result;
  result.epoch = epoch;
  std::string line = "epoch " + std::to_string(epoch) + " evaluation:";
  char buf[160];
  if (!config.eval_analogies.empty()) {
    const AnalogyReport r = evaluate_analogies(e, config.eval_analogies, kAnalogyRows);
    result.has_analogies = true;
    result.analogy_accuracy_pct = r.accuracy_pct();
    result.analogy_correct = r.correct;
    result.analogy_evaluated = r.evaluated();
    std::snprintf(buf, sizeof buf, " analogies %.2f%% (%llu/%llu)", r.accuracy_pct(),
                  static_cast<unsigned long long>(r.correct),
                  static_cast<unsigned long long>(r.evaluated()));
    line += buf;
  }
  if (!config.eval_similarity.empty()) {
    const SimilarityReport r = evaluate_similarity(e, config.eval_similarity, kSimilarityRows);
    result.has_similarity = true;
    result.similarity_spearman = r.spearman;
    std::snprintf(buf, sizeof buf, " similarity spearman %.4f", r.spearman);
    line += buf;
  }
  if (out != nullptr) {
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
  }
  return result;
}

/// A number as JSON has it: NaN and infinities become null.
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

/// The record of a finished run (run.json).
std::string run_record(const Config& config, const TrainSummary& s, const std::string& backend,
                       uint32_t threads, const std::vector<std::string>& files,
                       const std::string& set_id) {
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

}  // namespace

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
    } else if ((spec.name == "corpus" || spec.name == "epochs") && !given) {
      spec.set(merged, spec.get(saved));
    } else if ((spec.name == "threads" || spec.name == "deterministic") && !cpu_given) {
      spec.set(merged, spec.get(saved));
    } else if (spec.name == "rank-tables" && !given) {
      // How the ranks held the tables decides what they train next: the same, to resume exactly.
      spec.set(merged, spec.get(saved));
    }
  }
  merged.given = requested.given;
  return merged;
}

TrainSummary run_training(const Config& requested, std::FILE* log, const std::atomic<int>* stop,
                          dist::Ranks* ranks) {
  // Over several ranks, rank 0 alone writes files and logs.
  const bool writes_files = ranks == nullptr || ranks->writes_files();
  const auto t0 = Clock::now();
  StageTimes times;
  std::optional<Checkpoint> ck;
  // Placement and GPU budget, resolved once for the model's layout and the backend.
  std::optional<GpuOptions> gpu;
  // Over ranks, every rank holds only the rows it owns (dist/owned_rows.hpp), and reads only those
  // from a checkpoint.
  const bool owned_rows_only = ranks != nullptr;
  if (!requested.resume.empty()) {
    if (requested.output.empty()) throw UsageError("--output is required");
    const auto paged = [&](uint64_t rows, uint32_t dim, OptimizerKind kind) {
      gpu = resolve_gpu_options(requested.device, rows, dim, kind, requested.gpu_options());
      return gpu->placement == Placement::kPaged;
    };
    const RowSelection rows =
        owned_rows_only ? RowSelection{ranks->rank(), ranks->size()} : RowSelection{};
    ck = requested.resume_file ? load_checkpoint(*requested.resume_file, paged, rows)
                               : load_checkpoint(requested.resume, paged, rows);
  }
  Config config = ck ? merge_for_resume(ck->config, requested) : requested;
  validate(config);
  // Said before the corpus is read: a checkpoint that has trained every epoch asked for.
  if (ck && ck->position.epoch >= config.epochs) throw UsageError(finished_epochs(ck->position));
  if (config.keep_checkpoints == 0 && config.checkpoint_interval > 0) {
    throw UsageError("--checkpoint-interval needs --keep-checkpoints 1 or more");
  }
  std::FILE* out = config.quiet || !writes_files ? nullptr : log;
  std::optional<OutputLock> lock;
  if (writes_files) lock.emplace(claim_run_output(config, requested.resume));
  if (!config.eval_analogies.empty()) MappedFile check(config.eval_analogies);
  if (!config.eval_similarity.empty()) MappedFile check(config.eval_similarity);
  times.setup += seconds_since(t0);

  auto t = Clock::now();
  CorpusText text = CorpusText::open(corpus_paths(config));
  times.read = seconds_since(t);
  // Whether the encoded corpus is held whole or streamed (corpus_stream.hpp): streamed when it
  // would take more than --max-corpus-memory.
  const uint64_t corpus_memory = corpus_memory_cap(config);
  const DeviceKind device = resolve_device(config.device);
  // The GPU's context is made while the corpus is counted and encoded.
  BackendWarmUp warm_up(device);
  t = Clock::now();
  Vocab counted;
  bool counted_here = false;
  if (ck) {
    if (requested.given.count("corpus")) {
      if (!same_vocabulary(count_vocabulary(text.parts(), config), ck->vocab)) {
        throw Error("corpus '" + config.corpus +
                    "' does not give the vocabulary of the checkpoint; resume with the corpus it "
                    "was trained on");
      }
    }
    counted = std::move(ck->vocab);
  } else if (!config.vocab_file.empty()) {
    counted = read_vocabulary(config);
    // The counts are taken as given (a vocabulary counted on a larger corpus weighs the noise
    // and --sample as that corpus did); more than the text could hold is said once.
    const uint64_t most = text.bytes() / 2 + 1;  // a word takes a byte and a separator
    if (writes_files && counted.total_count() > most) {
      std::fprintf(stderr,
                   "pagedw2v: warning: the counts of --vocab '%s' sum to %llu, more words than "
                   "the corpus's %llu bytes can hold; they weigh the noise distribution and "
                   "--sample as given\n",
                   config.vocab_file.c_str(),
                   static_cast<unsigned long long>(counted.total_count()),
                   static_cast<unsigned long long>(text.bytes()));
    }
  } else {
    // The count keeps its codes for a fast encoding only when the corpus will be held whole.
    // The text it has read leaves this process's resident memory as it goes (a mapped file's
    // pages stay in the page cache for the encoder or the stream), so that counting a large
    // file does not hold all of it beside the codes and the counting tables.
    counted = count_corpus_vocabulary(text, text.parts(), config, text.bytes() <= corpus_memory);
    counted_here = true;
  }
  times.vocabulary = seconds_since(t);
  // 4 bytes a word and 8 a sentence; a sentence of 40 words is short (random walks).
  const uint64_t corpus_bytes = ck             ? ck->corpus.words * 4 + ck->corpus.sentences * 8
                                : counted_here ? counted.total_count() / 10 * 42
                                               : text.bytes();
  // Ranks each hold the corpus whole (they train their share of its blocks): no stream.
  const bool streamed = !ranks && corpus_bytes > corpus_memory;
  if (streamed) {
    // The count read every page of the mapped text; the stream reads it again slice by slice.
    for (size_t i = 0; i < text.parts().size(); ++i) text.release(i, 0, text.parts()[i].size());
  }
  t = Clock::now();
  TrainingSet set = streamed ? make_training_set(std::move(counted), EncodedCorpus{}, config)
                             : make_training_set(text.parts(), config, std::move(counted));
  // Encoded whole, the text is read no more: its maps and buffers go before the tables are
  // allocated, so that they do not add to the peak of host memory (a stream reads it again).
  if (!streamed) text = CorpusText();
  // make_training_set gave back what the count and the encoder freed; the text's buffers go
  // back the same way.
  release_free_heap();
  const Vocab& vocab = set.vocab;
  if (writes_files && !config.save_vocab.empty()) {
    save_vocab_file(vocab, config.save_vocab, config.save_vocab_format);
  }
  // A corpus held whole is encoded: from now on only the checkpoints and the export read the
  // words, a slice at a time (the word2vec formats from a copy unpacked), so they are kept packed
  // (a stream looks words up in every pass; ranks write the rows they gather by words of their
  // own).
  if (!streamed && !ranks) pack_vocabulary(set, config.effective_threads());
  std::optional<CorpusFingerprint> corpus_id;
  // A corpus held whole is hashed on a thread of its own while the model and the backend are
  // set up, unless a checkpoint or other ranks need its fingerprint now.
  std::future<CorpusFingerprint> hashing;
  if (!streamed) {
    if (!ck && !ranks) {
      try {
        hashing = std::async(std::launch::async, [&set] { return fingerprint(set.corpus); });
      } catch (const std::system_error&) {
      }
    }
    if (!hashing.valid()) corpus_id = fingerprint(set.corpus);
  }
  // A streamed corpus: its words per epoch come from the count (or a pass over it), its
  // fingerprint at the end of the first pass (or from a pass before training, when resuming).
  EncodeOptions encode_options;
  encode_options.text = config.text_options();
  encode_options.threads = config.effective_threads();
  detail::ShardedWordTable built_table;
  std::optional<uint64_t> cache_key;
  std::string cache_file;
  std::vector<uint64_t> stream_bounds{0};
  uint64_t stream_words = 0;
  std::function<std::unique_ptr<BlockReader>()> open_pass;
  bool cache_checked = false;  // a cache read this run has been verified whole
  if (streamed) {
    if (vocab.lookup() == nullptr)
      built_table = detail::lookup_table(vocab, encode_options.threads);
    const detail::ShardedWordTable& table =
        vocab.lookup() != nullptr ? *vocab.lookup() : built_table;
    if (!config.cache_dir.empty()) {
      prepare_output_dir(config.cache_dir);
      cache_key = encoding_key(corpus_paths(config), vocab, encode_options);
      if (cache_key) cache_file = cache_path(config.cache_dir, *cache_key);
    }
    open_pass = [&, cache = cache_key]() -> std::unique_ptr<BlockReader> {
      if (cache && read_cache_summary(cache_file, *cache)) {
        // A cache from an earlier run is read whole once before anything trains on it: ids
        // damaged within the vocabulary's range show only in its hash, at the end of a pass.
        if (!cache_checked) verify_cache(cache_file, *cache, vocab.size());
        cache_checked = true;
        return cache_block_reader(cache_file, *cache, vocab.size());
      }
      // Slices of text small beside the cap: a slice's tokens are held while it is cut.
      const size_t slice = static_cast<size_t>(
          std::clamp<uint64_t>(corpus_memory / 8, uint64_t{64} << 10, uint64_t{1} << 20));
      std::unique_ptr<BlockReader> r = text_block_reader(text, table, encode_options, slice);
      if (cache) {
        r = caching_block_reader(std::move(r), cache_file, *cache);
        cache_checked = true;  // written by this run from the text
      }
      return r;
    };
    if (counted_here) {
      stream_words = vocab.total_count();
    } else {
      // A vocabulary read from a file or a checkpoint does not say how many words the corpus
      // has, nor where resuming lands: one pass says (and writes the cache on the way). A cache
      // it reads is verified by the pass itself, before any training.
      cache_checked = true;
      std::unique_ptr<BlockReader> r = open_pass();
      StreamBlock b;
      CorpusHasher h;
      h.add_start(0);
      while (r->next(b)) {
        h.add_tokens(b.tokens.data(), b.tokens.size());
        for (size_t i = 1; i < b.starts.size(); ++i) h.add_start(b.starts[i]);
        stream_bounds.push_back(b.first_sentence + b.starts.size() - 1);
      }
      r.reset();
      corpus_id = CorpusFingerprint{h.words(), h.sentences(), h.hash()};
      stream_words = h.words();
      if (stream_words == 0)
        throw Error("corpus '" + config.corpus + "' holds no word of the vocabulary");
    }
  }
  if (ck && !(*corpus_id == ck->corpus) &&
      !(!streamed && legacy_fingerprint(set.corpus) == ck->corpus)) {
    throw Error("corpus '" + config.corpus + "' is not the corpus the checkpoint was trained on");
  }
  // Also waits for rank 0 to have claimed the output directory.
  if (ranks) ranks->check_same(corpus_id->hash ^ vocab.size(), "corpus and vocabulary");
  times.encoding = seconds_since(t);
  if (out) {
    if (streamed) {
      std::fprintf(out,
                   "vocabulary: %u words (min-count %llu); %llu words/epoch, streamed: more than "
                   "--max-corpus-memory %s encoded (%.2f s)\n",
                   vocab.size(), static_cast<unsigned long long>(config.min_count),
                   static_cast<unsigned long long>(stream_words),
                   format_byte_size(corpus_memory).c_str(), seconds_since(t0));
    } else {
      std::fprintf(out,
                   "vocabulary: %u words (min-count %llu); %llu words/epoch in %llu sentences "
                   "(%.2f s)\n",
                   vocab.size(), static_cast<unsigned long long>(config.min_count),
                   static_cast<unsigned long long>(set.corpus.size()),
                   static_cast<unsigned long long>(set.corpus.sentences()), seconds_since(t0));
    }
    // What --min-count and --max-vocab left out, as gensim's build_vocab reports it.
    const uint64_t distinct = vocab.distinct_words(), tokens = vocab.corpus_tokens();
    if (distinct > vocab.size() && tokens > 0) {
      const uint64_t dropped_tokens = tokens - std::min(tokens, vocab.total_count());
      std::string limits = "--min-count " + std::to_string(config.min_count);
      if (config.max_vocab > 0) limits += ", --max-vocab " + std::to_string(config.max_vocab);
      std::fprintf(
          out, "dropped by %s: %llu of %llu distinct words, %llu of %llu tokens (%.2f %%)\n",
          limits.c_str(), static_cast<unsigned long long>(distinct - vocab.size()),
          static_cast<unsigned long long>(distinct),
          static_cast<unsigned long long>(dropped_tokens), static_cast<unsigned long long>(tokens),
          100.0 * static_cast<double>(dropped_tokens) / static_cast<double>(tokens));
    }
  }
  EncodedCorpus window;  // the blocks a streamed run trains now
  // What the backend reads: a streamed corpus is a window that each span refills.
  auto run_data = [&](TrainData d) {
    if (streamed) {
      d.corpus = &window;
      d.blocks = &stream_bounds;
      d.params.words_per_epoch = stream_words;
      d.streamed = true;
      d.stage_tokens = stream_stage_tokens(corpus_memory);
    }
    return d;
  };
  t = Clock::now();
  warm_up.wait();
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
    gpu = plan_placement(config, set, run_data);
  }
  TrainData data = run_data(set.train_data(config));
  const TrainParams& p = data.params;

  Model model;
  TrainPosition pos;
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
    } else {
      model = make_run_model(config, vocab.size(), *gpu);
    }
  }
  const uint32_t threads = config.effective_threads();
  GpuOptions gpu_settings = gpu.value_or(config.gpu_options());
  gpu_settings.deterministic = config.deterministic;  // a resumed run's may be the checkpoint's
  std::unique_ptr<Backend> backend =
      ranks ? ranks->make_backend(model, data, threads, rank_gpus, config.deterministic,
                                  config.rank_tables)
            : make_backend(config.device, model, data, threads, gpu_settings);
  if (ranks) stop = ranks->agreed_stop();
  if (out) std::fprintf(out, "backend: %s\n", backend->describe().c_str());
  CheckpointDir checkpoints(config.output, config.keep_checkpoints, p.words_per_epoch);
  // Made once the corpus's fingerprint is known (a streamed corpus: after its first pass).
  std::optional<CheckpointWriter> writer;
  if (hashing.valid()) corpus_id = hashing.get();
  if (corpus_id) writer.emplace(checkpoints, config, vocab, *corpus_id);
  auto ensure_writer = [&] {
    if (writer) return;
    // Stopped during the first pass of a streamed corpus: one pass of its own says.
    std::unique_ptr<BlockReader> r = open_pass();
    const StreamSummary f = scan_blocks(*r);
    corpus_id = CorpusFingerprint{f.words, f.sentences, f.hash};
    writer.emplace(checkpoints, config, vocab, *corpus_id);
  };
  // The last checkpoint's file (its vocabulary and settings) is made while the run trains, so
  // that the run's end writes only its tables (over ranks, rank 0 writes it from the blocks it
  // gathers).
  if (writes_files && writer && config.keep_checkpoints > 0 && !ranks) {
    writer->prepare({p.epochs, 0, 0}, model.input.rows(), model.input.dim());
  }
  times.setup += seconds_since(t);
  // Over ranks: the model's tables in a checkpoint's order (checkpoint_tables), the first `count`.
  auto rank_tables = [&](uint32_t count) {
    std::vector<const HostTable*> all = {&model.input, &model.output};
    for (size_t k = 0; k < model.input_state.size(); ++k) {
      all.push_back(&model.input_state[k]);
      all.push_back(&model.output_state[k]);
    }
    all.resize(std::min<size_t>(all.size(), count));
    return all;
  };
  // Over ranks, a checkpoint is written as every rank reaches it: rank 0 gathers the rows from
  // their owners a block at a time, in id order, and writes each block into the file.
  auto gathered_checkpoint = [&](bool end_of_epoch, const TrainPosition& at, float lr) {
    std::unique_ptr<CheckpointRowWriter> rows;
    if (writes_files) rows = writer->open_rows(end_of_epoch, at, lr);
    ranks->gather_rows(rank_tables(checkpoint_tables(config.optimizer)), vocab.size(),
                       [&](const RowBlock& b) { rows->write(b); });
    if (writes_files) writer->commit_rows(*rows);
  };

  const uint64_t total_words = static_cast<uint64_t>(p.epochs) * p.words_per_epoch;
  const LrSchedule schedule = make_schedule(p, data.optimizer);
  Progress progress(out, total_words, pos.words_done, p.epochs);
  // A streamed corpus's block count is known before training only when resuming (the pass above).
  const uint64_t nblocks = streamed ? stream_bounds.size() - 1 : set.block_count();
  if (!requested.resume.empty()) {
    pos = resume_position(pos, nblocks, requested.resume);
    if (pos.epoch >= p.epochs) throw UsageError(finished_epochs(pos));
  }
  std::optional<CorpusStream> stream;
  if (streamed) stream.emplace(stream_window_bytes(corpus_memory));
  uint64_t span_blocks = std::max<uint64_t>(1, backend->span_words() / kBlockWords);
  // The CPU backend's spans are only where its threads meet (a token's rate depends on its
  // position alone): on a corpus of less than fifty spans an epoch, they are cut to a fiftieth of
  // it, so that the progress line moves steadily, but to no less than eight blocks a thread, so
  // that the threads' wait for the last block of a span stays small.
  if (!ranks && !streamed && backend->name() == "cpu") {
    span_blocks = std::min(span_blocks, std::max<uint64_t>(uint64_t{8} * threads, nblocks / 50));
  }
  // Streamed spans of whole super-batches where the backend needs them (align > 1): at their
  // largest, they fit the quarter of the memory that training may hold, so the window hands
  // them over whole.
  uint64_t align = 1;
  if (streamed) {
    span_blocks = stream_span_blocks(corpus_memory, span_blocks);
    align = backend->span_align_blocks();
    if (align > 1) {
      const uint64_t fit = corpus_memory / 4 / kMaxBlockBytes;
      if (fit < align) {
        throw UsageError("--max-corpus-memory " + format_byte_size(corpus_memory) +
                         " is too small to stream the corpus to the " + backend->name() +
                         " backend with --optimizer " + to_string(config.optimizer) +
                         ": a quarter of it must hold a super-batch of " +
                         std::to_string(align * kBlockWords) + " words at its largest; give " +
                         format_byte_size((4 * align * kMaxBlockBytes + 1023) >> 10 << 10) +
                         " or more, or lower --batch-words");
      }
      span_blocks = std::min(span_blocks, fit) / align * align;
      span_blocks = std::max(span_blocks, align);
    }
  }
  const auto t_train = Clock::now();
  const uint64_t words_at_start = pos.words_done;
  uint64_t examples = 0;
  auto last_checkpoint = Clock::now();
  double side_seconds = 0;  // checkpoints and evaluation, not counted as training time
  const bool keep_any = config.keep_checkpoints > 0;
  TrainSummary summary;
  if (!requested.resume.empty()) {
    summary.earlier_epoch_loss =
        recorded_epoch_losses(run_record_path_of(requested.resume), pos.epoch);
  }

  for (uint32_t epoch = pos.epoch; epoch < p.epochs; ++epoch) {
    double epoch_loss = 0;
    uint64_t epoch_terms = 0;
    if (stream) stream->start(open_pass(), pos.block);
    for (uint64_t b = pos.block, e = 0;; b = e) {
      e = std::min(nblocks, b + span_blocks);
      if (stream) {
        e = b + stream->take(span_blocks - b % align, window, stream_bounds);
        if (e == b) break;
      } else if (b >= nblocks) {
        break;
      }
      const SpanStats s = backend->train(epoch, b, e);
      pos = {epoch, e, pos.words_done + s.words};
      examples += s.loss_terms;
      epoch_loss += s.loss;
      epoch_terms += s.loss_terms;
      progress.update(pos.words_done, s.loss, s.loss_terms, schedule.at(pos.words_done), epoch);
      if (!std::isfinite(s.loss)) {
        progress.finish();
        throw Error("training diverged (the loss is not finite after " +
                    std::to_string(pos.words_done) + " words); lower --" +
                    (config.optimizer == OptimizerKind::kSgd ? "alpha" : "lr"));
      }
      const int sig = stop != nullptr ? stop->load() : 0;
      if (sig != 0) {
        progress.finish();
        // Nothing trains after this checkpoint: it is written from the tables, here. After an
        // epoch's last block it stands where the next epoch starts.
        const bool epoch_done = !stream && e >= nblocks;
        const TrainPosition at = epoch_done ? TrainPosition{epoch + 1, 0, pos.words_done} : pos;
        backend->sync_to_host();
        if (ranks) {
          gathered_checkpoint(epoch_done, at, schedule.at(at.words_done));
        } else if (writes_files) {
          ensure_writer();
          writer->write_now(epoch_done, model, at, schedule.at(at.words_done));
        }
        const std::string path =
            writes_files ? writer->wait() : config.output + "/checkpoints/latest.h5";
        throw Interrupted(
            sig, "stopped by signal " + std::to_string(sig) + " after " +
                     std::to_string(pos.words_done) + " words; resume with: " +
                     (ranks ? "mpirun -np " + std::to_string(ranks->size()) + " " : std::string()) +
                     resume_command(config, path));
      }
      // A timed checkpoint waits while the previous one is still being written.
      // Not after an epoch's last block (its end writes one), nor in a streamed corpus's first
      // pass (its fingerprint is not known yet); blocks known beyond e say e is not the last.
      const bool timed = config.checkpoint_interval > 0 && e + 1 < data.blocks->size() && writer &&
                         !writer->busy() &&
                         seconds_since(last_checkpoint) >= config.checkpoint_interval;
      if (ranks ? ranks->rank0_decides(timed) : timed) {
        const auto tc = Clock::now();
        backend->sync_to_host();
        if (ranks) {
          gathered_checkpoint(false, pos, schedule.at(pos.words_done));
        } else if (writes_files) {
          writer->write_snapshot(false, model, pos, schedule.at(pos.words_done));
        }
        last_checkpoint = Clock::now();
        side_seconds += seconds_since(tc);
      }
    }
    if (stream) {
      const StreamSummary& f = stream->summary();
      const CorpusFingerprint read{f.words, f.sentences, f.hash};
      if (f.words != p.words_per_epoch || (corpus_id && !(read == *corpus_id))) {
        throw Error("corpus '" + config.corpus + "' changed while it was trained on (" +
                    std::to_string(f.words) + " words of the vocabulary in this pass, " +
                    std::to_string(p.words_per_epoch) + " expected)");
      }
      if (!writer) {
        corpus_id = read;
        writer.emplace(checkpoints, config, vocab, *corpus_id);
      }
    }
    pos = {epoch + 1, 0, pos.words_done};
    progress.end_epoch(epoch, schedule.at(pos.words_done));
    summary.epoch_loss.push_back(epoch_terms > 0 ? epoch_loss / static_cast<double>(epoch_terms)
                                                 : 0.0);
    const bool last = epoch + 1 == p.epochs;
    const bool evaluate = !config.eval_analogies.empty() || !config.eval_similarity.empty();
    if (keep_any || last) {
      const auto tc = Clock::now();
      backend->sync_to_host();
      if (ranks && keep_any && !last) {
        gathered_checkpoint(true, pos, schedule.at(pos.words_done));
      } else if (writes_files && keep_any && !last) {
        writer->write_snapshot(true, model, pos, schedule.at(pos.words_done));
      }
      last_checkpoint = Clock::now();
      side_seconds += seconds_since(tc);
    }
    if (evaluate && (writes_files || ranks)) {
      progress.finish();
      const auto te = Clock::now();
      // Over ranks, every rank sends its rows of those the evaluation reads; rank 0 evaluates.
      const LoadedEmbeddings e =
          ranks ? gathered_embeddings(*ranks, vocab, model, evaluated_rows(config, vocab.size()))
                : as_embeddings(vocab, model.input);
      if (writes_files) {
        if (auto r = evaluate_epoch(config, e, epoch + 1, out)) summary.evaluations.push_back(*r);
      }
      times.evaluation += seconds_since(te);
      side_seconds += seconds_since(te);
    }
  }
  times.training = seconds_since(t_train) - side_seconds;
  progress.finish();
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
    return summary;
  }
  if (!ranks) check_run_outcome(examples, model);
  if (const std::string warning = untrained_warning(examples); !warning.empty() && log) {
    std::fprintf(log, "pagedw2v: %s\n", warning.c_str());
    std::fflush(log);
  }
  // Training is over: what the last checkpoint and the export do not read goes before they are
  // written, so that their buffers take its place at the peak of host memory: the backend (its
  // device memory, pinned staging and threads) and the encoded corpus (4 bytes a word).
  const std::string device_name = backend->name();
  const std::string backend_description = backend->describe();
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
  const FsyncScope final_writes(config.fsync_outputs);
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
  StagedFiles staged(config.output);
  if (ranks) {
    std::unique_ptr<CheckpointRowWriter> ck_rows;
    if (keep_any) ck_rows = writer->open_rows(true, pos, schedule.at(pos.words_done));
    ExportRowWriter export_rows(staged, vocab, config.dim, export_options);
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
    write_export(staged, vocab, model, export_options);
  }
  summary.last_checkpoint = writer->wait();
  times.export_files = seconds_since(t_export);
  times.checkpoints = writer->caller_seconds();
  times.checkpoint_writing = writer->write_seconds();

  summary.vocab_size = vocab.size();
  summary.corpus_tokens = vocab.corpus_tokens();
  summary.distinct_words = vocab.distinct_words();
  summary.kept_tokens = vocab.total_count();
  summary.words_per_epoch = p.words_per_epoch;
  summary.words = pos.words_done;
  summary.words_trained_now = pos.words_done - words_at_start;
  summary.train_seconds = times.training;
  summary.final_loss = progress.smoothed_loss();
  summary.device = device_name;
  // run.json goes in with the export files; its own writing is not timed.
  std::vector<std::string> files;
  for (const std::string& n : staged.names()) files.push_back(staged.dir() + "/" + n);
  files.push_back(staged.dir() + "/" + kRunRecordName);
  times.total = seconds_since(t0);
  summary.times = times;
  summary.total_seconds = times.total;
  staged.add(kRunRecordName,
             run_record(config, summary, backend_description, threads, files, staged.set_id()));
  summary.files = staged.commit(output_set_names());

  if (out) {
    const uint64_t trained = summary.words_trained_now;
    std::fprintf(out,
                 "trained %llu words in %.2f s on %s: %.0f words/s (%.2f s in all, loss %.4f)\n",
                 static_cast<unsigned long long>(trained), times.training, summary.device.c_str(),
                 times.training > 0 ? static_cast<double>(trained) / times.training : 0.0,
                 times.total, summary.final_loss);
    std::fprintf(out,
                 "time: read %.2f s, vocabulary %.2f s, encoding %.2f s, setup %.2f s, training "
                 "%.2f s, checkpoints %.2f s (%.2f s written in the background), evaluation "
                 "%.2f s, export %.2f s\n",
                 times.read, times.vocabulary, times.encoding, times.setup, times.training,
                 times.checkpoints, times.checkpoint_writing, times.evaluation, times.export_files);
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
  return summary;
}

}  // namespace pagedw2v
