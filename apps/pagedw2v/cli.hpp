#pragma once
// What every subcommand does with its command line: one parse, one error line, --help.

#include <cstdint>
#include <cxxopts.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "config.hpp"
#include "error.hpp"

namespace pagedw2v::app {

/// Parses `argv` into `*args`. A cxxopts error or a stray argument becomes one UsageError line.
/// Returns false when --help was asked for, after printing the help to stdout.
inline bool parse_command_line(cxxopts::Options& options, int argc, char** argv,
                               cxxopts::ParseResult* args) {
  try {
    *args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(e.what());
  }
  if (args->count("help")) {
    std::cout << options.help() << std::flush;
    return false;
  }
  if (!args->unmatched().empty()) {
    throw UsageError("unexpected argument '" + args->unmatched().front() + "'");
  }
  return true;
}

/// `--corpus a.txt b.gz dir/`: the arguments that follow --corpus's value, up to the next option,
/// are more corpus inputs; they are joined into that value (one per line), so that the parser
/// sees one value. Returns the arguments to parse.
inline std::vector<std::string> gather_corpus_inputs(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    out.push_back(a);
    if (a == "--corpus" && i + 1 < argc) {
      out.emplace_back(argv[++i]);
    } else if (a.rfind("--corpus=", 0) != 0) {
      continue;
    }
    while (i + 1 < argc && (argv[i + 1][0] != '-' || std::string(argv[i + 1]) == "-")) {
      out.back() += "\n" + std::string(argv[++i]);
    }
  }
  return out;
}

/// Adds the training options (config.hpp's table) to `options`, except those `skip` names.
template <class Skip>
void add_train_options(cxxopts::Options& options, Skip&& skip) {
  for (const OptionSpec& spec : train_options()) {
    if (skip(spec.name)) continue;
    auto value = cxxopts::value<std::string>();
    if (spec.is_flag) value->implicit_value("true");
    const std::string help =
        spec.default_text.empty() ? spec.help : spec.help + " (default: " + spec.default_text + ")";
    options.add_options()(spec.name, help, value);
  }
}

/// Applies the training options given on the command line, after any config file.
inline void apply_train_flags(Config& config, const cxxopts::ParseResult& args) {
  for (const OptionSpec& spec : train_options()) {
    if (args.count(spec.name)) apply_option(config, spec.name, args[spec.name].as<std::string>());
  }
}

/// A flag value that must be a whole number from 1 up.
inline uint32_t positive_count(const std::string& flag, const std::string& text) {
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (const char ch : text) {
    ok = ok && ch >= '0' && ch <= '9';
    if (ok) value = value * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (!ok || value == 0 || value > UINT32_MAX) {
    throw UsageError(flag + " expects a whole number from 1 to 4294967295, not '" + text + "'");
  }
  return static_cast<uint32_t>(value);
}

}  // namespace pagedw2v::app
