#include <gtest/gtest.h>

#include <string>

#include "config.hpp"
#include "error.hpp"
#include "test_util.hpp"

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
                                                     {"negative", "0"},
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
                                                     {"seed", "-1"},
                                                     {"max-vocab", "-5"}};
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

TEST(Config, TomlSetsOptionsAndFlagsWin) {
  if (!toml_configs_supported()) GTEST_SKIP() << "built without toml++";
  TempDir dir;
  write_file(dir.file("c.toml"),
             "# a config\nmodel = \"cbow\"\ndim = 200\nwindow = 8\nsample = 1e-4\n"
             "min_count = 3\nformat = [\"npy\", \"bin\"]\nquiet = true\n");
  Config c;
  apply_toml_file(c, dir.file("c.toml"));
  EXPECT_EQ(c.model, ModelKind::kCbow);
  EXPECT_EQ(c.dim, 200u);
  EXPECT_EQ(c.window, 8u);
  EXPECT_DOUBLE_EQ(c.sample, 1e-4);
  EXPECT_EQ(c.min_count, 3u);
  EXPECT_EQ(c.formats, (std::vector<std::string>{"npy", "bin"}));
  EXPECT_TRUE(c.quiet);
  // The command line is applied after the file, as `pagedw2v train` does.
  apply_option(c, "dim", "50");
  EXPECT_EQ(c.dim, 50u);
  EXPECT_EQ(c.window, 8u);
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
  if (!toml_configs_supported()) GTEST_SKIP() << "built without toml++";
  Config d;
  apply_toml_file(d, std::string(PAGEDW2V_SOURCE_DIR) + "/configs/default.toml");
  EXPECT_EQ(d.dim, 100u);
  EXPECT_EQ(d.negative, 5u);
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

}  // namespace
}  // namespace pagedw2v
