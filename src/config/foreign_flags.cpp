#include "config/foreign_flags.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "config/config.hpp"

namespace pagedw2v {
namespace {

std::string normalise_key(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lower_dashed(const std::string& name) {
  std::string out;
  for (const char ch : name) {
    if (ch >= 'A' && ch <= 'Z') {
      if (!out.empty()) out += '-';
      out += static_cast<char>(ch - 'A' + 'a');
    } else {
      out += ch == '_' ? '-' : ch;
    }
  }
  return out;
}

}  // namespace

std::string suggest_option(const std::string& given, const std::vector<std::string>& valid) {
  // What word2vec.c, gensim and fastText call our options: {their name, our option, value}.
  static const std::vector<std::tuple<std::string, std::string, std::string>> kAliases = {
      {"iter", "epochs", ""},
      {"epoch", "epochs", ""},
      {"iterations", "epochs", ""},
      {"size", "dim", ""},
      {"vector-size", "dim", ""},
      {"dimension", "dim", ""},
      {"dims", "dim", ""},
      {"cbow", "model", "cbow"},
      {"sg", "model", "skipgram"},
      {"skipgram", "model", "skipgram"},
      {"skip-gram", "model", "skipgram"},
      {"train", "corpus", ""},
      {"input", "corpus", ""},
      {"workers", "threads", ""},
      {"thread", "threads", ""},
      {"neg", "negative", ""},
      {"ws", "window", ""},
      {"min-n", "min-count", ""},
      {"max-final-vocab", "max-vocab", ""},
      {"lr", "alpha", ""},
      {"analogy", "analogies", ""},
      {"questions", "analogies", ""},
      {"topn", "top", ""},
      {"k", "top", ""}};
  auto is_valid = [&](const std::string& name) {
    return std::find(valid.begin(), valid.end(), name) != valid.end();
  };
  const std::string key = lower_dashed(given);
  if (key != given && is_valid(key)) return "--" + key;
  for (const auto& [theirs, ours, value] : kAliases) {
    if (key == theirs && is_valid(ours)) return "--" + ours + (value.empty() ? "" : " " + value);
  }
  std::string best;
  size_t best_distance = std::string::npos;
  size_t best_prefix = 0;
  for (const std::string& name : valid) {
    if (name == "help") continue;
    size_t prefix = 0;
    while (prefix < key.size() && prefix < name.size() && key[prefix] == name[prefix]) ++prefix;
    const size_t distance = edit_distance(key, name);
    // Near in spelling, or sharing most of the given name as a prefix ("analog" for "analogies").
    const bool near = distance <= std::max<size_t>(1, key.size() / 3) ||
                      (prefix >= 4 && 2 * prefix >= key.size());
    if (!near) continue;
    if (prefix > best_prefix || (prefix == best_prefix && distance < best_distance)) {
      best = name;
      best_prefix = prefix;
      best_distance = distance;
    }
  }
  return best.empty() ? "" : "--" + best;
}

namespace {

/// A flag of word2vec.c or fastText whose value changes on the way, or that has no counterpart.
struct SpecialFlag {
  const char* tool;
  const char* flag;
  bool takes_value;
  /// Our arguments for the value, and what the note says they are; throws UsageError for a
  /// value with no counterpart.
  std::function<std::vector<std::string>(const std::string& value, std::string* ours)> read;
};

[[noreturn]] void no_counterpart(const std::string& tool, const std::string& flag,
                                 const std::string& why) {
  throw UsageError(tool + "'s " + flag + " has no counterpart: " + why +
                   "; `pagedw2v train --help` lists the options");
}

const std::vector<SpecialFlag>& special_flags() {
  using Args = std::vector<std::string>;
  static const std::vector<SpecialFlag> flags = {
      {"word2vec", "-cbow", true,
       [](const std::string& v, std::string* ours) {
         if (v != "0" && v != "1") throw UsageError("word2vec's -cbow takes 0 or 1");
         *ours = std::string("--model ") + (v == "1" ? "cbow" : "skipgram");
         return Args{"--model", v == "1" ? "cbow" : "skipgram"};
       }},
      {"word2vec", "-hs", true,
       [](const std::string& v, std::string* ours) {
         if (v != "0" && v != "1") throw UsageError("word2vec's -hs takes 0 or 1");
         if (v == "1") {
           *ours = "--hs";
           return Args{"--hs"};
         }
         *ours = "(nothing: no hierarchical softmax)";
         return Args{};
       }},
      {"word2vec", "-binary", true,
       [](const std::string&, std::string* ours) {
         // Both word2vec formats are written by default; --format chooses.
         *ours = "(nothing: --format chooses the files, vectors.bin and vectors.txt among them)";
         return Args{};
       }},
      {"word2vec", "-save-vocab", true,
       [](const std::string& v, std::string* ours) {
         *ours = "--save-vocab " + v + " --save-vocab-format word2vec";
         return Args{"--save-vocab", v, "--save-vocab-format", "word2vec"};
       }},
      {"word2vec", "-cw", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("word2vec", "-cw", "the model is skipgram or cbow");
       }},
      {"word2vec", "-classes", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("word2vec", "-classes", "pagedw2v does not cluster words");
       }},
      {"word2vec", "-debug", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("word2vec", "-debug", "progress is printed unless --quiet");
       }},
      {"word2vec", "-min-reduce", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("word2vec", "-min-reduce", "the vocabulary is counted exactly");
       }},
      {"fastText", "-loss", true,
       [](const std::string& v, std::string* ours) {
         // fastText's hs trains hierarchical softmax alone (its -neg is not read then).
         if (v == "hs") {
           *ours = "--hs --negative 0";
           return Args{"--hs", "--negative", "0"};
         }
         if (v != "ns") {
           throw UsageError("fastText's -loss " + v +
                            " is not supported: pagedw2v trains negative sampling (-loss ns, "
                            "--negative) or hierarchical softmax (-loss hs, --hs)");
         }
         *ours = "(nothing: negative sampling)";
         return Args{};
       }},
      {"fastText", "-minn", true,
       [](const std::string& v, std::string* ours) {
         if (v != "0") {
           throw UsageError("fastText's -minn " + v +
                            " (character n-grams) is not supported: pagedw2v trains whole "
                            "words, as fastText does with -minn 0 -maxn 0");
         }
         *ours = "(nothing: whole words only)";
         return Args{};
       }},
      {"fastText", "-maxn", true,
       [](const std::string& v, std::string* ours) {
         if (v != "0") {
           throw UsageError("fastText's -maxn " + v +
                            " (character n-grams) is not supported: pagedw2v trains whole "
                            "words, as fastText does with -maxn 0");
         }
         *ours = "(nothing: whole words only)";
         return Args{};
       }},
      {"fastText", "-wordNgrams", true,
       [](const std::string& v, std::string* ours) {
         if (v != "1") {
           throw UsageError("fastText's -wordNgrams " + v +
                            " is not supported: pagedw2v trains single words (-wordNgrams 1)");
         }
         *ours = "(nothing: single words)";
         return Args{};
       }},
      {"fastText", "-bucket", true,
       [](const std::string&, std::string* ours) {
         *ours = "(nothing: no n-gram buckets without subwords)";
         return Args{};
       }},
      {"fastText", "-verbose", true,
       [](const std::string& v, std::string* ours) {
         if (v == "0") {
           *ours = "--quiet";
           return Args{"--quiet"};
         }
         *ours = "(nothing: progress is printed unless --quiet)";
         return Args{};
       }},
      {"fastText", "-saveOutput", false,
       [](const std::string&, std::string* ours) {
         *ours = "--save-context";
         return Args{"--save-context"};
       }},
      {"fastText", "-lrUpdateRate", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("fastText", "-lrUpdateRate",
                        "the rate falls linearly with the words trained");
       }},
      {"fastText", "-pretrainedVectors", true,
       [](const std::string&, std::string*) -> Args {
         no_counterpart("fastText", "-pretrainedVectors", "training starts from random vectors");
       }},
  };
  return flags;
}

