// `pagedw2v similar`: the nearest neighbours of words, and analogy queries, by cosine similarity.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "eval/neighbors.hpp"
#include "io/embeddings.hpp"
#include "text/utf8.hpp"

namespace pagedw2v::app {

namespace {

/// One query: the words added and subtracted, as the user wrote it.
struct Query {
  std::string text;
  std::vector<std::string> positive;
  std::vector<std::string> negative;
};

bool is_operator(const std::string& token) { return token == "+" || token == "-"; }

/// `king - man + woman` (or words with no operator, all added) as one query. Returns an empty
/// optional with `*why` set when the operators do not alternate with words.
std::optional<Query> parse_expression(const std::vector<std::string>& tokens, std::string* why) {
  Query q;
  bool subtract = false;
  bool expect_word = true;
  for (const std::string& token : tokens) {
    q.text += (q.text.empty() ? "" : " ") + token;
    if (is_operator(token)) {
      if (expect_word && !q.positive.empty()) {
        *why = "two operators in a row in '" + q.text + "'";
        return std::nullopt;
      }
      if (q.positive.empty() && q.negative.empty() && token == "-") {
        *why = "a query starts with a word to add, not '-'";
        return std::nullopt;
      }
      subtract = token == "-";
      expect_word = true;
      continue;
    }
    (subtract ? q.negative : q.positive).push_back(token);
    subtract = false;
    expect_word = false;
  }
  if (q.positive.empty()) {
    *why = "a query needs a word to add";
    return std::nullopt;
  }
  if (expect_word) {
    *why = "'" + q.text + "' ends with an operator";
    return std::nullopt;
  }
  return q;
}

std::vector<std::string> split_blank(const std::string& line) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

/// Words come from files made elsewhere: on a terminal, their control characters (an escape
/// sequence) are shown as \xNN instead of steering it; into a pipe or a file they go as they are.
std::string shown(const std::string& text, std::FILE* stream) {
  static const bool out_tty = ::isatty(STDOUT_FILENO) != 0;
  static const bool err_tty = ::isatty(STDERR_FILENO) != 0;
  return (stream == stdout ? out_tty : err_tty) ? terminal_safe(text) : text;
}

const char* method_name(AnalogyMethod method) {
  return method == AnalogyMethod::kCosMul ? "3cosmul" : "3cosadd";
}

/// Answers queries one at a time and prints each answer as it comes.
class Answerer {
 public:
  Answerer(const NeighborIndex& index, uint32_t top, bool ignore_case, AnalogyMethod method,
           bool json)
      : index_(index), top_(top), ignore_case_(ignore_case), method_(method), json_(json) {}

  /// Prints the answer of `q`, or reports its unknown words on stderr and skips it.
  void answer(const Query& q) {
    std::vector<uint32_t> positive;
    std::vector<uint32_t> negative;
    std::vector<std::string> unknown;
    auto look_up = [&](const std::vector<std::string>& words, std::vector<uint32_t>& rows) {
      for (const std::string& w : words) {
        const std::optional<uint32_t> row = index_.find(w, ignore_case_);
        if (row) {
          rows.push_back(*row);
        } else {
          unknown.push_back(w);
        }
      }
    };
    look_up(q.positive, positive);
    look_up(q.negative, negative);
    if (!unknown.empty()) {
      skip(q, unknown);
      return;
    }
    for (size_t i = 0; i < positive.size() + negative.size(); ++i) {
      const uint32_t row = i < positive.size() ? positive[i] : negative[i - positive.size()];
      if (!index_.usable(row)) {
        reject(q.text, "the vector of word '" +
                           (i < positive.size() ? q.positive[i] : q.negative[i - positive.size()]) +
                           "' holds NaN or infinite values");
        return;
      }
    }
    const auto neighbours = index_.most_similar(positive, negative, top_, method_);
    ++answered_;
    if (json_) {
      nlohmann::ordered_json out = {{"query", q.text},
                                    {"positive", q.positive},
                                    {"negative", q.negative},
                                    {"method", method_name(method_)},
                                    {"neighbors", nlohmann::ordered_json::array()}};
      for (const auto& [word, score] : neighbours) {
        out["neighbors"].push_back({{"word", word}, {"similarity", score}});
      }
      print_json(out);
      return;
    }
    std::printf("%s\n", shown(q.text, stdout).c_str());
    for (const auto& [word, score] : neighbours) {
      std::printf("  %-24s %.4f\n", shown(word, stdout).c_str(), score);
    }
    std::fflush(stdout);
  }

