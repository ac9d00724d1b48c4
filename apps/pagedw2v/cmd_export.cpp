// `pagedw2v export`: the export files of a checkpoint, or any readable vectors in other formats.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/path_parts.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "io/embeddings.hpp"
#include "io/export.hpp"
#include "io/output_claim.hpp"
#include "train/checkpoint.hpp"

namespace pagedw2v::app {

namespace {

/// Appends the decimal digits of `n` to `buf` at `*at` (async-signal-safe).
void append_number(char* buf, size_t* at, int n) {
  char digits[12];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && k < 12);
  while (k > 0) buf[(*at)++] = digits[--k];
}

extern "C" void on_export_signal(int sig) {
  // The staging directory and any temporary file go at once, and the command ends with one line.
  // A signal that comes while the set is being moved into --output is ignored: the set completes.
  if (!remove_own_temps_now()) return;
  char line[160];
  size_t at = 0;
  for (const char* p = "pagedw2v: stopped by signal "; *p != '\0'; ++p) line[at++] = *p;
  append_number(line, &at, sig);
  for (const char* p = "; the export's temporary files are removed\n"; *p != '\0'; ++p) {
    line[at++] = *p;
  }
  const ssize_t ignored = ::write(STDERR_FILENO, line, at);
  (void)ignored;
  ::_exit(128 + sig);
}

/// SIGINT, SIGTERM and SIGHUP end an export cleanly (SIGHUP stays ignored under nohup).
void handle_stop_signals() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction now {};
    if (sig == SIGHUP && ::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) {
      continue;
    }
    struct sigaction action {};
    action.sa_handler = on_export_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
}

/// Whether `path` is a .npy file (whose vocabulary is read from vocab.tsv beside it).
bool is_npy_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[6] = {};
  const bool npy = std::fread(magic, 1, sizeof magic, f) == sizeof magic &&
                   std::string(magic, sizeof magic) == std::string("\x93NUMPY", 6);
  std::fclose(f);
  return npy;
}

std::string file_size(uint64_t bytes);

/// What an export wrote: the paths export_model() returned, each with its size.
void print_written(const std::vector<std::string>& paths, uint64_t rows, uint32_t dim) {
  std::printf("exported %llu words of dimension %u:\n", static_cast<unsigned long long>(rows), dim);
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    std::printf("  %s  %s\n", path.c_str(), file_size(static_cast<uint64_t>(st.st_size)).c_str());
  }
  std::fflush(stdout);
}

std::string file_size(uint64_t bytes) {
  char buf[32];
  if (bytes < 1000) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < 1000 * 1000) {
    std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  } else if (bytes < uint64_t{1000} * 1000 * 1000) {
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  }
  return buf;
}

/// The vectors of `emb` as a model whose input table holds them (there is no output table).
Model model_of(const LoadedEmbeddings& emb) {
  Model model;
  model.input = HostTable(emb.rows, emb.dim, "the vectors", "");
  model.input.copy_from(emb.vectors.data());
  return model;
}

}  // namespace

