#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "eval/analogy.hpp"
#include "eval/neighbors.hpp"
#include "eval/similarity.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;
using testing_util::write_file;

struct Row {
  const char* word;
  int block;  // which group of four dimensions the vector lives in
  std::array<float, 4> v;
};

LoadedEmbeddings make_embeddings(const std::vector<Row>& rows, uint32_t blocks) {
  LoadedEmbeddings e;
  e.dim = 4 * blocks;
  e.rows = rows.size();
  e.vectors.assign(e.rows * e.dim, 0.0f);
  for (size_t r = 0; r < rows.size(); ++r) {
    e.words.push_back(rows[r].word);
    for (int k = 0; k < 4; ++k) e.vectors[r * e.dim + 4 * rows[r].block + k] = rows[r].v[k];
  }
  return e;
}

// Three scenarios in orthogonal blocks, so that they do not disturb each other:
// family: b and c are the closest rows to b − a + c, queen is the best of the rest;
// capitals: "Berlin" (a case variant of the question word c) points exactly along the query and
//   must be passed over; "Germany" (a later case variant of the answer) then counts as right;
// weather: "freezing" and "frozen" lie beyond the first 17 rows.
LoadedEmbeddings analogy_embeddings() {
  return make_embeddings({{"man", 0, {1, 0, 0, 0}},
                          {"woman", 0, {0, 1, 0.1f, 0}},
                          {"king", 0, {0, 1, -0.1f, 0}},
                          {"queen", 0, {0, 1, 0, 1}},
                          {"apple", 0, {0, 0.5f, 0, 1}},
                          {"paris", 1, {1, 0, 0, 0}},
                          {"france", 1, {1, 1, 0, 0}},
                          {"berlin", 1, {0, 0, 1, 0}},
                          {"germany", 1, {0, 0.5f, 1, 0.5f}},
                          {"rome", 1, {0, 0, 1, 1}},
                          {"Berlin", 1, {-0.29f, 0.7f, 1, 0}},
                          {"Germany", 1, {-0.2f, 0.7f, 1, 0.3f}},
                          {"sun", 2, {1, 0, 0, 0}},
                          {"hot", 2, {1, 1, 0, 0}},
                          {"snow", 2, {0, 0, 1, 0}},
                          {"cold", 2, {0, 0.5f, 1, 0.6f}},
                          {"ice", 2, {0, 0, 1, 0.2f}},
                          {"freezing", 2, {-0.3f, 0.7f, 1, 0.05f}},
                          {"frozen", 2, {0, 0.2f, 1, 0.3f}}},
                         3);
}

constexpr const char* kQuestions =
    ": family\n"
    "man woman king queen\n"
    "man woman king apple\n"
    "MAN Woman KING\n"  // three words: ignored, not counted
    ": capitals\n"
    "Paris FRANCE berlin Germany\n"
    "paris france berlin rome\r\n"
    ":  weather \n"
    "sun hot snow cold\n"
    "sun\thot  ice frozen\n"
    "sun hot snow xyz\n";

// The expected figures below are those of gensim 4.2's evaluate_word_analogies on the same data.
TEST(Analogy, MatchesGensimWithinRestrictedVocabulary) {
  TempDir dir;
  write_file(dir.file("q.txt"), kQuestions);
  const AnalogyReport r = evaluate_analogies(analogy_embeddings(), dir.file("q.txt"), 17);
  ASSERT_EQ(r.sections.size(), 3u);
  EXPECT_EQ(r.sections[0].name, "family");
  EXPECT_EQ(r.sections[1].name, "capitals");
  EXPECT_EQ(r.sections[2].name, "weather");
  EXPECT_EQ(r.sections[0].correct, 1u);  // queen, though woman and king score higher
  EXPECT_EQ(r.sections[0].incorrect, 1u);
  EXPECT_EQ(r.sections[1].correct, 1u);  // "Germany" is GERMANY
  EXPECT_EQ(r.sections[1].incorrect, 1u);
  EXPECT_EQ(r.sections[2].correct, 1u);  // cold: freezing is outside the 17 rows
  EXPECT_EQ(r.sections[2].incorrect, 0u);
  EXPECT_EQ(r.sections[2].oov, 2u);  // frozen (row 18) and xyz
  EXPECT_EQ(r.correct, 3u);
  EXPECT_EQ(r.incorrect, 2u);
  EXPECT_EQ(r.questions, 7u);
  EXPECT_EQ(r.oov, 2u);
  EXPECT_EQ(r.restrict_vocab, 17u);
  EXPECT_DOUBLE_EQ(r.accuracy_pct(), 60.0);
}

