// Replays every input kept under tests/fuzz/regressions/ (the fuzzers' seeds and the inputs that
// once broke the corpus reader or the checkpoint loader) through the code the fuzz targets run.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_inputs.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::TempDir;

std::filesystem::path regressions(const std::string& kind) {
  return std::filesystem::path(PAGEDW2V_SOURCE_DIR) / "tests/fuzz/regressions" / kind;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

/// A test name from a file name: letters and digits kept, the rest '_'.
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = file_name(info.param);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class CorpusInput : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusInput, KeepsTheReaderInvariants) {
  EXPECT_NO_THROW(fuzz::corpus_input(read_file(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(FuzzRegressions, CorpusInput,
                         ::testing::ValuesIn(fuzz::regression_inputs(regressions("corpus"))),
                         test_name);

class CheckpointInput : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckpointInput, LoadsOrIsRefusedWithAnError) {
  TempDir dir;
  EXPECT_NO_THROW(fuzz::checkpoint_input(read_file(GetParam()), dir.file("scratch.h5")));
}

INSTANTIATE_TEST_SUITE_P(FuzzRegressions, CheckpointInput,
                         ::testing::ValuesIn(fuzz::regression_inputs(regressions("checkpoint"))),
                         test_name);

// The seed checkpoint was written by the binary. It must stay loadable, so that the fuzzer starts
// from a file that reaches past the format checks; rewrite it when the format changes.
TEST(FuzzRegressions, SeedCheckpointLoads) {
  const Checkpoint ck = load_checkpoint((regressions("checkpoint") / "seed-small.h5").string());
  EXPECT_GT(ck.vocab.size(), 0u);
}

}  // namespace
}  // namespace pagedw2v
