// The real binary as word2vec, gensim and fastText users drive it: word2vec's vocabulary files,
// fastText's flags, corpus inputs after the options, a corpus too small to train, run.json's
// typed settings and loss history across a resume, and the questions about given words
// (word-vector, similarity, doesnt-match, analogies, eval's subtotals).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "io/npy.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::exists;
using testing_util::fails_cleanly;
using testing_util::read_file;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;
using Args = std::vector<std::string>;

/// Runs the binary in `dir` with `input` on its standard input.
RunResult run(const TempDir& dir, const Args& args, const std::string& input = "") {
  static int serial = 0;
  testing_util::ProcessOptions options;
  options.log_name = "user-" + std::to_string(++serial);
  options.stdin_path = dir.file(options.log_name + ".in");
  options.cwd = dir.path();
  write_file(options.stdin_path, input);
  testing_util::Process p(args, dir.path(), options);
  return p.wait(120);
}

size_t lines(const std::string& text) {
  size_t n = 0;
  for (const char c : text) n += c == '\n';
  return n;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `text` with every run of white space made one space (help texts are wrapped).
std::string flat(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool blank = c == ' ' || c == '\n' || c == '\t';
    if (!blank) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  return out;
}

/// A corpus of `sentences` lines of 12 words drawn from `words` words (seed printed on failure).
std::string random_corpus(uint64_t seed, int words, int sentences) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    for (int i = 0; i < 12; ++i) {
      text += "w" + std::to_string(rng() % words) + (i == 11 ? "\n" : " ");
    }
  }
  return text;
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

/// The `word<sep>count` lines of a vocabulary file, as pairs, in order.
std::vector<std::pair<std::string, uint64_t>> vocab_lines(const std::string& text, char sep) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.rfind(sep);
    if (at == std::string::npos) return {};
    out.emplace_back(line.substr(0, at), std::stoull(line.substr(at + 1)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// word2vec's vocabulary files

TEST(UserFlags, Word2vecSaveVocabWritesItsFormatAndBothFormatsAreRead) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 30, 200));
  const Args first = {"train", "-train",      "c.txt", "-output",    "a",        "-size",
                      "8",     "-iter",       "1",     "-min-count", "1",        "-threads",
                      "1",     "-save-vocab", "v.txt", "--quiet",    "--format", "npy"};
  const RunResult a = run(dir, first);
  ASSERT_EQ(a.code, 0) << describe(a);
  EXPECT_TRUE(
      contains(a.err, "-save-vocab v.txt as --save-vocab v.txt --save-vocab-format word2vec"))
      << a.err;
  // word2vec.c's SaveVocab: "%s %lld\n", the sentence end first.
  const std::string saved = read_file(dir.file("v.txt"));
  ASSERT_EQ(saved.rfind("</s> 0\n", 0), 0u) << saved;
  EXPECT_EQ(saved.find('\t'), std::string::npos) << saved;
  const auto w2v = vocab_lines(saved.substr(7), ' ');
  const auto ours = vocab_lines(read_file(dir.file("a/vocab.tsv")), '\t');
  ASSERT_FALSE(ours.empty());
  EXPECT_EQ(w2v, ours);

  // -read-vocab and --vocab read it, as they read our own format.
  for (const Args& args :
       {Args{"train", "-train", "c.txt", "-output", "b", "-read-vocab", "v.txt"},
        Args{"train", "--corpus", "c.txt", "--output", "c", "--vocab", "v.txt"},
        Args{"train", "--corpus", "c.txt", "--output", "d", "--vocab", "a/vocab.tsv"}}) {
    Args full = args;
    full.insert(full.end(), {"--dim", "8", "--epochs", "1", "--min-count", "1", "--threads", "1",
                             "--quiet", "--format", "npy"});
    const RunResult r = run(dir, full);
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(read_file(dir.file(full[4] + "/vocab.tsv")), read_file(dir.file("a/vocab.tsv")))
        << describe(r);
  }

  // --save-vocab keeps our format unless told.
  const RunResult tsv =
      run(dir, {"train", "--corpus", "c.txt", "--output", "e", "--dim", "4", "--epochs", "1",
                "--min-count", "1", "--quiet", "--format", "npy", "--save-vocab", "t.tsv"});
  ASSERT_EQ(tsv.code, 0) << describe(tsv);
  EXPECT_EQ(read_file(dir.file("t.tsv")), read_file(dir.file("a/vocab.tsv")));

  // A line of neither format is one error line that names the file and the line.
  write_file(dir.file("bad.txt"), "</s> 0\nw1 3\nw2 three\n");
  const RunResult bad = run(dir, {"train", "--corpus", "c.txt", "--output", "f", "--vocab",
                                  "bad.txt", "--min-count", "1", "--quiet"});
  EXPECT_TRUE(fails_cleanly(bad, 1, "line 3"));
  EXPECT_TRUE(contains(bad.err, "word count")) << bad.err;
}

