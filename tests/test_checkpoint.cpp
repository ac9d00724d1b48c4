#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/hdf5_io.hpp"
#include "model/model.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

std::string random_corpus(int sentences, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    for (int i = 0; i < 12; ++i) text += "w" + std::to_string(rng() % 60 + (s % 3) * 20) + " ";
    text += "\n";
  }
  return text;
}

Config base_config(const TempDir& dir, const std::string& out) {
  return testing_util::small_cpu_config(dir, out, 12, 2);
}

Config resume_config(const TempDir& dir, const std::string& checkpoint, const std::string& out) {
  return testing_util::small_cpu_config(dir, out, 0, 0, checkpoint);
}

TEST(Checkpoint, SaveLoadRoundTrip) {
  TempDir dir;
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = 3;
  c.window = 7;
  c.sample = 1e-4;
  c.model = ModelKind::kCbow;
  c.seed = 99;
  c.alpha = 0.03f;
  const Vocab vocab = Vocab::from_words({"a", "b"}, {7, 3});
  Model m{HostTable(2, 3, "in", ""), HostTable(2, 3, "out", "")};
  std::mt19937 rng(1);
  for (int i = 0; i < 6; ++i) {
    m.input.data()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
    m.output.data()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  }
  const TrainPosition pos{1, 17, 123456};
  const CorpusFingerprint fp{100000, 20, 0xF00DBABEDEADBEEFull};
  save_checkpoint(dir.file("c.h5"), c, vocab, m, pos, fp, 0.0125f);
  const Checkpoint ck = load_checkpoint(dir.file("c.h5"));
  EXPECT_EQ(ck.config.corpus, c.corpus);
  EXPECT_EQ(ck.config.dim, 3u);
  EXPECT_EQ(ck.config.window, 7u);
  EXPECT_DOUBLE_EQ(ck.config.sample, 1e-4);
  EXPECT_EQ(ck.config.model, ModelKind::kCbow);
  EXPECT_EQ(ck.config.seed, 99u);
  EXPECT_FLOAT_EQ(ck.config.alpha, 0.03f);
  EXPECT_EQ(ck.vocab.words(), vocab.words());
  EXPECT_EQ(ck.vocab.counts(), vocab.counts());
  EXPECT_EQ(ck.position.epoch, 1u);
  EXPECT_EQ(ck.position.block, 17u);
  EXPECT_EQ(ck.position.words_done, 123456u);
  EXPECT_TRUE(ck.corpus == fp);
  EXPECT_FLOAT_EQ(ck.lr, 0.0125f);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ck.model.input.data()[i], m.input.data()[i]);
    EXPECT_EQ(ck.model.output.data()[i], m.output.data()[i]);
  }
}

class ResumeExact : public ::testing::TestWithParam<std::pair<ModelKind, OptimizerKind>> {};

// Two epochs straight, and one epoch then a resume from epoch-1.h5, give the same bits; with a
// stateful optimizer the checkpoint must carry its state tables for that.
TEST_P(ResumeExact, FromEpochCheckpoint) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(600, 1));
  Config straight = base_config(dir, "a");
  straight.model = GetParam().first;
  straight.optimizer = GetParam().second;
  run_training(straight);
  const TrainSummary s =
      run_training(resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b"));
  EXPECT_EQ(s.words, 2u * 600u * 12u);
  const std::string a = read_file(dir.file("a/vectors.npy"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, read_file(dir.file("b/vectors.npy")));
}

INSTANTIATE_TEST_SUITE_P(
    Models, ResumeExact,
    ::testing::Values(std::make_pair(ModelKind::kSkipGram, OptimizerKind::kSgd),
                      std::make_pair(ModelKind::kCbow, OptimizerKind::kSgd),
                      std::make_pair(ModelKind::kSkipGram, OptimizerKind::kAdam),
                      std::make_pair(ModelKind::kCbow, OptimizerKind::kAdam),
                      std::make_pair(ModelKind::kSkipGram, OptimizerKind::kAdadelta)));

// Mid-epoch too: the per-block step count continues where the checkpoint stopped.
TEST(Resume, AdamInterruptMidEpochThenResumeIsExact) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(30000, 2));  // 360 k words: several spans
  Config c = base_config(dir, "a");
  c.dim = 4;
  c.optimizer = OptimizerKind::kAdam;
  run_training(c);
  Config stopped = c;
  stopped.output = dir.file("b");
  std::atomic<int> stop{SIGINT};
  EXPECT_THROW(run_training(stopped, stderr, &stop), Interrupted);
  const Checkpoint ck = load_checkpoint(dir.file("b/checkpoints/latest.h5"));
  EXPECT_GT(ck.position.block, 0u);
  ASSERT_EQ(ck.model.input_state.size(), 2u);
  run_training(resume_config(dir, dir.file("b/checkpoints/latest.h5"), "c"));
  EXPECT_EQ(read_file(dir.file("a/vectors.npy")), read_file(dir.file("c/vectors.npy")));
}

