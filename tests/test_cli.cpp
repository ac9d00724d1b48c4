// The real pagedw2v binary as a word2vec, gensim or fastText user drives it: neighbour and analogy
// queries (arguments, flags, standard input, JSON), vector files of other tools told by their
// content, conversion with export, --help and --version, the flags of other tools, and what train
// prints and records at its start, what the output formats and checkpoints cost on disk, and
// output names that ask for compression.
#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "model/host_table.hpp"
#include "robustness/run_binary.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::exists;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;

using Outcome = testing_util::RunResult;  ///< its code is -1 when a signal ended the run

/// Runs the binary with `args`, `input` on its standard input, in directory `cwd` (or here).
Outcome run(const TempDir& dir, const Args& args, const std::string& input = "",
            const std::string& cwd = "") {
  static int serial = 0;
  testing_util::ProcessOptions options;
  options.log_name = "cli-" + std::to_string(++serial);
  options.stdin_path = dir.file(options.log_name + ".in");
  options.cwd = cwd;
  write_file(options.stdin_path, input);
  testing_util::Process p(args, dir.path(), options);
  return p.wait();
}

std::string describe(const Args& args, const Outcome& o) {
  std::string s = "pagedw2v";
  for (const std::string& a : args) s += " " + a;
  return s + " → exit " + std::to_string(o.code) + "\nstdout:\n" + o.out + "stderr:\n" + o.err;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

/// `text` with every run of whitespace made one space: --help as one line, whatever its wrapping.
std::string flat(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  return out;
}

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// ---------------------------------------------------------------------------------------------
// Vectors, written in the formats of other tools

struct Vectors {
  std::vector<std::string> words;
  std::vector<std::vector<float>> rows;
};

/// `count` random words' vectors of dimension `dim`, plus the four of the analogy (king − man +
/// woman ≈ queen), drawn afresh.
Vectors random_vectors(uint32_t count, uint32_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Vectors v;
  auto draw = [&] {
    std::vector<float> r(dim);
    for (float& x : r) x = normal(rng);
    return r;
  };
  const std::vector<float> royal = draw(), male = draw(), female = draw();
  auto mix = [&](const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> r(dim);
    for (uint32_t i = 0; i < dim; ++i) r[i] = a[i] + b[i] + 0.05f * normal(rng);
    return r;
  };
  v.words = {"king", "queen", "man", "woman"};
  v.rows = {mix(royal, male), mix(royal, female), mix(male, male), mix(female, female)};
  for (uint32_t i = 0; i < count; ++i) {
    v.words.push_back("w" + std::to_string(i));
    v.rows.push_back(draw());
  }
  return v;
}

std::string text_rows(const Vectors& v, bool trailing_space) {
  std::ostringstream os;
  os.precision(9);
  for (size_t r = 0; r < v.words.size(); ++r) {
    os << v.words[r];
    for (const float x : v.rows[r]) os << ' ' << x;
    os << (trailing_space ? " \n" : "\n");
  }
  return os.str();
}

std::string header(const Vectors& v) {
  return std::to_string(v.words.size()) + " " + std::to_string(v.rows[0].size()) + "\n";
}

/// gensim's `save_word2vec_format(binary=True)`: the header, then word, space and raw float32s
/// with no newline between rows.
std::string gensim_bin(const Vectors& v) {
  std::string s = header(v);
  for (size_t r = 0; r < v.words.size(); ++r) {
    s += v.words[r] + " ";
    s.append(reinterpret_cast<const char*>(v.rows[r].data()), v.rows[r].size() * sizeof(float));
  }
  return s;
}

/// fastText's `.vec`: the header, then "word v1 … vD " with a space before each newline.
std::string fasttext_vec(const Vectors& v) { return header(v) + text_rows(v, true); }

/// GloVe's text: no header.
std::string glove_txt(const Vectors& v) { return text_rows(v, false); }

void write_gzip(const std::string& path, const std::string& content) {
  gzFile f = ::gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(::gzwrite(f, content.data(), static_cast<unsigned>(content.size())),
            static_cast<int>(content.size()));
  ASSERT_EQ(::gzclose(f), Z_OK);
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    na += double{a[i]} * a[i];
    nb += double{b[i]} * b[i];
  }
  return dot / std::sqrt(na * nb);
}

std::vector<double> unit(const std::vector<float>& a) {
  double n = 0;
  for (const float x : a) n += double{x} * x;
  std::vector<double> u(a.size());
  for (size_t i = 0; i < a.size(); ++i) u[i] = a[i] / std::sqrt(n);
  return u;
}

/// The best `top` answers to positive − negative by gensim's two formulas, computed here in
/// double precision, independently of the library.
std::vector<std::pair<std::string, double>> expected_answers(const Vectors& v,
                                                             const std::vector<size_t>& pos,
                                                             const std::vector<size_t>& neg,
                                                             bool cosmul, size_t top) {
  const size_t dim = v.rows[0].size();
  std::vector<std::pair<std::string, double>> scored;
  std::vector<double> mean(dim, 0.0);
  for (const size_t p : pos) {
    const auto u = unit(v.rows[p]);
    for (size_t i = 0; i < dim; ++i) mean[i] += u[i];
  }
  for (const size_t n : neg) {
    const auto u = unit(v.rows[n]);
    for (size_t i = 0; i < dim; ++i) mean[i] -= u[i];
  }
  std::vector<float> mean_f(mean.begin(), mean.end());
  for (size_t r = 0; r < v.words.size(); ++r) {
    if (std::count(pos.begin(), pos.end(), r) || std::count(neg.begin(), neg.end(), r)) continue;
    double score = 0;
    if (cosmul) {
      double num = 1, den = 1;
      for (const size_t p : pos) num *= (1 + cosine(v.rows[r], v.rows[p])) / 2;
      for (const size_t n : neg) den *= (1 + cosine(v.rows[r], v.rows[n])) / 2;
      score = num / (den + 1e-6);
    } else {
      score = cosine(v.rows[r], mean_f);
    }
    scored.emplace_back(v.words[r], score);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  scored.resize(std::min(top, scored.size()));
  return scored;
}

/// The answers of `similar --json` for its one query.
std::vector<std::pair<std::string, double>> json_answers(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& n : j.at("neighbors")) {
    out.emplace_back(n.at("word").get<std::string>(), n.at("similarity").get<double>());
  }
  return out;
}