// ---------------------------------------------------------------------------------------------
// fastText's flags

TEST(UserFlags, FastTextFlagsAreReadAsOursWithANote) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 40, 300));
  const Args args = {"train",  "-input",  "c.txt",     "-output", "D",    "-dim",     "8",
                     "-epoch", "1",       "-minCount", "2",       "-ws",  "3",        "-neg",
                     "3",      "-thread", "2",         "-lr",     "0.05", "--format", "npy"};
  const RunResult r = run(dir, args);
  ASSERT_EQ(r.code, 0) << describe(r);
  const size_t note = r.err.find("pagedw2v: note: fastText flags read as ours: ");
  ASSERT_NE(note, std::string::npos) << r.err;
  const std::string note_line = r.err.substr(note, r.err.find('\n', note) - note);
  for (const char* read_as :
       {"-input c.txt as --corpus c.txt", "-dim 8 as --dim 8", "-epoch 1 as --epochs 1",
        "-minCount 2 as --min-count 2", "-ws 3 as --window 3", "-neg 3 as --negative 3",
        "-thread 2 as --threads 2", "-lr 0.05 as --alpha 0.05"}) {
    EXPECT_TRUE(contains(note_line, read_as)) << read_as << " in " << note_line;
  }
  const nlohmann::json settings = read_json(dir.file("D/run.json"))["settings"];
  EXPECT_EQ(settings["dim"], 8);
  EXPECT_EQ(settings["epochs"], 1);
  EXPECT_EQ(settings["min-count"], 2);
  EXPECT_EQ(settings["window"], 3);
  EXPECT_EQ(settings["negative"], 3);
  EXPECT_EQ(settings["threads"], 2);
  EXPECT_NEAR(settings["alpha"].get<double>(), 0.05, 1e-7);
  EXPECT_EQ(read_npy(dir.file("D/vectors.npy")).cols, 8u);

  // -t, -loss ns, -maxn 0, -verbose 0 and -saveOutput have counterparts too.
  const RunResult more =
      run(dir, {"train", "-input",   "c.txt", "-output",     "E",        "-dim",  "4", "-epoch",
                "1",     "-t",       "1e-4",  "-loss",       "ns",       "-minn", "0", "-maxn",
                "0",     "-verbose", "0",     "-saveOutput", "--format", "npy"});
  ASSERT_EQ(more.code, 0) << describe(more);
  const nlohmann::json more_settings = read_json(dir.file("E/run.json"))["settings"];
  EXPECT_NEAR(more_settings["sample"].get<double>(), 1e-4, 1e-12);
  EXPECT_EQ(more_settings["quiet"], true);
  EXPECT_EQ(more_settings["save-context"], true);
  EXPECT_TRUE(exists(dir.file("E/context_vectors.npy")));

  // What has no counterpart, and a single-dash name of neither tool, are one line each.
  const std::vector<std::pair<Args, std::string>> refused = {
      {{"train", "-input", "c.txt", "-output", "F", "-minn", "3"}, "character n-grams"},
      {{"train", "-input", "c.txt", "-output", "F", "-loss", "softmax"}, "-loss softmax"},
      {{"train", "-input", "c.txt", "-output", "F", "-epochs", "3"}, "did you mean --epochs?"},
      {{"train", "-input", "c.txt", "-output", "F", "-pretrainedVectors", "x.vec"},
       "no counterpart"},
      {{"train", "-input", "c.txt", "-output", "F", "-dim"}, "-dim needs a value"},
  };
  for (const auto& [bad, needle] : refused) {
    const RunResult f = run(dir, bad);
    EXPECT_TRUE(fails_cleanly(f, 2, needle)) << needle;
  }
  EXPECT_FALSE(exists(dir.file("F")));
}

