// `pagedw2v bench train`: the training flags of `train` plus --repeat, then run_train_bench().
#include <cxxopts.hpp>
#include <iostream>
#include <string>

#include "bench/train_bench.hpp"
#include "commands.hpp"
#include "config.hpp"
#include "error.hpp"

namespace pagedw2v::app {

int cmd_bench(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "train") {
    throw UsageError(
        "usage: pagedw2v bench train --corpus FILE [--repeat N] [--device cuda|cpu] "
        "[train options]");
  }
  cxxopts::Options options("pagedw2v bench train",
                           "Time training on a corpus: words/s, time split, GPU memory.");
  options.custom_help("--corpus FILE [--repeat N] [--device cuda|cpu] [train options]");
  options.add_options()("repeat", "train on the corpus repeated N times",
                        cxxopts::value<uint32_t>()->default_value("1"))(
      "stream", "CUDA: stream the corpus in chunks even when it fits on the GPU")(
      "chunk-tokens", "CUDA: tokens per streamed chunk",
      cxxopts::value<uint64_t>()->default_value(std::to_string(uint64_t{32} << 20)))(
      "h,help", "print this help");
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == "output" || spec.name == "format" || spec.name == "save-context") continue;
    auto value = cxxopts::value<std::string>();
    if (spec.is_flag) value->implicit_value("true");
    options.add_options()(spec.name, spec.help, value);
  }
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc - 1, argv + 1);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(e.what());
  }
  if (args.count("help")) {
    std::cout << options.help() << std::flush;
    return 0;
  }
  if (!args.unmatched().empty()) {
    throw UsageError("unexpected argument '" + args.unmatched().front() + "'");
  }
  TrainBenchOptions bench;
  for (const OptionSpec& spec : train_options()) {
    if (args.count(spec.name)) {
      apply_option(bench.config, spec.name, args[spec.name].as<std::string>());
    }
  }
  bench.repeat = args["repeat"].as<uint32_t>();
  bench.force_stream = args.count("stream") > 0;
  bench.chunk_tokens = args["chunk-tokens"].as<uint64_t>();
  run_train_bench(bench, stdout);
  return 0;
}

}  // namespace pagedw2v::app