// A stop seen after an epoch's last block: the checkpoint stands at the start of the next epoch
// (named for the epoch it ends), and the resumed run gives the bits of a straight one.
TEST(Resume, AStopAfterAnEpochsLastBlockResumesAtTheNextEpoch) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(600, 3));  // 7,200 words: one span an epoch
  const Config c = base_config(dir, "a");
  run_training(c);
  Config stopped = c;
  stopped.output = dir.file("b");
  std::atomic<int> stop{SIGTERM};
  EXPECT_THROW(run_training(stopped, stderr, &stop), Interrupted);
  const Checkpoint ck = load_checkpoint(dir.file("b/checkpoints/latest.h5"));
  EXPECT_EQ(ck.position.epoch, 1u);
  EXPECT_EQ(ck.position.block, 0u);
  EXPECT_EQ(ck.position.words_done, 600u * 12u);
  EXPECT_TRUE(std::filesystem::exists(dir.file("b/checkpoints/epoch-1.h5")));
  run_training(resume_config(dir, dir.file("b/checkpoints/latest.h5"), "c"));
  EXPECT_EQ(read_file(dir.file("a/vectors.npy")), read_file(dir.file("c/vectors.npy")));
}

TEST(Checkpoint, OptimizerStateRoundTrips) {
  TempDir dir;
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = 3;
  apply_option(c, "optimizer", "adamw");
  apply_option(c, "lr", "0.003");
  apply_option(c, "beta2", "0.98");
  const Vocab vocab = Vocab::from_words({"a", "b"}, {7, 3});
  Model m{HostTable(2, 3, "in", ""), HostTable(2, 3, "out", "")};
  init_optimizer_state(m, c.optimizer);
  ASSERT_EQ(m.input_state.size(), 2u);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  for (HostTable* t : {&m.input, &m.output, &m.input_state[0], &m.input_state[1],
                       &m.output_state[0], &m.output_state[1]}) {
    for (int i = 0; i < 6; ++i) t->data()[i] = u(rng);
  }
  save_checkpoint(dir.file("c.h5"), c, vocab, m, TrainPosition{0, 3, 99},
                  CorpusFingerprint{100, 5, 5}, 0.002f);
  const Checkpoint ck = load_checkpoint(dir.file("c.h5"));
  EXPECT_EQ(ck.config.optimizer, OptimizerKind::kAdamW);
  EXPECT_EQ(option_value(ck.config, "lr"), option_value(c, "lr"));
  EXPECT_EQ(option_value(ck.config, "beta2"), option_value(c, "beta2"));
  EXPECT_EQ(option_value(ck.config, "beta1"), "auto");
  ASSERT_EQ(ck.model.input_state.size(), 2u);
  ASSERT_EQ(ck.model.output_state.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(ck.model.input_state[k].data()[i], m.input_state[k].data()[i]);
      EXPECT_EQ(ck.model.output_state[k].data()[i], m.output_state[k].data()[i]);
    }
  }
}