// word2vec's -hs 1 -negative 0 and fastText's -loss hs train hierarchical softmax alone, on the
// CPU; what cannot train is refused in one line before anything is written.
TEST(UserFlags, HierarchicalSoftmaxFlagsTrainAndRefusalsAreOneLine) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 40, 300));
  for (const char* cbow : {"0", "1"}) {
    const std::string out = std::string("W") + cbow;
    const RunResult r =
        run(dir, {"train",    "-train",     "c.txt",    "-output", out,         "-size",    "8",
                  "-window",  "3",          "-hs",      "1",       "-negative", "0",        "-cbow",
                  cbow,       "-min-count", "2",        "-iter",   "2",         "-threads", "2",
                  "--device", "cpu",        "--format", "npy"});
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(contains(r.err, "-hs 1 as --hs, -negative 0 as --negative 0")) << r.err;
    EXPECT_TRUE(contains(r.err, "negative 0, sample 0.001, min-count 2, hs (hierarchical softmax)"))
        << r.err;
    const nlohmann::json run_json = read_json(dir.file(out + "/run.json"));
    EXPECT_EQ(run_json["settings"]["hs"], true);
    EXPECT_EQ(run_json["settings"]["negative"], 0);
    ASSERT_EQ(run_json["loss_per_epoch"].size(), 2u);
    // Words drawn uniformly have nothing to learn: the loss is the paths' (test_hs.cpp shows
    // it falling on topics); 40 words' paths are 5 or 6 nodes of about log 2 each.
    for (const auto& loss : run_json["loss_per_epoch"]) {
      EXPECT_GT(loss.get<double>(), 2.0);
      EXPECT_LT(loss.get<double>(), 6.0);
    }
    const NpyMatrix v = read_npy(dir.file(out + "/vectors.npy"));
    EXPECT_EQ(v.cols, 8u);
    for (const float x : v.data) ASSERT_TRUE(std::isfinite(x));
  }
  const RunResult ft =
      run(dir, {"train", "-input", "c.txt", "-output", "FT", "-dim", "8", "-epoch", "1",
                "-minCount", "2", "-loss", "hs", "--device", "cpu", "--format", "npy"});
  ASSERT_EQ(ft.code, 0) << describe(ft);
  EXPECT_TRUE(contains(ft.err, "-loss hs as --hs --negative 0")) << ft.err;
  EXPECT_EQ(read_json(dir.file("FT/run.json"))["settings"]["hs"], true);

  const std::vector<std::pair<Args, std::string>> refused = {
      {{"train", "--corpus", "c.txt", "--output", "R", "--negative", "0"},
       "--negative 0 leaves nothing to train the output layer; add --hs"},
      {{"train", "-train", "c.txt", "-output", "R", "-hs", "2"}, "word2vec's -hs takes 0 or 1"},
  };
  for (const auto& [bad, needle] : refused) {
    const RunResult f = run(dir, bad);
    EXPECT_TRUE(fails_cleanly(f, 2, needle)) << needle << "\n" << describe(f);
  }
  EXPECT_FALSE(exists(dir.file("R")));
}

// ---------------------------------------------------------------------------------------------
// Corpus inputs after the options, as `train --help` says

