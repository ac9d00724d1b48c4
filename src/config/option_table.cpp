/// @file option_table.cpp
/// The option table (option_table.hpp): one row a setting of `train`. A declarative table: each
/// row's parser and printer are the lines a reader checks against its help.

#include "config/option_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "config/option_values.hpp"
#include "io/export.hpp"
#include "model/negative_pool.hpp"

namespace pagedw2v {
namespace detail {
namespace {

/// The largest --negative-pool: 256 MiB of ids per pool.
constexpr uint64_t kMaxNegativePool = uint64_t{1} << 26;
/// The largest --batch-words: 2^28 blocks, far inside TrainParams::batch_blocks' 32 bits.
constexpr uint64_t kMaxBatchWords = uint64_t{1} << 40;

/// The range of an optimizer hyper-parameter.
enum class Range { kPositive, kNonNegative, kDecay };

/// An optimizer hyper-parameter, or "auto" for the optimizer's default. A model option: a resumed
/// run cannot change it.
void add_hyperparameter(std::vector<OptionSpec>& o, const std::string& name,
                        const std::string& help, std::optional<float> Config::*field, Range range) {
  o.push_back({name, help, "auto", false, true,
               [=](Config& c, const std::string& v) {
                 if (v == "auto") {
                   c.*field = std::nullopt;
                   return;
                 }
                 double x = 0;
                 if (range == Range::kDecay) {
                   // A decay of 1 would never forget: [0, 1).
                   x = parse_double(name, v, 0, 1, false);
                   if (x >= 1) bad_value(name, "a number in [0, 1)", v);
                 } else {
                   x = parse_double(name, v, 0, 1e6, range == Range::kPositive);
                 }
                 c.*field = static_cast<float>(x);
               },
               [=](const Config& c) {
                 return (c.*field).has_value() ? num(*(c.*field)) : std::string("auto");
               }});
}

/// The flags of word2vec.c and fastText that mean one of our options, their value as it is.
void add_foreign_flags(std::vector<OptionSpec>& options) {
  static const char* const kWord2vec = "word2vec";
  static const char* const kFastText = "fastText";
  const std::vector<std::tuple<std::string, std::string, std::string>> flags = {
      {"corpus", kWord2vec, "-train"},
      {"corpus", kFastText, "-input"},
      {"vocab", kWord2vec, "-read-vocab"},
      {"output", "word2vec/fastText", "-output"},
      {"dim", kWord2vec, "-size"},
      {"dim", kFastText, "-dim"},
      {"window", kWord2vec, "-window"},
      {"window", kFastText, "-ws"},
      {"negative", kWord2vec, "-negative"},
      {"negative", kFastText, "-neg"},
      {"sample", kWord2vec, "-sample"},
      {"sample", kFastText, "-t"},
      {"min-count", kWord2vec, "-min-count"},
      {"min-count", kFastText, "-minCount"},
      {"alpha", kWord2vec, "-alpha"},
      {"alpha", kFastText, "-lr"},
      {"epochs", kWord2vec, "-iter"},
      {"epochs", kFastText, "-epoch"},
      {"threads", kWord2vec, "-threads"},
      {"threads", kFastText, "-thread"},
      {"seed", kFastText, "-seed"}};
  for (const auto& [name, tool, flag] : flags) {
    for (OptionSpec& spec : options) {
      if (spec.name == name) spec.foreign.push_back({tool, flag});
    }
  }
}

}  // namespace

std::vector<OptionSpec> make_train_options() {
  using C = Config;
  using V = const std::string&;
  std::vector<OptionSpec> o;
  // name, help, default, is_flag, is_model, set, get
  o.push_back({"corpus",
               "text corpus: words separated by space, tab, CR, VT, FF or NUL, case and "
               "punctuation kept as word2vec does (see --lowercase), words cut at 100 bytes; "
               "one sentence per line, cut into pieces of at most 1000 words; files (plain, "
               "gzip or zstd), directories of files, or - for standard input; several inputs as "
               "more arguments after the options",
               "", false, false, [](C& c, V v) { c.corpus = v; },
               [](const C& c) { return c.corpus; }});
  o.push_back({"vocab",
               "read the vocabulary from this file instead of counting it: word<TAB>count lines "
               "(as --save-vocab and vocab.tsv write) or word2vec's `word count` lines (its "
               "-save-vocab; its </s> line is skipped); --min-count and --max-vocab apply. Its "
               "words must be ones the tokenizer makes (at most 100 bytes of UTF-8, no space, "
               "tab, CR, LF, VT, FF or NUL); its counts are taken as they are (they weigh the "
               "noise distribution and --sample; a sum larger than the corpus can hold is warned "
               "about, not clamped) and must sum below 2^64; a file that breaks either rule is "
               "refused with its line",
               "", false, false, [](C& c, V v) { c.vocab_file = v; },
               [](const C& c) { return c.vocab_file; }});
  o.push_back({"save-vocab", "also write the vocabulary to this file, as --save-vocab-format says",
               "", false, false, [](C& c, V v) { c.save_vocab = v; },
               [](const C& c) { return c.save_vocab; }});
  o.push_back({"save-vocab-format",
               "how --save-vocab writes: tsv (word<TAB>count lines, as vocab.tsv) or word2vec "
               "(`word count` lines after a first `</s> 0`, as word2vec's -save-vocab, which "
               "word2vec's -read-vocab reads)",
               "tsv", false, false,
               [](C& c, V v) {
                 if (!parse_vocab_file_format(v, &c.save_vocab_format)) {
                   bad_value("save-vocab-format", "tsv or word2vec", v);
                 }
               },
               [](const C& c) { return std::string(to_string(c.save_vocab_format)); }});
  o.push_back({"max-corpus-memory",
               "host memory the encoded corpus may take (4 bytes a word), e.g. 2GiB; a corpus "
               "that needs more is streamed: encoded block by block while training runs, at "
               "most this much waiting, and read again each epoch (from --cache-dir when given). "
               "auto = a quarter of the machine's memory",
               "auto", false, false,
               [](C& c, V v) {
                 if (v == "auto") {
                   c.max_corpus_memory = 0;
                   return;
                 }
                 const std::optional<uint64_t> bytes = parse_byte_size(v);
                 if (!bytes || *bytes == 0)
                   bad_value("max-corpus-memory", "a size such as 2GiB", v);
                 c.max_corpus_memory = *bytes;
               },
               [](const C& c) {
                 return c.max_corpus_memory == 0 ? std::string("auto")
                                                 : format_byte_size(c.max_corpus_memory);
               }});
  o.push_back({"cache-dir",
               "a streamed corpus is written here once, encoded (about 4 bytes a word), and later "
               "epochs and later runs with the same inputs and vocabulary read it instead of the "
               "text",
               "", false, false, [](C& c, V v) { c.cache_dir = v; },
               [](const C& c) { return c.cache_dir; }});
  o.push_back({"output", "directory for the vectors and vocabulary", "", false, false,
               [](C& c, V v) { c.output = v; }, [](const C& c) { return c.output; }});
  o.push_back({"model", "skipgram or cbow", "skipgram", false, true,
               [](C& c, V v) {
                 if (v == "skipgram" || v == "sg" || v == "skip-gram") {
                   c.model = ModelKind::kSkipGram;
                 } else if (v == "cbow") {
                   c.model = ModelKind::kCbow;
                 } else {
                   bad_value("model", "skipgram or cbow", v);
                 }
               },
               [](const C& c) { return to_string(c.model); }});
  o.push_back({"dim", "dimension of the vectors", "100", false, true,
               [](C& c, V v) { c.dim = static_cast<uint32_t>(parse_uint("dim", v, 1, 1u << 30)); },
               [](const C& c) { return std::to_string(c.dim); }});
  o.push_back(
      {"window", "largest distance between a word and its context", "5", false, true,
       [](C& c, V v) { c.window = static_cast<uint32_t>(parse_uint("window", v, 1, 1000)); },
       [](const C& c) { return std::to_string(c.window); }});
  o.push_back(
      {"negative", "negative samples per example (0 = none: hierarchical softmax alone, --hs)", "5",
       false, true,
       [](C& c, V v) { c.negative = static_cast<uint32_t>(parse_uint("negative", v, 0, 1000)); },
       [](const C& c) { return std::to_string(c.negative); }});
  o.push_back({"kernel",
               "skip-gram's window update: per-pair (word2vec's: every context word with "
               "negatives of its own) or shared-negatives (one set of negatives per centre "
               "word, shared by its window: fewer rows read and written, on the GPU faster; "
               "docs/design-kernels.md says when to use it). CBOW has per-pair only",
               "per-pair", false, true,
               [](C& c, V v) {
                 if (!parse_sgns_kernel(v, &c.kernel)) {
                   bad_value("kernel", "per-pair or shared-negatives", v);
                 }
               },
               [](const C& c) { return to_string(c.kernel); }});
  o.push_back({"hs",
               "train hierarchical softmax, word2vec's other output layer: each word's path "
               "through a Huffman tree of the vocabulary's counts, its inner nodes' vectors "
               "trained as the output layer. Alone with --negative 0 (word2vec's -hs 1 "
               "-negative 0), or beside negative sampling (--negative N: both losses train the "
               "input vectors). The CPU backend trains it (--device cpu)",
               "false", true, true, [](C& c, V v) { c.hs = parse_bool("hs", v); },
               [](const C& c) { return std::string(c.hs ? "true" : "false"); }});
  o.push_back({"negative-pool",
               "draw negatives from a pool of N noise words shared by --pool-words words (0 = per "
               "example, as word2vec); paged placement needs one: left out, a paged run draws "
               "1024 per 4096 words",
               "0", false, true,
               [](C& c, V v) {
                 c.negative_pool =
                     static_cast<uint32_t>(parse_uint("negative-pool", v, 0, kMaxNegativePool));
               },
               [](const C& c) { return std::to_string(c.negative_pool); }});
  o.push_back({"batch-words",
               "words per super-batch: what paged tables stage at once, and the batch of a GPU "
               "optimizer step (at least 4096, rounded up to whole blocks of 4096 words)",
               "1048576", false, true,
               [](C& c, V v) {
                 const uint64_t words = parse_uint("batch-words", v, kBlockWords, kMaxBatchWords);
                 c.batch_words = (words + kBlockWords - 1) / kBlockWords * kBlockWords;
               },
               [](const C& c) { return std::to_string(c.batch_words); }});
  o.push_back({"pool-words",
               "words that share one negative pool (at least 4096, rounded up to whole blocks of "
               "4096 words); "
               "a super-batch stages the pools of all its periods",
               "4096", false, true,
               [](C& c, V v) {
                 const uint64_t words = parse_uint("pool-words", v, kBlockWords, kMaxBatchWords);
                 c.pool_words = (words + kBlockWords - 1) / kBlockWords * kBlockWords;
               },
               [](const C& c) { return std::to_string(c.pool_words); }});
  o.push_back({"sample", "subsampling threshold for frequent words (0 = off)", "1e-3", false, true,
               [](C& c, V v) { c.sample = parse_double("sample", v, 0, 1, false); },
               [](const C& c) { return num(c.sample); }});
  o.push_back({"min-count", "drop words seen fewer times", "5", false, true,
               [](C& c, V v) { c.min_count = parse_uint("min-count", v, 1, UINT64_MAX); },
               [](const C& c) { return std::to_string(c.min_count); }});
  o.push_back({"max-vocab", "keep at most this many words, the most frequent (0 = no limit)", "0",
               false, true,
               [](C& c, V v) { c.max_vocab = parse_uint("max-vocab", v, 0, 0xFFFFFFFEull); },
               [](const C& c) { return std::to_string(c.max_vocab); }});
  o.push_back({"lowercase",
               "read words in lower case: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic "
               "letters (false: case is kept)",
               "false", true, true, [](C& c, V v) { c.lowercase = parse_bool("lowercase", v); },
               [](const C& c) { return std::string(c.lowercase ? "true" : "false"); }});
  o.push_back(
      {"phrases",
       "join frequent word pairs with '_' before counting, as `pagedw2v phrases` does "
       "(word2vec's word2phrase): N passes over the corpus, each joining one more word at "
       "most (2: up to 4-word tokens); the joined text is made in memory, never written; "
       "the phrases go to phrases.tsv beside the vectors. 0 = off",
       "0", false, true,
       [](C& c, V v) { c.phrases = static_cast<uint32_t>(parse_uint("phrases", v, 0, 16)); },
       [](const C& c) { return std::to_string(c.phrases); }});
  o.push_back(
      {"phrase-threshold",
       "with --phrases: join a pair `a b` whose score (count(a b) - min) * N / (count(a) * "
       "count(b)) is above this (word2phrase's -threshold)",
       "100", false, true,
       [](C& c, V v) { c.phrase_threshold = parse_double("phrase-threshold", v, 0, 1e300, false); },
       [](const C& c) { return num(c.phrase_threshold); }});
  o.push_back(
      {"phrase-min-count",
       "with --phrases: words and pairs seen fewer times never join (word2phrase's "
       "-min-count)",
       "5", false, true,
       [](C& c, V v) { c.phrase_min_count = parse_uint("phrase-min-count", v, 1, UINT64_MAX); },
       [](const C& c) { return std::to_string(c.phrase_min_count); }});
  o.push_back(
      {"phrase-max-pairs",
       "with --phrases: distinct word pairs counted at once (16 to 32 bytes each); when "
       "full, the rarest are dropped as word2phrase does",
       "20000000", false, true,
       [](C& c, V v) { c.phrase_max_pairs = parse_uint("phrase-max-pairs", v, 1, UINT64_MAX); },
       [](const C& c) { return std::to_string(c.phrase_max_pairs); }});
  o.push_back({"phrases-from",
               "join the phrases of this file before counting (a phrases.tsv of an earlier run, "
               "or `pagedw2v phrases --save-phrases`), learning none",
               "", false, true, [](C& c, V v) { c.phrases_from = v; },
               [](const C& c) { return c.phrases_from; }});
  o.push_back({"alpha", "starting learning rate; auto = 0.025 for skipgram, 0.05 for cbow", "auto",
               false, true,
               [](C& c, V v) {
                 c.alpha =
                     v == "auto" ? 0.0f : static_cast<float>(parse_double("alpha", v, 0, 10, true));
               },
               [](const C& c) { return c.alpha > 0 ? num(c.alpha) : std::string("auto"); }});
  o.push_back({"optimizer",
               "sgd (word2vec's update), adagrad, adam, adamw, adamax, rmsprop or adadelta; all "
               "but sgd keep state tables and take one step per batch: a block of 4096 words "
               "(per thread) on the CPU, a super-batch (--batch-words) on CUDA",
               "sgd", false, true,
               [](C& c, V v) {
                 if (!parse_optimizer(v, &c.optimizer)) {
                   bad_value("optimizer", "sgd, adagrad, adam, adamw, adamax, rmsprop or adadelta",
                             v);
                 }
               },
               [](const C& c) { return to_string(c.optimizer); }});
  add_hyperparameter(o, "lr",
                     "starting learning rate of a non-sgd optimizer (sgd uses --alpha); auto = "
                     "adagrad 0.2, adam 0.03, adamw 0.03, adamax 0.1, rmsprop 0.01, adadelta 10",
                     &C::lr, Range::kPositive);
  add_hyperparameter(o, "beta1", "adam, adamw, adamax: first-moment decay; auto = 0.9", &C::beta1,
                     Range::kDecay);
  add_hyperparameter(o, "beta2", "adam, adamw, adamax: second-moment decay; auto = 0.999",
                     &C::beta2, Range::kDecay);
  add_hyperparameter(o, "eps",
                     "added to denominators; auto = 1e-10 adagrad, 1e-6 adadelta, else 1e-8",
                     &C::eps, Range::kPositive);
  add_hyperparameter(o, "weight-decay",
                     "decay of touched rows; auto = 0.01 for adamw (decoupled), 0 for the others",
                     &C::weight_decay, Range::kNonNegative);
  add_hyperparameter(o, "rho",
                     "squared-gradient decay: adadelta's rho (auto = 0.9), rmsprop's alpha (auto "
                     "= 0.99)",
                     &C::rho, Range::kDecay);
  o.push_back(
      {"epochs", "passes over the corpus (may be raised when resuming)", "5", false, false,
       [](C& c, V v) { c.epochs = static_cast<uint32_t>(parse_uint("epochs", v, 1, 100000)); },
       [](const C& c) { return std::to_string(c.epochs); }});
  o.push_back(
      {"lr-schedule",
       "a resumed run's learning rate: rejoin = the rate a run of --epochs has at this point "
       "(resumes exactly; a raised --epochs raises it), continue = from the checkpoint's rate "
       "down to the floor at the new end, restart = from the starting rate again down to the "
       "floor at the new end",
       "rejoin", false, false,
       [](C& c, V v) {
         if (v == "rejoin") {
           c.lr_schedule = LrResume::kRejoin;
         } else if (v == "continue") {
           c.lr_schedule = LrResume::kContinue;
         } else if (v == "restart") {
           c.lr_schedule = LrResume::kRestart;
         } else {
           throw UsageError("--lr-schedule: expected rejoin, continue or restart, got '" + v + "'");
         }
       },
       [](const C& c) {
         return std::string(c.lr_schedule == LrResume::kContinue  ? "continue"
                            : c.lr_schedule == LrResume::kRestart ? "restart"
                                                                  : "rejoin");
       }});
  o.push_back({"threads", "CPU threads; all = every core", "all", false, false,
               [](C& c, V v) {
                 c.threads =
                     v == "all" ? 0 : static_cast<uint32_t>(parse_uint("threads", v, 1, 4096));
               },
               [](const C& c) { return c.threads ? std::to_string(c.threads) : "all"; }});
  o.push_back({"seed", "random seed", "1", false, true,
               [](C& c, V v) { c.seed = parse_uint("seed", v, 0, UINT64_MAX); },
               [](const C& c) { return std::to_string(c.seed); }});
  o.push_back({"device", "cpu, cuda or auto (cuda when built with it and a GPU is present)", "auto",
               false, false,
               [](C& c, V v) {
                 if (v == "cpu") {
                   c.device = DeviceKind::kCpu;
                 } else if (v == "cuda" || v == "gpu") {
                   c.device = DeviceKind::kCuda;
                 } else if (v == "auto") {
                   c.device = DeviceKind::kAuto;
                 } else {
                   bad_value("device", "cpu, cuda or auto", v);
                 }
               },
               [](const C& c) { return to_string(c.device); }});
  o.push_back({"placement",
               "cuda: where the tables live; resident = GPU memory, paged = host memory with the "
               "most frequent rows cached on the GPU, auto = resident when it fits --gpu-memory",
               "auto", false, false,
               [](C& c, V v) {
                 if (v == "auto") {
                   c.placement = Placement::kAuto;
                 } else if (v == "resident") {
                   c.placement = Placement::kResident;
                 } else if (v == "paged") {
                   c.placement = Placement::kPaged;
                 } else {
                   bad_value("placement", "auto, resident or paged", v);
                 }
               },
               [](const C& c) { return to_string(c.placement); }});
  o.push_back({"storage",
               "how the host tables and optimizer state store values: fp32, or bf16 or fp16 "
               "(16 bits: half the host memory and half the bytes a paged row move carries; the "
               "math stays fp32 and rows written back are rounded stochastically). bf16 and fp16 "
               "need --device cuda; exports are fp32",
               "fp32", false, true,
               [](C& c, V v) {
                 if (!parse_storage(v, &c.storage)) bad_value("storage", "fp32, bf16 or fp16", v);
               },
               [](const C& c) { return to_string(c.storage); }});
  o.push_back({"gpu-memory",
               "cuda: GPU memory the tables and buffers may use, e.g. 8GiB, 512MiB, 1.5GB or "
               "bytes; auto = what is free less a margin",
               "auto", false, false,
               [](C& c, V v) {
                 if (v == "auto") {
                   c.gpu_memory = 0;
                   return;
                 }
                 const std::optional<uint64_t> bytes = parse_byte_size(v);
                 if (!bytes) bad_value("gpu-memory", "a size such as 8GiB", v);
                 c.gpu_memory = *bytes;
               },
               [](const C& c) {
                 return c.gpu_memory == 0 ? std::string("auto") : format_byte_size(c.gpu_memory);
               }});
  o.push_back({"rank-tables",
               "over MPI ranks: how the ranks hold the tables; sharded = each rank 1/N of the "
               "rows (on the CPU the others' copied for each span; on GPUs in parts for "
               "skip-gram sgd, else through host memory), replicated = whole copies on every "
               "rank (or GPU) whose changes the ranks sum (sgd; on GPUs skip-gram without "
               "--negative-pool), auto = replicated for sgd with at most 131072 words in a run "
               "long enough for the ranks to sum their changes at least 96 times (on GPUs "
               "skip-gram without a pool), else sharded",
               "auto", false, false,
               [](C& c, V v) {
                 if (v == "auto") {
                   c.rank_tables = RankTables::kAuto;
                 } else if (v == "sharded") {
                   c.rank_tables = RankTables::kSharded;
                 } else if (v == "replicated") {
                   c.rank_tables = RankTables::kReplicated;
                 } else {
                   bad_value("rank-tables", "auto, sharded or replicated", v);
                 }
               },
               [](const C& c) { return to_string(c.rank_tables); }});
  o.push_back({"deterministic",
               "repeat a run bit for bit: one CPU thread (--threads other than 1 is an error), "
               "or on cuda one warp per launch (far slower; for reproducibility checks)",
               "false", true, false,
               [](C& c, V v) { c.deterministic = parse_bool("deterministic", v); },
               [](const C& c) { return std::string(c.deterministic ? "true" : "false"); }});
  o.push_back(
      {"format",
       "output formats, comma-separated: npy,h5,bin,txt, or none. Bytes on disk for V words of "
       "dimension D: npy 4*V*D (vectors.npy; vocab.tsv comes with every format), h5 4*V*D + "
       "about 50 + the word's length a word (embeddings.h5), bin 4*V*D + the word's length + 2 a "
       "word (vectors.bin), txt about 12*V*D (vectors.txt); uncompressed, no .gz",
       "npy,h5,bin,txt", false, false, [](C& c, V v) { c.formats = parse_formats(v); },
       [](const C& c) { return c.formats.empty() ? std::string("none") : join(c.formats); }});
  o.push_back({"save-context",
               "also export the output (context) vectors, in every format asked for "
               "(context_vectors.npy, .bin, .txt; /context_vectors in embeddings.h5): twice the "
               "bytes of each",
               "false", true, false,
               [](C& c, V v) { c.save_context = parse_bool("save-context", v); },
               [](const C& c) { return std::string(c.save_context ? "true" : "false"); }});
  o.push_back({"resume", "continue training from this checkpoint", "", false, false,
               [](C& c, V v) { c.resume = v; }, [](const C& c) { return c.resume; }});
  o.push_back({"continue-from",
               "start from a finished run (its directory, whose last checkpoint is read, or a "
               "checkpoint file) and train it on --corpus: every word of the run keeps its "
               "vectors, words of the new text that reach --min-count are added (as a fresh run "
               "would initialise them), the sampler is rebuilt from the counts of both, and the "
               "learning rate decays anew from --alpha (--lr) over --epochs of the new text. "
               "--model, --dim, --optimizer, --storage and --lowercase come from the run; its "
               "other model options too unless given",
               "", false, false, [](C& c, V v) { c.continue_from = v; },
               [](const C& c) { return c.continue_from; }});
  o.push_back({"continue-count",
               "with --continue-from, which count adds a word the run does not have: new = its "
               "count in the new text reaches --min-count (as gensim's build_vocab(update=True)), "
               "merged = its count in the run's own corpus (counted again) and the new text "
               "together does",
               "new", false, false,
               [](C& c, V v) {
                 if (v == "new") {
                   c.continue_count = ContinueCount::kNew;
                 } else if (v == "merged") {
                   c.continue_count = ContinueCount::kMerged;
                 } else {
                   bad_value("continue-count", "new or merged", v);
                 }
               },
               [](const C& c) { return to_string(c.continue_count); }});
  o.push_back({"checkpoint-interval", "seconds between timed checkpoints (0 = epoch ends only)",
               "0", false, false,
               [](C& c, V v) {
                 c.checkpoint_interval =
                     static_cast<uint32_t>(parse_uint("checkpoint-interval", v, 0, 1u << 30));
               },
               [](const C& c) { return std::to_string(c.checkpoint_interval); }});
  o.push_back({"keep-checkpoints",
               "how many checkpoints to keep (0 = none at epoch ends; a stop by a signal still "
               "writes one). Each holds both tables and the optimizer state: 8*V*D bytes with "
               "sgd, 16*V*D with adagrad or rmsprop, 24*V*D with adam, adamw, adamax or adadelta "
               "(V words of dimension D), and about 50 + the word's length a word",
               "3", false, false,
               [](C& c, V v) {
                 c.keep_checkpoints =
                     static_cast<uint32_t>(parse_uint("keep-checkpoints", v, 0, 1000000));
               },
               [](const C& c) { return std::to_string(c.keep_checkpoints); }});
  o.push_back({"eval-analogies", "analogy questions to evaluate after each epoch", "", false, false,
               [](C& c, V v) { c.eval_analogies = v; },
               [](const C& c) { return c.eval_analogies; }});
  o.push_back({"eval-similarity", "word-pair similarities to evaluate after each epoch", "", false,
               false, [](C& c, V v) { c.eval_similarity = v; },
               [](const C& c) { return c.eval_similarity; }});
  o.push_back({"overwrite", "write into an output directory that holds another run's files",
               "false", true, false, [](C& c, V v) { c.overwrite = parse_bool("overwrite", v); },
               [](const C& c) { return std::string(c.overwrite ? "true" : "false"); }});
  o.push_back({"fsync-outputs",
               "fsync the export files and the last checkpoint before the command returns "
               "(checkpoints written during training always are)",
               "false", true, false,
               [](C& c, V v) { c.fsync_outputs = parse_bool("fsync-outputs", v); },
               [](const C& c) { return std::string(c.fsync_outputs ? "true" : "false"); }});
  o.push_back({"quiet",
               "no progress output. Progress is a line at each epoch's end and every few seconds "
               "(redrawn in place on a terminal) with the epoch, words/s, the loss, the learning "
               "rate and the time left. The loss is that of one (centre, context) example: "
               "-log sigmoid(context.word) - sum of log sigmoid(-noise.word) over its --negative "
               "noise words (with --hs the sum of -log sigmoid(+-context.node) over the word's "
               "path is added, and is all of it with --negative 0), taken as the example trains, "
               "its mean smoothed over about the last "
               "twentieth of the run (run.json: final_loss, the smoothed value at the end; "
               "loss_per_epoch, each epoch's plain mean, so the two differ). It is a training "
               "loss over fresh random noise words, not a held-out measure: in late epochs a "
               "skip-gram run's may rise (gensim's does too) while the vectors still improve; "
               "--eval-analogies and --eval-similarity measure them",
               "false", true, false, [](C& c, V v) { c.quiet = parse_bool("quiet", v); },
               [](const C& c) { return std::string(c.quiet ? "true" : "false"); }});
  // What the tables hold: a continued run cannot change it (continue_from.hpp).
  for (OptionSpec& spec : o) {
    spec.fixes_tables = spec.name == "model" || spec.name == "dim" || spec.name == "optimizer" ||
                        spec.name == "storage" || spec.name == "lowercase";
  }
  add_foreign_flags(o);
  return o;
}

}  // namespace detail
}  // namespace pagedw2v
