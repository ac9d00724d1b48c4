// `pagedw2v eval`: analogy accuracy and word-pair similarity of saved vectors.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "eval/analogy.hpp"
#include "eval/similarity.hpp"
#include "io/embeddings.hpp"
#include "text/utf8.hpp"

namespace pagedw2v::app {

namespace {

// JSON has no NaN: an undefined correlation is null.
nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

void print_json(const std::string& vectors, const LoadedEmbeddings& emb,
                const std::optional<std::string>& analogies_path,
                const std::optional<AnalogyReport>& analogies,
                const std::optional<std::string>& similarity_path,
                const std::optional<SimilarityReport>& similarity) {
  nlohmann::ordered_json out = {
      {"vectors", vectors}, {"format", emb.format}, {"rows", emb.rows}, {"dim", emb.dim}};
  if (analogies) {
    const AnalogyReport& r = *analogies;
    nlohmann::ordered_json sections = nlohmann::ordered_json::array();
    for (const AnalogySection& s : r.sections) {
      sections.push_back({{"name", s.name},
                          {"correct", s.correct},
                          {"incorrect", s.incorrect},
                          {"oov", s.oov},
                          {"accuracy_pct", json_number(s.accuracy_pct())}});
    }
    const AnalogySubtotals sub = analogy_subtotals(r);
    auto subtotal = [](const AnalogySection& s) {
      return nlohmann::ordered_json{{"correct", s.correct},
                                    {"incorrect", s.incorrect},
                                    {"oov", s.oov},
                                    {"accuracy_pct", json_number(s.accuracy_pct())}};
    };
    out["analogies"] = {{"file", *analogies_path},
                        {"restrict_vocab", r.restrict_vocab},
                        {"sections", sections},
                        {"semantic", subtotal(sub.semantic)},
                        {"syntactic", subtotal(sub.syntactic)},
                        {"correct", r.correct},
                        {"incorrect", r.incorrect},
                        {"accuracy_pct", json_number(r.accuracy_pct())},
                        {"questions", r.questions},
                        {"oov", r.oov},
                        {"nonfinite_rows", r.nonfinite_rows},
                        {"oov_pct", json_number(r.oov_pct())}};
  }
  if (similarity) {
    const SimilarityReport& r = *similarity;
    out["similarity"] = {{"file", *similarity_path},
                         {"pairs", r.pairs},
                         {"oov", r.oov},
                         {"nonfinite_rows", r.nonfinite_rows},
                         {"oov_pct", json_number(r.oov_pct())},
                         {"spearman", json_number(r.spearman)},
                         {"pearson", json_number(r.pearson)}};
  }
  // Section names and paths are bytes: any that are not UTF-8 become U+FFFD, so the output stays
  // valid JSON.
  std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n"
            << std::flush;
}

/// Names from files made elsewhere (section names, paths): on a terminal their control
/// characters are shown as \xNN; into a pipe or a file they go as they are.
std::string shown(const std::string& text) {
  static const bool tty = ::isatty(STDOUT_FILENO) != 0;
  return tty ? terminal_safe(text) : text;
}

void print_text(const std::string& vectors, const LoadedEmbeddings& emb,
                const std::optional<std::string>& analogies_path,
                const std::optional<AnalogyReport>& analogies,
                const std::optional<std::string>& similarity_path,
                const std::optional<SimilarityReport>& similarity) {
  std::printf("vectors: %s (%llu words, dim %u)\n", shown(vectors).c_str(),
              static_cast<unsigned long long>(emb.rows), emb.dim);
  if (analogies) {
    const AnalogyReport& r = *analogies;
    std::printf("analogies: %s (3CosAdd over the %llu most frequent words, case-insensitive)\n",
                shown(*analogies_path).c_str(), static_cast<unsigned long long>(r.restrict_vocab));
    for (const AnalogySection& s : r.sections) {
      // Like gensim's log, a section with no question left to evaluate is not listed.
      if (s.evaluated() == 0) continue;
      std::printf("  %s: %.1f%% (%llu/%llu)\n", shown(s.name).c_str(), s.accuracy_pct(),
                  static_cast<unsigned long long>(s.correct),
                  static_cast<unsigned long long>(s.evaluated()));
    }
    // word2vec's compute-accuracy subtotals: the "gram" sections are syntactic.
    const AnalogySubtotals sub = analogy_subtotals(r);
    for (const AnalogySection* s : {&sub.semantic, &sub.syntactic}) {
      if (s->evaluated() == 0) continue;
      std::printf("  %s accuracy: %.2f%% (%llu/%llu)\n",
                  s == &sub.semantic ? "Semantic" : "Syntactic", s->accuracy_pct(),
                  static_cast<unsigned long long>(s->correct),
                  static_cast<unsigned long long>(s->evaluated()));
    }
    std::printf("  Total accuracy: %.2f%% (%llu/%llu)\n", r.accuracy_pct(),
                static_cast<unsigned long long>(r.correct),
                static_cast<unsigned long long>(r.evaluated()));
    std::printf("  Skipped (out-of-vocabulary words): %llu of %llu questions (%.1f%%)\n",
                static_cast<unsigned long long>(r.oov),
                static_cast<unsigned long long>(r.questions), r.oov_pct());
    if (r.nonfinite_rows > 0) {
      std::printf(
          "  Left out: %llu rows with NaN or infinite values (their words count as "
          "out-of-vocabulary)\n",
          static_cast<unsigned long long>(r.nonfinite_rows));
    }
  }
  if (similarity) {
    const SimilarityReport& r = *similarity;
    std::printf("similarity: %s\n", shown(*similarity_path).c_str());
    std::printf(
        "  Spearman %.4f  Pearson %.4f  (%llu pairs; out-of-vocabulary %.1f%%, %llu pairs)\n",
        r.spearman, r.pearson, static_cast<unsigned long long>(r.pairs), r.oov_pct(),
        static_cast<unsigned long long>(r.oov));
    if (r.nonfinite_rows > 0) {
      std::printf(
          "  Left out: %llu rows with NaN or infinite values (their words count as "
          "out-of-vocabulary)\n",
          static_cast<unsigned long long>(r.nonfinite_rows));
    }
  }
  std::fflush(stdout);
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cxxopts::Options options("pagedw2v eval",
                           "Word-analogy accuracy and word-pair similarity of saved vectors.");
  options.custom_help(
      "--vectors PATH [--analogies FILE] [--similarity FILE] [--restrict N] [--json]");
  options.add_options()("vectors", kVectorsHelp, cxxopts::value<std::string>())(
      "vectors-format", kVectorsFormatHelp, cxxopts::value<std::string>()->default_value("auto"))(
      "analogies", "analogy questions (questions-words.txt format)", cxxopts::value<std::string>())(
      "similarity",
      "word pairs with scores (WordSim-353 format): word, word, score a line, separated by tabs "
      "or by spaces",
      cxxopts::value<std::string>())(
      "restrict", "answer analogies among the N most frequent words (0 = all words)",
      cxxopts::value<std::string>()->default_value("30000"))(
      "json", "print one JSON object instead of text")("h,help", "print this help");

  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (!args.count("vectors")) throw UsageError("eval needs --vectors PATH");
  if (!args.count("analogies") && !args.count("similarity")) {
    throw UsageError("eval needs --analogies FILE, --similarity FILE or both");
  }
  const std::string restrict_text = args["restrict"].as<std::string>();
  const uint32_t restrict_vocab =
      restrict_text == "0" ? 0 : positive_count("--restrict", restrict_text);

  std::optional<std::string> analogies_path;
  std::optional<std::string> similarity_path;
  if (args.count("analogies")) analogies_path = args["analogies"].as<std::string>();
  if (args.count("similarity")) similarity_path = args["similarity"].as<std::string>();

  const std::string vectors = args["vectors"].as<std::string>();
  const VectorsFormat format = parse_vectors_format(args["vectors-format"].as<std::string>());
  const LoadedEmbeddings emb = load_embeddings(vectors, format);
  std::optional<AnalogyReport> analogies;
  std::optional<SimilarityReport> similarity;
  if (analogies_path) analogies = evaluate_analogies(emb, *analogies_path, restrict_vocab);
  if (similarity_path) similarity = evaluate_similarity(emb, *similarity_path);

  if (args.count("json")) {
    print_json(vectors, emb, analogies_path, analogies, similarity_path, similarity);
  } else {
    print_text(vectors, emb, analogies_path, analogies, similarity_path, similarity);
  }
  return 0;
}

}  // namespace pagedw2v::app