void expect_same_answers(const std::vector<std::pair<std::string, double>>& got,
                         const std::vector<std::pair<std::string, double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << "rank " << i;
    EXPECT_NEAR(got[i].second, want[i].second, 1e-4) << "rank " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// similar

TEST(Similar, AnswersEveryKnownWordAndSkipsUnknownOnes) {
  TempDir dir;
  const Vectors v = random_vectors(30, 8, fresh_seed());
  write_file(dir.file("v.txt"), header(v) + glove_txt(v));
  const Args args = {"similar", "--vectors", dir.file("v.txt"), "--top",
                     "3",       "king",      "xyzzy",           "w1"};
  const Outcome r = run(dir, args);
  ASSERT_EQ(r.code, 0) << describe(args, r);
  EXPECT_TRUE(contains(r.out, "king\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "w1\n")) << r.out;
  EXPECT_EQ(lines(r.out), 2u + 2u * 3u) << r.out;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "'xyzzy' is not in the vocabulary")) << r.err;

  // Nothing answered: one error line, exit 1.
  const Args none = {"similar", "--vectors", dir.file("v.txt"), "xyzzy", "plugh"};
  const Outcome n = run(dir, none);
  EXPECT_EQ(n.code, 1) << describe(none, n);
  EXPECT_EQ(lines(n.err), 1u) << n.err;
  EXPECT_TRUE(contains(n.err, "'xyzzy', 'plugh'")) << n.err;
  EXPECT_EQ(n.out, "");
}

TEST(Similar, IgnoreCaseFindsTheFirstRowOfAnyCase) {
  TempDir dir;
  Vectors v = random_vectors(10, 6, fresh_seed());
  write_file(dir.file("v.txt"), header(v) + glove_txt(v));
  const Outcome exact = run(dir, {"similar", "--vectors", dir.file("v.txt"), "King"});
  EXPECT_EQ(exact.code, 1);
  EXPECT_TRUE(contains(exact.err, "--ignore-case")) << exact.err;
  const Outcome folded =
      run(dir, {"similar", "--vectors", dir.file("v.txt"), "--ignore-case", "King", "--top", "2"});
  const Outcome lower = run(dir, {"similar", "--vectors", dir.file("v.txt"), "king", "--top", "2"});
  ASSERT_EQ(folded.code, 0) << folded.err;
  ASSERT_EQ(lower.code, 0) << lower.err;
  // The same neighbours as "king" under the name asked for.
  EXPECT_EQ(folded.out.substr(folded.out.find('\n')), lower.out.substr(lower.out.find('\n')));
  EXPECT_EQ(folded.out.rfind("King\n", 0), 0u) << folded.out;
}

TEST(Similar, AnalogyQueriesMatchGensimsFormulas) {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  const Vectors v = random_vectors(40, 16, seed);
  write_file(dir.file("v.vec"), fasttext_vec(v));
  const std::string vec = dir.file("v.vec");
  for (const bool cosmul : {false, true}) {
    SCOPED_TRACE(cosmul ? "3cosmul" : "3cosadd");
    const std::string method = cosmul ? "3cosmul" : "3cosadd";
    const auto want = expected_answers(v, {0, 3}, {2}, cosmul, 5);
    // The vectors are made for 3CosAdd to answer "queen"; 3CosMul may rank another word first.
    if (!cosmul) {
      EXPECT_EQ(want[0].first, "queen");
    }
    const Args expression = {"similar", "--vectors", vec, "--json", "--top", "5",    "--method",
                             method,    "king",      "-", "man",    "+",     "woman"};
    const Outcome a = run(dir, expression);
    ASSERT_EQ(a.code, 0) << describe(expression, a);
    expect_same_answers(json_answers(a.out), want);
    const Args flags = {"similar",  "--vectors", vec,          "--json",     "--top",      "5",
                        "--method", method,      "--positive", "king,woman", "--negative", "man"};
    const Outcome b = run(dir, flags);
    ASSERT_EQ(b.code, 0) << describe(flags, b);
    expect_same_answers(json_answers(b.out), want);
    // The text output ranks the same words.
    const Outcome t = run(dir, {"similar", "--vectors", vec, "--top", "1", "--method", method,
                                "king", "-", "man", "+", "woman"});
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_TRUE(contains(t.out, "king - man + woman\n  " + want[0].first + " ")) << t.out;
  }
  const Outcome bad = run(dir, {"similar", "--vectors", vec, "king", "-", "-", "man"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  const Outcome method = run(dir, {"similar", "--vectors", vec, "--method", "3coswhat", "king"});
  EXPECT_EQ(method.code, 2) << method.err;
}

TEST(Similar, ReadsQueriesFromStandardInput) {
  TempDir dir;
  const Vectors v = random_vectors(20, 8, fresh_seed());
  write_file(dir.file("v.txt"), glove_txt(v));
  const Args args = {"similar", "--vectors", dir.file("v.txt"), "--top", "2", "--json"};
  const Outcome r = run(dir, args, "king\n\nxyzzy\nking - man + woman\n- man\n");
  ASSERT_EQ(r.code, 0) << describe(args, r);
  std::vector<nlohmann::json> answers;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) answers.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(answers.size(), 3u) << r.out;  // king, xyzzy (unknown), the analogy
  EXPECT_EQ(answers[0]["query"], "king");
  EXPECT_EQ(answers[0]["neighbors"].size(), 2u);
  EXPECT_EQ(answers[1]["unknown"][0], "xyzzy");
  // The reference's answer: random words of 8 dimensions may outrank "queen".
  EXPECT_EQ(answers[2]["neighbors"][0]["word"],
            expected_answers(v, {0, 3}, {2}, false, 2)[0].first);
  EXPECT_EQ(lines(r.err), 2u) << r.err;  // xyzzy, and the line that starts with '-'
  const Outcome none = run(dir, args, "xyzzy\n");
  EXPECT_EQ(none.code, 1) << none.err;
  const Outcome empty = run(dir, args, "");  // no query at all: a usage error
  EXPECT_EQ(empty.code, 2) << empty.err;
}

TEST(Similar, JsonStaysValidForWordsThatAreNotUtf8) {
  TempDir dir;
  Vectors v = random_vectors(5, 4, fresh_seed());
  v.words[4] = "bad\xff\xfe";
  write_file(dir.file("v.txt"), glove_txt(v));
  const Outcome r = run(dir, {"similar", "--vectors", dir.file("v.txt"), "--json", "--top", "50",
                              "king", "bad\xff\xfe"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  size_t parsed = 0;
  for (std::string line; std::getline(in, line); ++parsed) {
    EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
  }
  EXPECT_EQ(parsed, 2u);
  EXPECT_TRUE(contains(r.out, "bad\xef\xbf\xbd")) << r.out;  // U+FFFD for the bad bytes
}

// ---------------------------------------------------------------------------------------------
// Vector files of other tools, in similar, eval and export

struct Written {
  std::string name;
  std::string path;
};

TEST(VectorFiles, GensimFastTextAndGloveFilesLoadInEveryCommand) {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  const Vectors v = random_vectors(25, 12, seed);
  write_file(dir.file("gensim.bin"), gensim_bin(v));
  write_file(dir.file("wiki.vec"), fasttext_vec(v));
  write_file(dir.file("glove.6B.12d.txt"), glove_txt(v));
  write_gzip(dir.file("GoogleNews-like.bin.gz"), gensim_bin(v));
  write_gzip(dir.file("glove.txt.gz"), glove_txt(v));
  write_file(dir.file("renamed.w2v"), fasttext_vec(v));
  // Word pairs separated by spaces, not tabs; one by tabs.
  write_file(dir.file("pairs.txt"), "king queen 8.5\nman woman 8.3\nking\tw3\t1.0\nw1 w2 2.0\n");
  write_file(dir.file("q.txt"), ": royal\nman king woman queen\nMAN KING WOMAN QUEEN\n");

  const std::vector<Written> files = {{"gensim .bin", dir.file("gensim.bin")},
                                      {"fastText .vec", dir.file("wiki.vec")},
                                      {"GloVe .txt", dir.file("glove.6B.12d.txt")},
                                      {"gzip .bin", dir.file("GoogleNews-like.bin.gz")},
                                      {"gzip GloVe", dir.file("glove.txt.gz")},
                                      {"other name", dir.file("renamed.w2v")}};
  std::string first_similar;
  for (const Written& f : files) {
    SCOPED_TRACE(f.name);
    const Outcome s = run(dir, {"similar", "--vectors", f.path, "--top", "3", "king", "w7"});
    ASSERT_EQ(s.code, 0) << s.err;
    if (first_similar.empty()) first_similar = s.out;
    EXPECT_EQ(s.out, first_similar);  // the same vectors whatever the file

    const Outcome e = run(dir, {"eval", "--vectors", f.path, "--similarity", dir.file("pairs.txt"),
                                "--analogies", dir.file("q.txt"), "--json"});
    ASSERT_EQ(e.code, 0) << e.err;
    const nlohmann::json j = nlohmann::json::parse(e.out);
    EXPECT_EQ(j["rows"], v.words.size());
    EXPECT_EQ(j["dim"], 12);
    EXPECT_EQ(j["similarity"]["pairs"], 4);
    EXPECT_EQ(j["analogies"]["correct"], 2);

    const std::string out = dir.file("export-" + std::to_string(&f - files.data()));
    const Outcome x =
        run(dir, {"export", "--vectors", f.path, "--output", out, "--format", "npy,txt"});
    ASSERT_EQ(x.code, 0) << x.err;
    EXPECT_TRUE(contains(x.out, out + "/vectors.npy")) << x.out;
    EXPECT_TRUE(contains(x.out, out + "/vectors.txt")) << x.out;
    EXPECT_TRUE(contains(x.out, out + "/vocab.tsv")) << x.out;
    const NpyMatrix m = read_npy(out + "/vectors.npy");
    ASSERT_EQ(m.rows, v.words.size());
    ASSERT_EQ(m.cols, 12u);
    for (size_t r = 0; r < v.words.size(); ++r) {
      for (size_t c = 0; c < 12; ++c) {
        ASSERT_FLOAT_EQ(m.data[r * 12 + c], v.rows[r][c]) << r << "," << c;
      }
    }
  }
}

TEST(VectorFiles, FormatCanBeForcedAndUnknownContentIsRefused) {
  TempDir dir;
  const Vectors v = random_vectors(5, 4, fresh_seed());
  write_file(dir.file("glove.bin"), glove_txt(v));  // misleading name: told by content
  EXPECT_EQ(run(dir, {"similar", "--vectors", dir.file("glove.bin"), "king"}).code, 0);
  EXPECT_EQ(
      run(dir, {"similar", "--vectors", dir.file("glove.bin"), "--vectors-format", "glove", "king"})
          .code,
      0);
  const Outcome wrong =
      run(dir, {"similar", "--vectors", dir.file("glove.bin"), "--vectors-format", "bin", "king"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_EQ(lines(wrong.err), 1u) << wrong.err;
  const Outcome bad_name =
      run(dir, {"similar", "--vectors", dir.file("glove.bin"), "--vectors-format", "csv", "king"});
  EXPECT_EQ(bad_name.code, 2);
  EXPECT_TRUE(contains(bad_name.err, "--vectors-format")) << bad_name.err;
  write_file(dir.file("prose.txt"), "this is not\na vectors file at all\n");
  const Outcome prose = run(dir, {"similar", "--vectors", dir.file("prose.txt"), "king"});
  EXPECT_EQ(prose.code, 1);
  EXPECT_TRUE(contains(prose.err, "cannot tell the format")) << prose.err;
}

// A run's embeddings.h5 alone converts to word2vec's binary, which reads back the same.
TEST(Export, ConvertsARunsEmbeddingsH5) {
  TempDir dir;
  std::string corpus;
  std::mt19937_64 rng(fresh_seed());
  for (int i = 0; i < 3000; ++i) corpus += "w" + std::to_string(rng() % 50) + (i % 10 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  const Args train = {"train",         "--corpus", dir.file("c.txt"), "--output",
                      dir.file("run"), "--quiet",  "--dim",           "6",
                      "--epochs",      "1",        "--min-count",     "1",
                      "--threads",     "1",        "--format",        "h5"};
  const Outcome t = run(dir, train);
  ASSERT_EQ(t.code, 0) << describe(train, t);
  const Args x = {"export",   "--vectors",      dir.file("run/embeddings.h5"),
                  "--output", dir.file("conv"), "--format",
                  "bin,h5"};
  const Outcome r = run(dir, x);
  ASSERT_EQ(r.code, 0) << describe(x, r);
  EXPECT_TRUE(contains(r.out, "/conv/vectors.bin")) << r.out;
  const Outcome a = run(dir, {"similar", "--vectors", dir.file("run/embeddings.h5"), "w1"});
  const Outcome b = run(dir, {"similar", "--vectors", dir.file("conv/vectors.bin"), "w1"});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  // Both files record the version that wrote them.
  for (const std::string& h5 : {dir.file("run/embeddings.h5"), dir.file("conv/embeddings.h5")}) {
    bool found = false;
    for (const Attribute& attr : read_attributes_h5(h5)) {
      found = found || (attr.name == kVersionAttribute &&
                        std::get<std::string>(attr.value) == std::string(version()));
    }
    EXPECT_TRUE(found) << h5;
  }
  const Outcome both = run(dir, {"export", "--vectors", dir.file("run"), "--checkpoint",
                                 dir.file("x.h5"), "--output", dir.file("o")});
  EXPECT_EQ(both.code, 2);
}

TEST(Eval, JsonStaysValidForSectionsThatAreNotUtf8) {
  TempDir dir;
  const Vectors v = random_vectors(5, 4, fresh_seed());
  write_file(dir.file("v.txt"), glove_txt(v));
  write_file(dir.file("q.txt"), ": caf\xe9 \"quoted\"\nman king woman queen\n");
  const Outcome r = run(
      dir, {"eval", "--vectors", dir.file("v.txt"), "--analogies", dir.file("q.txt"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(j["analogies"]["sections"][0]["name"], "caf\xef\xbf\xbd \"quoted\"");
}

// ---------------------------------------------------------------------------------------------
// Help, version, and the flags of other tools

TEST(Usage, HelpOfEveryCommandExitsZero) {
  TempDir dir;
  const std::vector<Args> helps = {{"--help"},
                                   {"train", "--help"},
                                   {"similar", "--help"},
                                   {"eval", "--help"},
                                   {"export", "--help"},
                                   {"bench", "--help"},
                                   {"bench", "train", "--help"},
                                   {"bench", "transfer", "--help"},
                                   {"bench", "synthetic", "--help"}};
  for (const Args& args : helps) {
    const Outcome r = run(dir, args);
    EXPECT_EQ(r.code, 0) << describe(args, r);
    EXPECT_FALSE(r.out.empty()) << describe(args, r);
  }
  const Outcome v = run(dir, {"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind(std::string("pagedw2v ") + version(), 0), 0u) << v.out;
  const Outcome h = run(dir, {"--help"});
  for (const char* code : {"0 done", "1 runtime", "2 usage", "130", "143"}) {
    EXPECT_TRUE(contains(h.out, code)) << code;
  }
}

// `bench synthetic` writes the synthetic stream as files that `train` reads with its vocabulary
// (every word, with --min-count 1); a missing flag or a file already there is one line and exit 2.
TEST(BenchSynthetic, WritesFilesTrainReads) {
  TempDir dir;
  const std::string out = dir.file("zipf");
  const Outcome w =
      run(dir, {"bench", "synthetic", "--synthetic", "500,20000,1.0", "--output", out});
  ASSERT_EQ(w.code, 0) << describe({"bench", "synthetic"}, w);
  EXPECT_TRUE(contains(w.out, "--vocab " + out + "/vocab.tsv")) << w.out;
  const Outcome t =
      run(dir, {"train", "--corpus", out + "/corpus.txt", "--vocab", out + "/vocab.tsv",
                "--min-count", "1", "--output", dir.file("run"), "--device", "cpu", "--dim", "8",
                "--epochs", "1", "--threads", "2", "--format", "npy"});
  ASSERT_EQ(t.code, 0) << describe({"train"}, t);
  const nlohmann::json j = nlohmann::json::parse(read_file(dir.file("run/run.json")));
  EXPECT_EQ(j["vocabulary"]["words"].get<uint64_t>(), 500u) << j.dump();
  EXPECT_EQ(j["words_per_epoch"].get<uint64_t>(), 20000u) << j.dump();
  for (const Args& bad :
       {Args{"bench", "synthetic", "--synthetic", "500,20000,1.0"},
        Args{"bench", "synthetic", "--output", out},
        Args{"bench", "synthetic", "--synthetic", "500,0,1.0", "--output", dir.file("z2")},
        Args{"bench", "synthetic", "--synthetic", "500,20000,1.0", "--output", out}}) {
    const Outcome r = run(dir, bad);
    EXPECT_EQ(r.code, 2) << describe(bad, r);
    EXPECT_EQ(lines(r.err), 1u) << describe(bad, r);
  }
}

TEST(Usage, UnknownFlagsSuggestTheNearestOne) {
  TempDir dir;
  write_file(dir.file("c.txt"), "a b c\n");
  const std::string c = dir.file("c.txt");
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"train", "--corpus", c, "--output", "o", "--iter", "5"}, "did you mean --epochs?"},
      {{"train", "--corpus", c, "--output", "o", "--epoch", "5"}, "did you mean --epochs?"},
      {{"train", "--corpus", c, "--output", "o", "--size", "50"}, "did you mean --dim?"},
      {{"train", "--corpus", c, "--output", "o", "--cbow"}, "did you mean --model cbow?"},
      {{"train", "--corpus", c, "--output", "o", "--windw", "5"}, "did you mean --window?"},
      {{"train", "--corpus", c, "--output", "o", "--vector_size", "5"}, "did you mean --dim?"},
      {{"eval", "--vectors", c, "--analogy", "q.txt"}, "did you mean --analogies?"},
      {{"similar", "--vectors", c, "--topn", "3", "x"}, "did you mean --top?"},
      {{"simlar"}, "did you mean similar?"},
  };
  for (const auto& [args, needle] : cases) {
    const Outcome r = run(dir, args);
    EXPECT_EQ(r.code, 2) << describe(args, r);
    EXPECT_TRUE(contains(r.err, needle)) << describe(args, r);
    EXPECT_TRUE(contains(r.err, "--help")) << describe(args, r);
    EXPECT_EQ(lines(r.err), 1u) << describe(args, r);
  }
  // cxxopts' own messages come with ASCII quotes.
  for (const Args& args : {Args{"train", "--corpus"}, Args{"train", "-q"},
                           Args{"similar", "--top", "x", "--json=maybe"}}) {
    const Outcome r = run(dir, args);
    EXPECT_EQ(r.code, 2) << describe(args, r);
    EXPECT_FALSE(contains(r.err, "\u2018") || contains(r.err, "\u2019")) << r.err;
  }
}

TEST(Usage, Word2vecFlagsAreReadAsOurs) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 400; ++i) corpus += "w" + std::to_string(i % 17) + (i % 8 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  const Args args = {"train",
                     "-train",
                     dir.file("c.txt"),
                     "-output",
                     dir.file("run"),
                     "-size",
                     "7",
                     "-iter",
                     "1",
                     "-cbow",
                     "1",
                     "-min-count",
                     "1",
                     "-threads",
                     "1",
                     "-hs",
                     "0",
                     "-binary",
                     "1",
                     "--quiet",
                     "--format",
                     "npy"};
  const Outcome r = run(dir, args);
  ASSERT_EQ(r.code, 0) << describe(args, r);
  EXPECT_TRUE(contains(r.err, "-size 7 as --dim 7")) << r.err;
  EXPECT_TRUE(contains(r.err, "-cbow 1 as --model cbow")) << r.err;
  EXPECT_EQ(read_npy(dir.file("run/vectors.npy")).cols, 7u);
  // -hs 1 with word2vec's default -negative 5 trains both output layers (on the CPU).
  const Outcome hs = run(dir, {"train", "-train", dir.file("c.txt"), "-output", dir.file("r2"),
                               "-hs", "1", "-min-count", "1", "-iter", "1", "-size", "5",
                               "--device", "cpu", "--format", "npy", "--quiet"});
  EXPECT_EQ(hs.code, 0) << hs.err;
  EXPECT_TRUE(contains(hs.err, "-hs 1 as --hs")) << hs.err;
  EXPECT_EQ(read_npy(dir.file("r2/vectors.npy")).cols, 5u);
  const Outcome cw =
      run(dir, {"train", "-train", dir.file("c.txt"), "-output", dir.file("r3"), "-classes", "5"});
  EXPECT_EQ(cw.code, 2);
  EXPECT_EQ(lines(cw.err), 1u) << cw.err;
}

// ---------------------------------------------------------------------------------------------
// What train checks and prints at its start

TEST(Train, DeviceAndThreadsAreCheckedBeforeTheCorpusIsRead) {
  TempDir dir;
  // No corpus at all: the device is what is reported.
  const Outcome cuda = run(dir, {"train", "--corpus", dir.file("missing.txt"), "--output",
                                 dir.file("o"), "--device", "cuda"});
  EXPECT_NE(cuda.code, 0);
  EXPECT_TRUE(contains(cuda.err, "--device cuda")) << cuda.err;
  EXPECT_FALSE(contains(cuda.err, "missing.txt")) << cuda.err;

  std::string corpus;
  for (int i = 0; i < 200; ++i) corpus += "w" + std::to_string(i % 9) + (i % 8 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  const Outcome many = run(dir, {"train", "--corpus", dir.file("c.txt"), "--output", dir.file("t"),
                                 "--quiet", "--threads", "4096", "--min-count", "1", "--epochs",
                                 "1", "--dim", "4", "--format", "npy"});
  EXPECT_EQ(many.code, 0) << many.err;
  EXPECT_TRUE(contains(many.err, "--threads 4096 is more than the")) << many.err;
}

TEST(Train, PrintsItsSettingsAndEpochsOutOfHowMany) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 2000; ++i) corpus += "w" + std::to_string(i % 31) + (i % 9 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  Args args = {"train",       "--corpus",    dir.file("c.txt"),
               "--output",    dir.file("o"), "--dim",
               "5",           "--epochs",    "2",
               "--min-count", "1",           "--threads",
               "1",           "--format",    "npy",
               "--device",    "cpu"};
  const bool toml = contains(run(dir, {"--version"}).out, "TOML configs: yes");
  if (toml) {
    write_file(dir.file("cfg.toml"), "window = 3\nnegative = 4\n");
    args.insert(args.end(), {"--config", dir.file("cfg.toml")});
  }
  const Outcome r = run(dir, args);
  ASSERT_EQ(r.code, 0) << describe(args, r);
  EXPECT_TRUE(contains(r.err, "settings: skipgram, dim 5")) << r.err;
  EXPECT_TRUE(contains(r.err, "device cpu")) << r.err;
  EXPECT_TRUE(contains(r.err, "epochs 2")) << r.err;
  if (toml) {
    EXPECT_TRUE(contains(r.err, "window 3, negative 4")) << r.err;
    EXPECT_TRUE(contains(r.err, "cfg.toml < flags")) << r.err;
  }
  EXPECT_TRUE(contains(r.err, "epoch 2/2")) << r.err;
  EXPECT_TRUE(contains(r.err, "100.0% of run")) << r.err;
  EXPECT_TRUE(contains(r.err, "of epoch")) << r.err;
}

// A relative corpus path is recorded absolute, so the run resumes from another directory; an
// old or moved corpus is reported as the checkpoint's path, with --corpus as the way out.
TEST(Train, ResumesFromAnotherDirectoryAndNamesTheCheckpointsCorpus) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 1500; ++i) corpus += "w" + std::to_string(i % 23) + (i % 7 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  const Args first = {"train",     "--corpus", "c.txt",    "--output", "run",         "--quiet",
                      "--dim",     "4",        "--epochs", "1",        "--min-count", "1",
                      "--threads", "1",        "--format", "npy"};
  const Outcome a = run(dir, first, "", dir.path());
  ASSERT_EQ(a.code, 0) << describe(first, a);
  const std::string ck = dir.file("run/checkpoints/epoch-1.h5");
  std::string recorded;
  for (const Attribute& attr : read_attributes_h5(ck)) {
    if (attr.name == "option.corpus") recorded = std::get<std::string>(attr.value);
  }
  EXPECT_EQ(recorded, dir.file("c.txt"));

  const Args resume = {"train",          "--resume", ck,  "--output",
                       dir.file("run2"), "--epochs", "2", "--quiet"};
  const Outcome b = run(dir, resume, "", "/");
  EXPECT_EQ(b.code, 0) << describe(resume, b);

  ASSERT_EQ(::rename(dir.file("c.txt").c_str(), dir.file("moved.txt").c_str()), 0);
  const Outcome c = run(dir, resume, "", "/");
  EXPECT_EQ(c.code, 1) << describe(resume, c);
  EXPECT_EQ(lines(c.err), 1u) << c.err;
  EXPECT_TRUE(contains(c.err, dir.file("c.txt"))) << c.err;
  EXPECT_TRUE(contains(c.err, "checkpoint")) << c.err;
  EXPECT_TRUE(contains(c.err, "--corpus")) << c.err;
  Args fixed = resume;
  fixed.insert(fixed.end(), {"--corpus", dir.file("moved.txt")});
  fixed[4] = dir.file("run3");
  const Outcome d = run(dir, fixed, "", "/");
  EXPECT_EQ(d.code, 0) << describe(fixed, d);
}

// ---------------------------------------------------------------------------------------------
// Tokenization, and what a checkpoint records of it

TEST(Train, TokenizationIsInTheHelpAndLowercaseIsRecorded) {
  TempDir dir;
  const Outcome help = run(dir, {"train", "--help"});
  ASSERT_EQ(help.code, 0);
  for (const char* said : {"1000 words", "100 bytes", "case", "punctuation", "--lowercase"}) {
    EXPECT_TRUE(contains(flat(help.out), said)) << said << " in:\n" << help.out;
  }

  std::mt19937_64 rng(fresh_seed());
  const char* words[] = {"The", "the", "THE", "Cat", "cat", "dog", "Dog", "w1", "w2", "w3"};
  std::string corpus;
  for (int i = 0; i < 3000; ++i) corpus += std::string(words[rng() % 10]) + (i % 10 ? " " : "\n");
  write_file(dir.file("c.txt"), corpus);
  const Args args = {
      "train",     "--corpus", dir.file("c.txt"), "--output", dir.file("run"), "--quiet",
      "--dim",     "4",        "--epochs",        "1",        "--min-count",   "1",
      "--threads", "1",        "--format",        "npy",      "--lowercase"};
  const Outcome r = run(dir, args);
  ASSERT_EQ(r.code, 0) << describe(args, r);
  std::set<std::string> vocab;
  std::istringstream tsv(read_file(dir.file("run/vocab.tsv")));
  for (std::string line; std::getline(tsv, line);) vocab.insert(line.substr(0, line.find('\t')));
  EXPECT_EQ(vocab, (std::set<std::string>{"the", "cat", "dog", "w1", "w2", "w3"}));

  const std::string ck = dir.file("run/checkpoints/epoch-1.h5");
  std::map<std::string, std::string> attrs;
  for (const Attribute& a : read_attributes_h5(ck)) {
    if (std::holds_alternative<std::string>(a.value))
      attrs[a.name] = std::get<std::string>(a.value);
  }
  EXPECT_EQ(attrs["option.lowercase"], "true");
  EXPECT_EQ(attrs[kVersionAttribute], std::string(version()));
  // The checkpoint fixes it: a resumed run cannot read the corpus another way.
  const Args changed = {"train",    "--resume", ck,        "--output",         dir.file("run2"),
                        "--epochs", "2",        "--quiet", "--lowercase=false"};
  const Outcome c = run(dir, changed);
  EXPECT_EQ(c.code, 2) << describe(changed, c);
  EXPECT_TRUE(contains(c.err, "--lowercase")) << c.err;
  EXPECT_EQ(lines(c.err), 1u) << c.err;
}

// ---------------------------------------------------------------------------------------------
// Disk: what each format and a checkpoint cost, what export wrote, and compressed names

/// A small corpus over "w0".."w{distinct-1}" with words of different lengths.
std::string small_corpus(uint32_t distinct, int tokens) {
  std::mt19937_64 rng(fresh_seed());
  std::string corpus;
  for (int i = 0; i < tokens; ++i) {
    const uint64_t w = rng() % distinct;
    corpus += "w" + std::to_string(w) + std::string(w % 7, 'x') + (i % 12 ? " " : "\n");
  }
  return corpus;
}

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_size);
}

/// The words of a vocab.tsv, in order.
std::vector<std::string> vocab_words(const std::string& path) {
  std::vector<std::string> words;
  std::istringstream tsv(read_file(path));
  for (std::string line; std::getline(tsv, line);) words.push_back(line.substr(0, line.find('\t')));
  return words;
}

// The figures `train --help` and `export --help` give, against the files a run writes: npy
// 4·V·D (and its header), bin 4·V·D + each word and 2 bytes (and the "V D" line), h5 4·V·D +
// about 50 + the word a word, txt about 12·V·D; a checkpoint 8·V·D with sgd and 24·V·D with
// adam, plus about 50 + the word a word.
TEST(Disk, HelpGivesWhatEachFormatAndCheckpointCosts) {
  TempDir dir;
  const Outcome train_help = run(dir, {"train", "--help"});
  const Outcome export_help = run(dir, {"export", "--help"});
  ASSERT_EQ(train_help.code, 0);
  ASSERT_EQ(export_help.code, 0);
  for (const std::string& help : {flat(train_help.out), flat(export_help.out)}) {
    for (const char* figure :
         {"npy 4*V*D", "h5 4*V*D", "bin 4*V*D", "txt about 12*V*D", "no .gz", "twice"}) {
      EXPECT_TRUE(contains(help, figure)) << figure << " in:\n" << help;
    }
  }
  for (const char* figure : {"8*V*D bytes with sgd", "16*V*D with adagrad or rmsprop",
                             "24*V*D with adam, adamw, adamax or adadelta"}) {
    EXPECT_TRUE(contains(flat(train_help.out), figure)) << figure << " in:\n" << train_help.out;
  }

  write_file(dir.file("c.txt"), small_corpus(600, 20000));
  const uint32_t dim = 40;
  const auto train = [&](const std::string& out, const std::string& optimizer,
                         const std::string& formats) {
    const Args args = {"train",
                       "--corpus",
                       dir.file("c.txt"),
                       "--output",
                       out,
                       "--quiet",
                       "--dim",
                       std::to_string(dim),
                       "--epochs",
                       "1",
                       "--min-count",
                       "1",
                       "--threads",
                       "1",
                       "--format",
                       formats,
                       "--optimizer",
                       optimizer,
                       "--keep-checkpoints",
                       "1"};
    const Outcome r = run(dir, args);
    ASSERT_EQ(r.code, 0) << describe(args, r);
  };
  train(dir.file("sgd"), "sgd", "npy,h5,bin,txt");
  train(dir.file("adam"), "adam", "none");
  const std::vector<std::string> words = vocab_words(dir.file("sgd/vocab.tsv"));
  const uint64_t v = words.size(), values = v * dim;
  ASSERT_GT(v, 500u);
  uint64_t word_bytes = 0;
  for (const std::string& w : words) word_bytes += w.size();
  // "About 50 + the word a word", with room for the file's own metadata.
  const uint64_t per_word_bound = 2 * (50 * v + word_bytes) + 16384;

  const uint64_t npy = file_bytes(dir.file("sgd/vectors.npy"));
  EXPECT_EQ((npy - 4 * values) % 64, 0u) << npy;  // numpy's header, padded to 64 bytes
  EXPECT_LE(npy - 4 * values, 192u) << npy;
  const std::string header = std::to_string(v) + " " + std::to_string(dim) + "\n";
  EXPECT_EQ(file_bytes(dir.file("sgd/vectors.bin")),
            header.size() + 4 * values + word_bytes + 2 * v);
  const uint64_t h5 = file_bytes(dir.file("sgd/embeddings.h5"));
  EXPECT_GE(h5, 4 * values + word_bytes);
  EXPECT_LE(h5, 4 * values + per_word_bound);
  const uint64_t txt = file_bytes(dir.file("sgd/vectors.txt"));
  EXPECT_GE(txt, 9 * values);
  EXPECT_LE(txt, 15 * values);
  for (const auto& [run_dir, per_value] :
       std::vector<std::pair<std::string, uint64_t>>{{"sgd", 8}, {"adam", 24}}) {
    SCOPED_TRACE(run_dir);
    const uint64_t ck = file_bytes(dir.file(run_dir + "/checkpoints/epoch-1.h5"));
    EXPECT_GE(ck, per_value * values + word_bytes);
    EXPECT_LE(ck, per_value * values + per_word_bound);
  }
}

/// The "  PATH  SIZE" lines that export prints after "exported …:", as paths.
std::set<std::string> printed_paths(const std::string& out) {
  std::set<std::string> paths;
  std::istringstream lines_in(out);
  std::string line;
  EXPECT_TRUE(std::getline(lines_in, line) && line.rfind("exported ", 0) == 0) << out;
  while (std::getline(lines_in, line)) {
    EXPECT_EQ(line.rfind("  ", 0), 0u) << line;
    const size_t gap = line.find("  ", 2);
    EXPECT_NE(gap, std::string::npos) << line;
    EXPECT_EQ(line.back(), 'B') << line;  // a size: "412 B", "1.3 MB"
    paths.insert(line.substr(2, gap - 2));
  }
  return paths;
}

std::vector<float> matrix_h5(const std::string& path, const std::string& name, uint64_t rows,
                             uint32_t dim) {
  HostTable t(rows, dim, name, "");
  read_matrix_h5(path, name, t);
  std::vector<float> values(rows * dim);
  for (uint64_t r = 0; r < rows; ++r) std::copy_n(t.row(r), dim, &values[r * dim]);
  return values;
}

// export prints every file it wrote; --save-context writes the context vectors in every format,
// each the checkpoint's output table.
TEST(Disk, ExportPrintsWhatItWroteAndSavesContextInEveryFormat) {
  TempDir dir;
  write_file(dir.file("c.txt"), small_corpus(80, 4000));
  const Args args = {"train",         "--corpus", dir.file("c.txt"), "--output",
                     dir.file("run"), "--quiet",  "--dim",           "6",
                     "--epochs",      "1",        "--min-count",     "1",
                     "--threads",     "1",        "--format",        "none"};
  const Outcome t = run(dir, args);
  ASSERT_EQ(t.code, 0) << describe(args, t);
  const std::string ck = dir.file("run/checkpoints/epoch-1.h5");
  const std::string e = dir.file("e");
  const Args x = {"export",         "--checkpoint",  ck, "--output", e, "--format",
                  "npy,h5,bin,txt", "--save-context"};
  const Outcome r = run(dir, x);
  ASSERT_EQ(r.code, 0) << describe(x, r);
  std::set<std::string> want;
  for (const char* name :
       {"vocab.tsv", "vectors.npy", "context_vectors.npy", "embeddings.h5", "vectors.bin",
        "context_vectors.bin", "vectors.txt", "context_vectors.txt"}) {
    want.insert(e + "/" + name);
  }
  EXPECT_EQ(printed_paths(r.out), want) << r.out;
  want.insert(e + "/manifest.json");  // what the set is: its files' sizes and hashes
  std::set<std::string> present;
  for (const std::string& name : testing_util::entries(e)) present.insert(e + "/" + name);
  EXPECT_EQ(present, want);

  const NpyMatrix vectors = read_npy(e + "/vectors.npy");
  const NpyMatrix context = read_npy(e + "/context_vectors.npy");
  ASSERT_EQ(context.rows, vectors.rows);
  ASSERT_EQ(context.cols, 6u);
  EXPECT_EQ(context.data, matrix_h5(ck, "context_vectors", context.rows, 6));
  EXPECT_NE(context.data, vectors.data);
  EXPECT_EQ(matrix_h5(e + "/embeddings.h5", "context_vectors", context.rows, 6), context.data);
  // The word2vec files read back the same values (the text holds each float's shortest exact
  // decimal form).
  for (const char* file : {"context_vectors.bin", "context_vectors.txt"}) {
    SCOPED_TRACE(file);
    const std::string back = dir.file(std::string("back-") + file);
    const Outcome b =
        run(dir, {"export", "--vectors", e + "/" + file, "--output", back, "--format", "npy"});
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(read_npy(back + "/vectors.npy").data, context.data);
  }
  // Vector files hold no context vectors: said, not silently ignored.
  const Outcome no_context = run(dir, {"export", "--vectors", e + "/vectors.bin", "--output",
                                       dir.file("nc"), "--save-context"});
  EXPECT_EQ(no_context.code, 2);
  EXPECT_TRUE(contains(no_context.err, "--save-context needs --checkpoint")) << no_context.err;
  EXPECT_EQ(lines(no_context.err), 1u);
  EXPECT_FALSE(exists(dir.file("nc")));
}

// Nothing is written compressed: a gzip format, or an output directory named like a compressed
// file, is one usage error before anything is read or written.
TEST(Disk, CompressedOutputIsRefusedWithOneLine) {
  TempDir dir;
  write_file(dir.file("c.txt"), small_corpus(40, 2000));
  const Args train = {"train",         "--corpus", dir.file("c.txt"), "--output",
                      dir.file("run"), "--quiet",  "--dim",           "4",
                      "--epochs",      "1",        "--min-count",     "1",
                      "--threads",     "1",        "--format",        "h5"};
  const Outcome t = run(dir, train);
  ASSERT_EQ(t.code, 0) << describe(train, t);
  const std::string ck = dir.file("run/checkpoints/epoch-1.h5");

  for (const std::string format : {"npy.gz", "h5.gz", "bin.gz", "txt.gz", "gz", "npy,txt.gz"}) {
    SCOPED_TRACE(format);
    const std::string out = dir.file("o-" + format);
    const std::vector<Args> commands = {
        {"train", "--corpus", dir.file("c.txt"), "--output", out, "--format", format},
        {"export", "--checkpoint", ck, "--output", out, "--format", format}};
    for (const Args& args : commands) {
      const Outcome r = run(dir, args);
      EXPECT_EQ(r.code, 2) << describe(args, r);
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_EQ(r.err.rfind("pagedw2v: --format: '", 0), 0u) << r.err;
      EXPECT_TRUE(contains(r.err, "compressed")) << r.err;
      EXPECT_FALSE(exists(out));
    }
  }
  for (const std::string name : {"vectors.npy.gz", "embeddings.h5.gz", "run.gz/"}) {
    SCOPED_TRACE(name);
    const std::string out = dir.file(name);
    const std::vector<Args> commands = {
        {"train", "--corpus", dir.file("c.txt"), "--output", out},
        {"export", "--checkpoint", ck, "--output", out, "--format", "npy"}};
    for (const Args& args : commands) {
      const Outcome r = run(dir, args);
      EXPECT_EQ(r.code, 2) << describe(args, r);
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_TRUE(contains(r.err, "--output '" + out + "' is named like a compressed file"))
          << r.err;
      EXPECT_FALSE(exists(out));
    }
  }
  // A directory of that name that exists already is a directory.
  ASSERT_EQ(::mkdir(dir.file("old.gz").c_str(), 0755), 0);
  const Outcome r =
      run(dir, {"export", "--checkpoint", ck, "--output", dir.file("old.gz"), "--format", "npy"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(exists(dir.file("old.gz/vectors.npy")));
}

// --min-count and --max-vocab say what they left out, on the console and in run.json.
TEST(Train, ReportsWhatMinCountAndMaxVocabDropped) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 20; ++i) corpus += "a a a a a b b b b c c c d e\n";  // 280 tokens
  write_file(dir.file("c.txt"), corpus);
  const Args base = {
      "train",    "--corpus", dir.file("c.txt"), "--dim", "5",         "--epochs", "1",
      "--format", "npy",      "--device",        "cpu",   "--threads", "1"};
  auto args = [&](const std::string& out, const Args& extra) {
    Args a = base;
    a.insert(a.end(), {"--output", dir.file(out)});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const Args all = args("all", {"--min-count", "1"});
  const Outcome r_all = run(dir, all);
  ASSERT_EQ(r_all.code, 0) << describe(all, r_all);
  EXPECT_FALSE(contains(r_all.err, "dropped by")) << r_all.err;

  const Args min = args("min", {"--min-count", "21"});
  const Outcome r_min = run(dir, min);
  ASSERT_EQ(r_min.code, 0) << describe(min, r_min);
  EXPECT_TRUE(contains(r_min.err,
                       "dropped by --min-count 21: 2 of 5 distinct words, 40 of 280 "
                       "tokens (14.29 %)"))
      << r_min.err;

  const Args both = args("both", {"--min-count", "21", "--max-vocab", "2"});
  const Outcome r_both = run(dir, both);
  ASSERT_EQ(r_both.code, 0) << describe(both, r_both);
  EXPECT_TRUE(contains(r_both.err,
                       "dropped by --min-count 21, --max-vocab 2: 3 of 5 distinct "
                       "words, 100 of 280 tokens (35.71 %)"))
      << r_both.err;
  std::ifstream in(dir.file("both/run.json"));
  ASSERT_TRUE(in) << "no run.json";
  const nlohmann::json record = nlohmann::json::parse(in);
  const nlohmann::json& v = record.at("vocabulary");
  EXPECT_EQ(v.at("words").get<uint64_t>(), 2u);
  EXPECT_EQ(v.at("corpus_tokens").get<uint64_t>(), 280u);
  EXPECT_EQ(v.at("distinct_words").get<uint64_t>(), 5u);
  EXPECT_EQ(v.at("dropped_words").get<uint64_t>(), 3u);
  EXPECT_EQ(v.at("dropped_tokens").get<uint64_t>(), 100u);
}

}  // namespace
}  // namespace pagedw2v
