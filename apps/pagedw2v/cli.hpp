#pragma once
// What every subcommand does with its command line: one parse, one error line, --help.

#include <cstdint>
#include <cstring>
#include <cxxopts.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "config/foreign_flags.hpp"
#include "eval/neighbors.hpp"

namespace pagedw2v::app {

inline constexpr const char* kVectorsHelp =
    "vectors: a run directory, or a file told by its content: .npy (vocab.tsv beside it), "
    "embeddings.h5, word2vec binary or text (gensim's too), fastText .vec, GloVe text, or any "
    "of the last four gzip-compressed";
inline constexpr const char* kVectorsFormatHelp =
    "read --vectors as this format instead of telling it by content: npy, h5, bin, txt "
    "(word2vec text and fastText .vec), glove (text without the \"V D\" header) or auto";

/// cxxopts' message with ASCII quotes instead of its typographic ones.
inline std::string ascii_quotes(std::string text) {
  for (const char* curly : {"\u2018", "\u2019"}) {
    for (size_t at = text.find(curly); at != std::string::npos; at = text.find(curly, at)) {
      text.replace(at, std::strlen(curly), "'");
    }
  }
  return text;
}

/// The long option names `options` knows.
inline std::vector<std::string> long_option_names(const cxxopts::Options& options) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      for (const std::string& name : o.l) names.push_back(name);
    }
  }
  return names;
}

/// The unknown-option error: the nearest valid option, and where the list is.
inline std::string unknown_option_message(const cxxopts::Options& options,
                                          const std::string& given) {
  const std::string dashes = given.size() == 1 ? "-" : "--";
  std::string message = "unknown option '" + dashes + given + "'";
  const std::string suggestion = suggest_option(given, long_option_names(options));
  if (!suggestion.empty()) message += " (did you mean " + suggestion + "?)";
  return message + "; `" + options.program() + " --help` lists the options";
}

/// Parses `argv` into `*args`. A cxxopts error or a stray argument becomes one UsageError line.
/// Returns false when --help was asked for, after printing the help to stdout.
inline bool parse_command_line(cxxopts::Options& options, int argc, char** argv,
                               cxxopts::ParseResult* args) {
  try {
    *args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::no_such_option& e) {
    // "Option 'x' does not exist": the name sits between the quotes.
    const std::string what = ascii_quotes(e.what());
    const size_t open = what.find('\'');
    const size_t close = what.find('\'', open + 1);
    if (open == std::string::npos || close == std::string::npos) throw UsageError(what);
    throw UsageError(unknown_option_message(options, what.substr(open + 1, close - open - 1)));
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(ascii_quotes(e.what()) + "; `" + options.program() +
                     " --help` lists the options");
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

/// What --ignore-case would match for the unknown words, the words it finds named ("--ignore-case
/// finds 'paris' for 'Paris'"); empty when no word has a spelling in another case.
inline std::string ignore_case_hint(const NeighborIndex& index,
                                    const std::vector<std::string>& unknown) {
  std::string found;
  for (const std::string& w : unknown) {
    const std::optional<uint32_t> row = index.find(w, true);
    if (!row) continue;
    found += std::string(found.empty() ? "" : ", ") + "'" + index.word(*row) + "' for '" + w + "'";
  }
  return found.empty() ? "" : "--ignore-case finds " + found;
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