TEST(UserFlags, CorpusInputsMayFollowTheOptions) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("a.txt"), random_corpus(seed, 20, 50));
  write_file(dir.file("b.txt"), random_corpus(seed + 1, 20, 50));
  const Args common = {"--dim", "4",       "--epochs", "1",  "--min-count",
                       "1",     "--quiet", "--format", "npy"};
  const std::vector<Args> forms = {
      {"train", "--output", "o1", "a.txt", "b.txt"},
      {"train", "--corpus", "a.txt", "--output", "o2", "b.txt"},
      {"train", "--output", "o3", "--dim", "4", "a.txt", "--epochs", "1", "b.txt"},
  };
  for (Args args : forms) {
    const std::string out = args[args[1] == "--output" ? 2 : 4];
    args.insert(args.begin() + 1, common.begin(), common.end());
    const RunResult r = run(dir, args);
    ASSERT_EQ(r.code, 0) << describe(r);
    const std::string corpus = read_json(dir.file(out + "/run.json"))["settings"]["corpus"];
    EXPECT_EQ(corpus, dir.file("a.txt") + "\n" + dir.file("b.txt")) << describe(r);
  }
  const RunResult help = run(dir, {"train", "--help"});
  ASSERT_EQ(help.code, 0);
  EXPECT_TRUE(contains(flat(help.out), "more arguments after the options")) << help.out;
  // A stray value after a flag is still refused, not read as a file.
  const RunResult stray =
      run(dir, {"train", "--corpus", "a.txt", "--output", "o4", "--quiet", "true"});
  EXPECT_TRUE(fails_cleanly(stray, 2, "unexpected argument 'true'"));
  // A word that names no file is refused as before, not taken for an input.
  const RunResult missing =
      run(dir, {"train", "--corpus", "a.txt", "--output", "o5", "--quiet", "nosuch.txt"});
  EXPECT_TRUE(fails_cleanly(missing, 2, "unexpected argument 'nosuch.txt'"));
  EXPECT_FALSE(exists(dir.file("o4")));
  EXPECT_FALSE(exists(dir.file("o5")));
}

// ---------------------------------------------------------------------------------------------
// A corpus too small to train

TEST(UserFlags, AToyCorpusWritesItsVectorsWithAWarning) {
  const TempDir dir;
  write_file(dir.file("toy.txt"), "a b c d e\n");
  const RunResult r = run(dir, {"train", "--corpus", "toy.txt", "--output", "o", "--min-count", "1",
                                "--dim", "8", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << describe(r);
  size_t warnings = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    if (contains(line, "warning")) {
      ++warnings;
      EXPECT_EQ(line.rfind("pagedw2v: warning: no (word, context) example", 0), 0u) << line;
    }
  }
  EXPECT_EQ(warnings, 1u) << r.err;
  const NpyMatrix v = read_npy(dir.file("o/vectors.npy"));
  EXPECT_EQ(v.rows, 5u);
  EXPECT_EQ(v.cols, 8u);
  bool any_nonzero = false;
  for (const float x : v.data) any_nonzero = any_nonzero || x != 0.0f;
  EXPECT_TRUE(any_nonzero);
  EXPECT_EQ(lines(read_file(dir.file("o/vectors.txt"))), 6u);
}

// ---------------------------------------------------------------------------------------------
// run.json

TEST(UserFlags, RunJsonHoldsTypedSettingsAndTheLossOfEveryEpochAcrossResumes) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 30, 400));
  const RunResult a =
      run(dir, {"train", "--corpus", "c.txt", "--output", "r", "--dim", "6", "--epochs", "2",
                "--min-count", "1", "--threads", "1", "--quiet", "--format", "npy"});
  ASSERT_EQ(a.code, 0) << describe(a);
  const nlohmann::json first = read_json(dir.file("r/run.json"));
  const nlohmann::json& s = first["settings"];
  EXPECT_TRUE(s["dim"].is_number_unsigned()) << s;
  EXPECT_EQ(s["dim"], 6);
  EXPECT_TRUE(s["sample"].is_number_float()) << s;
  EXPECT_EQ(s["quiet"], true);
  EXPECT_EQ(s["lowercase"], false);
  EXPECT_EQ(s["alpha"], "auto");
  EXPECT_TRUE(s["corpus"].is_string());
  EXPECT_EQ(s["format"], "npy");
  ASSERT_EQ(first["loss_per_epoch"].size(), 2u);
  EXPECT_EQ(first["epochs_before_this_command"], 0);

  // Resumed for a third epoch: the first two epochs' losses carried over.
  const RunResult b = run(dir, {"train", "--resume", "r/checkpoints/epoch-2.h5", "--output", "r",
                                "--epochs", "3", "--quiet"});
  ASSERT_EQ(b.code, 0) << describe(b);
  const nlohmann::json second = read_json(dir.file("r/run.json"));
  ASSERT_EQ(second["loss_per_epoch"].size(), 3u) << second["loss_per_epoch"];
  EXPECT_EQ(second["loss_per_epoch"][0], first["loss_per_epoch"][0]);
  EXPECT_EQ(second["loss_per_epoch"][1], first["loss_per_epoch"][1]);
  EXPECT_TRUE(second["loss_per_epoch"][2].is_number());
  EXPECT_EQ(second["epochs_before_this_command"], 2);

  // The record of an earlier version (settings as strings) is read as well; into another
  // directory, the history comes from the checkpoint's run.
  nlohmann::json old = second;
  for (auto& [name, value] : old["settings"].items()) {
    value = value.is_string() ? value.get<std::string>() : value.dump();
  }
  write_file(dir.file("r/run.json"), old.dump(2));
  const RunResult c = run(dir, {"train", "--resume", "r/checkpoints/epoch-3.h5", "--output", "r2",
                                "--epochs", "4", "--quiet"});
  ASSERT_EQ(c.code, 0) << describe(c);
  const nlohmann::json third = read_json(dir.file("r2/run.json"));
  ASSERT_EQ(third["loss_per_epoch"].size(), 4u) << third["loss_per_epoch"];
  for (int e = 0; e < 3; ++e) EXPECT_EQ(third["loss_per_epoch"][e], second["loss_per_epoch"][e]);
  EXPECT_EQ(third["settings"]["dim"], 6);
}

