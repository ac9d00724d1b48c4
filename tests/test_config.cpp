#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/error.hpp"
#include "config/config.hpp"
#include "test_util.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;
using testing_util::write_file;

TEST(Config, DefaultsAreWord2vecs) {
  const Config c;
  EXPECT_EQ(c.model, ModelKind::kSkipGram);
  EXPECT_EQ(c.dim, 100u);
  EXPECT_EQ(c.window, 5u);
  EXPECT_EQ(c.negative, 5u);
  EXPECT_DOUBLE_EQ(c.sample, 1e-3);
  EXPECT_EQ(c.min_count, 5u);
  EXPECT_EQ(c.epochs, 5u);
  EXPECT_FLOAT_EQ(c.effective_alpha(), 0.025f);
  Config cbow;
  apply_option(cbow, "model", "cbow");
  EXPECT_FLOAT_EQ(cbow.effective_alpha(), 0.05f);
  EXPECT_GE(c.effective_threads(), 1u);
}

TEST(Config, EveryOptionHasHelpAndItsDefaultParses) {
  for (const OptionSpec& spec : train_options()) {
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    if (spec.default_text.empty()) continue;
    Config c;
    EXPECT_NO_THROW(apply_option(c, spec.name, spec.default_text)) << spec.name;
  }
}

TEST(Config, BadValuesNameTheFlag) {
  const std::pair<const char*, const char*> bad[] = {{"dim", "0"},
                                                     {"dim", "-3"},
                                                     {"dim", "abc"},
                                                     {"dim", "1e3"},
                                                     {"dim", "99999999999999999999"},
                                                     {"window", "0"},
                                                     {"negative", "-1"},
                                                     {"negative", "1001"},
                                                     {"hs", "2"},
                                                     {"epochs", "0"},
                                                     {"epochs", "-1"},
                                                     {"sample", "-0.1"},
                                                     {"sample", "nan"},
                                                     {"alpha", "0"},
                                                     {"alpha", "x"},
                                                     {"threads", "0"},
                                                     {"min-count", "0"},
                                                     {"model", "glove"},
                                                     {"device", "tpu"},
                                                     {"format", "csv"},
                                                     {"format", ","},
                                                     {"quiet", "maybe"},
                                                     {"deterministic", "2"},
                                                     {"seed", "-1"},
                                                     {"max-vocab", "-5"},
                                                     {"placement", "host"},
                                                     {"placement", ""},
                                                     {"placement", "Paged"},
                                                     {"gpu-memory", "x"},
                                                     {"gpu-memory", ""},
                                                     {"gpu-memory", "-1GiB"},
                                                     {"gpu-memory", "8 XB"},
                                                     {"gpu-memory", "1e9"},
                                                     {"gpu-memory", "99999999999999999999"},
                                                     {"negative-pool", "-1"},
                                                     {"negative-pool", "abc"},
                                                     {"negative-pool", "67108865"},
                                                     {"negative-pool", "1.5"},
                                                     {"batch-words", "0"},
                                                     {"batch-words", "4095"},
                                                     {"batch-words", "1e6"},
                                                     {"batch-words", "1099511627777"},
                                                     {"rank-tables", "parts"},
                                                     {"rank-tables", ""}};
  for (const auto& [name, value] : bad) {
    Config c;
    try {
      apply_option(c, name, value);
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--") + name), std::string::npos)
          << e.what();
    }
  }
  Config c;
  EXPECT_THROW(apply_option(c, "bogus", "1"), UsageError);
}