TEST(Analogy, RestrictDecidesBothCandidatesAndSkippedQuestions) {
  TempDir dir;
  write_file(dir.file("q.txt"), kQuestions);
  const LoadedEmbeddings e = analogy_embeddings();
  // All rows: freezing now beats cold, and the frozen question is evaluated (and missed).
  const AnalogyReport all = evaluate_analogies(e, dir.file("q.txt"), 300000);
  EXPECT_EQ(all.restrict_vocab, 19u);
  EXPECT_EQ(all.sections[2].correct, 0u);
  EXPECT_EQ(all.sections[2].incorrect, 2u);
  EXPECT_EQ(all.oov, 1u);
  EXPECT_EQ(all.correct, 2u);
  EXPECT_EQ(all.incorrect, 4u);
  EXPECT_EQ(evaluate_analogies(e, dir.file("q.txt"), 0).correct, 2u);  // 0: every row

  const AnalogyReport five = evaluate_analogies(e, dir.file("q.txt"), 5);
  EXPECT_EQ(five.sections[0].correct, 1u);
  EXPECT_EQ(five.sections[0].incorrect, 1u);
  EXPECT_EQ(five.sections[1].evaluated(), 0u);
  EXPECT_EQ(five.sections[1].oov, 2u);
  EXPECT_EQ(five.oov, 5u);
  EXPECT_DOUBLE_EQ(five.oov_pct(), 100.0 * 5 / 7);
}

TEST(Analogy, QuestionBeforeAnyHeaderIsAnError) {
  TempDir dir;
  write_file(dir.file("q.txt"), "man woman king queen\n: family\n");
  EXPECT_THROW(evaluate_analogies(analogy_embeddings(), dir.file("q.txt")), Error);
  EXPECT_THROW(evaluate_analogies(analogy_embeddings(), dir.file("missing.txt")), Error);
}

// gensim's procedure written out question by question: the reference for the batched version.
bool reference_answer(const LoadedEmbeddings& e, uint32_t limit, const std::string& a,
                      const std::string& b, const std::string& c, const std::string& d) {
  const auto index = case_folded_index(e, limit);
  const auto ia = index.find(fold_case(a)), ib = index.find(fold_case(b)),
             ic = index.find(fold_case(c));
  const std::vector<float> unit = normalized_rows(e, limit);
  std::vector<float> q(e.dim);
  for (uint32_t k = 0; k < e.dim; ++k) {
    q[k] =
        unit[ib->second * e.dim + k] - unit[ia->second * e.dim + k] + unit[ic->second * e.dim + k];
  }
  std::vector<std::pair<float, uint32_t>> scored;
  for (uint32_t r = 0; r < limit; ++r) {
    float s = 0;
    for (uint32_t k = 0; k < e.dim; ++k) s += unit[r * e.dim + k] * q[k];
    scored.push_back({-s, r});
  }
  std::sort(scored.begin(), scored.end());
  for (const auto& [neg, r] : scored) {
    if (r == ia->second || r == ib->second || r == ic->second) continue;
    const std::string w = fold_case(e.words[r]);
    if (w == fold_case(a) || w == fold_case(b) || w == fold_case(c)) continue;
    return w == fold_case(d);
  }
  return false;
}

