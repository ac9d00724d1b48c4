// pagedw2v: word2vec (skip-gram and CBOW with negative sampling) on CPUs and GPUs.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/error.hpp"
#include "commands.hpp"
#include "config/config.hpp"
#include "config/foreign_flags.hpp"
#include "text/utf8.hpp"

namespace {

constexpr const char* kUsage =
    "usage: pagedw2v <command> [options]\n"
    "\n"
    "commands:\n"
    "  train         train vectors from a corpus file\n"
    "  similar       print the nearest neighbours of words\n"
    "  word-vector   print the vectors of words (fastText's print-word-vectors)\n"
    "  similarity    the cosine similarity of two words (gensim's similarity)\n"
    "  doesnt-match  the word that does not match the others (gensim's doesnt_match)\n"
    "  analogies     answer A is to B as C is to ? (word2vec's word-analogy)\n"
    "  eval          word analogies and word-pair similarity\n"
    "  export        convert vectors, or a checkpoint's, to other formats\n"
    "  phrases       join frequent word pairs with _ (word2phrase), writing a corpus to train on\n"
    "  bench         bench train --corpus FILE [--repeat N] --device cuda|cpu: time training\n"
    "                bench train --synthetic VOCAB,WORDS,ZIPF: the same on a generated Zipf "
    "corpus\n"
    "                bench transfer: move rows between a pinned host table and the GPU (CUDA)\n"
    "                bench ingest --corpus FILE: time counting the vocabulary and encoding\n"
    "\n"
    "`pagedw2v <command> --help` lists a command's options; `pagedw2v --version` prints the\n"
    "version.\n"
    "\n"
    "exit status: 0 done, 1 runtime error (a file that cannot be read or written, no memory),\n"
    "2 usage error (a bad flag or value), 130 stopped by SIGINT and 143 by SIGTERM (train writes\n"
    "a checkpoint first).\n";

/// `train`'s arguments with word2vec.c's and fastText's single-dash flags rewritten (and the note
/// saying so) and the corpus inputs after the options moved to --corpus.
int train_with_foreign_flags(int argc, char** argv) {
  const std::vector<std::string> given(argv + 1, argv + argc);
  std::string note;
  std::vector<std::string> args = pagedw2v::translate_foreign_flags(given, &note);
  if (!note.empty()) std::fprintf(stderr, "pagedw2v: %s\n", note.c_str());
  std::vector<char*> pointers = {argv[0]};
  for (std::string& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  return pagedw2v::app::cmd_train(static_cast<int>(args.size() + 1), pointers.data());
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("pagedw2v %s (TOML configs: %s)\n", pagedw2v::version(),
                pagedw2v::toml_configs_supported() ? "yes" : "no");
    return 0;
  }
  if (cmd == "train") return train_with_foreign_flags(argc - 1, argv + 1);
  if (cmd == "similar") return pagedw2v::app::cmd_similar(argc - 1, argv + 1);
  if (cmd == "word-vector" || cmd == "print-word-vectors") {
    return pagedw2v::app::cmd_word_vector(argc - 1, argv + 1);
  }
  if (cmd == "similarity") return pagedw2v::app::cmd_similarity(argc - 1, argv + 1);
  if (cmd == "doesnt-match" || cmd == "doesnt_match") {
    return pagedw2v::app::cmd_doesnt_match(argc - 1, argv + 1);
  }
  if (cmd == "analogies" || cmd == "word-analogy") {
    return pagedw2v::app::cmd_analogies(argc - 1, argv + 1);
  }
  if (cmd == "eval") return pagedw2v::app::cmd_eval(argc - 1, argv + 1);
  if (cmd == "export") return pagedw2v::app::cmd_export(argc - 1, argv + 1);
  if (cmd == "phrases") return pagedw2v::app::cmd_phrases(argc - 1, argv + 1);
  if (cmd == "bench") return pagedw2v::app::cmd_bench(argc - 1, argv + 1);
  const size_t name_start = cmd.find_first_not_of('-');
  const std::string hint = pagedw2v::suggest_option(
      name_start == std::string::npos ? std::string() : cmd.substr(name_start),
      {"train", "similar", "word-vector", "similarity", "doesnt-match", "analogies", "eval",
       "export", "phrases", "bench", "help", "version"});
  throw pagedw2v::UsageError("unknown command '" + cmd + "'" +
                             (hint.empty() ? "" : " (did you mean " + hint.substr(2) + "?)") +
                             "; `pagedw2v --help` lists the commands");
}

/// Prints `what` as the one error line: a message that spans lines (a usage text, a file name
/// with a newline in it) is joined with "; ", so that stderr holds exactly one line.
void print_error(const char* what) {
  std::string line;
  for (const char* p = what; *p != '\0'; ++p) {
    if (*p != '\n' && *p != '\r') {
      line += *p;
      continue;
    }
    while (p[1] == '\n' || p[1] == '\r' || p[1] == ' ' || p[1] == '\t') ++p;
    if (p[1] != '\0') line += "; ";
  }
  // Words and names in it may come from files made elsewhere: on a terminal, their control
  // characters are shown as \xNN rather than steering it.
  if (::isatty(STDERR_FILENO)) line = pagedw2v::terminal_safe(line);
  std::fprintf(stderr, "pagedw2v: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // A file past `ulimit -f` is then a write error (EFBIG) that removes its temporary file and
  // ends the command with one line, not a death by SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
#ifdef __GLIBC__
  // glibc gives each thread that allocates its own arena (up to 8 a core), and what the 16
  // threads of a count free there stays resident beside the tables: 120 MB on the 2 M-word
  // walks, 56 MB with 4 and none with 2, at the same speed (docs/notebook.md, "Host memory of a
  // run"). MALLOC_ARENA_MAX, when set, still decides.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
#endif
  // The CUDA runtime loads a module lazily by default, at the first launch of one of its
  // kernels: the first epoch then pays for loading the training kernels' module. Loaded with
  // the context instead, the whole command takes no longer (docs/notebook.md, "Loading the
  // CUDA modules"). CUDA_MODULE_LOADING, when set, still decides; the runtime reads it once,
  // when it starts, after this.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  try {
    return dispatch(argc, argv);
  } catch (const pagedw2v::Interrupted& e) {
    print_error(e.what());
    return 128 + e.signal();
  } catch (const pagedw2v::UsageError& e) {
    print_error(e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
}