TEST(Config, PlacementAndGpuMemory) {
  Config c;
  EXPECT_EQ(c.placement, Placement::kAuto);
  EXPECT_EQ(c.gpu_memory, 0u);
  EXPECT_EQ(option_value(c, "placement"), "auto");
  EXPECT_EQ(option_value(c, "gpu-memory"), "auto");
  apply_option(c, "placement", "paged");
  apply_option(c, "gpu-memory", "8GiB");
  EXPECT_EQ(c.gpu_options().placement, Placement::kPaged);
  EXPECT_EQ(c.gpu_options().memory_budget, uint64_t{8} << 30);
  EXPECT_EQ(option_value(c, "placement"), "paged");
  EXPECT_EQ(option_value(c, "gpu-memory"), "8GiB");
  apply_option(c, "placement", "resident");
  EXPECT_EQ(c.placement, Placement::kResident);
  const std::pair<const char*, uint64_t> sizes[] = {
      {"512MiB", uint64_t{512} << 20}, {"1.5GB", 1500000000}, {"2G", uint64_t{2} << 30},
      {"100000000", 100000000},        {"auto", 0},           {"0", 0}};
  for (const auto& [text, bytes] : sizes) {
    apply_option(c, "gpu-memory", text);
    EXPECT_EQ(c.gpu_memory, bytes) << text;
    // What a config records reads back to the same budget.
    Config d;
    apply_option(d, "gpu-memory", option_value(c, "gpu-memory"));
    EXPECT_EQ(d.gpu_memory, bytes) << text;
  }
  try {
    apply_option(c, "gpu-memory", "x");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--gpu-memory: expected a size such as 8GiB, got 'x'");
  }
}

TEST(Config, NegativePoolAndBatchWords) {
  Config c;
  EXPECT_EQ(c.negative_pool, 0u);
  EXPECT_EQ(c.batch_words, uint64_t{1} << 20);
  apply_option(c, "negative-pool", "65536");
  EXPECT_EQ(c.negative_pool, 65536u);
  apply_option(c, "negative-pool", "67108864");
  EXPECT_EQ(c.negative_pool, 67108864u);
  apply_option(c, "negative-pool", "0");
  EXPECT_EQ(c.negative_pool, 0u);
  // Whole blocks of 4096 words, rounded up.
  const std::pair<const char*, uint64_t> words[] = {
      {"4096", 4096}, {"4097", 8192}, {"5000", 8192}, {"1048576", 1048576}, {"1000000", 1003520}};
  for (const auto& [text, rounded] : words) {
    apply_option(c, "batch-words", text);
    EXPECT_EQ(c.batch_words, rounded) << text;
    EXPECT_EQ(option_value(c, "batch-words"), std::to_string(rounded));
  }
}

TEST(Config, DeterministicIsOneThreadOrOneWarp) {
  Config c;
  c.corpus = "x.txt";
  c.output = "out";
  EXPECT_FALSE(c.deterministic);
  EXPECT_FALSE(c.gpu_options().deterministic);
  EXPECT_EQ(option_value(c, "deterministic"), "false");
  apply_option(c, "deterministic", "true");
  EXPECT_TRUE(c.deterministic);
  EXPECT_TRUE(c.gpu_options().deterministic);
  EXPECT_EQ(c.effective_threads(), 1u);
  EXPECT_EQ(option_value(c, "deterministic"), "true");
  EXPECT_NO_THROW(validate(c));
  apply_option(c, "threads", "1");
  EXPECT_NO_THROW(validate(c));
  // More threads than one contradict it, whether a number or every core.
  for (const char* threads : {"4", "all"}) {
    apply_option(c, "threads", threads);
    EXPECT_EQ(c.effective_threads(), 1u) << threads;
    try {
      validate(c);
      ADD_FAILURE() << "--threads " << threads << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--deterministic"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--threads " + std::string(threads)), std::string::npos)
          << e.what();
    }
  }
  apply_option(c, "deterministic", "false");
  EXPECT_NO_THROW(validate(c));
  EXPECT_FALSE(c.gpu_options().deterministic);
  // It says how a run goes, not what it learns: a resumed run may change it.
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == "deterministic") {
      EXPECT_TRUE(spec.is_flag);
      EXPECT_FALSE(spec.is_model);
    }
  }
}