TEST(Analogy, BatchedAnswersEqualOneByOneReference) {
  std::mt19937 rng(20240611);
  std::normal_distribution<float> normal;
  LoadedEmbeddings e;
  e.rows = 400;
  e.dim = 16;
  for (uint32_t r = 0; r < e.rows; ++r) {
    // Every third of the first 300 words comes back in upper case as one of rows 300-399.
    e.words.push_back(r >= 300 ? "W" + std::to_string((r - 300) * 3) : "w" + std::to_string(r));
  }
  for (uint64_t i = 0; i < e.rows * e.dim; ++i) e.vectors.push_back(normal(rng));
  // Make analogies partly solvable: the answer is near b − a + c for some questions.
  std::uniform_int_distribution<uint32_t> pick(0, 349);
  std::string text;
  struct Q {
    std::string a, b, c, d;
  };
  std::vector<Q> qs;
  for (int s = 0; s < 3; ++s) {
    text += ": section" + std::to_string(s) + "\n";
    for (int i = 0; i < 300; ++i) {
      uint32_t w[4];
      for (auto& x : w) x = pick(rng);
      if (w[0] == w[1] || w[0] == w[2] || w[1] == w[2]) continue;
      if (i % 2 == 0 && w[3] < 300) {
        for (uint32_t k = 0; k < e.dim; ++k) {
          e.vectors[w[3] * e.dim + k] = e.vectors[w[1] * e.dim + k] - e.vectors[w[0] * e.dim + k] +
                                        e.vectors[w[2] * e.dim + k] + 0.3f * normal(rng);
        }
      }
      Q q;
      for (int k = 0; k < 4; ++k) {
        const std::string& word = e.words[w[k]];
        (k == 0 ? q.a : k == 1 ? q.b : k == 2 ? q.c : q.d) = word;
      }
      qs.push_back(q);
      text += q.a + " " + q.b + " " + q.c + " " + q.d + "\n";
    }
  }
  TempDir dir;
  write_file(dir.file("q.txt"), text);
  const uint32_t limit = 330;
  const AnalogyReport r = evaluate_analogies(e, dir.file("q.txt"), limit);

  const auto index = case_folded_index(e, limit);
  uint64_t correct = 0, evaluated = 0, oov = 0;
  for (const Q& q : qs) {
    if (!index.count(fold_case(q.a)) || !index.count(fold_case(q.b)) ||
        !index.count(fold_case(q.c)) || !index.count(fold_case(q.d))) {
      ++oov;
      continue;
    }
    ++evaluated;
    correct += reference_answer(e, limit, q.a, q.b, q.c, q.d);
  }
  EXPECT_EQ(r.questions, qs.size());
  EXPECT_EQ(r.oov, oov);
  EXPECT_EQ(r.evaluated(), evaluated);
  EXPECT_EQ(r.correct, correct);
  EXPECT_GT(correct, 50u);  // the planted answers make the test meaningful
  EXPECT_GT(evaluated, 600u);
}

TEST(Neighbors, CaseFoldingKeepsTheFirstRow) {
  const LoadedEmbeddings e = analogy_embeddings();
  const auto index = case_folded_index(e, 100);
  EXPECT_EQ(index.at("BERLIN"), 7u);
  EXPECT_EQ(index.at("GERMANY"), 8u);
  EXPECT_EQ(index.size(), 17u);
  EXPECT_EQ(case_folded_index(e, 3).count("QUEEN"), 0u);
  EXPECT_EQ(fold_case("Straße-x1"), "STRAßE-X1");
}

TEST(Neighbors, NearestByCosineWithoutTheWordItself) {
  const LoadedEmbeddings e = analogy_embeddings();
  const auto n = nearest(e, "berlin", 3);
  ASSERT_EQ(n.size(), 3u);
  // berlin = (0,0,1,0): rome 1/√2, germany 1/√1.5, Berlin 1/√1.5741, Germany 1/√1.62.
  EXPECT_EQ(n[0].first, "germany");
  EXPECT_NEAR(n[0].second, 1.0 / std::sqrt(1.5), 1e-6);
  EXPECT_EQ(n[1].first, "Berlin");
  EXPECT_NEAR(n[1].second, 1.0 / std::sqrt(0.29 * 0.29 + 0.49 + 1), 1e-6);
  EXPECT_EQ(n[2].first, "Germany");
  for (const auto& [w, s] : nearest(e, "berlin", 100)) EXPECT_NE(w, "berlin");
  EXPECT_EQ(nearest(e, "berlin", 100).size(), e.rows - 1);
  try {
    nearest(e, "atlantis", 3);
    FAIL() << "no exception";
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "word 'atlantis' is not in the vocabulary");
  }
}

LoadedEmbeddings pair_embeddings() {
  LoadedEmbeddings e;
  e.words = {"cat", "dog", "hound", "wolf", "car", "tree", "stone", "Cat"};
  e.vectors = {1, 0, 1, 1, 4, 4, 0, 1, -1, 1, -3, 0, 0, -2, 0, 1};
  e.rows = 8;
  e.dim = 2;
  return e;
}