  /// A query that could not be parsed: reported and skipped like an unknown word.
  void reject(const std::string& text, const std::string& why) {
    ++skipped_;
    std::fflush(stdout);
    std::fprintf(stderr, "pagedw2v: skipped '%s': %s\n", shown(text, stderr).c_str(),
                 shown(why, stderr).c_str());
    std::fflush(stderr);
  }

  uint64_t answered() const { return answered_; }
  uint64_t skipped() const { return skipped_; }
  const std::vector<std::string>& unknown_words() const { return unknown_words_; }

 private:
  void skip(const Query& q, const std::vector<std::string>& unknown) {
    ++skipped_;
    std::string words;
    for (const std::string& w : unknown) {
      words += (words.empty() ? "'" : ", '") + w + "'";
      unknown_words_.push_back(w);
    }
    std::string why = words + (unknown.size() == 1 ? " is" : " are") + " not in the vocabulary";
    if (!ignore_case_) {
      const std::string hint = ignore_case_hint(index_, unknown);
      if (!hint.empty()) why += " (" + hint + ")";
    }
    if (json_) {
      print_json({{"query", q.text},
                  {"unknown", unknown},
                  {"neighbors", nlohmann::ordered_json::array()}});
    }
    std::fflush(stdout);
    std::fprintf(stderr, "pagedw2v: skipped '%s': %s\n", shown(q.text, stderr).c_str(),
                 shown(why, stderr).c_str());
    std::fflush(stderr);
  }