// ---------------------------------------------------------------------------------------------
// Progress, the loss, and the help and defaults that agree

TEST(UserFlags, ALogGetsALineAtEveryEpochsEnd) {
  const TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  write_file(dir.file("c.txt"), random_corpus(seed, 30, 300));
  const RunResult r =
      run(dir, {"train", "--corpus", "c.txt", "--output", "o", "--dim", "4", "--epochs", "4",
                "--min-count", "1", "--threads", "1", "--format", "npy"});
  ASSERT_EQ(r.code, 0) << describe(r);
  for (int e = 1; e <= 4; ++e) {
    const std::string line = "epoch " + std::to_string(e) + "/4  100.0% of epoch";
    EXPECT_TRUE(contains(r.err, line)) << line << " in:\n" << r.err;
  }
  // One line an epoch's end, not two (the last span's and the epoch's).
  size_t ends = 0;
  for (size_t at = r.err.find("100.0% of epoch"); at != std::string::npos;
       at = r.err.find("100.0% of epoch", at + 1)) {
    ++ends;
  }
  EXPECT_EQ(ends, 4u) << r.err;
}

TEST(UserFlags, HelpDefinesTheLossAndGivesOneDefaultAnOption) {
  const TempDir dir;
  const RunResult help = run(dir, {"train", "--help"});
  ASSERT_EQ(help.code, 0);
  const std::string text = flat(help.out);
  for (const char* said :
       {"-log sigmoid(context.word)", "final_loss", "loss_per_epoch",
        "smoothed over about the last twentieth", "may rise", "--eval-analogies"}) {
    EXPECT_TRUE(contains(text, said)) << said << " in:\n" << help.out;
  }
  // Each option's entry ends with at most one "(default: …)".
  const size_t lowercase = text.find("--lowercase [");
  ASSERT_NE(lowercase, std::string::npos);
  const std::string entry = text.substr(lowercase, text.find(" --", lowercase + 1) - lowercase);
  EXPECT_EQ(entry.find("(default:"), entry.rfind("(default:")) << entry;
  EXPECT_TRUE(contains(entry, "(default: false)")) << entry;
}