// Cosines: CAT-dog, cat-Hound and dog-wolf 1/√2 (tied), cat-wolf, cat-stone and dog-car 0
// (tied), cat-car −1/√2, cat-tree −1; human scores tie too (8, 8, 8 and 3, 3).
constexpr const char* kPairs =
    "# comment\n"
    "Word 1\tWord 2\tHuman\n"
    "CAT\tdog\t8.0\n"
    "cat\tHound\t8.0\n"
    "cat\twolf\t6.5\n"
    "dog\twolf\t8.0\n"
    "cat\tcar\t3\n"
    "cat\ttree\t2\r\n"
    "cat\tstone\t1\n"
    "cat\tunicorn\t5\n"
    "only\ttwo\n"
    "\n"
    "dog\tcar\t 3 \n";

// Expected values from gensim 4.2's evaluate_word_pairs and scipy 1.10 on the same data.
TEST(Similarity, SpearmanWithTiesPearsonAndOov) {
  TempDir dir;
  write_file(dir.file("p.tsv"), kPairs);
  const SimilarityReport r = evaluate_similarity(pair_embeddings(), dir.file("p.tsv"));
  EXPECT_EQ(r.pairs, 8u);
  EXPECT_EQ(r.oov, 1u);
  EXPECT_NEAR(r.spearman, 0.825961172671468, 1e-12);
  EXPECT_NEAR(r.pearson, 0.7936404050694985, 1e-12);
  EXPECT_NEAR(r.oov_pct(), 100.0 / 9, 1e-12);
}

TEST(Similarity, RestrictVocabSkipsLaterRows) {
  TempDir dir;
  write_file(dir.file("p.tsv"), kPairs);
  const SimilarityReport r = evaluate_similarity(pair_embeddings(), dir.file("p.tsv"), 4);
  EXPECT_EQ(r.pairs, 4u);
  EXPECT_EQ(r.oov, 5u);
  EXPECT_NEAR(r.spearman, 1.0, 1e-12);
  EXPECT_NEAR(r.oov_pct(), 500.0 / 9, 1e-12);
}

// The similarity subset shipped in data/ reads as its 203 pairs (capitalised words folded), and
// evaluates to the correlation computed here from the same cosines.
TEST(Similarity, TheShippedSimilaritySubsetReadsAsItsPairs) {
  std::ifstream in(std::string(PAGEDW2V_SOURCE_DIR) + "/data/wordsim353_similarity.tsv");
  ASSERT_TRUE(in.good());
  std::vector<std::array<std::string, 2>> pairs;
  std::vector<double> scores;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::array<std::string, 2> p;
    double score = 0;
    ASSERT_TRUE(static_cast<bool>(fields >> p[0] >> p[1] >> score)) << line;
    for (std::string& w : p) {
      std::transform(w.begin(), w.end(), w.begin(),
                     [](unsigned char c) { return std::tolower(c); });
    }
    pairs.push_back(p);
    scores.push_back(score);
  }
  ASSERT_EQ(pairs.size(), 203u);
  LoadedEmbeddings e;
  e.dim = 8;
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  auto row_of = [&](const std::string& w) {
    const auto it = std::find(e.words.begin(), e.words.end(), w);
    if (it != e.words.end()) return static_cast<size_t>(it - e.words.begin());
    e.words.push_back(w);
    for (uint32_t k = 0; k < e.dim; ++k) e.vectors.push_back(g(rng));
    return e.words.size() - 1;
  };
  std::vector<double> cosines;
  for (const auto& p : pairs) {
    const size_t a = row_of(p[0]), b = row_of(p[1]);
    double dot = 0, na = 0, nb = 0;
    for (uint32_t k = 0; k < e.dim; ++k) {
      const double x = e.vectors[a * e.dim + k], y = e.vectors[b * e.dim + k];
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
    cosines.push_back(dot / std::sqrt(na * nb));
  }
  e.rows = e.words.size();
  const SimilarityReport r =
      evaluate_similarity(e, std::string(PAGEDW2V_SOURCE_DIR) + "/data/wordsim353_similarity.tsv");
  EXPECT_EQ(r.pairs, 203u);
  EXPECT_EQ(r.oov, 0u);
  EXPECT_NEAR(r.spearman, spearman_correlation(cosines, scores), 1e-6);
}