  static void print_json(const nlohmann::ordered_json& j) {
    // Words are bytes: any that are not UTF-8 become U+FFFD, so the line stays valid JSON.
    const std::string line =
        j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

  const NeighborIndex& index_;
  uint32_t top_;
  bool ignore_case_;
  AnalogyMethod method_;
  bool json_;
  uint64_t answered_ = 0;
  uint64_t skipped_ = 0;
  std::vector<std::string> unknown_words_;
};

}  // namespace

int cmd_similar(int argc, char** argv) {
  cxxopts::Options options(
      "pagedw2v similar",
      "Print the nearest neighbours of words by cosine similarity, or answer analogy queries "
      "(`king - man + woman`). With no WORD and no --positive, reads one query a line from "
      "standard input. Unknown words are reported on stderr and their query skipped; the exit "
      "status is 0 when any query was answered.");
  options.custom_help(
      "--vectors PATH [--top N] [--ignore-case] [--json] [--method 3cosadd|3cosmul] "
      "[--positive A,C --negative B]");
  options.add_options()("vectors", kVectorsHelp, cxxopts::value<std::string>())(
      "vectors-format", kVectorsFormatHelp, cxxopts::value<std::string>()->default_value("auto"))(
      "top", "neighbours per query", cxxopts::value<std::string>()->default_value("10"))(
      "ignore-case", "match words ignoring ASCII case when the exact spelling is absent")(
      "positive", "words to add: one analogy query (comma-separated or repeated)",
      cxxopts::value<std::vector<std::string>>())("negative",
                                                  "words to subtract from the --positive query",
                                                  cxxopts::value<std::vector<std::string>>())(
      "method",
      "how a query of several words ranks: 3cosadd (gensim's most_similar) or 3cosmul "
      "(most_similar_cosmul)",
      cxxopts::value<std::string>()->default_value("3cosadd"))(
      "json", "print one JSON object a query, one a line")(
      "words", "words to look up", cxxopts::value<std::vector<std::string>>())("h,help",
                                                                               "print this help");
  options.parse_positional({"words"});
  options.positional_help("[WORD... | A - B + C]");

  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (!args.count("vectors")) throw UsageError("similar needs --vectors PATH");
  const uint32_t top = positive_count("--top", args["top"].as<std::string>());
  const std::string method_text = args["method"].as<std::string>();
  AnalogyMethod method = AnalogyMethod::kCosAdd;
  if (method_text == "3cosmul" || method_text == "cosmul") {
    method = AnalogyMethod::kCosMul;
  } else if (method_text != "3cosadd" && method_text != "cosadd") {
    throw UsageError("--method: expected 3cosadd or 3cosmul, got '" + method_text + "'");
  }
  const VectorsFormat format = parse_vectors_format(args["vectors-format"].as<std::string>());

  // The queries of the command line, checked before the vectors are read.
  std::vector<Query> queries;
  const bool from_flags = args.count("positive") > 0;
  if (args.count("negative") && !from_flags) {
    throw UsageError("--negative needs --positive (the words to add)");
  }
  std::vector<std::string> words;
  if (args.count("words")) words = args["words"].as<std::vector<std::string>>();
  if (from_flags) {
    if (!words.empty()) {
      throw UsageError("give the query either as --positive/--negative or as words, not both");
    }
    Query q;
    q.positive = args["positive"].as<std::vector<std::string>>();
    if (args.count("negative")) q.negative = args["negative"].as<std::vector<std::string>>();
    for (const std::string& w : q.positive) q.text += (q.text.empty() ? "" : " + ") + w;
    for (const std::string& w : q.negative) q.text += " - " + w;
    queries.push_back(std::move(q));
  } else if (std::any_of(words.begin(), words.end(), is_operator)) {
    std::string why;
    const std::optional<Query> q = parse_expression(words, &why);
    if (!q) throw UsageError(why);
    queries.push_back(*q);
  } else {
    for (const std::string& w : words) queries.push_back({w, {w}, {}});
  }

  const LoadedEmbeddings emb = load_embeddings(args["vectors"].as<std::string>(), format);
  if (const uint64_t bad = nonfinite_rows(emb, emb.rows); bad > 0) {
    std::printf("(left out: %llu of %llu rows with NaN or infinite values)\n",
                static_cast<unsigned long long>(bad), static_cast<unsigned long long>(emb.rows));
  }
  const NeighborIndex index(emb);
  Answerer answerer(index, top, args.count("ignore-case") > 0, method, args.count("json") > 0);

  if (!queries.empty()) {
    // A command line whose every word is unknown (or has no usable vector) is one error, not a
    // warning per word.
    const bool ignore_case = args.count("ignore-case") > 0;
    bool any_known = false;
    std::string unknown;
    std::vector<std::string> unknown_words;
    std::string nonfinite;
    for (const Query& q : queries) {
      bool known = true;
      for (const auto* list : {&q.positive, &q.negative}) {
        for (const std::string& w : *list) {
          const std::optional<uint32_t> row = index.find(w, ignore_case);
          if (!row) {
            unknown += (unknown.empty() ? "'" : ", '") + w + "'";
            unknown_words.push_back(w);
          } else if (!index.usable(*row)) {
            nonfinite += (nonfinite.empty() ? "'" : ", '") + w + "'";
          }
          known = known && row && index.usable(*row);
        }
      }
      any_known = any_known || known;
    }
    if (!any_known) {
      std::string why;
      if (!unknown.empty()) {
        why = unknown + " not in the vocabulary";
        const std::string hint = ignore_case ? "" : ignore_case_hint(index, unknown_words);
        if (!hint.empty()) why += " (" + hint + ")";
      }
      if (!nonfinite.empty()) {
        why += (why.empty() ? "" : "; ") + std::string("the vector of word ") + nonfinite +
               " holds NaN or infinite values";
      }
      throw Error("no query answered: " + why);
    }
    for (const Query& q : queries) answerer.answer(q);
    return 0;
  }

  if (::isatty(STDIN_FILENO)) {
    std::fprintf(stderr, "one query a line (a word, or `king - man + woman`); end with Ctrl-D\n");
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> tokens = split_blank(line);
    if (tokens.empty()) continue;
    std::string why;
    const std::optional<Query> q = parse_expression(tokens, &why);
    if (q) {
      answerer.answer(*q);
    } else {
      answerer.reject(line, why);
    }
  }
  if (answerer.answered() == 0) {
    if (answerer.skipped() == 0) {
      throw UsageError("no query: give WORD arguments, --positive, or one query a line on stdin");
    }
    throw Error("no query answered");
  }
  return 0;
}

}  // namespace pagedw2v::app
