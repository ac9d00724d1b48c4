// `pagedw2v phrases`: word2phrase's collocations over the corpus inputs `train` reads, written as
// a text file (src/text/phrases.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cxxopts.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/path_parts.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "text/phrase_file.hpp"
#include "text/phrases.hpp"
#include "text/text_source.hpp"

namespace pagedw2v::app {
namespace {

std::atomic<int> g_phrases_signal{0};

extern "C" void on_phrases_signal(int sig) {
  // The first signal stops the writing at the next round, which removes the temporary file; a
  // second ends the process the default way.
  int expected = 0;
  if (!g_phrases_signal.compare_exchange_strong(expected, sig)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

/// Restores SIGINT and SIGTERM's handlers when it goes.
class StopSignals {
 public:
  StopSignals()
      : int_(std::signal(SIGINT, on_phrases_signal)),
        term_(std::signal(SIGTERM, on_phrases_signal)) {}
  ~StopSignals() {
    std::signal(SIGINT, int_);
    std::signal(SIGTERM, term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void (*int_)(int);
  void (*term_)(int);
};

double parse_threshold(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v) || v < 0) {
    throw UsageError("--threshold expects a number from 0 up, not '" + text + "'");
  }
  return v;
}

uint64_t parse_whole(const std::string& flag, const std::string& text) {
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 18;
  for (const char ch : text) {
    ok = ok && ch >= '0' && ch <= '9';
    if (ok) value = value * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (!ok || value == 0) {
    throw UsageError(flag + " expects a whole number from 1 up, not '" + text + "'");
  }
  return value;
}

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/// Refuses an output that is one of the inputs (or a file of an input directory), a directory,
/// or an existing file without --overwrite.
void check_output(const std::string& output, const std::vector<std::string>& inputs,
                  bool overwrite) {
  if (output == "-") throw UsageError("--output must name a file (standard output is not one)");
  // Checked before the corpus is read: the file is only created once the phrases are known.
  const std::string dir = dir_of(output);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0 || !S_ISDIR(dir_st.st_mode)) {
    throw Error("cannot write --output '" + output + "': '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw Error("cannot write --output '" + output + "' in '" + dir + "': " + std::strerror(errno));
  }
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) {
    if (errno == ENOENT) return;
    throw Error("cannot use --output '" + output + "': " + std::strerror(errno));
  }
  if (S_ISDIR(out.st_mode)) throw Error("--output '" + output + "' is a directory; name a file");
  for (const std::string& in : inputs) {
    if (in == "-") continue;
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0) continue;  // the reader says why
    if (same_file(st, output)) {
      throw Error("--output '" + output + "' is the input '" + in + "'; choose another --output");
    }
    if (S_ISDIR(st.st_mode) && same_file(st, dir_of(output))) {
      throw Error("--output '" + output + "' is a file of the input directory '" + in +
                  "'; choose another --output");
    }
  }
  if (!overwrite) {
    throw Error("--output '" + output +
                "' exists; choose another --output, or add --overwrite to replace it");
  }
}

}  // namespace

int cmd_phrases(int argc, char** argv) {
  cxxopts::Options options(
      "pagedw2v phrases",
      "Join frequent word pairs with '_' (word2vec's word2phrase): a pair `a b` within a line "
      "becomes `a_b` when (count(a b) - min_count) * N / (count(a) * count(b)) > threshold, N "
      "being the words of the corpus. Reads what `train --corpus` reads; writes a text file to "
      "train on.");
  options.custom_help("--corpus FILE... --output FILE [options]");
  options.add_options()("corpus",
                        "text inputs: files (plain, gzip or zstd), directories of them, or - for "
                        "standard input",
                        cxxopts::value<std::string>())(
      "output", "the text file to write (written under a temporary name, then renamed)",
      cxxopts::value<std::string>())("threshold",
                                     "join a pair that scores above this; higher: fewer phrases",
                                     cxxopts::value<std::string>()->default_value("100"))(
      "min-count", "words and pairs seen fewer times never join",
      cxxopts::value<std::string>()->default_value("5"))(
      "passes",
      "phrase passes: each may join one more word to a phrase (2: up to 4 words, "
      "new_york_times)",
      cxxopts::value<std::string>()->default_value("1"))(
      "max-pairs",
      "distinct word pairs counted at once over all threads (16 to 32 bytes each); when full, "
      "the rarest are dropped as word2phrase does",
      cxxopts::value<std::string>()->default_value("20000000"))(
      "threads", "CPU threads; all = every core",
      cxxopts::value<std::string>()->default_value("all"))(
      "lowercase", "lower-case the words first (as train --lowercase)")(
      "save-phrases",
      "also write the phrases found to this file (pass, words, count, score; tab-separated), "
      "which --phrases-from and train --phrases-from read",
      cxxopts::value<std::string>())(
      "phrases-from",
      "join the phrases of this file (--save-phrases, or a run's phrases.tsv) instead of "
      "learning them",
      cxxopts::value<std::string>())("overwrite", "replace --output if it exists")(
      "quiet", "print nothing but errors")("h,help", "print this help");

  std::vector<std::string> arg_text = gather_corpus_inputs(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& a : arg_text) arg_ptrs.push_back(a.data());
  cxxopts::ParseResult args;
  if (!parse_command_line(options, static_cast<int>(arg_ptrs.size()), arg_ptrs.data(), &args)) {
    return 0;
  }
  if (!args.count("corpus")) throw UsageError("--corpus is required");
  if (!args.count("output")) throw UsageError("--output is required");
  std::vector<std::string> inputs;
  {
    const std::string joined = args["corpus"].as<std::string>();
    size_t at = 0;
    for (;;) {
      const size_t nl = joined.find('\n', at);
      inputs.push_back(joined.substr(at, nl == std::string::npos ? nl : nl - at));
      if (nl == std::string::npos) break;
      at = nl + 1;
    }
  }
  for (const std::string& in : inputs) {
    if (in.empty()) throw UsageError("--corpus expects file names, not an empty one");
  }
  const std::string output = args["output"].as<std::string>();
  if (output.empty()) throw UsageError("--output expects a file name, not an empty one");

  PhraseOptions po;
  po.threshold = parse_threshold(args["threshold"].as<std::string>());
  po.min_count = parse_whole("--min-count", args["min-count"].as<std::string>());
  po.passes = positive_count("--passes", args["passes"].as<std::string>());
  if (po.passes > 16)
    throw UsageError("--passes expects 1 to 16, not " + std::to_string(po.passes));
  po.max_pairs = parse_whole("--max-pairs", args["max-pairs"].as<std::string>());
  const std::string threads = args["threads"].as<std::string>();
  po.threads = threads == "all" ? std::max(1u, std::thread::hardware_concurrency())
                                : positive_count("--threads", threads);
  po.text.lowercase = args.count("lowercase") > 0;
  const bool quiet = args.count("quiet") > 0;
  const std::string save_phrases =
      args.count("save-phrases") ? args["save-phrases"].as<std::string>() : "";
  const std::string phrases_from =
      args.count("phrases-from") ? args["phrases-from"].as<std::string>() : "";
  if (args.count("save-phrases") && save_phrases.empty()) {
    throw UsageError("--save-phrases expects a file name, not an empty one");
  }
  if (args.count("phrases-from")) {
    if (phrases_from.empty())
      throw UsageError("--phrases-from expects a file name, not an empty one");
    for (const char* learning : {"threshold", "min-count", "passes", "max-pairs"}) {
      if (args.count(learning)) {
        throw UsageError(std::string("--") + learning +
                         " learns phrases; --phrases-from reads them (give one)");
      }
    }
  }

  check_output(output, inputs, args.count("overwrite") > 0);
  if (!save_phrases.empty()) {
    if (save_phrases == output) throw UsageError("--save-phrases and --output name the same file");
    check_output(save_phrases, inputs, args.count("overwrite") > 0);
  }
  // Read before the corpus: a bad file is said at once.
  std::vector<PhraseTable> tables;
  if (!phrases_from.empty()) tables = read_phrase_file(phrases_from);
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  Clock::time_point started = Clock::now();
  const CorpusText text = CorpusText::open(inputs);
  if (!quiet) {
    std::fprintf(stderr, "read %llu bytes in %.2f s\n",
                 static_cast<unsigned long long>(text.bytes()), seconds_since(started));
  }
  started = Clock::now();
  const PhraseText phrase_text = PhraseText::of(text);
  if (phrases_from.empty()) {
    tables = learn_phrases(
        phrase_text, po, [&](uint32_t pass, const PhraseTable& table, const PhrasePassStats& s) {
          if (quiet) return;
          std::fprintf(stderr, "%s (%.2f s)\n", describe_pass(pass, table, s).c_str(),
                       seconds_since(started));
          started = Clock::now();
        });
  }

  const StopSignals stop;
  AtomicFile file(output);
  const PhraseOutputStats written = apply_phrases(phrase_text, tables, po, [&](std::string_view s) {
    if (const int sig = g_phrases_signal.load()) {
      throw Interrupted(sig, std::string("stopped by signal; '") + output + "' was not written");
    }
    file.write(s.data(), s.size());
  });
  if (!save_phrases.empty()) {
    AtomicFile saved(save_phrases);
    saved.write(phrase_file_text(tables));
    saved.commit();
  }
  file.commit();
  if (!quiet) {
    std::fprintf(stderr, "wrote %s: %llu tokens, %llu of them phrases, %llu bytes (%.2f s)\n",
                 output.c_str(), static_cast<unsigned long long>(written.tokens),
                 static_cast<unsigned long long>(written.joined),
                 static_cast<unsigned long long>(written.bytes), seconds_since(started));
  }
  return 0;
}

}  // namespace pagedw2v::app