// A checkpoint without our integrity record (another program's, or one whose record a damage
// removed) is parsed in a child process, as every checkpoint is; the load gives the original's
// values and writes nothing to the temporary directory.
TEST(Checkpoint, AFileWithoutItsRecordIsReadApart) {
  TempDir dir;
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = 3;
  const Vocab vocab = Vocab::from_words({"a", "b", "c"}, {7, 3, 2});
  Model m{HostTable(3, 3, "in", ""), HostTable(3, 3, "out", "")};
  for (int i = 0; i < 9; ++i) {
    m.input.data()[i] = 0.25f * float(i) - 1.0f;
    m.output.data()[i] = 0.5f - 0.125f * float(i);
  }
  save_checkpoint(dir.file("c.h5"), c, vocab, m, TrainPosition{1, 2, 77},
                  CorpusFingerprint{100, 5, 5}, 0.002f);
  std::string bytes = read_file(dir.file("c.h5"));
  ASSERT_EQ(bytes.rfind("pagedw2v-xxh64 ", 0), 0u);
  std::fill(bytes.begin(), bytes.begin() + 64, '\0');
  write_file(dir.file("foreign.h5"), bytes);
  ASSERT_EQ(h5_integrity(dir.file("foreign.h5")), H5Integrity::kNone);
  const std::string tmp = dir.file("tmp");
  std::filesystem::create_directory(tmp);
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const Checkpoint ck = load_checkpoint(dir.file("foreign.h5"));
  if (before != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  EXPECT_EQ(ck.position.epoch, 1u);
  EXPECT_EQ(ck.position.block, 2u);
  EXPECT_EQ(ck.position.words_done, 77u);
  ASSERT_EQ(ck.vocab.size(), 3u);
  EXPECT_EQ(ck.vocab.word(2), "c");
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(ck.model.input.data()[i], m.input.data()[i]);
    EXPECT_EQ(ck.model.output.data()[i], m.output.data()[i]);
  }
  // The child sends back what it parsed and this process reads the tables from the file: no
  // temporary directory is needed, with the record or without it.
  ::setenv("TMPDIR", dir.file("missing").c_str(), 1);
  EXPECT_EQ(load_checkpoint(dir.file("foreign.h5")).position.words_done, 77u);
  EXPECT_EQ(load_checkpoint(dir.file("c.h5")).position.words_done, 77u);
  if (before != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  // The copy is written apart, so a damaged original still ends in one clear error.
  bytes[bytes.size() / 2] ^= 0x5A;
  bytes.resize(bytes.size() * 3 / 4);
  write_file(dir.file("damaged.h5"), bytes);
  EXPECT_THROW(load_checkpoint(dir.file("damaged.h5")), Error);
}

// A version-1 file (before optimizers: no optimizer options, no state tables) still loads as an
// sgd run, and resuming from it is exact.
TEST(Checkpoint, ReadsVersionOneFiles) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(300, 10));
  run_training(base_config(dir, "a"));
  const std::string v2 = dir.file("a/checkpoints/epoch-1.h5");
  std::vector<Attribute> attrs;
  for (const Attribute& a : read_attributes_h5(v2)) {
    const bool optimizer_option = a.name == "option.optimizer" || a.name == "option.lr" ||
                                  a.name == "option.beta1" || a.name == "option.beta2" ||
                                  a.name == "option.eps" || a.name == "option.weight-decay" ||
                                  a.name == "option.rho";
    if (optimizer_option) continue;
    attrs.push_back(a.name == "format_version" ? Attribute{a.name, int64_t{1}} : a);
  }
  const Checkpoint ck = load_checkpoint(v2);
  write_embeddings_h5(dir.file("v1.h5"), ck.vocab, ck.model.input, &ck.model.output, attrs);
  const Checkpoint old = load_checkpoint(dir.file("v1.h5"));
  EXPECT_EQ(old.config.optimizer, OptimizerKind::kSgd);
  EXPECT_TRUE(old.model.input_state.empty());
  run_training(resume_config(dir, dir.file("v1.h5"), "b"));
  EXPECT_EQ(read_file(dir.file("a/vectors.npy")), read_file(dir.file("b/vectors.npy")));
}

// Files written before the negative pool and super-batches existed lack their options: they load
// with the defaults (per-example negatives, 1 Mi words a super-batch), and resume exactly.
TEST(Checkpoint, ReadsFilesWithoutPoolOptions) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(300, 12));
  run_training(base_config(dir, "a"));
  const std::string path = dir.file("a/checkpoints/epoch-1.h5");
  std::vector<Attribute> attrs;
  bool had_pool = false, had_batch = false;
  for (const Attribute& a : read_attributes_h5(path)) {
    had_pool = had_pool || a.name == "option.negative-pool";
    had_batch = had_batch || a.name == "option.batch-words";
    if (a.name != "option.negative-pool" && a.name != "option.batch-words") attrs.push_back(a);
  }
  EXPECT_TRUE(had_pool);
  EXPECT_TRUE(had_batch);
  const Checkpoint ck = load_checkpoint(path);
  write_embeddings_h5(dir.file("old.h5"), ck.vocab, ck.model.input, &ck.model.output, attrs);
  const Checkpoint old = load_checkpoint(dir.file("old.h5"));
  EXPECT_EQ(old.config.negative_pool, 0u);
  EXPECT_EQ(old.config.batch_words, uint64_t{1} << 20);
  run_training(resume_config(dir, dir.file("old.h5"), "b"));
  EXPECT_EQ(read_file(dir.file("a/vectors.npy")), read_file(dir.file("b/vectors.npy")));
}

