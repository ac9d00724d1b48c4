// A run continued from a finished one (train/continue_from.hpp): the vocabulary grown, the
// settings merged, and the starting tables: every old word's rows and optimizer state as the run
// left them, bit for bit, each new word's as a fresh run initialises them.
#include "train/continue_from.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "support/random_data.hpp"
#include "support/seed.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

Vocab vocab_of(const std::vector<std::pair<std::string, uint64_t>>& words) {
  std::vector<std::string> w;
  std::vector<uint64_t> c;
  for (const auto& [word, count] : words) {
    w.push_back(word);
    c.push_back(count);
  }
  return Vocab::from_words(w, std::move(c));
}

std::vector<std::pair<std::string, uint64_t>> entries(const Vocab& v) {
  std::vector<std::pair<std::string, uint64_t>> e;
  for (uint32_t r = 0; r < v.size(); ++r) e.emplace_back(std::string(v.word(r)), v.count(r));
  return e;
}

using Entries = std::vector<std::pair<std::string, uint64_t>>;

TEST(GrowVocabulary, KeepsEveryOldWordAddsNewOnesReachingMinCountOrdersByCount) {
  const Vocab old = vocab_of({{"the", 50}, {"cat", 9}, {"sat", 4}, {"mat", 2}});
  // The new text: "mat" often, "dog" and "fox" new, "ant" new and rare; "the" and "sat" absent.
  const Vocab fresh = vocab_of({{"mat", 20}, {"dog", 8}, {"cat", 3}, {"fox", 5}, {"ant", 2}});
  const GrownVocab g = grow_vocabulary(old, fresh, nullptr, 5, 0);
  EXPECT_EQ(entries(g.vocab),
            (Entries{{"the", 50}, {"mat", 22}, {"cat", 12}, {"dog", 8}, {"fox", 5}, {"sat", 4}}));
  EXPECT_EQ(g.added, 2u);
  ASSERT_EQ(g.row_of_old.size(), old.size());
  for (uint32_t r = 0; r < old.size(); ++r) {
    EXPECT_EQ(g.vocab.word(g.row_of_old[r]), old.word(r)) << r;
  }
  // Beyond the new text's counts of the kept words: the old counts.
  EXPECT_EQ(g.counted_before, 50u + 9 + 4 + 2);
  EXPECT_EQ(g.left_out, 1u);  // "ant"
  EXPECT_EQ(g.left_out_tokens, 2u);
}

TEST(GrowVocabulary, MergedCountsAddTheEarlierCorpusForNewWords) {
  const Vocab old = vocab_of({{"the", 50}, {"cat", 9}});
  const Vocab fresh = vocab_of({{"dog", 8}, {"ant", 2}, {"bee", 1}});
  // The old corpus held "ant" 3 times (below its --min-count) and "bee" once.
  const Vocab earlier = vocab_of({{"the", 50}, {"cat", 9}, {"ant", 3}, {"bee", 1}});
  const GrownVocab alone = grow_vocabulary(old, fresh, nullptr, 5, 0);
  EXPECT_EQ(entries(alone.vocab), (Entries{{"the", 50}, {"cat", 9}, {"dog", 8}}));
  const GrownVocab merged = grow_vocabulary(old, fresh, &earlier, 5, 0);
  EXPECT_EQ(entries(merged.vocab), (Entries{{"the", 50}, {"cat", 9}, {"dog", 8}, {"ant", 5}}));
  EXPECT_EQ(merged.added, 2u);
  EXPECT_EQ(merged.counted_before, 50u + 9 + 3);
  EXPECT_EQ(alone.left_out, 2u);
  EXPECT_EQ(alone.left_out_tokens, 3u);
  EXPECT_EQ(merged.left_out, 1u);  // "bee"
  EXPECT_EQ(merged.left_out_tokens, 1u);
}

