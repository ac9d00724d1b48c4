// `pagedw2v word-vector`, `similarity`, `doesnt-match` and `analogies`: questions about given
// words, as fastText's print-word-vectors and analogies, word2vec's word-analogy and gensim's
// KeyedVectors answer them. Each takes its words from the command line or, without them, from
// standard input (a word a token for word-vector, a query a line for the others).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "eval/neighbors.hpp"
#include "eval/word_queries.hpp"
#include "io/embeddings.hpp"

namespace pagedw2v::app {
namespace {

enum class Kind { kWordVector, kSimilarity, kDoesntMatch, kAnalogies };

struct Spec {
  const char* name;
  const char* description;
  const char* words_help;
  size_t min_words;  ///< a query's words
  size_t max_words;  ///< 0 = no limit
};

Spec spec_of(Kind kind) {
  switch (kind) {
    case Kind::kWordVector:
      return {"word-vector",
              "Print the vector of each word (fastText's print-word-vectors): the word and its "
              "values on one line. Without WORD arguments, reads words from standard input.",
              "[WORD...]", 1, 1};
    case Kind::kSimilarity:
      return {"similarity",
              "Print the cosine similarity of two words (gensim's similarity). Without words, "
              "reads a pair a line from standard input.",
              "[WORD1 WORD2]", 2, 2};
    case Kind::kDoesntMatch:
      return {"doesnt-match",
              "Print the word that does not match the others (gensim's doesnt_match): the one "
              "least like the mean of their unit vectors; words not in the vocabulary are left "
              "out, with a note on stderr. Without words, reads a list a line from standard "
              "input.",
              "[WORD WORD...]", 2, 0};
    default:
      return {"analogies",
              "Answer \"A is to B as C is to ?\" (word2vec's word-analogy: B - A + C, the three "
              "words left out). Without words, reads a triple `A B C` a line from standard input "
              "(fastText's analogies).",
              "[A B C]", 3, 3};
  }
}

std::vector<std::string> split_blank(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream in(line);
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

/// Prints `j` on one line; words are bytes, and any that are not UTF-8 become U+FFFD.
void print_json_line(const nlohmann::ordered_json& j) {
  const std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

/// How analogies are answered (their flags, checked before the vectors are read).
struct AnalogyOptions {
  uint32_t top = 10;
  AnalogyMethod method = AnalogyMethod::kCosAdd;
  bool fasttext_order = false;
};

AnalogyOptions analogy_options(Kind kind, const cxxopts::ParseResult& args) {
  AnalogyOptions o;
  if (kind != Kind::kAnalogies) return o;
  o.top = positive_count("--top", args["top"].as<std::string>());
  const std::string method = args["method"].as<std::string>();
  if (method == "3cosmul" || method == "cosmul") {
    o.method = AnalogyMethod::kCosMul;
  } else if (method != "3cosadd" && method != "cosadd") {
    throw UsageError("--method: expected 3cosadd or 3cosmul, got '" + method + "'");
  }
  o.fasttext_order = args.count("fasttext-order") > 0;
  return o;
}

class Answerer {
 public:
  Answerer(Kind kind, const LoadedEmbeddings& emb, const NeighborIndex& index, bool ignore_case,
           bool json, const AnalogyOptions& analogy)
      : kind_(kind),
        emb_(emb),
        index_(index),
        ignore_case_(ignore_case),
        json_(json),
        top_(analogy.top),
        method_(analogy.method),
        fasttext_order_(analogy.fasttext_order) {}

  /// Why `words` cannot be answered ("" when they can); `rows` gets the rows of those that have
  /// one and `used` those words. doesnt-match leaves the others out, as gensim does (`*ignored`
  /// says which and why), when any word is left.
  std::string problem(const std::vector<std::string>& words, std::vector<uint32_t>* rows,
                      std::vector<std::string>* used, std::string* ignored) const {
    const Spec spec = spec_of(kind_);
    if (words.size() < spec.min_words || (spec.max_words > 0 && words.size() > spec.max_words)) {
      const std::string needed = spec.max_words == spec.min_words
                                     ? std::to_string(spec.min_words)
                                     : std::to_string(spec.min_words) + " or more";
      return std::string(spec.name) + " takes " + needed + " words a query, not " +
             std::to_string(words.size());
    }
    std::string unknown;
    std::vector<std::string> unknown_words;
    std::string nonfinite;
    for (const std::string& w : words) {
      const std::optional<uint32_t> row = index_.find(w, ignore_case_);
      if (!row) {
        unknown += (unknown.empty() ? "'" : ", '") + w + "'";
        unknown_words.push_back(w);
      } else if (!index_.usable(*row)) {
        nonfinite += (nonfinite.empty() ? "'" : ", '") + w + "'";
      } else {
        rows->push_back(*row);
        used->push_back(w);
      }
    }
    std::string why;
    if (!unknown.empty()) {
      why = unknown + " not in the vocabulary";
      const std::string hint = ignore_case_ ? "" : ignore_case_hint(index_, unknown_words);
      if (!hint.empty()) why += " (" + hint + ")";
    }
    if (!nonfinite.empty()) {
      why += (why.empty() ? "" : "; ") + std::string("the vector of ") + nonfinite +
             " holds NaN or infinite values";
    }
    if (kind_ == Kind::kDoesntMatch && !why.empty() && !rows->empty()) {
      *ignored = why;
      return "";
    }
    return why;
  }

  /// Answers `words`, or reports on stderr why not and skips them.
  void answer(const std::vector<std::string>& words) {
    std::vector<uint32_t> rows;
    std::vector<std::string> used;
    std::string ignored;
    const std::string why = problem(words, &rows, &used, &ignored);
    if (!ignored.empty()) {
      std::fflush(stdout);
      std::fprintf(stderr, "pagedw2v: '%s': left out %s\n", joined(words).c_str(), ignored.c_str());
      std::fflush(stderr);
    }
    if (!why.empty()) {
      ++skipped_;
      std::fflush(stdout);
      std::fprintf(stderr, "pagedw2v: skipped '%s': %s\n", joined(words).c_str(), why.c_str());
      std::fflush(stderr);
      return;
    }
    ++answered_;
    switch (kind_) {
      case Kind::kWordVector:
        print_vector(words[0], rows[0]);
        break;
      case Kind::kSimilarity:
        print_similarity(words, rows);
        break;
      case Kind::kDoesntMatch:
        print_doesnt_match(used, rows);
        break;
      case Kind::kAnalogies:
        print_analogy(words, rows);
        break;
    }
  }

  uint64_t answered() const { return answered_; }
  uint64_t skipped() const { return skipped_; }

 private:
  void print_vector(const std::string& word, uint32_t row) const {
    const float* v = emb_.row(row);
    if (json_) {
      print_json_line({{"word", word}, {"vector", std::vector<float>(v, v + emb_.dim)}});
      return;
    }
    std::string line = word;
    char buf[32];
    for (uint32_t k = 0; k < emb_.dim; ++k) {
      std::snprintf(buf, sizeof buf, " %.9g", static_cast<double>(v[k]));
      line += buf;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

  void print_similarity(const std::vector<std::string>& words,
                        const std::vector<uint32_t>& rows) const {
    const double cosine = row_cosine(emb_, rows[0], rows[1]);
    if (json_) {
      print_json_line({{"word1", words[0]}, {"word2", words[1]}, {"similarity", cosine}});
      return;
    }
    std::printf("%s %s %.6f\n", words[0].c_str(), words[1].c_str(), cosine);
    std::fflush(stdout);
  }

  void print_doesnt_match(const std::vector<std::string>& words,
                          const std::vector<uint32_t>& rows) const {
    const std::string& odd = words[doesnt_match(emb_, rows)];
    if (json_) {
      print_json_line({{"words", words}, {"doesnt_match", odd}});
      return;
    }
    std::printf("%s\n", odd.c_str());
    std::fflush(stdout);
  }

  void print_analogy(const std::vector<std::string>& words,
                     const std::vector<uint32_t>& rows) const {
    // fastText's order, A - B + C, is word2vec's B - A + C with A and B swapped.
    const uint32_t a = fasttext_order_ ? rows[1] : rows[0];
    const uint32_t b = fasttext_order_ ? rows[0] : rows[1];
    const auto answers = analogy_answers(index_, a, b, rows[2], top_, method_);
    const std::string query = joined(words);
    if (json_) {
      nlohmann::ordered_json out = {
          {"query", query},
          {"positive", {fasttext_order_ ? words[0] : words[1], words[2]}},
          {"negative", {fasttext_order_ ? words[1] : words[0]}},
          {"method", method_ == AnalogyMethod::kCosMul ? "3cosmul" : "3cosadd"},
          {"neighbors", nlohmann::ordered_json::array()}};
      for (const auto& [word, score] : answers) {
        out["neighbors"].push_back({{"word", word}, {"similarity", score}});
      }
      print_json_line(out);
      return;
    }
    std::printf("%s\n", query.c_str());
    for (const auto& [word, score] : answers) std::printf("  %-24s %.4f\n", word.c_str(), score);
    std::fflush(stdout);
  }

  Kind kind_;
  const LoadedEmbeddings& emb_;
  const NeighborIndex& index_;
  bool ignore_case_;
  bool json_;
  uint32_t top_;
  AnalogyMethod method_;
  bool fasttext_order_;
  uint64_t answered_ = 0;
  uint64_t skipped_ = 0;
};

int run_query_command(Kind kind, int argc, char** argv) {
  const Spec spec = spec_of(kind);
  cxxopts::Options options(std::string("pagedw2v ") + spec.name, spec.description);
  options.custom_help("--vectors PATH [--ignore-case] [--json]" +
                      std::string(kind == Kind::kAnalogies
                                      ? " [--top N] [--method 3cosadd|3cosmul] [--fasttext-order]"
                                      : ""));
  options.add_options()("vectors", kVectorsHelp, cxxopts::value<std::string>())(
      "vectors-format", kVectorsFormatHelp, cxxopts::value<std::string>()->default_value("auto"))(
      "ignore-case", "match words ignoring ASCII case when the exact spelling is absent")(
      "json", "print one JSON object an answer, one a line")(
      "words", "the words", cxxopts::value<std::vector<std::string>>())("h,help",
                                                                        "print this help");
  if (kind == Kind::kAnalogies) {
    options.add_options()("top", "answers per query",
                          cxxopts::value<std::string>()->default_value("10"))(
        "method",
        "how the answers rank: 3cosadd (gensim's most_similar) or 3cosmul (most_similar_cosmul)",
        cxxopts::value<std::string>()->default_value("3cosadd"))(
        "fasttext-order", "read `A B C` as fastText's analogies does: A - B + C");
  }
  options.parse_positional({"words"});
  options.positional_help(spec.words_help);

  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (!args.count("vectors")) throw UsageError(std::string(spec.name) + " needs --vectors PATH");
  std::vector<std::string> words;
  if (args.count("words")) words = args["words"].as<std::vector<std::string>>();
  if (!words.empty() && kind != Kind::kWordVector) {
    // A query of the command line has the words it needs, checked before the vectors are read.
    const bool too_few = words.size() < spec.min_words;
    const bool too_many = spec.max_words > 0 && words.size() > spec.max_words;
    if (too_few || too_many) {
      throw UsageError(std::string(spec.name) + " takes " + spec.words_help + ", not " +
                       std::to_string(words.size()) + " words");
    }
  }
  const AnalogyOptions analogy = analogy_options(kind, args);
  const VectorsFormat format = parse_vectors_format(args["vectors-format"].as<std::string>());
  const LoadedEmbeddings emb = load_embeddings(args["vectors"].as<std::string>(), format);
  const NeighborIndex index(emb);
  Answerer answerer(kind, emb, index, args.count("ignore-case") > 0, args.count("json") > 0,
                    analogy);

  if (!words.empty()) {
    std::vector<std::vector<std::string>> queries;
    if (kind == Kind::kWordVector) {
      for (const std::string& w : words) queries.push_back({w});
    } else {
      queries.push_back(words);
    }
    // A command line whose every query has an unknown word is one error, not a line a query.
    std::string why;
    bool any = false;
    for (const auto& q : queries) {
      std::vector<uint32_t> rows;
      std::vector<std::string> used;
      std::string ignored;
      const std::string problem = answerer.problem(q, &rows, &used, &ignored);
      any = any || problem.empty();
      if (!problem.empty() && why.empty()) why = problem;
    }
    if (!any) throw Error("no query answered: " + why);
    for (const auto& q : queries) answerer.answer(q);
    return 0;
  }

  if (::isatty(STDIN_FILENO)) {
    std::fprintf(stderr, "%s; end with Ctrl-D\n",
                 kind == Kind::kWordVector
                     ? "words, separated by spaces or lines"
                     : (std::string("one query a line: ") + spec.words_help).c_str());
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> tokens = split_blank(line);
    if (tokens.empty()) continue;
    if (kind == Kind::kWordVector) {
      for (const std::string& w : tokens) answerer.answer({w});
    } else {
      answerer.answer(tokens);
    }
  }
  if (answerer.answered() == 0) {
    if (answerer.skipped() == 0) {
      throw UsageError(std::string("no query: give ") + spec.words_help +
                       " as arguments, or one query a line on standard input");
    }
    throw Error("no query answered");
  }
  return 0;
}

}  // namespace

int cmd_word_vector(int argc, char** argv) {
  return run_query_command(Kind::kWordVector, argc, argv);
}
int cmd_similarity(int argc, char** argv) {
  return run_query_command(Kind::kSimilarity, argc, argv);
}
int cmd_doesnt_match(int argc, char** argv) {
  return run_query_command(Kind::kDoesntMatch, argc, argv);
}
int cmd_analogies(int argc, char** argv) { return run_query_command(Kind::kAnalogies, argc, argv); }

}  // namespace pagedw2v::app