TEST(Checkpoint, RecordsPoolBatchAndPlacementButNotTheMemoryBudget) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(200, 13));
  Config c = base_config(dir, "a");
  c.epochs = 1;
  apply_option(c, "negative-pool", "16");
  apply_option(c, "batch-words", "5000");
  apply_option(c, "placement", "paged");
  apply_option(c, "gpu-memory", "3GiB");
  run_training(c);
  const Checkpoint ck = load_checkpoint(dir.file("a/checkpoints/epoch-1.h5"));
  EXPECT_EQ(ck.config.negative_pool, 16u);
  EXPECT_EQ(ck.config.batch_words, 8192u);
  // Where the tables lived is kept by a resumed run unless given again; the GPU memory budget
  // is the machine's business.
  EXPECT_EQ(ck.config.placement, Placement::kPaged);
  EXPECT_EQ(ck.config.gpu_memory, 0u);
}

TEST(Resume, NegativePoolAndBatchWordsCannotChange) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(200, 14));
  Config c = base_config(dir, "a");
  apply_option(c, "negative-pool", "0");
  run_training(c);
  const std::string path = dir.file("a/checkpoints/epoch-1.h5");
  Config r = resume_config(dir, path, "b");
  apply_option(r, "negative-pool", "16");
  try {
    run_training(r);
    FAIL() << "resumed with another --negative-pool";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--negative-pool cannot change"), std::string::npos)
        << e.what();
  }
  r = resume_config(dir, path, "b");
  apply_option(r, "batch-words", "4096");
  EXPECT_THROW(run_training(r), UsageError);
  // The same values, given again, and another placement are fine.
  r = resume_config(dir, path, "c");
  apply_option(r, "negative-pool", "0");
  apply_option(r, "batch-words", "1048576");
  apply_option(r, "placement", "resident");
  apply_option(r, "gpu-memory", "1GiB");
  apply_option(r, "epochs", "3");
  EXPECT_EQ(run_training(r).words, 3u * 200u * 12u);
}

TEST(Resume, OptimizerCannotChange) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(200, 11));
  Config c = base_config(dir, "a");
  c.optimizer = OptimizerKind::kAdagrad;
  run_training(c);
  Config r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  apply_option(r, "optimizer", "adam");
  EXPECT_THROW(run_training(r), UsageError);
  r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  apply_option(r, "lr", "0.5");
  EXPECT_THROW(run_training(r), UsageError);
}

// A stop request mid-epoch writes a step checkpoint; resuming from it is exact too.
TEST(Resume, InterruptMidEpochThenResumeIsExact) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(30000, 2));  // 360 k words: several spans
  Config c = base_config(dir, "a");
  c.dim = 4;
  run_training(c);

  Config stopped = base_config(dir, "b");
  stopped.dim = 4;
  std::atomic<int> stop{SIGINT};
  std::string checkpoint;
  try {
    run_training(stopped, stderr, &stop);
    FAIL() << "not interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGINT);
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
  const Checkpoint ck = load_checkpoint(dir.file("b/checkpoints/latest.h5"));
  EXPECT_EQ(ck.position.epoch, 0u);
  EXPECT_GT(ck.position.block, 0u);
  EXPECT_GT(ck.position.words_done, 0u);
  EXPECT_LT(ck.position.words_done, 360000u);
  const TrainSummary s = run_training(resume_config(dir, dir.file("b/checkpoints/latest.h5"), "c"));
  EXPECT_EQ(s.words, 2u * 360000u);
  EXPECT_EQ(read_file(dir.file("a/vectors.npy")), read_file(dir.file("c/vectors.npy")));
}

