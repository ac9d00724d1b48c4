// pagedw2v: word2vec (skip-gram and CBOW with negative sampling) on CPUs and GPUs.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "commands.hpp"
#include "error.hpp"

namespace {

constexpr const char* kUsage =
    "usage: pagedw2v <command> [options]\n"
    "\n"
    "commands:\n"
    "  train    train vectors from a corpus file\n"
    "  similar  print the nearest neighbours of words\n"
    "  eval     word analogies and word-pair similarity\n"
    "  export   write the vectors of a checkpoint\n"
    "  bench    bench train --corpus FILE [--repeat N] --device cuda|cpu: time training\n"
    "           bench train --synthetic VOCAB,WORDS,ZIPF: the same on a generated Zipf corpus\n"
    "           bench transfer: move rows between a pinned host table and the GPU (CUDA builds)\n"
    "           bench ingest --corpus FILE: time counting the vocabulary and encoding\n"
    "\n"
    "`pagedw2v <command> --help` lists a command's options.\n";

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
  if (cmd == "train") return pagedw2v::app::cmd_train(argc - 1, argv + 1);
  if (cmd == "similar") return pagedw2v::app::cmd_similar(argc - 1, argv + 1);
  if (cmd == "eval") return pagedw2v::app::cmd_eval(argc - 1, argv + 1);
  if (cmd == "export") return pagedw2v::app::cmd_export(argc - 1, argv + 1);
  if (cmd == "bench") return pagedw2v::app::cmd_bench(argc - 1, argv + 1);
  throw pagedw2v::UsageError("unknown command '" + cmd + "' (try `pagedw2v --help`)");
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
  std::fprintf(stderr, "pagedw2v: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
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