/// Whether `arg` stands where an option would: `--name`, `--name=value`, or `-x…`, not `-` alone
/// nor a negative number.
bool looks_like_option(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.';
}

}  // namespace

std::vector<std::string> translate_foreign_flags(const std::vector<std::string>& args,
                                                 std::string* note) {
  // Our options and whether each takes a value; --config and --help are train's own.
  std::map<std::string, bool> takes_value = {{"config", true}, {"help", false}, {"h", false}};
  std::map<std::string, std::pair<const ForeignFlag*, std::string>> foreign;
  std::vector<std::string> valid = {"config", "help"};
  for (const OptionSpec& spec : train_options()) {
    takes_value[spec.name] = !spec.is_flag;
    valid.push_back(spec.name);
    for (const ForeignFlag& f : spec.foreign) foreign[f.flag] = {&f, spec.name};
  }
  std::vector<std::string> out;
  std::vector<std::string> inputs;  // corpus inputs after the options
  size_t corpus_end = std::string::npos;
  std::string read_as;
  std::set<std::string> tools;
  bool after_flag = false;  // the argument before was an option that takes no value
  auto read = [&](const std::string& tool, const std::string& flag, const std::string& value,
                  const std::string& ours) {
    if (tool.find('/') == std::string::npos) tools.insert(tool);
    read_as +=
        (read_as.empty() ? "" : ", ") + flag + (value.empty() ? "" : " " + value) + " as " + ours;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool stray_value = after_flag && (arg == "true" || arg == "false");
    after_flag = false;
    if (!looks_like_option(arg)) {
      // After a flag that takes no value, `true` or `false` is left for the parser to refuse.
      // A path that does not exist is more likely a stray word than an input: the parser
      // refuses it as an unexpected argument.
      struct stat st {};
      if (stray_value || (arg != "-" && ::stat(arg.c_str(), &st) != 0)) {
        out.push_back(arg);
      } else {
        inputs.push_back(arg);
      }
      continue;
    }
    if (arg[1] != '-') {
      // A single dash: word2vec's or fastText's flag, or -h.
      if (arg == "-h") {
        out.push_back(arg);
        continue;
      }
      const auto f = foreign.find(arg);
      const auto special = std::find_if(special_flags().begin(), special_flags().end(),
                                        [&](const SpecialFlag& s) { return arg == s.flag; });
      if (f == foreign.end() && special == special_flags().end()) {
        const std::string hint = suggest_option(arg.substr(1), valid);
        throw UsageError("unknown option '" + arg + "'" +
                         (hint.empty() ? "" : " (did you mean " + hint + "?)") +
                         "; `pagedw2v train --help` lists the options");
      }
      const std::string& tool = f != foreign.end() ? f->second.first->tool : special->tool;
      const bool needs_value = f != foreign.end() || special->takes_value;
      if (needs_value && i + 1 >= args.size()) {
        throw UsageError(tool + "'s " + arg + " needs a value");
      }
      const std::string value = needs_value ? args[++i] : std::string();
      if (f != foreign.end()) {
        const std::string& name = f->second.second;
        read(tool, arg, value, "--" + name + " " + value);
        out.push_back("--" + name);
        out.push_back(value);
        if (name == "corpus") corpus_end = out.size();
      } else {
        std::string ours;
        const std::vector<std::string> ours_args = special->read(value, &ours);
        read(tool, arg, value, ours);
        out.insert(out.end(), ours_args.begin(), ours_args.end());
      }
      continue;
    }
    out.push_back(arg);
    const size_t eq = arg.find('=');
    const std::string name = normalise_key(arg.substr(2, eq == std::string::npos ? eq : eq - 2));
    const auto known = takes_value.find(name);
    if (name == "corpus") {
      // --corpus a.txt b.gz: the inputs that follow it are the parser's to gather.
      if (eq == std::string::npos && i + 1 < args.size()) out.push_back(args[++i]);
      while (i + 1 < args.size() && !looks_like_option(args[i + 1])) out.push_back(args[++i]);
      corpus_end = out.size();
    } else if (eq == std::string::npos && known != takes_value.end() && known->second &&
               i + 1 < args.size()) {
      out.push_back(args[++i]);
    } else {
      after_flag = eq == std::string::npos && known != takes_value.end() && !known->second;
    }
  }
  if (!inputs.empty()) {
    if (corpus_end == std::string::npos) {
      out.push_back("--corpus");
      out.insert(out.end(), inputs.begin(), inputs.end());
    } else {
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(corpus_end), inputs.begin(),
                 inputs.end());
    }
  }
  if (!read_as.empty()) {
    std::string who;
    for (const std::string& t : tools) who += (who.empty() ? "" : " and ") + t;
    if (who.empty()) who = "word2vec/fastText";
    *note = "note: " + who + " flags read as ours: " + read_as + " (--output is a directory)";
  }
  return out;
}

}  // namespace pagedw2v