TEST(Resume, MoreThreadsLoseNoWords) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(3000, 3));
  Config c = base_config(dir, "a");
  c.threads = 2;
  run_training(c);
  Config r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  r.threads = 2;
  EXPECT_EQ(run_training(r).words, 2u * 3000u * 12u);
}

TEST(Resume, EpochsCanBeRaised) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(500, 4));
  run_training(base_config(dir, "a"));
  Config r = resume_config(dir, dir.file("a/checkpoints/latest.h5"), "b");
  EXPECT_THROW(run_training(r), UsageError);  // already finished
  apply_option(r, "epochs", "4");
  EXPECT_EQ(run_training(r).words, 4u * 500u * 12u);
  EXPECT_EQ(load_checkpoint(dir.file("b/checkpoints/latest.h5")).position.epoch, 4u);
}

TEST(Resume, ModelParametersCannotChange) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(200, 5));
  run_training(base_config(dir, "a"));
  Config r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  apply_option(r, "dim", "50");
  EXPECT_THROW(run_training(r), UsageError);
}

// --pool-words decides which negatives every example draws, so a resumed run may not change it;
// giving it again unchanged is fine.
TEST(Resume, AChangedPoolWordsIsRefused) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(2000, 9));
  Config c = base_config(dir, "a");
  apply_option(c, "negative-pool", "64");
  apply_option(c, "pool-words", "8192");
  run_training(c);
  Config r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  apply_option(r, "pool-words", "4096");
  try {
    run_training(r);
    FAIL() << "accepted a changed --pool-words";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("pool-words"), std::string::npos) << e.what();
  }
  Config same = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "c");
  apply_option(same, "pool-words", "8192");
  EXPECT_EQ(run_training(same).words, 2u * 2000u * 12u);
}

TEST(Resume, AnotherCorpusIsRefused) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(200, 6));
  write_file(dir.file("other.txt"), random_corpus(200, 7));
  run_training(base_config(dir, "a"));
  Config r = resume_config(dir, dir.file("a/checkpoints/epoch-1.h5"), "b");
  apply_option(r, "corpus", dir.file("other.txt"));
  try {
    run_training(r);
    FAIL() << "accepted another corpus";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
}

TEST(CheckpointDir, KeepsTheNewestAndLinksLatest) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(100, 8));
  Config c = base_config(dir, "a");
  c.epochs = 4;
  c.keep_checkpoints = 2;
  const TrainSummary s = run_training(c);
  EXPECT_EQ(s.last_checkpoint, dir.file("a/checkpoints/epoch-4.h5"));
  EXPECT_NE(access(dir.file("a/checkpoints/epoch-4.h5").c_str(), F_OK), -1);
  EXPECT_NE(access(dir.file("a/checkpoints/epoch-3.h5").c_str(), F_OK), -1);
  EXPECT_EQ(access(dir.file("a/checkpoints/epoch-2.h5").c_str(), F_OK), -1);
  EXPECT_EQ(access(dir.file("a/checkpoints/epoch-1.h5").c_str(), F_OK), -1);
  char target[64] = {};
  ASSERT_GT(readlink(dir.file("a/checkpoints/latest.h5").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "epoch-4.h5");
}

