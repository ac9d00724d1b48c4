#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "eval/analogy.hpp"
#include "eval/similarity.hpp"
#include "io/embeddings.hpp"
#include "support/topics.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::topic_separation;
using testing_util::two_topic_corpus;

using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

Config small_config(const TempDir& dir, const std::string& out) {
  Config c = testing_util::small_cpu_config(dir, out, 16, 3);
  c.sample = 0;
  return c;
}

/// Everything written to a temporary FILE*, read back.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

// --eval-analogies and --eval-similarity during training: one line after each epoch, and the
// last one gives what `pagedw2v eval` gives for the exported vectors.
TEST(Trainer, EvaluatesAfterEveryEpoch) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(1000, 4));
  write_file(dir.file("questions.txt"),
             ": topics\nt1 t2 u1 u2\nt3 t4 u3 u4\nu5 u6 t5 t6\nt1 t7 u1 nosuchword\n");
  write_file(dir.file("pairs.tsv"), "t1\tt2\t9\nt3\tu3\t1\nu4\tu5\t8\nt6\tu6\t2\nt8\tu9\t1.5\n");
  Config c = small_config(dir, "a");
  c.eval_analogies = dir.file("questions.txt");
  c.eval_similarity = dir.file("pairs.tsv");
  c.quiet = false;  // the evaluation goes to the log
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  ASSERT_NE(log, nullptr);
  run_training(c, log.get());
  const std::string text = contents(log.get());
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("evaluation:") != std::string::npos) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 3u) << text;
  for (size_t e = 0; e < lines.size(); ++e) {
    EXPECT_EQ(lines[e].rfind("epoch " + std::to_string(e + 1) + " evaluation: analogies ", 0), 0u)
        << lines[e];
  }
  const LoadedEmbeddings trained = load_embeddings(dir.file("a"));
  const AnalogyReport a = evaluate_analogies(trained, dir.file("questions.txt"), 30000);
  const SimilarityReport s = evaluate_similarity(trained, dir.file("pairs.tsv"));
  EXPECT_EQ(a.evaluated(), 3u);
  char want[200];
  std::snprintf(want, sizeof want,
                "epoch 3 evaluation: analogies %.2f%% (%llu/%llu) similarity spearman %.4f",
                a.accuracy_pct(), static_cast<unsigned long long>(a.correct),
                static_cast<unsigned long long>(a.evaluated()), s.spearman);
  EXPECT_EQ(lines.back(), want);
}

TEST(Trainer, OneThreadIsBitIdenticalRunToRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(400, 1));
  run_training(small_config(dir, "a"));
  run_training(small_config(dir, "b"));
  const std::string a = read_file(dir.file("a/vectors.npy"));
  ASSERT_GT(a.size(), 16u * 40u * 4u);
  EXPECT_EQ(a, read_file(dir.file("b/vectors.npy")));
  Config other = small_config(dir, "c");
  other.seed = 2;
  run_training(other);
  EXPECT_NE(a, read_file(dir.file("c/vectors.npy")));
}

// --deterministic with every core available trains on one thread: the one-thread run's bits.
TEST(Trainer, DeterministicIsTheOneThreadRun) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(2000, 3));
  run_training(small_config(dir, "one"));
  Config c = small_config(dir, "det");
  c.threads = 0;
  apply_option(c, "deterministic", "true");
  run_training(c);
  const std::string one = read_file(dir.file("one/vectors.npy"));
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(one, read_file(dir.file("det/vectors.npy")));
}

class TrainerModels : public ::testing::TestWithParam<std::pair<ModelKind, uint32_t>> {};

TEST_P(TrainerModels, LearnsTopicStructure) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(1500, 2));
  Config c = small_config(dir, "out");
  c.model = GetParam().first;
  c.threads = GetParam().second;
  c.formats = {"txt"};
  const TrainSummary s = run_training(c);
  EXPECT_EQ(s.vocab_size, 40u);
  EXPECT_EQ(s.words, 3u * 1500u * 12u);
  EXPECT_TRUE(std::isfinite(s.final_loss));
  EXPECT_GT(topic_separation(dir.file("out/vectors.txt")), 0.3);
}

INSTANTIATE_TEST_SUITE_P(All, TrainerModels,
                         ::testing::Values(std::make_pair(ModelKind::kSkipGram, 1u),
                                           std::make_pair(ModelKind::kSkipGram, 2u),
                                           std::make_pair(ModelKind::kCbow, 1u),
                                           std::make_pair(ModelKind::kCbow, 2u)));

TEST(Trainer, ClearErrorsForUnusableCorpora) {
  TempDir dir;
  Config c = small_config(dir, "out");
  EXPECT_THROW(run_training(c), Error);  // missing corpus
  write_file(dir.file("corpus.txt"), "");
  EXPECT_THROW(run_training(c), Error);
  write_file(dir.file("corpus.txt"), "one two three\n");
  c.min_count = 2;
  try {
    run_training(c);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--min-count"), std::string::npos) << e.what();
  }
}

TEST(Trainer, OutputThatCannotBeCreatedFailsBeforeTraining) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), two_topic_corpus<std::mt19937>(10, 3));
  write_file(dir.file("file"), "x");
  Config c = small_config(dir, "file/sub");
  EXPECT_THROW(run_training(c), Error);
}

}  // namespace
}  // namespace pagedw2v