int cmd_export(int argc, char** argv) {
  cxxopts::Options options("pagedw2v export",
                           "Write the vectors of a checkpoint, or convert vectors from any format "
                           "pagedw2v reads (run directory, .npy, embeddings.h5, word2vec .bin or "
                           ".txt, fastText .vec, GloVe, gzip-compressed text) to the formats "
                           "--format names.");
  options.custom_help(
      "(--checkpoint FILE | --vectors PATH) --output DIR [--format npy,h5,bin,txt] [--overwrite]");
  options.add_options()("checkpoint", "checkpoint file (e.g. RUN/checkpoints/latest.h5)",
                        cxxopts::value<std::string>())("vectors", kVectorsHelp,
                                                       cxxopts::value<std::string>())(
      "vectors-format", kVectorsFormatHelp, cxxopts::value<std::string>()->default_value("auto"))(
      "output", "directory to write to", cxxopts::value<std::string>())(
      "format",
      "output formats, comma-separated (default: npy,h5,bin,txt). Bytes on disk for V words of "
      "dimension D: npy 4*V*D (vectors.npy; vocab.tsv comes with every format), h5 4*V*D + "
      "about 50 + the word's length a word (embeddings.h5), bin 4*V*D + the word's length + 2 "
      "a word (vectors.bin), txt about 12*V*D (vectors.txt); uncompressed, no .gz",
      cxxopts::value<std::string>())(
      "save-context",
      "also export the output (context) vectors, in every format asked for "
      "(context_vectors.npy, .bin, .txt; /context_vectors in embeddings.h5): twice the bytes of "
      "each. --checkpoint only: vector files hold no context vectors")(
      "overwrite",
      "replace the files of another run or export (vocab.tsv, vectors.npy, ...) in --output; "
      "without it an --output that holds any is refused. The input is never replaced")(
      "h,help", "print this help");
  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  const bool from_checkpoint = args.count("checkpoint") > 0;
  const bool from_vectors = args.count("vectors") > 0;
  if (from_checkpoint == from_vectors) {
    throw UsageError(from_checkpoint ? "give --checkpoint or --vectors, not both"
                                     : "--checkpoint FILE or --vectors PATH is required");
  }
  if (!args.count("output")) throw UsageError("--output is required");
  ExportOptions export_options;
  if (args.count("format"))
    export_options.formats = parse_formats(args["format"].as<std::string>());
  export_options.save_context = args.count("save-context") > 0;
  const std::string output = args["output"].as<std::string>();
  check_output_directory_name(output);
  if (from_vectors && export_options.save_context) {
    throw UsageError("--save-context needs --checkpoint: vector files hold no context vectors");
  }
  const VectorsFormat format = from_vectors
                                   ? parse_vectors_format(args["vectors-format"].as<std::string>())
                                   : VectorsFormat::kAuto;

  // The same rule as train's: the output directory is locked while the export writes, the input
  // is never replaced, nor are the files of another run or export without --overwrite.
  handle_stop_signals();
  OutputClaim claim;
  claim.dir = output;
  claim.command = "export";
  claim.overwrite = args.count("overwrite") > 0;
  if (from_vectors) {
    const std::string source = args["vectors"].as<std::string>();
    claim.inputs.push_back({"--vectors", source});
    if (format == VectorsFormat::kNpy || (format == VectorsFormat::kAuto && is_npy_file(source))) {
      claim.inputs.push_back({"--vectors's vocabulary", dir_of(source) + "/vocab.tsv"});
    }
  } else {
    claim.inputs.push_back({"--checkpoint", args["checkpoint"].as<std::string>()});
  }
  // An existing --output is claimed before the input is read, so that a refusal comes first. One
  // that does not exist yet holds nothing to refuse: it is made only once the input has been read,
  // so that a bad input leaves no directory behind.
  std::optional<OutputLock> lock;
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0) lock.emplace(claim_output(claim));

  if (from_vectors) {
    const std::string source = args["vectors"].as<std::string>();
    LoadedEmbeddings emb = load_embeddings(source, format);
    if (!lock) lock.emplace(claim_output(claim));
    std::vector<uint64_t> counts = emb.counts;
    if (counts.size() != emb.rows) counts.assign(emb.rows, 0);  // the format stores none
    const Vocab vocab = Vocab::from_words(std::move(emb.words), std::move(counts));
    const Model model = model_of(emb);
    export_options.attributes = {{"source", source}, {"source_format", emb.format}};
    print_written(export_model(output, vocab, model, export_options), emb.rows, emb.dim);
    return 0;
  }

  const Checkpoint ck = load_checkpoint(args["checkpoint"].as<std::string>());
  if (!lock) lock.emplace(claim_output(claim));
  export_options.attributes = {{"checkpoint", args["checkpoint"].as<std::string>()},
                               {"words_trained", static_cast<int64_t>(ck.position.words_done)}};
  for (const OptionSpec& spec : train_options()) {
    if (spec.is_model || spec.name == "epochs" || spec.name == "corpus") {
      export_options.attributes.push_back({spec.name, spec.get(ck.config)});
    }
  }
  print_written(export_model(output, ck.vocab, ck.model, export_options), ck.vocab.size(),
                ck.model.input.dim());
  return 0;
}

}  // namespace pagedw2v::app
