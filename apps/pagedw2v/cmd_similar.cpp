// `pagedw2v similar`: the nearest neighbours of words by cosine similarity.
#include <cstdint>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "error.hpp"
#include "eval/neighbors.hpp"
#include "io/embeddings.hpp"

namespace pagedw2v::app {

int cmd_similar(int argc, char** argv) {
  cxxopts::Options options("pagedw2v similar",
                           "Print the nearest neighbours of words by cosine similarity.");
  options.custom_help("--vectors PATH [--top N]");
  options.add_options()(
      "vectors", "vectors: a run directory, .npy (vocab.tsv beside it), .h5, or word2vec .bin/.txt",
      cxxopts::value<std::string>())("top", "neighbours per word",
                                     cxxopts::value<std::string>()->default_value("10"))(
      "words", "words to look up", cxxopts::value<std::vector<std::string>>())("h,help",
                                                                               "print this help");
  options.parse_positional({"words"});
  options.positional_help("WORD [WORD...]");

  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (!args.count("vectors")) throw UsageError("similar needs --vectors PATH");
  if (!args.count("words")) throw UsageError("similar needs at least one WORD");
  const uint32_t top = positive_count("--top", args["top"].as<std::string>());

  const LoadedEmbeddings emb = load_embeddings(args["vectors"].as<std::string>());
  const auto words = args["words"].as<std::vector<std::string>>();
  // Every word is looked up before anything is printed, so an unknown word prints nothing.
  std::vector<std::vector<std::pair<std::string, float>>> results;
  results.reserve(words.size());
  for (const std::string& word : words) results.push_back(nearest(emb, word, top));

  if (const uint64_t bad = nonfinite_rows(emb, emb.rows); bad > 0) {
    std::printf("(left out: %llu of %llu rows with NaN or infinite values)\n",
                static_cast<unsigned long long>(bad), static_cast<unsigned long long>(emb.rows));
  }
  for (size_t i = 0; i < words.size(); ++i) {
    std::printf("%s\n", words[i].c_str());
    for (const auto& [neighbour, cosine] : results[i]) {
      std::printf("  %-24s %.4f\n", neighbour.c_str(), cosine);
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace pagedw2v::app