TEST(GrowVocabulary, MaxVocabCapsTheAddedWordsNeverTheOldOnes) {
  const Vocab old = vocab_of({{"a", 10}, {"b", 9}, {"c", 8}});
  const Vocab fresh = vocab_of({{"x", 30}, {"y", 20}, {"z", 6}});
  const GrownVocab capped = grow_vocabulary(old, fresh, nullptr, 1, 4);
  EXPECT_EQ(entries(capped.vocab), (Entries{{"x", 30}, {"a", 10}, {"b", 9}, {"c", 8}}));
  EXPECT_EQ(capped.left_out, 2u);
  EXPECT_EQ(capped.left_out_tokens, 26u);
  // Fewer than the old words: none is added, none dropped.
  EXPECT_EQ(grow_vocabulary(old, fresh, nullptr, 1, 2).vocab.size(), 3u);
  EXPECT_EQ(grow_vocabulary(old, fresh, nullptr, 1, 0).vocab.size(), 6u);
}

TEST(GrowVocabulary, TiesKeepOldWordsFirstThenTheNewTextsOrder) {
  const Vocab old = vocab_of({{"b", 5}, {"a", 5}});
  const Vocab fresh = vocab_of({{"d", 5}, {"c", 5}});
  EXPECT_EQ(entries(grow_vocabulary(old, fresh, nullptr, 1, 0).vocab),
            (Entries{{"b", 5}, {"a", 5}, {"d", 5}, {"c", 5}}));
}

Config given(Config c, const std::vector<std::pair<std::string, std::string>>& options) {
  for (const auto& [name, value] : options) {
    apply_option(c, name, value);
    c.given.insert(name);
  }
  return c;
}

TEST(MergeForContinue, TablesFixedByTheRunOtherModelOptionsInheritedUnlessGiven) {
  const Config saved = given(Config{}, {{"dim", "32"},
                                        {"optimizer", "adam"},
                                        {"window", "3"},
                                        {"min-count", "2"},
                                        {"epochs", "2"},
                                        {"negative-pool", "1024"},
                                        {"seed", "7"}});
  const Config merged = merge_for_continue(saved, given(Config{}, {{"window", "8"}}));
  EXPECT_EQ(merged.dim, 32u);
  EXPECT_EQ(merged.optimizer, OptimizerKind::kAdam);
  EXPECT_EQ(merged.window, 8u);  // given
  EXPECT_EQ(merged.min_count, 2u);
  EXPECT_EQ(merged.epochs, 2u);
  EXPECT_EQ(merged.seed, 7u);
  EXPECT_EQ(merged.negative_pool, 0u);  // this run's plan decides
  EXPECT_EQ(merge_for_continue(saved, given(Config{}, {{"dim", "32"}})).dim, 32u);
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"dim", "64"}, {"optimizer", "sgd"}, {"model", "cbow"}, {"lowercase", "true"}}) {
    try {
      merge_for_continue(saved, given(Config{}, {{name, value}}));
      ADD_FAILURE() << "--" << name << " " << value << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--" + name + " cannot change when continuing"),
                std::string::npos)
          << e.what();
    }
  }
}

std::string row_bytes(const HostTable& t, uint64_t r) {
  return std::string(static_cast<const char*>(t.raw_row(r)), size_t{t.dim()} * t.value_bytes());
}

/// A model of `rows × dim` whose every table holds random values (stored as `storage`).
Model random_model(uint64_t rows, uint32_t dim, OptimizerKind kind, Storage storage,
                   std::mt19937_64& rng) {
  Model m = allocate_model(rows, dim, kind, false, "", storage);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> row(dim);
  auto fill = [&](HostTable& t) {
    for (uint64_t r = 0; r < t.rows(); ++r) {
      for (float& x : row) x = u(rng);
      t.write_row(r, row.data());
    }
  };
  fill(m.input);
  fill(m.output);
  for (HostTable& t : m.input_state) fill(t);
  for (HostTable& t : m.output_state) fill(t);
  return m;
}

struct ModelCase {
  OptimizerKind optimizer;
  Storage storage;
  bool interleaved;
};

class ContinuedModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ContinuedModel, OldRowsBitForBitNewRowsAsAFreshRun) {
  const ModelCase c = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  std::mt19937_64 rng(seed);
  const uint32_t dim = 12, old_rows = 300;
  const Model old = random_model(old_rows, dim, c.optimizer, c.storage, rng);
  // The old words scattered over a larger vocabulary, in a random order.
  const uint64_t rows = 480;
  std::vector<uint32_t> slots(rows);
  for (uint32_t i = 0; i < rows; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<uint32_t> row_of_old(slots.begin(), slots.begin() + old_rows);
  Config config;
  config.dim = dim;
  config.optimizer = c.optimizer;
  config.storage = c.storage;
  config.seed = 1 + seed % 1000;
  const Model m = continued_model(old, row_of_old, rows, config, c.interleaved);
  ASSERT_EQ(m.input.rows(), rows);
  ASSERT_EQ(m.input_state.size(), old.input_state.size());
  Model fresh = allocate_model(rows, dim, c.optimizer, false, "", c.storage);
  init_model(fresh, config.seed);
  std::vector<bool> is_old(rows, false);
  for (uint32_t r = 0; r < old_rows; ++r) {
    const uint32_t to = row_of_old[r];
    is_old[to] = true;
    ASSERT_EQ(row_bytes(m.input, to), row_bytes(old.input, r)) << r << " seed " << seed;
    ASSERT_EQ(row_bytes(m.output, to), row_bytes(old.output, r)) << r;
    for (size_t k = 0; k < old.input_state.size(); ++k) {
      ASSERT_EQ(row_bytes(m.input_state[k], to), row_bytes(old.input_state[k], r)) << r;
      ASSERT_EQ(row_bytes(m.output_state[k], to), row_bytes(old.output_state[k], r)) << r;
    }
  }
  const std::string zero(size_t{dim} * m.input.value_bytes(), '\0');
  for (uint64_t r = 0; r < rows; ++r) {
    if (is_old[r]) continue;
    ASSERT_EQ(row_bytes(m.input, r), row_bytes(fresh.input, r)) << r << " seed " << seed;
    ASSERT_NE(row_bytes(m.input, r), zero) << r;
    ASSERT_EQ(row_bytes(m.output, r), zero) << r;
    for (size_t k = 0; k < m.input_state.size(); ++k) {
      ASSERT_EQ(row_bytes(m.input_state[k], r), zero) << r;
      ASSERT_EQ(row_bytes(m.output_state[k], r), zero) << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, ContinuedModel,
                         ::testing::Values(ModelCase{OptimizerKind::kSgd, Storage::kFp32, false},
                                           ModelCase{OptimizerKind::kSgd, Storage::kFp32, true},
                                           ModelCase{OptimizerKind::kAdam, Storage::kFp32, false},
                                           ModelCase{OptimizerKind::kAdam, Storage::kFp32, true},
                                           ModelCase{OptimizerKind::kAdagrad, Storage::kBf16, true},
                                           ModelCase{OptimizerKind::kSgd, Storage::kBf16, false},
                                           ModelCase{OptimizerKind::kAdam, Storage::kFp16, true}));

TEST(ContinuedModel, RefusesTablesOfAnotherShape) {
  std::mt19937_64 rng(testing_util::fresh_seed());
  const Model old = random_model(10, 8, OptimizerKind::kSgd, Storage::kFp32, rng);
  Config config;
  config.dim = 16;
  EXPECT_THROW(continued_model(old, std::vector<uint32_t>(10, 0), 20, config, false), Error);
}

// The steps a continued run takes, on a real run's checkpoint and a real new text: the run's
// directory found, its checkpoint read, the new text counted and the vocabulary grown, the
// tables built. At the start every old word's rows and adam state are the run's, bit for bit,
// and its count is the run's plus the new text's; each new word's rows are a fresh run's.
TEST(ContinueFromRun, StartingTablesHoldTheRunsRowsForEveryOldWord) {
  const uint64_t seed = testing_util::fresh_seed();
  testing_util::TempDir dir;
  testing_util::write_file(dir.file("corpus.txt"), testing_util::zipf_text(20000, 500, seed));
  testing_util::write_file(dir.file("new.txt"), testing_util::zipf_text(15000, 800, seed + 1));
  Config first = testing_util::small_cpu_config(dir, "r1", 16, 2);
  apply_option(first, "optimizer", "adam");
  run_training(first);

  const Checkpoint run = load_checkpoint(continue_checkpoint(dir.file("r1")));
  Config requested = testing_util::small_cpu_config(dir, "r2", 16, 1);
  requested.corpus = dir.file("new.txt");
  requested.continue_from = dir.file("r1");
  requested.given = {"corpus", "continue-from", "epochs"};
  const Config config = merge_for_continue(run.config, requested);
  ASSERT_EQ(config.optimizer, OptimizerKind::kAdam);
  CorpusText text = CorpusText::open({dir.file("new.txt")});
  const GrownVocab g = grow_from_run(run, text, config);
  Config every = config;
  every.min_count = 1;
  const Vocab fresh_counts =
      count_vocabulary(CorpusText::open({dir.file("new.txt")}).parts(), every);
  for (const bool interleaved : {false, true}) {
    const Model m = continued_model(run.model, g.row_of_old, g.vocab.size(), config, interleaved);
    ASSERT_EQ(m.input_state.size(), 2u);
    for (uint32_t r = 0; r < run.vocab.size(); ++r) {
      const int64_t at = g.vocab.find(run.vocab.word(r));
      ASSERT_GE(at, 0) << run.vocab.word(r) << " seed " << seed;
      const uint64_t to = static_cast<uint64_t>(at);
      ASSERT_EQ(to, g.row_of_old[r]);
      ASSERT_EQ(row_bytes(m.input, to), row_bytes(run.model.input, r)) << run.vocab.word(r);
      ASSERT_EQ(row_bytes(m.output, to), row_bytes(run.model.output, r)) << run.vocab.word(r);
      for (size_t k = 0; k < 2; ++k) {
        ASSERT_EQ(row_bytes(m.input_state[k], to), row_bytes(run.model.input_state[k], r));
        ASSERT_EQ(row_bytes(m.output_state[k], to), row_bytes(run.model.output_state[k], r));
      }
      const int64_t f = fresh_counts.find(run.vocab.word(r));
      const uint64_t added = f >= 0 ? fresh_counts.count(static_cast<uint32_t>(f)) : 0;
      ASSERT_EQ(g.vocab.count(static_cast<uint32_t>(to)), run.vocab.count(r) + added);
    }
    Model fresh = allocate_model(g.vocab.size(), 16, OptimizerKind::kAdam, false, "");
    init_model(fresh, config.seed);
    size_t added = 0;
    for (uint32_t w = 0; w < g.vocab.size(); ++w) {
      if (run.vocab.find(g.vocab.word(w)) >= 0) continue;
      ++added;
      ASSERT_EQ(row_bytes(m.input, w), row_bytes(fresh.input, w)) << g.vocab.word(w);
      ASSERT_EQ(row_bytes(m.output, w), row_bytes(fresh.output, w)) << g.vocab.word(w);
    }
    EXPECT_EQ(added, g.added);
    EXPECT_GT(added, 100u) << "seed " << seed;
  }
}

TEST(ContinueCheckpoint, FindsARunsLastCheckpointOrRefusesWithOneLine) {
  testing_util::TempDir dir;
  EXPECT_THROW(continue_checkpoint(dir.file("missing")), Error);
  // A directory that is no run.
  try {
    continue_checkpoint(dir.path());
    ADD_FAILURE() << "an empty directory was taken for a run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither a run directory"), std::string::npos);
  }
  // A run that keeps no checkpoint.
  testing_util::write_file(dir.file("run.json"), "{\"output_set\": \"abc\"}\n");
  try {
    continue_checkpoint(dir.path());
    ADD_FAILURE() << "a run without checkpoints was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keeps no checkpoint"), std::string::npos) << e.what();
  }
  // A run's last checkpoint: the file latest.h5 names.
  ASSERT_EQ(::mkdir(dir.file("checkpoints").c_str(), 0755), 0);
  testing_util::write_file(dir.file("checkpoints/epoch-2.h5"), "x");
  ASSERT_EQ(::symlink("epoch-2.h5", dir.file("checkpoints/latest.h5").c_str()), 0);
  const std::string found = continue_checkpoint(dir.path());
  EXPECT_EQ(found.substr(found.size() - std::strlen("/checkpoints/epoch-2.h5")),
            "/checkpoints/epoch-2.h5");
  EXPECT_EQ(run_output_set(found), "abc");
  // A file is taken as it is.
  EXPECT_EQ(continue_checkpoint(dir.file("checkpoints/epoch-2.h5")),
            dir.file("checkpoints/epoch-2.h5"));
}

}  // namespace
}  // namespace pagedw2v