TEST(UserFlags, TheDefaultConfigSetsWhatHelpGivesAsDefaults) {
  const TempDir dir;
  if (!contains(run(dir, {"--version"}).out, "TOML configs: yes")) {
    GTEST_SKIP() << "built without toml++";
  }
  const std::string config = std::string(PAGEDW2V_SOURCE_DIR) + "/configs/default.toml";
  // Left out there, --negative-pool is chosen for paged tables as --help says.
  EXPECT_FALSE(contains(read_file(config), "\nnegative-pool =")) << read_file(config);
  write_file(dir.file("c.txt"), random_corpus(7, 20, 100));
  const Args args = {"train",       "--corpus", "c.txt",   "--dim",    "4",   "--epochs", "1",
                     "--min-count", "1",        "--quiet", "--format", "npy", "--output"};
  Args with_config = args;
  with_config.insert(with_config.end(), {"a", "--config", config});
  Args without = args;
  without.push_back("b");
  const RunResult a = run(dir, with_config);
  const RunResult b = run(dir, without);
  ASSERT_EQ(a.code, 0) << describe(a);
  ASSERT_EQ(b.code, 0) << describe(b);
  nlohmann::json sa = read_json(dir.file("a/run.json"))["settings"];
  nlohmann::json sb = read_json(dir.file("b/run.json"))["settings"];
  sa.erase("output");
  sb.erase("output");
  EXPECT_EQ(sa, sb);
}

// ---------------------------------------------------------------------------------------------
// Questions about given words

/// Vectors whose answers are known: b − a + c is nearest d; e is the odd one of a, c, e.
void write_known_vectors(const TempDir& dir) {
  write_file(dir.file("v.txt"), "6 2\na 1 0\nb 0 1\nc 1 0.1\nd 0.05 1\ne -1 0\nf 1 -0.5\n");
}