// The last checkpoint's file is made ahead (prepare) and its write fills in the tables and the
// position: what it holds is what a whole write holds, and nothing is left behind either way.
TEST(CheckpointWriter, APreparedCheckpointHoldsWhatAWholeWriteHolds) {
  TempDir dir;
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = 5;
  c.optimizer = OptimizerKind::kAdam;
  const Vocab vocab = Vocab::from_words({"a", "b", "c"}, {9, 4, 2});
  Model m = allocate_model(3, 5, OptimizerKind::kAdam, false, "");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (HostTable* t : {&m.input, &m.output, &m.input_state[0], &m.output_state[0],
                       &m.input_state[1], &m.output_state[1]}) {
    for (uint64_t i = 0; i < 15; ++i) t->data()[i] = u(rng);
  }
  const CorpusFingerprint fp{30, 3, 0x1234};
  CheckpointDir d(dir.path(), 2, 10);
  const std::string checkpoints = dir.file("checkpoints");
  {
    // Prepared and never written: its temporary file goes with the writer.
    CheckpointWriter w(d, c, vocab, fp);
    w.prepare({3, 0, 0}, 3, 5);
    // The writer's thread makes the file: wait for it (a writer that never does hangs the
    // test, which its ctest timeout ends).
    while (testing_util::entries(checkpoints).empty()) usleep(1000);
  }
  EXPECT_TRUE(testing_util::entries(checkpoints).empty());

  CheckpointWriter w(d, c, vocab, fp);
  w.prepare({3, 0, 0}, 3, 5);
  w.write_snapshot(true, m, {2, 0, 20}, 0.02f);  // another file: written whole
  w.write_in_place(true, m, {3, 0, 30}, 0.01f);
  EXPECT_EQ(w.wait(), checkpoints + "/epoch-3.h5");
  EXPECT_EQ(testing_util::entries(checkpoints),
            (std::vector<std::string>{"epoch-2.h5", "epoch-3.h5", "latest.h5"}));
  save_checkpoint(dir.file("whole.h5"), c, vocab, m, {3, 0, 30}, fp, 0.01f);
  const Checkpoint a = load_checkpoint(checkpoints + "/epoch-3.h5");
  const Checkpoint b = load_checkpoint(dir.file("whole.h5"));
  EXPECT_EQ(a.position.epoch, 3u);
  EXPECT_EQ(a.position.words_done, 30u);
  EXPECT_FLOAT_EQ(a.lr, 0.01f);
  EXPECT_TRUE(a.corpus == fp);
  EXPECT_EQ(a.config.optimizer, OptimizerKind::kAdam);
  EXPECT_EQ(a.vocab.words(), b.vocab.words());
  EXPECT_EQ(a.vocab.counts(), b.vocab.counts());
  EXPECT_EQ(read_attributes_h5(checkpoints + "/epoch-3.h5").size(),
            read_attributes_h5(dir.file("whole.h5")).size());
  const Model* models[2] = {&a.model, &b.model};
  for (const Model* x : models) {
    ASSERT_EQ(x->input_state.size(), 2u);
    for (uint64_t i = 0; i < 15; ++i) {
      EXPECT_EQ(x->input.data()[i], m.input.data()[i]);
      EXPECT_EQ(x->output.data()[i], m.output.data()[i]);
      for (size_t k = 0; k < 2; ++k) {
        EXPECT_EQ(x->input_state[k].data()[i], m.input_state[k].data()[i]);
        EXPECT_EQ(x->output_state[k].data()[i], m.output_state[k].data()[i]);
      }
    }
  }

  // Prepared for other tables: the write does not use it, and the file is still right.
  CheckpointWriter other(d, c, vocab, fp);
  other.prepare({4, 0, 0}, 3, 6);
  other.write_now(true, m, {4, 0, 40}, 0.005f);
  EXPECT_EQ(load_checkpoint(checkpoints + "/epoch-4.h5").position.words_done, 40u);
  EXPECT_EQ(testing_util::entries(checkpoints),
            (std::vector<std::string>{"epoch-3.h5", "epoch-4.h5", "latest.h5"}));
}

TEST(Checkpoint, BadFilesGiveOneClearError) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), random_corpus(100, 9));
  run_training(base_config(dir, "a"));
  const std::string good = read_file(dir.file("a/checkpoints/epoch-2.h5"));
  write_file(dir.file("truncated.h5"), good.substr(0, good.size() / 2));
  write_file(dir.file("text.h5"), "this is not hdf5\n");
  Model m{HostTable(1, 1, "in", ""), HostTable(1, 1, "out", "")};
  write_embeddings_h5(dir.file("plain.h5"), Vocab::from_words({"x"}, {1}), m.input, nullptr, {});
  write_embeddings_h5(dir.file("newer.h5"), Vocab::from_words({"x"}, {1}), m.input, &m.output,
                      {{"format", std::string("pagedw2v checkpoint")},
                       {"format_version", kCheckpointFormatVersion + 1}});
  const std::pair<const char*, const char*> cases[] = {{"truncated.h5", "truncated.h5"},
                                                       {"text.h5", "not an HDF5"},
                                                       {"plain.h5", "not a pagedw2v checkpoint"},
                                                       {"newer.h5", "format version"},
                                                       {"missing.h5", "missing.h5"}};
  for (const auto& [file, expect] : cases) {
    try {
      load_checkpoint(dir.file(file));
      ADD_FAILURE() << file << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pagedw2v