// How CPU ranks hold the tables: replicated copies train sgd only, and a resumed run may
// choose again (a checkpoint is the same whichever way its ranks held the tables).
TEST(Config, RankTablesAndTheOptimizersReplicasTrain) {
  Config c;
  c.corpus = "x.txt";
  c.output = "out";
  EXPECT_EQ(c.rank_tables, RankTables::kAuto);
  EXPECT_EQ(option_value(c, "rank-tables"), "auto");
  apply_option(c, "rank-tables", "sharded");
  EXPECT_EQ(c.rank_tables, RankTables::kSharded);
  apply_option(c, "rank-tables", "replicated");
  EXPECT_EQ(c.rank_tables, RankTables::kReplicated);
  EXPECT_EQ(option_value(c, "rank-tables"), "replicated");
  EXPECT_NO_THROW(validate(c));
  apply_option(c, "optimizer", "adam");
  try {
    validate(c);
    ADD_FAILURE() << "--rank-tables replicated with adam accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--rank-tables replicated trains sgd"), std::string::npos)
        << e.what();
  }
  apply_option(c, "rank-tables", "sharded");
  EXPECT_NO_THROW(validate(c));
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == "rank-tables") {
      EXPECT_FALSE(spec.is_model);
    }
  }
}

/// The message validate(c) throws as a UsageError ("" when it accepts c).
std::string usage_error(const Config& c) {
  try {
    validate(c);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// --hs: hierarchical softmax, a model setting; --negative 0 only beside it; any device.
TEST(Config, HierarchicalSoftmaxAndNegativeZero) {
  Config c;
  c.corpus = "x.txt";
  c.output = "out";
  EXPECT_FALSE(c.hs);
  EXPECT_EQ(option_value(c, "hs"), "false");
  apply_option(c, "negative", "0");
  EXPECT_NE(usage_error(c).find("--negative 0 leaves nothing to train"), std::string::npos)
      << usage_error(c);
  apply_option(c, "hs", "true");
  EXPECT_TRUE(c.hs);
  EXPECT_EQ(option_value(c, "hs"), "true");
  EXPECT_EQ(usage_error(c), "");
  // Both backends train it, alone and beside negative sampling.
  apply_option(c, "device", "cuda");
  EXPECT_EQ(usage_error(c), "");
  apply_option(c, "negative", "5");
  EXPECT_EQ(usage_error(c), "");
  apply_option(c, "negative", "0");
  apply_option(c, "device", "auto");
  EXPECT_EQ(usage_error(c), "");
  TrainingSet set = make_training_set(std::string("a b c a b a\nc a b\n"), [] {
    Config m;
    m.min_count = 1;
    m.hs = true;
    return m;
  }());
  EXPECT_EQ(set.tree.words(), 3u);
  Config d;
  d.hs = true;
  d.negative = 0;
  const TrainData data = set.train_data(d);
  EXPECT_TRUE(data.params.hs);
  EXPECT_EQ(data.params.negative, 0u);
  EXPECT_EQ(data.tree, &set.tree);
  for (const OptionSpec& spec : train_options()) {
    if (spec.name == "hs") {
      EXPECT_TRUE(spec.is_flag);
      EXPECT_TRUE(spec.is_model);
    }
  }
}

TEST(Config, WhatACheckpointFixes) {
  std::map<std::string, bool> model;
  for (const OptionSpec& spec : train_options()) model[spec.name] = spec.is_model;
  ASSERT_EQ(model.count("negative-pool"), 1u);
  ASSERT_EQ(model.count("batch-words"), 1u);
  ASSERT_EQ(model.count("placement"), 1u);
  ASSERT_EQ(model.count("gpu-memory"), 1u);
  EXPECT_TRUE(model["negative-pool"]);
  EXPECT_TRUE(model["batch-words"]);
  EXPECT_FALSE(model["placement"]);
  EXPECT_FALSE(model["gpu-memory"]);
}

// --phrases and its settings: fixed by a checkpoint (they make the corpus the run trained on),
// given only with --phrases, and learned or read but not both.
TEST(Config, PhraseSettings) {
  Config c;
  c.corpus = "x.txt";
  c.output = "out";
  EXPECT_EQ(option_value(c, "phrases"), "0");
  EXPECT_EQ(option_value(c, "phrase-threshold"), "100");
  EXPECT_EQ(option_value(c, "phrase-min-count"), "5");
  for (const OptionSpec& spec : train_options()) {
    if (spec.name.rfind("phrase", 0) == 0) {
      EXPECT_TRUE(spec.is_model) << spec.name;
    }
  }
  auto refused = [&](const Config& config, const std::string& fragment) {
    try {
      validate(config);
      ADD_FAILURE() << "accepted; expected '" << fragment << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  Config t = c;
  apply_option(t, "phrase-threshold", "50");
  t.given.insert("phrase-threshold");
  refused(t, "--phrase-threshold applies to --phrases");
  apply_option(t, "phrases", "2");
  EXPECT_NO_THROW(validate(t));
  EXPECT_EQ(t.phrases, 2u);
  EXPECT_EQ(t.phrase_threshold, 50.0);
  apply_option(t, "phrases-from", "p.tsv");
  refused(t, "give one");
  EXPECT_THROW(apply_option(c, "phrases", "17"), UsageError);
  EXPECT_THROW(apply_option(c, "phrase-min-count", "0"), UsageError);
  EXPECT_THROW(apply_option(c, "phrase-threshold", "-1"), UsageError);
}

TEST(Config, TrainDataCarriesPoolAndSuperBatch) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "w" + std::to_string(i % 37) + (i % 10 == 9 ? "\n" : " ");
  Config c;
  c.min_count = 1;
  const TrainingSet set = make_training_set(text, c);
  TrainParams p = set.train_data(c).params;
  EXPECT_EQ(p.negative_pool, 0u);
  EXPECT_EQ(p.batch_blocks, 256u);
  apply_option(c, "negative-pool", "16");
  apply_option(c, "batch-words", "12289");
  p = set.train_data(c).params;
  EXPECT_EQ(p.negative_pool, 16u);
  EXPECT_EQ(p.batch_blocks, 4u);
  // Set in code, not rounded by the option: the blocks still cover every word.
  c.batch_words = 4097;
  EXPECT_EQ(set.train_data(c).params.batch_blocks, 2u);
  c.batch_words = 4096;
  EXPECT_EQ(set.train_data(c).params.batch_blocks, 1u);
}

TEST(Config, TomlSetsOptionsAndFlagsWin) {
  if (!toml_configs_supported()) PAGEDW2V_SKIP_WITHOUT("built without toml++");
  TempDir dir;
  write_file(dir.file("c.toml"),
             "# a config\nmodel = \"cbow\"\ndim = 200\nwindow = 8\nsample = 1e-4\n"
             "min_count = 3\nformat = [\"npy\", \"bin\"]\nquiet = true\ndeterministic = true\n");
  Config c;
  apply_toml_file(c, dir.file("c.toml"));
  EXPECT_EQ(c.model, ModelKind::kCbow);
  EXPECT_EQ(c.dim, 200u);
  EXPECT_EQ(c.window, 8u);
  EXPECT_DOUBLE_EQ(c.sample, 1e-4);
  EXPECT_EQ(c.min_count, 3u);
  EXPECT_EQ(c.formats, (std::vector<std::string>{"npy", "bin"}));
  EXPECT_TRUE(c.quiet);
  EXPECT_TRUE(c.deterministic);
  // The command line is applied after the file, as `pagedw2v train` does.
  apply_option(c, "dim", "50");
  EXPECT_EQ(c.dim, 50u);
  EXPECT_EQ(c.window, 8u);
}

TEST(Config, TomlSetsPlacementAndPool) {
  if (!toml_configs_supported()) PAGEDW2V_SKIP_WITHOUT("built without toml++");
  TempDir dir;
  write_file(dir.file("c.toml"),
             "placement = \"paged\"\ngpu_memory = \"1.5GiB\"\nnegative_pool = 65536\n"
             "batch-words = 65536\n");
  Config c;
  apply_toml_file(c, dir.file("c.toml"));
  EXPECT_EQ(c.placement, Placement::kPaged);
  EXPECT_EQ(c.gpu_memory, uint64_t{3} << 29);
  EXPECT_EQ(c.negative_pool, 65536u);
  EXPECT_EQ(c.batch_words, 65536u);
  write_file(dir.file("bytes.toml"), "gpu-memory = 2000000000\n");
  apply_toml_file(c, dir.file("bytes.toml"));
  EXPECT_EQ(c.gpu_memory, 2000000000u);
  write_file(dir.file("bad.toml"), "gpu-memory = \"lots\"\n");
  try {
    apply_toml_file(c, dir.file("bad.toml"));
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--gpu-memory"), std::string::npos) << e.what();
  }
}

TEST(Config, TomlErrorsNameTheFile) {
  TempDir dir;
  write_file(dir.file("bad.toml"), "dim = \n");
  write_file(dir.file("unknown.toml"), "dimension = 3\n");
  write_file(dir.file("value.toml"), "dim = -4\n");
  for (const char* f : {"bad.toml", "unknown.toml", "value.toml", "missing.toml"}) {
    Config c;
    try {
      apply_toml_file(c, dir.file(f));
      ADD_FAILURE() << f << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

TEST(Config, ShippedConfigsParse) {
  if (!toml_configs_supported()) PAGEDW2V_SKIP_WITHOUT("built without toml++");
  Config d;
  apply_toml_file(d, std::string(PAGEDW2V_SOURCE_DIR) + "/configs/default.toml");
  EXPECT_EQ(d.dim, 100u);
  EXPECT_EQ(d.negative, 5u);
  EXPECT_EQ(d.negative_pool, 0u);
  EXPECT_EQ(d.batch_words, uint64_t{1} << 20);
  Config t;
  apply_toml_file(t, std::string(PAGEDW2V_SOURCE_DIR) + "/configs/text8-like.toml");
  EXPECT_EQ(t.dim, 200u);
  EXPECT_EQ(t.window, 8u);
  EXPECT_EQ(t.negative, 25u);
  EXPECT_DOUBLE_EQ(t.sample, 1e-4);
  EXPECT_EQ(t.epochs, 15u);
}

TEST(Config, ValidateNeedsCorpusAndOutput) {
  Config c;
  EXPECT_THROW(validate(c), UsageError);
  c.corpus = "x.txt";
  EXPECT_THROW(validate(c), UsageError);
  c.output = "out";
  EXPECT_NO_THROW(validate(c));
}

// Hierarchical softmax follows each word's own path: it goes with neither a window's shared
// negatives nor a grown vocabulary (whose tree, and so every inner node's row, changes).
TEST(Config, HierarchicalSoftmaxRefusesSharedNegativesAndContinuing) {
  Config c;
  c.corpus = "c.txt";
  c.output = "out";
  apply_option(c, "hs", "true");
  apply_option(c, "device", "cpu");
  EXPECT_NO_THROW(validate(c));
  Config shared = c;
  apply_option(shared, "kernel", "shared-negatives");
  testing_util::expect_error_naming<UsageError>([&] { validate(shared); }, "hierarchical softmax");
  Config grown = c;
  apply_option(grown, "continue-from", "run1");
  testing_util::expect_error_naming<UsageError>([&] { validate(grown); },
                                                "cannot grow a run with --hs");
}

TEST(Config, PagedPlacementRefusesOnlyAGivenPoolOfZero) {
  Config c;
  c.corpus = "x.txt";
  c.output = "out";
  apply_option(c, "placement", "paged");
  // Left out, the plan chooses the pool of a paged run.
  EXPECT_NO_THROW(validate(c));
  apply_option(c, "device", "cuda");
  EXPECT_NO_THROW(validate(c));
  // Given as 0 (per-example draws), it cannot page: one line says so and what to do.
  apply_option(c, "negative-pool", "0");
  try {
    validate(c);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--placement paged with --negative-pool 0 needs --negative-pool N", 0), 0u)
        << m;
    EXPECT_NE(m.find("leave --negative-pool out"), std::string::npos) << m;
  }
  apply_option(c, "device", "auto");
  EXPECT_THROW(validate(c), UsageError);
  apply_option(c, "negative-pool", "65536");
  EXPECT_NO_THROW(validate(c));
  // The CPU backend has no placement to respect.
  apply_option(c, "negative-pool", "0");
  apply_option(c, "device", "cpu");
  EXPECT_NO_THROW(validate(c));
  apply_option(c, "device", "auto");
  apply_option(c, "placement", "resident");
  EXPECT_NO_THROW(validate(c));
}

}  // namespace
}  // namespace pagedw2v