TEST(UserQueries, WordVectorPrintsTheStoredValues) {
  const TempDir dir;
  write_known_vectors(dir);
  const RunResult r = run(dir, {"word-vector", "--vectors", "v.txt", "d", "zzz", "f"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(lines(r.out), 2u) << r.out;
  std::istringstream out(r.out);
  std::string word;
  float x = 0, y = 0;
  out >> word >> x >> y;
  EXPECT_EQ(word, "d");
  EXPECT_EQ(x, 0.05f);
  EXPECT_EQ(y, 1.0f);
  out >> word >> x >> y;
  EXPECT_EQ(word, "f");
  EXPECT_EQ(y, -0.5f);
  EXPECT_TRUE(contains(r.err, "skipped 'zzz'")) << r.err;

  // Standard input: words separated by spaces or lines; JSON one object a line.
  const RunResult j = run(dir, {"word-vector", "--vectors", "v.txt", "--json"}, "a b\ne\n");
  ASSERT_EQ(j.code, 0) << describe(j);
  ASSERT_EQ(lines(j.out), 3u) << j.out;
  const nlohmann::json e = nlohmann::json::parse(j.out.substr(j.out.rfind('{')));
  EXPECT_EQ(e["word"], "e");
  EXPECT_EQ(e["vector"], nlohmann::json::array({-1.0, 0.0}));

  EXPECT_TRUE(fails_cleanly(run(dir, {"word-vector", "--vectors", "v.txt", "zzz"}), 1,
                            "not in the vocabulary"));
  EXPECT_TRUE(fails_cleanly(run(dir, {"word-vector", "d"}), 2, "--vectors"));
}

TEST(UserQueries, SimilarityAndDoesntMatchAnswerAsGensim) {
  const TempDir dir;
  write_known_vectors(dir);
  const RunResult sim = run(dir, {"similarity", "--vectors", "v.txt", "a", "c"});
  ASSERT_EQ(sim.code, 0) << describe(sim);
  char expected[64];
  std::snprintf(expected, sizeof expected, "a c %.6f\n", 1.0 / std::sqrt(1.01));
  EXPECT_EQ(sim.out, expected);
  const RunResult pairs =
      run(dir, {"similarity", "--vectors", "v.txt", "--json"}, "a e\nb zzz\na b\n");
  ASSERT_EQ(pairs.code, 0) << describe(pairs);
  ASSERT_EQ(lines(pairs.out), 2u) << pairs.out;
  const nlohmann::json ae = nlohmann::json::parse(pairs.out.substr(0, pairs.out.find('\n')));
  EXPECT_EQ(ae["word1"], "a");
  EXPECT_NEAR(ae["similarity"].get<double>(), -1.0, 1e-9);
  EXPECT_TRUE(contains(pairs.err, "'zzz'")) << pairs.err;
  EXPECT_TRUE(fails_cleanly(run(dir, {"similarity", "--vectors", "v.txt", "a"}), 2, "WORD1 WORD2"));

  const RunResult odd = run(dir, {"doesnt-match", "--vectors", "v.txt", "a", "c", "e"});
  ASSERT_EQ(odd.code, 0) << describe(odd);
  EXPECT_EQ(odd.out, "e\n");
  const RunResult odd_json = run(dir, {"doesnt-match", "--vectors", "v.txt", "--json"}, "b d a\n");
  ASSERT_EQ(odd_json.code, 0) << describe(odd_json);
  EXPECT_EQ(nlohmann::json::parse(odd_json.out)["doesnt_match"], "a");
  // As gensim, words not in the vocabulary are left out (and said so), not the whole list.
  const RunResult unknown = run(dir, {"doesnt-match", "--vectors", "v.txt", "a", "zzz", "c", "e"});
  ASSERT_EQ(unknown.code, 0) << describe(unknown);
  EXPECT_EQ(unknown.out, "e\n");
  EXPECT_TRUE(contains(unknown.err, "left out 'zzz' not in the vocabulary")) << unknown.err;
  EXPECT_TRUE(fails_cleanly(run(dir, {"doesnt-match", "--vectors", "v.txt", "yyy", "zzz"}), 1,
                            "not in the vocabulary"));
}

TEST(UserQueries, AnalogiesReadTriplesInWord2vecsOrderOrFastTexts) {
  const TempDir dir;
  write_known_vectors(dir);
  // word2vec's word-analogy: a is to b as c is to d (b - a + c).
  const RunResult r =
      run(dir, {"analogies", "--vectors", "v.txt", "--top", "1"}, "a b c\nzzz b c\n");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "a b c\n  d ")) << r.out;
  EXPECT_TRUE(contains(r.err, "skipped 'zzz b c'")) << r.err;
  // fastText's analogies: A - B + C.
  const RunResult ft = run(dir, {"analogies", "--vectors", "v.txt", "--top", "1",
                                 "--fasttext-order", "--json", "a", "b", "c"});
  ASSERT_EQ(ft.code, 0) << describe(ft);
  const nlohmann::json j = nlohmann::json::parse(ft.out);
  EXPECT_EQ(j["neighbors"][0]["word"], "f") << j;
  EXPECT_EQ(j["negative"], nlohmann::json::array({"b"}));
  EXPECT_TRUE(fails_cleanly(run(dir, {"analogies", "--vectors", "v.txt", "a", "b"}), 2, "A B C"));
  // Its flags are checked before the vectors are read.
  EXPECT_TRUE(fails_cleanly(
      run(dir, {"analogies", "--vectors", "missing.txt", "--method", "knn", "a", "b", "c"}), 2,
      "--method"));
}

TEST(UserQueries, EvalGivesSemanticAndSyntacticSubtotalsAndRestrictZeroMeansAll) {
  const TempDir dir;
  write_known_vectors(dir);
  write_file(dir.file("q.txt"), ": capital-x\na b c d\n: gram1-y\na b c d\na b c e\n");
  const RunResult r =
      run(dir, {"eval", "--vectors", "v.txt", "--analogies", "q.txt", "--restrict", "0"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "Semantic accuracy: 100.00% (1/1)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Syntactic accuracy: 50.00% (1/2)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Total accuracy: 66.67% (2/3)")) << r.out;
  EXPECT_TRUE(contains(r.out, "over the 6 most frequent words")) << r.out;
  const RunResult j =
      run(dir, {"eval", "--vectors", "v.txt", "--analogies", "q.txt", "--restrict", "0", "--json"});
  ASSERT_EQ(j.code, 0) << describe(j);
  const nlohmann::json a = nlohmann::json::parse(j.out)["analogies"];
  EXPECT_EQ(a["semantic"]["correct"], 1);
  EXPECT_EQ(a["syntactic"]["correct"], 1);
  EXPECT_EQ(a["syntactic"]["incorrect"], 1);
  EXPECT_EQ(a["restrict_vocab"], 6);
}

}  // namespace
}  // namespace pagedw2v
