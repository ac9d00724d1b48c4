// `pagedw2v train`: flags and TOML into one Config, then the library's run_training().
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include "commands.hpp"
#include "config.hpp"
#include "error.hpp"
#include "train/trainer.hpp"

namespace pagedw2v::app {
namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  // A second signal while the checkpoint is being written ends the process the default way.
  if (g_stop_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

int cmd_train(int argc, char** argv) {
  cxxopts::Options options("pagedw2v train", "Train word vectors from a corpus file.");
  options.custom_help("--corpus FILE --output DIR [--config FILE.toml] [options]");
  options.add_options()("config", "TOML file with any of the options below (flags win)",
                        cxxopts::value<std::string>())("h,help", "print this help");
  for (const OptionSpec& spec : train_options()) {
    auto value = cxxopts::value<std::string>();
    if (spec.is_flag) value->implicit_value("true");
    const std::string help =
        spec.default_text.empty() ? spec.help : spec.help + " (default: " + spec.default_text + ")";
    options.add_options()(spec.name, help, value);
  }

  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
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

  Config config;
  if (args.count("config")) apply_toml_file(config, args["config"].as<std::string>());
  for (const OptionSpec& spec : train_options()) {
    if (args.count(spec.name)) apply_option(config, spec.name, args[spec.name].as<std::string>());
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  run_training(config, stderr, &g_stop_signal);
  return 0;
}

}  // namespace pagedw2v::app