TEST(Similarity, NothingToEvaluateIsAnError) {
  TempDir dir;
  write_file(dir.file("p.tsv"), "# only\nunicorn\tcat\t3\nbad line\n");
  EXPECT_THROW(evaluate_similarity(pair_embeddings(), dir.file("p.tsv")), Error);
}

TEST(Similarity, CorrelationsMatchScipy) {
  const std::vector<double> x{1, 2, 2, 3, 5}, y{2, 1, 4, 4, 9};
  EXPECT_NEAR(spearman_correlation(x, y), 0.7631578947368421, 1e-12);
  EXPECT_NEAR(pearson_correlation(x, y), 0.909207918411186, 1e-12);
  EXPECT_TRUE(std::isnan(spearman_correlation({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(pearson_correlation({1}, {2})));
}

// The commands, through the binary.
struct RunResult {
  int status;
  std::string out;
};

RunResult run(const std::string& args) {
  const std::string cmd = std::string(PAGEDW2V_BINARY) + " " + args + " 2>&1";
  RunResult result{-1, {}};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string word2vec_text(const LoadedEmbeddings& e) {
  std::string s = std::to_string(e.rows) + " " + std::to_string(e.dim) + "\n";
  for (uint64_t r = 0; r < e.rows; ++r) {
    s += e.words[r];
    for (uint32_t k = 0; k < e.dim; ++k) s += " " + std::to_string(e.vectors[r * e.dim + k]);
    s += "\n";
  }
  return s;
}

TEST(EvalCommand, ReportsAnalogiesAndSimilarity) {
  TempDir dir;
  write_file(dir.file("vectors.txt"), word2vec_text(analogy_embeddings()));
  write_file(dir.file("q.txt"), kQuestions);
  write_file(dir.file("p.tsv"), "man\twoman\t5\nking\tqueen\t8\nman\tapple\t1\nsun\tsnow\t2\n");
  const std::string base = "eval --vectors " + dir.file("vectors.txt") + " --analogies " +
                           dir.file("q.txt") + " --similarity " + dir.file("p.tsv");
  RunResult r = run(base + " --restrict 17");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("family: 50.0% (1/2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total accuracy: 60.00% (3/5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 of 7 questions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spearman"), std::string::npos) << r.out;

  r = run(base + " --restrict 17 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"correct\":3,\"incorrect\":2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"pairs\":4"), std::string::npos) << r.out;
}

TEST(EvalCommand, UsageErrorsExitWithTwo) {
  TempDir dir;
  write_file(dir.file("vectors.txt"), word2vec_text(analogy_embeddings()));
  EXPECT_EQ(run("eval --help").status, 0);
  EXPECT_EQ(run("eval --vectors " + dir.file("vectors.txt")).status, 2);
  EXPECT_EQ(run("eval --analogies q.txt").status, 2);
  EXPECT_EQ(run("eval --vectors v --analogies q --bogus").status, 2);
  EXPECT_EQ(run("eval --vectors v --analogies q --restrict many").status, 2);
  EXPECT_EQ(run("eval --vectors v --analogies q --restrict -1").status, 2);
  EXPECT_EQ(run("eval --vectors v --analogies q extra").status, 2);
  EXPECT_EQ(
      run("eval --vectors " + dir.file("vectors.txt") + " --analogies " + dir.file("missing.txt"))
          .status,
      1);
}

TEST(SimilarCommand, PrintsNeighboursAndRejectsUnknownWords) {
  TempDir dir;
  write_file(dir.file("vectors.txt"), word2vec_text(analogy_embeddings()));
  const std::string vectors = " --vectors " + dir.file("vectors.txt");
  RunResult r = run("similar" + vectors + " berlin man --top 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("berlin\n  germany"), 0u) << r.out;
  EXPECT_NE(r.out.find("\nman\n"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6) << r.out;

  // An unknown word is reported and skipped; the others are answered.
  r = run("similar" + vectors + " berlin atlantis");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("'atlantis' is not in the vocabulary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("berlin\n  germany"), std::string::npos) << r.out;
  EXPECT_EQ(run("similar" + vectors + " atlantis").status, 1);
  EXPECT_EQ(run("similar" + vectors + " < /dev/null").status, 2);
  EXPECT_EQ(run("similar" + vectors + " berlin --top 0").status, 2);
  EXPECT_EQ(run("similar --help").status, 0);
}

}  // namespace
}  // namespace pagedw2v
