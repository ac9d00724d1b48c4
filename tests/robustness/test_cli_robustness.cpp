// The real pagedw2v binary on bad input and under faults. Every failure must be one line on
// stderr that starts with "pagedw2v:", the documented exit code (2 usage, 1 runtime, 128 + signal
// when stopped), no death by a signal, no "terminate called", no sanitizer report, and no
// half-written export or temporary file left behind.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "../fuzz/fuzz_inputs.hpp"
#include "../test_util.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::exists;
using testing_util::fails_cleanly;
using testing_util::freeze;
using testing_util::fresh_seed;
using testing_util::Process;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::wait_until;
using testing_util::with;
using testing_util::write_file;
using Args = std::vector<std::string>;
using Outcome = testing_util::RunResult;

// ---------------------------------------------------------------------------------------------
// Running the binary (run_binary.hpp)

/// Runs the binary to its end. With `max_file_bytes` >= 0 the child may not write larger files
/// (RLIMIT_FSIZE, SIGXFSZ ignored), so a write past the limit fails with EFBIG as on a full disk.
Outcome run(const TempDir& dir, const Args& args, long max_file_bytes = -1) {
  testing_util::ProcessOptions options;
  options.max_file_bytes = max_file_bytes;
  Process p(args, dir.path(), options);
  return p.wait();
}

// ---------------------------------------------------------------------------------------------
// What a run must look like

/// Exit 0 and, as every run here is --quiet, nothing on stderr.
::testing::AssertionResult succeeds(const Outcome& r) {
  if (r.timed_out || !r.exited || r.code != 0 || !r.err.empty()) {
    return ::testing::AssertionFailure() << describe(r);
  }
  return ::testing::AssertionSuccess();
}

/// No export file (vectors.*, context_vectors.*, embeddings.h5) and no temporary file anywhere
/// under `dir`.
::testing::AssertionResult no_partial_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return ::testing::AssertionSuccess();
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("vectors.", 0) == 0 || name.rfind("context_vectors.", 0) == 0 ||
        name == "embeddings.h5" || name.find(".tmp-") != std::string::npos) {
      return ::testing::AssertionFailure() << "left behind: " << entry.path().string();
    }
  }
  return ::testing::AssertionSuccess();
}

int64_t int_attribute(const std::string& h5_path, const std::string& name) {
  for (const Attribute& a : read_attributes_h5(h5_path)) {
    if (a.name == name && std::holds_alternative<int64_t>(a.value)) {
      return std::get<int64_t>(a.value);
    }
  }
  ADD_FAILURE() << h5_path << " has no integer attribute " << name;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Corpora

/// Exactly `tokens` words over "w0".."w{distinct-1}", Zipfian, 5 to 30 words a line.
std::string zipf_corpus(uint64_t tokens, uint32_t distinct, uint64_t seed) {
  return testing_util::zipf_text(tokens, distinct, seed, 5, 30);
}

/// Options that keep training runs small and silent.
Args small_run(const std::string& corpus, const std::string& output) {
  return {"train", "--corpus",    corpus, "--output",  output, "--quiet",  "--dim", "4", "--epochs",
          "1",     "--min-count", "1",    "--threads", "2",    "--format", "npy"};
}

// ---------------------------------------------------------------------------------------------
// Bad corpora

TEST(BadCorpus, MissingFile) {
  TempDir dir;
  const Outcome r = run(dir, small_run(dir.file("missing.txt"), dir.file("out")));
  EXPECT_TRUE(fails_cleanly(r, 1, "cannot open"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

TEST(BadCorpus, MissingFileWithANewlineInItsName) {
  TempDir dir;
  const Outcome r = run(dir, small_run(dir.file("two\nlines.txt"), dir.file("out")));
  EXPECT_TRUE(fails_cleanly(r, 1, "cannot open"));
}

TEST(BadCorpus, EmptyFile) {
  TempDir dir;
  write_file(dir.file("c.txt"), "");
  const Outcome r = run(dir, small_run(dir.file("c.txt"), dir.file("out")));
  EXPECT_TRUE(fails_cleanly(r, 1, "holds no words"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

TEST(BadCorpus, OnlyWhitespace) {
  TempDir dir;
  write_file(dir.file("c.txt"), " \n\t\r\n\v\f  \n\n");
  const Outcome r = run(dir, small_run(dir.file("c.txt"), dir.file("out")));
  EXPECT_TRUE(fails_cleanly(r, 1, "holds no words"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

TEST(BadCorpus, NoWordReachesMinCount) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(2000, 5000, fresh_seed()));
  const Outcome r =
      run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "min-count", "1000"));
  EXPECT_TRUE(fails_cleanly(r, 1, "lower --min-count"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

TEST(BadCorpus, FifoWithoutWriterDeviceAndFilelessDirectoryHoldNothing) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("d").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo(dir.file("d/fifo").c_str(), 0644), 0);
  // A FIFO or a device is read as a stream: with no writer, or /dev/null, it is empty. The
  // directory holds only the FIFO, which is no corpus file.
  for (const std::string& corpus : {dir.file("d/fifo"), std::string("/dev/null")}) {
    const Outcome r = run(dir, small_run(corpus, dir.file("out")));
    EXPECT_TRUE(fails_cleanly(r, 1, "holds no words"));
  }
  EXPECT_TRUE(fails_cleanly(run(dir, small_run(dir.file("d"), dir.file("out"))), 1,
                            "holds no corpus files"));
  EXPECT_TRUE(fails_cleanly(run(dir, small_run("/dev/zero", dir.file("out"))), 1, "binary"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

/// Trains on `corpus` (2 epochs; every such corpus has words), then checks that the checkpoint
/// reads back: export from it gives the trained vectors, and resume from the first epoch
/// succeeds.
void expect_trains_and_round_trips(const TempDir& dir, const std::string& corpus) {
  const Outcome r = run(dir, with(small_run(corpus, dir.file("out")), "epochs", "2"));
  ASSERT_TRUE(succeeds(r));
  EXPECT_TRUE(exists(dir.file("out/vectors.npy")));
  EXPECT_TRUE(succeeds(run(dir, {"export", "--checkpoint", dir.file("out/checkpoints/latest.h5"),
                                 "--output", dir.file("exported"), "--format", "npy,h5,bin,txt"})));
  // The last checkpoint holds the tables the run exported, so the bytes are the same.
  const std::string trained = read_file(dir.file("out/vectors.npy"));
  EXPECT_GT(trained.size(), 128u);
  EXPECT_TRUE(trained == read_file(dir.file("exported/vectors.npy")))
      << "exported vectors differ from the trained ones";
  EXPECT_TRUE(succeeds(run(dir, {"train", "--resume", dir.file("out/checkpoints/epoch-1.h5"),
                                 "--output", dir.file("resumed"), "--quiet", "--format", "txt"})));
  EXPECT_EQ(read_file(dir.file("out/vocab.tsv")), read_file(dir.file("exported/vocab.tsv")));
}

TEST(BadCorpus, OneMegabyteOfRandomBytesIsRefusedAsBinary) {
  TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  std::string bytes(1 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  write_file(dir.file("c.bin"), bytes);
  EXPECT_TRUE(fails_cleanly(run(dir, small_run(dir.file("c.bin"), dir.file("out"))), 1, "binary"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

TEST(BadCorpus, RandomBytesAmongTextTrainAndRoundTrip) {
  TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  std::string bytes;
  while (bytes.size() < (1 << 20)) {
    bytes += rng() % 8 == 0 ? std::string(1, static_cast<char>(rng())) : "word ";
    if (rng() % 64 == 0) bytes += "\n";
  }
  write_file(dir.file("c.txt"), bytes);
  expect_trains_and_round_trips(dir, dir.file("c.txt"));
}

TEST(BadCorpus, NulBytesSeparateWords) {
  TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  const std::string pieces[] = {std::string("a\0b", 3),   std::string("\0", 1),  "a",
                                std::string("c\0\0d", 4), std::string("e\0", 2), "b"};
  // Scattered among ordinary words: a text with many NUL bytes is refused as binary (UTF-16).
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += (i % 8 == 0 ? pieces[rng() % 6] : "word") + (i % 12 == 11 ? "\n" : " ");
  }
  write_file(dir.file("c.txt"), text);
  expect_trains_and_round_trips(dir, dir.file("c.txt"));
  const std::string vocab = read_file(dir.file("out/vocab.tsv"));
  EXPECT_EQ(vocab.find('\0'), std::string::npos);
  for (const char* word : {"a\t", "b\t", "c\t", "d\t", "e\t"}) {
    EXPECT_NE(vocab.find(word), std::string::npos) << word;
  }
}

TEST(BadCorpus, InvalidUtf8IsRepaired) {
  TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  // A lone byte 0xff, an overlong '/', a lone continuation byte, a surrogate, a code point past
  // U+10FFFF, a sequence cut short and Latin-1; each with Python's
  // bytes.decode("utf-8", "replace") of it.
  const std::string r = "\xef\xbf\xbd";  // U+FFFD
  const std::pair<std::string, std::string> pieces[] = {
      {"\xff\xfe", r + r},    {"a\xc0\xaf", "a" + r + r},   {"b\x80", "b" + r},
      {"ok", "ok"},           {"\xed\xa0\x80", r + r + r},  {"\xf4\x90\x80\x80", r + r + r + r},
      {"caf\xc3", "caf" + r}, {"na\xefve", "na" + r + "ve"}};
  std::string text;
  for (int i = 0; i < 20000; ++i) text += pieces[rng() % 8].first + (i % 12 == 11 ? "\n" : " ");
  write_file(dir.file("c.txt"), text);
  expect_trains_and_round_trips(dir, dir.file("c.txt"));
  const std::string vectors = read_file(dir.file("exported/vectors.txt"));
  for (const auto& [raw, repaired] : pieces) {
    EXPECT_NE(vectors.find("\n" + repaired + " "), std::string::npos) << repaired;
  }
}

TEST(BadCorpus, SingleFiftyMegabyteLine) {
  TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  std::string line;
  line.reserve(50u << 20);
  uint64_t tokens = 0;
  while (line.size() < (50u << 20)) {
    line += "x" + std::to_string(rng() % 50) + " ";
    ++tokens;
  }
  write_file(dir.file("c.txt"), line);
  line = {};
  // Heavy subsampling of the 50 distinct words keeps the training short; the reader, counter and
  // encoder still go through every byte.
  const Outcome r =
      run(dir, {"train",     "--corpus", dir.file("c.txt"), "--output", dir.file("out"), "--quiet",
                "--dim",     "2",        "--epochs",        "1",        "--min-count",   "1",
                "--sample",  "1e-5",     "--window",        "1",        "--negative",    "1",
                "--threads", "2",        "--format",        "npy"});
  ASSERT_TRUE(succeeds(r));
  EXPECT_EQ(int_attribute(dir.file("out/checkpoints/epoch-1.h5"), "words_done"),
            static_cast<int64_t>(tokens));
}

TEST(BadCorpus, SingleFiftyMegabyteWord) {
  TempDir dir;
  // A second word, kept by --sample 0, gives the run an example to train: a run that trains
  // nothing fails.
  write_file(dir.file("c.txt"), std::string(50u << 20, 'q') + " r r");
  ASSERT_TRUE(
      succeeds(run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "sample", "0"))));
  EXPECT_EQ(read_file(dir.file("out/vocab.tsv")), "r\t2\n" + std::string(100, 'q') + "\t1\n");
}

// ---------------------------------------------------------------------------------------------
// Numeric flags at 0, negative, not a number, and absurdly large

struct FlagCase {
  std::string name;  ///< test name
  std::string flag;
  std::string value;
  int code;            ///< expected exit status
  std::string needle;  ///< expected in the message (failures only)
  Args extra = {};     ///< more options for this case
  /// What run.json records for the flag when it trains (settings.<flag>); empty: `value`.
  std::string recorded = {};
};

std::ostream& operator<<(std::ostream& os, const FlagCase& c) {
  return os << "--" << c.flag << " " << c.value;
}

std::vector<FlagCase> train_flag_cases() {
  const std::string kOverflow = "99999999999999999999999";
  // flag, accepts 0?, is a floating-point number?
  const std::vector<std::tuple<std::string, bool, bool>> flags = {
      {"dim", false, false},
      {"window", false, false},
      {"negative", false, false},
      {"sample", true, true},
      {"min-count", false, false},
      {"max-vocab", true, false},
      {"alpha", false, true},
      {"epochs", false, false},
      {"threads", false, false},
      {"seed", true, false},
      {"checkpoint-interval", true, false},
      {"keep-checkpoints", true, false},
      {"negative-pool", true, false},
      {"batch-words", false, false},
      {"gpu-memory", true, false}};
  std::vector<FlagCase> cases;
  for (const auto& [flag, zero_ok, is_real] : flags) {
    std::string id = flag;
    std::replace(id.begin(), id.end(), '-', '_');
    // --gpu-memory 0 means "auto", and run.json says so.
    cases.push_back({id + "_zero",
                     flag,
                     "0",
                     zero_ok ? 0 : 2,
                     "--" + flag,
                     {},
                     flag == "gpu-memory" ? "auto" : ""});
    cases.push_back({id + "_negative", flag, "-1", 2, "--" + flag});
    cases.push_back({id + "_not_a_number", flag, "abc", 2, "--" + flag});
    cases.push_back({id + "_empty", flag, "", 2, "--" + flag});
    cases.push_back({id + "_overflow", flag, is_real ? "1e400" : kOverflow, 2, "--" + flag});
    cases.push_back({id + "_missing", flag, "<none>", 2, flag});
    if (!is_real) cases.push_back({id + "_fraction", flag, "1.5", 2, "--" + flag});
  }
  // The largest values accepted, and one past them.
  const std::vector<FlagCase> large = {
      {"dim_huge_fails_on_memory", "dim", "100000000", 1, "lower --dim"},
      {"dim_largest_fails_on_memory", "dim", "1073741824", 1, "lower --dim"},
      {"window_largest", "window", "1000", 0, ""},
      {"window_too_large", "window", "1001", 2, "--window"},
      // No subsampling: the 50 words kept are too frequent in what is left of the text, and
      // subsampling could leave no sentence with two of them.
      {"negative_largest", "negative", "1000", 0, "", {"--max-vocab", "50", "--sample", "0"}},
      {"negative_too_large", "negative", "1001", 2, "--negative"},
      {"sample_largest", "sample", "1", 0, ""},
      {"sample_too_large", "sample", "1.5", 2, "--sample"},
      {"sample_nan", "sample", "nan", 2, "--sample"},
      {"min_count_largest", "min-count", "18446744073709551615", 1, "lower --min-count"},
      {"max_vocab_largest", "max-vocab", "4294967294", 0, ""},
      {"max_vocab_too_large", "max-vocab", "4294967295", 2, "--max-vocab"},
      {"alpha_too_large", "alpha", "11", 2, "--alpha"},
      {"alpha_infinite", "alpha", "inf", 2, "--alpha"},
      {"epochs_too_large", "epochs", "100001", 2, "--epochs"},
      {"threads_largest", "threads", "4096", 0, ""},
      {"threads_too_large", "threads", "4097", 2, "--threads"},
      {"seed_largest", "seed", "18446744073709551615", 0, ""},
      {"seed_too_large", "seed", "18446744073709551616", 2, "--seed"},
      {"checkpoint_interval_largest", "checkpoint-interval", "1073741824", 0, ""},
      {"checkpoint_interval_too_large", "checkpoint-interval", "1073741825", 2,
       "--checkpoint-interval"},
      {"keep_checkpoints_largest", "keep-checkpoints", "1000000", 0, ""},
      {"keep_checkpoints_too_large", "keep-checkpoints", "1000001", 2, "--keep-checkpoints"},
      {"negative_pool_some", "negative-pool", "65536", 0, ""},
      {"negative_pool_too_large", "negative-pool", "67108865", 2, "--negative-pool"},
      {"batch_words_smallest", "batch-words", "4096", 0, ""},
      {"batch_words_too_small", "batch-words", "4095", 2, "--batch-words"},
      {"batch_words_largest", "batch-words", "1099511627776", 0, ""},
      {"batch_words_too_large", "batch-words", "1099511627777", 2, "--batch-words"},
      {"gpu_memory_binary", "gpu-memory", "8GiB", 0, ""},
      {"gpu_memory_decimal", "gpu-memory", "1.5GB", 0, "", {}, "1500000000"},
      {"gpu_memory_auto", "gpu-memory", "auto", 0, ""},
      {"gpu_memory_bad_unit", "gpu-memory", "8XB", 2, "--gpu-memory"},
      {"gpu_memory_too_large", "gpu-memory", "16777216TiB", 2, "--gpu-memory"},
      {"placement_paged", "placement", "paged", 0, "", {"--negative-pool", "4096"}},
      {"placement_paged_without_pool", "placement", "paged", 0, ""},
      {"placement_paged_pool_zero",
       "placement",
       "paged",
       2,
       "--negative-pool",
       {"--negative-pool", "0"}},
      {"placement_paged_on_cpu", "placement", "paged", 0, "", {"--device", "cpu"}},
      {"placement_resident", "placement", "resident", 0, ""},
      {"placement_unknown", "placement", "host", 2, "--placement"},
      {"placement_empty", "placement", "", 2, "--placement"},
  };
  cases.insert(cases.end(), large.begin(), large.end());
  return cases;
}

class TrainFlag : public ::testing::TestWithParam<FlagCase> {};

/// A trained run's record (run.json), and the shape of its vectors.npy.
struct FlagRun {
  nlohmann::json record;
  uint64_t rows = 0;
  uint32_t cols = 0;
};

FlagRun flag_run(const std::string& out) {
  FlagRun t;
  t.record = nlohmann::json::parse(read_file(out + "/run.json"));
  const NpyMatrix vectors = read_npy(out + "/vectors.npy");
  t.rows = vectors.rows;
  t.cols = vectors.cols;
  return t;
}

/// The checkpoints of epochs (epoch-N.h5) in `dir`.
size_t epoch_checkpoints(const std::string& dir) {
  size_t n = 0;
  for (const std::string& name : testing_util::entries(dir)) n += name.rfind("epoch-", 0) == 0;
  return n;
}

/// A setting as run.json records it (a string, a number or a boolean), as text: numbers in the
/// form nlohmann::json writes them, booleans as true/false.
std::string setting_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

/// Whether run.json's `recorded` value is `given`: the same text, or the same number.
bool recorded_as(const nlohmann::json& recorded, const std::string& given) {
  const std::string text = setting_text(recorded);
  if (text == given) return true;
  if (!recorded.is_number()) return false;
  char* end = nullptr;
  const double want = std::strtod(given.c_str(), &end);
  return end != given.c_str() && *end == '\0' && recorded.get<double>() == want;
}

// A value that trains must reach the run: run.json records it as given (or in its canonical
// form), and what the flag governs shows in the files.
TEST_P(TrainFlag, FailsCleanlyOrTrains) {
  const FlagCase& c = GetParam();
  TempDir dir;
  // 20000 distinct words: --dim 100000000 then asks for 8 TB, more than any machine has.
  std::string text;
  std::mt19937_64 rng(fresh_seed());
  for (int i = 0; i < 40000; ++i) {
    text += "w" + std::to_string(rng() % 20000) + (i % 20 == 19 ? "\n" : " ");
  }
  write_file(dir.file("c.txt"), text);
  std::map<std::string, std::string> options = {
      {"dim", "4"}, {"epochs", "1"}, {"min-count", "1"}, {"threads", "2"}, {"format", "npy"}};
  options.erase(c.flag);
  Args args = {"train", "--corpus", dir.file("c.txt"), "--output", dir.file("out"), "--quiet"};
  for (const auto& [name, value] : options) {
    args.insert(args.end(), {"--" + name, value});
  }
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  args.push_back("--" + c.flag);
  if (c.value != "<none>") args.push_back(c.value);

  Outcome r = run(dir, args);
  if (c.code != 0) {
    EXPECT_TRUE(fails_cleanly(r, c.code, c.needle));
    EXPECT_TRUE(no_partial_files(dir.file("out")));
    return;
  }
  // More threads than cores trains, after one warning line.
  if (c.flag == "threads" && r.err.rfind("pagedw2v: warning: --threads", 0) == 0) {
    r.err = r.err.substr(r.err.find('\n') + 1);
  }
  ASSERT_TRUE(succeeds(r));
  const FlagRun t = flag_run(dir.file("out"));
  const nlohmann::json& settings = t.record.at("settings");
  const std::string want = c.recorded.empty() ? c.value : c.recorded;
  EXPECT_TRUE(recorded_as(settings.at(c.flag), want)) << settings.at(c.flag) << " for " << want;
  for (size_t k = 0; k + 1 < c.extra.size(); k += 2) {
    EXPECT_TRUE(recorded_as(settings.at(c.extra[k].substr(2)), c.extra[k + 1]))
        << c.extra[k] << ": " << settings.at(c.extra[k].substr(2));
  }
  // Every word of the vocabulary has its vector, of the dimension asked for.
  const uint64_t words = t.record.at("vocabulary").at("words").get<uint64_t>();
  EXPECT_EQ(t.rows, words);
  EXPECT_EQ(t.cols, 4u);
  EXPECT_EQ(t.record.at("words_trained").get<uint64_t>(),
            t.record.at("words_per_epoch").get<uint64_t>());
  // What the flag governs.
  const uint64_t distinct = t.record.at("vocabulary").at("distinct_words").get<uint64_t>();
  const std::string max_vocab = setting_text(settings.at("max-vocab"));
  if (max_vocab == "0" || std::stoull(max_vocab) >= distinct) {
    EXPECT_EQ(words, distinct);  // no cut
  } else {
    EXPECT_EQ(words, std::stoull(max_vocab));
  }
  if (c.flag == "threads") EXPECT_EQ(t.record.at("threads").get<uint64_t>(), std::stoull(c.value));
  if (c.flag == "keep-checkpoints") {
    EXPECT_EQ(epoch_checkpoints(dir.file("out/checkpoints")), c.value == "0" ? 0u : 1u);
  }
  if (c.flag == "placement" || c.flag == "gpu-memory" || c.flag == "negative-pool") {
    // No GPU here (the harness hides it): the CPU backend trains, whatever the GPU settings say.
    EXPECT_EQ(t.record.at("backend").get<std::string>(), "cpu");
  }
}

INSTANTIATE_TEST_SUITE_P(Robustness, TrainFlag, ::testing::ValuesIn(train_flag_cases()),
                         [](const ::testing::TestParamInfo<FlagCase>& info) {
                           return info.param.name;
                         });

// --alpha 10 on four dimensions makes the loss infinite within the first span: the run stops
// there with one line naming the flag to lower, and writes no vectors.
TEST(Diverging, LearningRateThatDivergesIsReported) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(100000, 5000, fresh_seed()));
  const Args args = with(small_run(dir.file("c.txt"), dir.file("out")), "format", "txt");
  const Outcome r = run(dir, with(args, "alpha", "10"));
  EXPECT_TRUE(fails_cleanly(r, 1, "training diverged"));
  EXPECT_TRUE(fails_cleanly(r, 1, "lower --alpha"));
  EXPECT_TRUE(no_partial_files(dir.file("out")));
}

/// A word2vec text file with three words, for the commands that read vectors.
std::string small_vectors(const TempDir& dir) {
  write_file(dir.file("v.txt"), "3 2\nw0 0.5 0.1\nw1 0.25 -0.5\nw2 -0.75 0.3\n");
  return dir.file("v.txt");
}

TEST(ReadFlag, NumbersOutOfRangeAreUsageErrors) {
  TempDir dir;
  const std::string vectors = small_vectors(dir);
  write_file(dir.file("q.txt"), ": s\nw0 w1 w2 w0\n");
  for (const char* value : {"0", "-1", "abc", "", "1.5", "4294967296", "99999999999999999999999"}) {
    SCOPED_TRACE(value);
    EXPECT_TRUE(fails_cleanly(run(dir, {"similar", "--vectors", vectors, "--top", value, "w0"}), 2,
                              "--top"));
    if (std::string(value) == "0") continue;  // --restrict 0: every word
    EXPECT_TRUE(fails_cleanly(run(dir, {"eval", "--vectors", vectors, "--analogies",
                                        dir.file("q.txt"), "--restrict", value}),
                              2, "--restrict"));
  }
  const Outcome r = run(dir, {"similar", "--vectors", vectors, "--top", "4294967295", "w0"});
  EXPECT_TRUE(succeeds(r));
}

// ---------------------------------------------------------------------------------------------
// Unknown flags and commands

TEST(Usage, UnknownFlagsAndCommands) {
  TempDir dir;
  write_file(dir.file("c.txt"), "a b c\n");
  const std::string c = dir.file("c.txt");
  const std::string o = dir.file("out");
  const std::string v = small_vectors(dir);
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"train", "--corpus", c, "--output", o, "--bogus"}, "bogus"},
      {{"train", "--corpus", c, "--output", o, "stray"}, "stray"},
      {{"train", "--corpus", c, "--output", o, "-z"}, "z"},
      {{"train", "--output", o}, "--corpus"},
      {{"train", "--corpus", c}, "--output"},
      {{"train", "--corpus", c, "--output", o, "--model", "lstm"}, "--model"},
      {{"train", "--corpus", c, "--output", o, "--device", "tpu"}, "--device"},
      {{"train", "--corpus", c, "--output", o, "--format", "csv"}, "--format"},
      {{"train", "--corpus", c, "--output", o, "--quiet", "maybe"}, "maybe"},
      {{"train", "--corpus", c, "--output", o, "--config", dir.file("missing.toml")},
       "missing.toml"},
      {{"export", "--bogus"}, "bogus"},
      {{"export", "--output", o}, "--checkpoint"},
      {{"export", "--checkpoint", c}, "--output"},
      {{"export", "--checkpoint", c, "--output", o, "--format", "csv"}, "--format"},
      {{"eval", "--bogus"}, "bogus"},
      {{"eval"}, "--vectors"},
      {{"similar", "--vectors", v, "--bogus", "w0"}, "bogus"},
      {{"similar"}, "--vectors"},
      {{"bench", "--bogus"}, "usage"},
  };
  for (const auto& [args, needle] : cases) {
    EXPECT_TRUE(fails_cleanly(run(dir, args), 2, needle));
  }
  EXPECT_TRUE(no_partial_files(o));
}

// `pagedw2v --help` and every command's --help print their help to stdout, nothing to stderr,
// and exit 0; the help names the command's own options.
TEST(Usage, EveryCommandHasHelp) {
  TempDir dir;
  const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
      {{"--help"}, {"train", "similar", "eval", "export", "bench", "--help"}},
      {{"help"}, {"train", "bench"}},
      {{"train", "--help"}, {"--corpus", "--optimizer", "--batch-words", "at least 4096"}},
      {{"train", "-h"}, {"--corpus"}},
      {{"similar", "--help"}, {"--vectors", "--top"}},
      {{"eval", "--help"}, {"--vectors", "--analogies", "--similarity"}},
      {{"export", "--help"}, {"--checkpoint", "--format"}},
      {{"bench", "--help"}, {"bench train", "bench transfer", "--help"}},
      {{"bench", "-h"}, {"bench train"}},
      {{"bench", "train", "--help"}, {"--synthetic", "--repeat", "--placement"}},
      {{"bench", "transfer", "--help"}, {"--rows", "--pin-method"}},
  };
  for (const auto& [args, needles] : cases) {
    const Outcome r = run(dir, args);
    EXPECT_TRUE(succeeds(r)) << describe(r);
    EXPECT_EQ(r.err, "") << describe(r);
    for (const std::string& needle : needles) {
      EXPECT_NE(r.out.find(needle), std::string::npos) << describe(r) << "\nno " << needle;
    }
  }
  // The train options that bench train leaves out are not offered there.
  const Outcome bench = run(dir, {"bench", "train", "--help"});
  for (const char* absent : {"--output", "--deterministic", "--save-context"}) {
    EXPECT_EQ(bench.out.find(absent), std::string::npos) << absent;
  }
}

// ---------------------------------------------------------------------------------------------
// bench train on a synthetic corpus

TEST(BenchSynthetic, TrainsEndToEndAndReports) {
  TempDir dir;
  const Outcome r =
      run(dir, {"bench", "train", "--synthetic", "20000,200000,1.0", "--device", "cpu", "--epochs",
                "1", "--threads", "2", "--negative-pool", "4096", "--batch-words", "65536"});
  ASSERT_TRUE(succeeds(r));
  EXPECT_NE(r.out.find("vocabulary 20000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("200000 words/epoch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("words_per_s="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("words=200000 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("placement=host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host memory: peak RSS"), std::string::npos) << r.out;
}

// bench train on a file reads it as train does (mapped, counted on the run's threads); --repeat N
// trains on N copies of its text, each ending its last line.
TEST(BenchCorpus, TrainsOnAFileAndOnItsRepeats) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "w" + std::to_string(i % 97) + (i % 50 == 49 ? "\n" : " ");
  text += "last words without a newline";
  write_file(dir.file("c.txt"), text);
  for (const char* repeat : {"1", "3"}) {
    SCOPED_TRACE(repeat);
    const Outcome r =
        run(dir, {"bench", "train", "--corpus", dir.file("c.txt"), "--repeat", repeat, "--device",
                  "cpu", "--epochs", "1", "--threads", "2", "--min-count", "1"});
    ASSERT_TRUE(succeeds(r)) << describe(r);
    const std::string words = std::to_string(3005 * std::stoi(repeat));
    EXPECT_NE(r.out.find(words + " words/epoch"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("vocabulary 102"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("words=" + words + " "), std::string::npos) << r.out;
  }
  EXPECT_TRUE(fails_cleanly(
      run(dir, {"bench", "train", "--corpus", dir.file("none.txt"), "--device", "cpu"}), 1,
      "none.txt"));
}

TEST(BenchSynthetic, BadSpecsAreUsageErrors) {
  TempDir dir;
  for (const char* spec : {"abc", "0,10,1", "10,0,1", "10,10,-1", "10,10", "10", "", "10,10,x",
                           "10,10,1,1", ",10,1", "10,,1"}) {
    SCOPED_TRACE(spec);
    EXPECT_TRUE(fails_cleanly(
        run(dir, {"bench", "train", "--synthetic", spec, "--device", "cpu", "--epochs", "1"}), 2,
        "--synthetic"));
  }
  EXPECT_TRUE(fails_cleanly(run(dir, {"bench", "train", "--device", "cpu", "--synthetic"}), 2,
                            "synthetic"));
  write_file(dir.file("c.txt"), "a b c\n");
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"bench", "train", "--device", "cpu"}, "--synthetic"},
      {{"bench", "train", "--synthetic", "10,10,1", "--corpus", dir.file("c.txt")}, "not both"},
      {{"bench", "train", "--synthetic", "10,10,1", "--repeat", "2"}, "--repeat"},
      {{"bench", "train", "--synthetic", "10,10,1", "--gpu-memory", "x"}, "--gpu-memory"},
      {{"bench", "train", "--synthetic", "10,10,1", "--placement", "host"}, "--placement"},
      {{"bench", "train", "--synthetic", "10,10,1", "--negative-pool", "-1"}, "--negative-pool"},
      {{"bench", "train", "--synthetic", "10,10,1", "--batch-words", "100"}, "--batch-words"},
  };
  for (const auto& [args, needle] : cases) {
    EXPECT_TRUE(fails_cleanly(run(dir, args), 2, needle));
  }
}

// ---------------------------------------------------------------------------------------------
// Bad files given to the other commands

TEST(BadFiles, CheckpointsThatAreNotCheckpoints) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(3000, 300, fresh_seed()));
  ASSERT_TRUE(succeeds(run(dir, small_run(dir.file("c.txt"), dir.file("run")))));
  const std::string good = read_file(dir.file("run/checkpoints/epoch-1.h5"));
  write_file(dir.file("truncated.h5"), good.substr(0, good.size() / 2));
  write_file(dir.file("empty.h5"), "");
  write_file(dir.file("text.h5"), "not a checkpoint\n");
  std::string flipped = good;
  for (size_t i = 0; i < flipped.size(); i += 97) flipped[i] = static_cast<char>(~flipped[i]);
  write_file(dir.file("flipped.h5"), flipped);
  for (const char* name : {"missing.h5", "truncated.h5", "empty.h5", "text.h5", "flipped.h5"}) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    EXPECT_TRUE(fails_cleanly(run(dir, {"export", "--checkpoint", path, "--output", dir.file("e")}),
                              1, name));
    EXPECT_TRUE(fails_cleanly(
        run(dir, {"train", "--resume", path, "--output", dir.file("r"), "--quiet"}), 1, name));
  }
  EXPECT_TRUE(fails_cleanly(
      run(dir, {"export", "--checkpoint", dir.path(), "--output", dir.file("e")}), 1));
  EXPECT_TRUE(no_partial_files(dir.file("e")));
  EXPECT_TRUE(no_partial_files(dir.file("r")));
}

TEST(BadFiles, VectorsAndQuestionsThatCannotBeRead) {
  TempDir dir;
  const std::string v = small_vectors(dir);
  write_file(dir.file("c.txt"), "not vectors\n");
  EXPECT_TRUE(fails_cleanly(run(dir, {"similar", "--vectors", dir.file("missing.npy"), "w0"}), 1,
                            "missing.npy"));
  EXPECT_TRUE(
      fails_cleanly(run(dir, {"similar", "--vectors", dir.file("c.txt"), "w0"}), 1, "c.txt"));
  EXPECT_TRUE(fails_cleanly(run(dir, {"similar", "--vectors", v, "nosuchword"}), 1, "nosuchword"));
  EXPECT_TRUE(
      fails_cleanly(run(dir, {"eval", "--vectors", v, "--analogies", dir.file("missing.txt")}), 1,
                    "missing.txt"));
  EXPECT_TRUE(
      fails_cleanly(run(dir, {"eval", "--vectors", v, "--similarity", dir.file("missing.tsv")}), 1,
                    "missing.tsv"));
}

/// The checkpoints kept by the checkpoint fuzzer (tests/fuzz/regressions/checkpoint/): the seed
/// exports; every damaged one is refused with one line.
class FuzzedCheckpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzedCheckpoint, ExportsOrIsRefusedWithOneLine) {
  const std::string name = std::filesystem::path(GetParam()).filename().string();
  TempDir dir;
  const Outcome exported = run(
      dir, {"export", "--checkpoint", GetParam(), "--output", dir.file("e"), "--format", "npy"});
  const Outcome resumed =
      run(dir, {"train", "--resume", GetParam(), "--output", dir.file("r"), "--quiet"});
  if (name.rfind("seed-", 0) == 0) {
    EXPECT_TRUE(succeeds(exported));
    // The seed finished its epochs: a resume must ask for more, before it looks for the corpus.
    EXPECT_TRUE(fails_cleanly(resumed, 2, "raise --epochs"));
    // Given more epochs, it looks for its corpus, which is not kept beside it.
    const Outcome longer = run(dir, {"train", "--resume", GetParam(), "--output", dir.file("r2"),
                                     "--epochs", "9", "--quiet"});
    EXPECT_TRUE(fails_cleanly(longer, 1, "corpus.txt"));
  } else {
    EXPECT_TRUE(fails_cleanly(exported, 1, name));
    EXPECT_TRUE(fails_cleanly(resumed, 1, name));
    EXPECT_TRUE(no_partial_files(dir.file("e")));
  }
  EXPECT_TRUE(no_partial_files(dir.file("r")));
}

INSTANTIATE_TEST_SUITE_P(
    Robustness, FuzzedCheckpoint,
    ::testing::ValuesIn(fuzz::regression_inputs(std::filesystem::path(PAGEDW2V_SOURCE_DIR) /
                                                "tests/fuzz/regressions/checkpoint")),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = std::filesystem::path(info.param).stem().string();
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// ---------------------------------------------------------------------------------------------
// Output that cannot be created or written

TEST(BadOutput, TrainOutputThatCannotBeCreated) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(3000, 300, fresh_seed()));
  const std::string c = dir.file("c.txt");
  // As root, permissions stop nothing: /proc refuses new entries to everyone.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.file("c.txt/sub"), "Not a directory"},
      {dir.file("c.txt"), "not a directory"},
      {"/proc/pagedw2v-test/out", "cannot create output directory"},
      {"/proc", "cannot create"},
  };
  for (const auto& [output, needle] : cases) {
    EXPECT_TRUE(fails_cleanly(run(dir, small_run(c, output)), 1, needle));
  }
  EXPECT_FALSE(exists("/proc/checkpoints"));
}

TEST(BadOutput, ExportOutputThatCannotBeCreated) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(3000, 300, fresh_seed()));
  ASSERT_TRUE(succeeds(run(dir, small_run(dir.file("c.txt"), dir.file("run")))));
  const std::string ck = dir.file("run/checkpoints/latest.h5");
  for (const std::string& output : {dir.file("c.txt/sub"), dir.file("c.txt"),
                                    std::string("/proc/pagedw2v-test"), std::string("/proc")}) {
    EXPECT_TRUE(
        fails_cleanly(run(dir, {"export", "--checkpoint", ck, "--output", output}), 1, output));
  }
}

/// A trained run whose export files are each larger than its vocab.tsv.
struct TrainedRun {
  TempDir dir;
  std::string checkpoint;
  long vocab_bytes = 0;

  TrainedRun() {
    write_file(dir.file("c.txt"), zipf_corpus(30000, 3000, fresh_seed()));
    EXPECT_TRUE(
        succeeds(run(dir, with(small_run(dir.file("c.txt"), dir.file("run")), "dim", "16"))));
    checkpoint = dir.file("run/checkpoints/latest.h5");
    vocab_bytes = static_cast<long>(read_file(dir.file("run/vocab.tsv")).size());
  }
};

class FullDiskExport : public ::testing::TestWithParam<std::string> {};

TEST_P(FullDiskExport, FailsCleanlyAndLeavesNothingHalfWritten) {
  const std::string format = GetParam();
  TrainedRun trained;
  const std::string out = trained.dir.file("export");
  // Too small for vocab.tsv, then room for vocab.tsv but not for the vectors.
  for (const long limit : {1024L, trained.vocab_bytes + 1024}) {
    SCOPED_TRACE("file size limit " + std::to_string(limit));
    const Outcome r = run(
        trained.dir,
        {"export", "--checkpoint", trained.checkpoint, "--output", out, "--format", format}, limit);
    EXPECT_TRUE(fails_cleanly(r, 1, "File too large"));
    EXPECT_TRUE(no_partial_files(out));
  }
  // The same export with room to spare succeeds.
  EXPECT_TRUE(succeeds(
      run(trained.dir,
          {"export", "--checkpoint", trained.checkpoint, "--output", out, "--format", format},
          64L << 20)));
}

INSTANTIATE_TEST_SUITE_P(Robustness, FullDiskExport, ::testing::Values("npy", "bin", "txt", "h5"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(FullDisk, TrainingStopsCleanlyWhenACheckpointCannotBeWritten) {
  TempDir dir;
  write_file(dir.file("c.txt"), zipf_corpus(30000, 3000, fresh_seed()));
  const Outcome r =
      run(dir, with(small_run(dir.file("c.txt"), dir.file("run")), "dim", "16"), 64 * 1024);
  EXPECT_TRUE(fails_cleanly(r, 1, "File too large"));
  EXPECT_TRUE(no_partial_files(dir.file("run")));
}

// ---------------------------------------------------------------------------------------------
// Signals and kill -9

/// A corpus of several spans per epoch (131,072 words each on one thread) and several epochs, so
/// that checkpoints mark moments with training still to do.
class Stop : public ::testing::Test {
 protected:
  // An epoch holds two spans of a one-thread run (131072 words each), so that a step
  // checkpoint can fall inside an epoch; three epochs leave one to train after the checkpoint of
  // epoch 2.
  static constexpr uint64_t kTokens = 200000;
  static constexpr int kEpochs = 3;

  void SetUp() override {
    write_file(dir_.file("c.txt"), zipf_corpus(kTokens, 5000, fresh_seed()));
  }

  Args fresh(const std::string& output) const {
    return {"train",
            "--corpus",
            dir_.file("c.txt"),
            "--output",
            output,
            "--quiet",
            "--dim",
            "8",
            "--epochs",
            std::to_string(kEpochs),
            "--min-count",
            "1",
            "--threads",
            "1",
            "--format",
            "h5"};
  }
  static Args resume(const std::string& checkpoint, const std::string& output) {
    return {"train",   "--resume",  checkpoint, "--output", output,
            "--quiet", "--threads", "1",        "--format", "h5"};
  }
  static int64_t words_trained(const std::string& run_dir) {
    return int_attribute(run_dir + "/embeddings.h5", "words_trained");
  }

  /// Stops a run with `sig` while it trains, checks the exit and the checkpoint, then resumes from
  /// it to the end. The signal is sent once the run holds its output directory (its signal
  /// handlers are in place by then) and while it is frozen (SIGSTOP), so it arrives before the
  /// first span has ended, where training first looks for it, however fast the machine: the run
  /// stops there, inside epoch 0, with most of its words still to train.
  void stop_and_resume(int sig) {
    const std::string out = dir_.file("run");
    Process p(fresh(out), dir_.path());
    ASSERT_TRUE(wait_until(p, [&] { return exists(out + "/checkpoints"); })) << describe(p.wait());
    ASSERT_TRUE(freeze(p)) << "training ended before the signal: " << describe(p.wait());
    p.send(sig);
    p.send(SIGCONT);
    const Outcome r = p.wait();
    ASSERT_TRUE(fails_cleanly(r, 128 + sig, "stopped by signal " + std::to_string(sig)));
    EXPECT_TRUE(no_partial_files(out));

    const std::string key = "--resume ";
    const size_t at = r.err.find(key);
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string checkpoint =
        r.err.substr(at + key.size(), r.err.size() - at - key.size() - 1);
    char target[256] = {};
    ASSERT_GT(::readlink((out + "/checkpoints/latest.h5").c_str(), target, sizeof target - 1), 0);
    EXPECT_EQ(out + "/checkpoints/" + target, checkpoint);
    const int64_t done = int_attribute(checkpoint, "words_done");
    EXPECT_GT(done, 0);
    EXPECT_LT(done, static_cast<int64_t>(kEpochs * kTokens));

    EXPECT_TRUE(succeeds(run(dir_, {"export", "--checkpoint", checkpoint, "--output",
                                    dir_.file("exported"), "--format", "npy"})));
    ASSERT_TRUE(succeeds(run(dir_, resume(checkpoint, dir_.file("resumed")))));
    EXPECT_EQ(words_trained(dir_.file("resumed")), static_cast<int64_t>(kEpochs * kTokens));
  }

  TempDir dir_;
};

TEST_F(Stop, UninterruptedRunTrainsEveryWordOfEveryEpoch) {
  ASSERT_TRUE(succeeds(run(dir_, fresh(dir_.file("run")))));
  EXPECT_EQ(words_trained(dir_.file("run")), static_cast<int64_t>(kEpochs * kTokens));
}

TEST_F(Stop, SigintWritesACheckpointAndResumes) { stop_and_resume(SIGINT); }

TEST_F(Stop, SigtermWritesACheckpointAndResumes) { stop_and_resume(SIGTERM); }

/// True when `dir` holds a temporary file of process `pid` (a checkpoint being written).
/// Watches `dir` (created by the run, so waited for first) for the creation of a temporary file
/// of process `pid`. inotify queues every creation, so a write that starts and ends between two
/// looks is still seen: true once one was created (the write may be over by then), false when
/// the run ended first.
class TempFileWatch {
 public:
  TempFileWatch(std::string dir, pid_t pid)
      : dir_(std::move(dir)), suffix_(".tmp-" + std::to_string(pid)) {}
  ~TempFileWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool seen() {
    if (fd_ < 0) {
      struct stat st {};
      if (::stat(dir_.c_str(), &st) != 0) return false;
      fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (fd_ < 0 || ::inotify_add_watch(fd_, dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
        ADD_FAILURE() << "inotify on " << dir_ << ": " << std::strerror(errno);
        return false;
      }
      // Created before the watch began, and still there.
      if (DIR* d = ::opendir(dir_.c_str())) {
        bool found = false;
        while (const dirent* e = ::readdir(d)) found = found || matches(e->d_name);
        ::closedir(d);
        if (found) return true;
      }
    }
    alignas(inotify_event) char buf[16384];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return false;
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        if (e->len > 0 && matches(e->name)) return true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
  }

 private:
  bool matches(const std::string& name) const {
    return name.size() > suffix_.size() &&
           name.compare(name.size() - suffix_.size(), suffix_.size(), suffix_) == 0;
  }
  std::string dir_;
  std::string suffix_;
  int fd_ = -1;
};

// SIGKILL at moments that a checkpoint marks: while one is being written (its temporary file
// exists), or just after one is complete; each round kills a run that is still training, then
// resumes from latest.h5. latest.h5 always names a complete checkpoint, never an older one than
// before, and the last resume trains every word.
TEST_F(Stop, KillDuringCheckpointWritesKeepsTheLastCheckpoint) {
  const std::string out = dir_.file("run");
  const std::string checkpoints = out + "/checkpoints";
  const std::string latest = checkpoints + "/latest.h5";
  int64_t last_words = -1;
  int kills = 0;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t epoch = exists(latest) ? int_attribute(latest, "epoch") : 0;
    if (epoch >= kEpochs - 1) break;  // too little left to train for a checkpoint to mark
    Args args = exists(latest) ? resume(latest, out) : fresh(out);
    // Killed after a checkpoint's rename but before latest.h5 named it: that file is an earlier
    // run's to the fresh one, which then needs --overwrite.
    if (!exists(latest) && round > 0) args.push_back("--overwrite");
    Process p(args, dir_.path());
    if (round % 2 == 0) {
      // Into a checkpoint write: its temporary file exists.
      TempFileWatch watch(checkpoints, p.pid());
      if (!wait_until(p, [&] { return watch.seen(); })) {
        FAIL() << "no checkpoint write seen: " << describe(p.wait());
      }
    } else {
      // Just after the next epoch's checkpoint is complete.
      const std::string next = checkpoints + "/epoch-" + std::to_string(epoch + 1) + ".h5";
      ASSERT_TRUE(wait_until(p, [&] { return exists(next); })) << "no " << next;
    }
    p.send(SIGKILL);
    const Outcome r = p.wait();
    ASSERT_EQ(r.signal, SIGKILL) << describe(r);
    ++kills;

    if (!exists(latest)) {
      ASSERT_EQ(last_words, -1) << "latest.h5 vanished";
      continue;
    }
    const std::string exported = dir_.file("exported-" + std::to_string(round));
    ASSERT_TRUE(succeeds(
        run(dir_, {"export", "--checkpoint", latest, "--output", exported, "--format", "npy"})));
    const int64_t words = int_attribute(latest, "words_done");
    EXPECT_GE(words, last_words);
    last_words = words;
  }
  EXPECT_GE(kills, 2);
  Args last = exists(latest) ? resume(latest, out) : fresh(out);
  if (!exists(latest)) last.push_back("--overwrite");  // as above
  ASSERT_TRUE(succeeds(run(dir_, last)));
  EXPECT_EQ(words_trained(out), static_cast<int64_t>(kEpochs * kTokens));
}

/// The step checkpoints (`step-*.h5`) in `dir`.
std::vector<std::string> step_checkpoints(const std::string& dir) {
  std::vector<std::string> steps;
  if (!exists(dir)) return steps;
  for (const std::string& name : testing_util::entries(dir)) {
    if (name.rfind("step-", 0) == 0) steps.push_back(name);
  }
  return steps;
}

/// CPU time (user and system, in clock ticks) that process `pid` has used; 0 when unknown.
uint64_t cpu_ticks(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  // After the name: state (field 3) … utime (14), stime (15).
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return utime + stime;
}

// --checkpoint-interval: a run frozen (SIGSTOP) for longer than the interval while it trains
// writes a step checkpoint at the next span's end inside an epoch; a run with no interval, or one
// far longer than the run, writes epoch checkpoints only. The interval counts from the last
// checkpoint, which is done once its file appears, so the freezes begin once epoch 1's has
// appeared. The run is frozen again and again, each time after it has used 30 ms of CPU, until a
// step checkpoint appears: a span takes longer than that (about 0.1 s on one thread), so no span
// that may end with a step checkpoint passes without a freeze since the last checkpoint, and the
// test waits for the checkpoint itself, whatever the machine's speed.
TEST_F(Stop, TimedCheckpointFollowsTheInterval) {
  const std::string out = dir_.file("timed");
  const std::string checkpoints = out + "/checkpoints";
  Process p(with(with(fresh(out), "checkpoint-interval", "1"), "keep-checkpoints", "100"),
            dir_.path());
  ASSERT_TRUE(wait_until(p, [&] { return exists(checkpoints + "/epoch-1.h5"); }));
  const uint64_t tick_ms = 1000 / std::max<long>(1, ::sysconf(_SC_CLK_TCK));
  // A step checkpoint past epoch 0 (step-WORDS.h5, WORDS counted from the run's start): a slow
  // build, under a sanitizer, may take longer than the interval for a span and write some in
  // epoch 0 too.
  const auto step_written = [&] {
    for (const std::string& name : step_checkpoints(checkpoints)) {
      if (std::strtoull(name.c_str() + 5, nullptr, 10) > kTokens) return true;
    }
    return false;
  };
  int pauses = 0;
  while (!step_written()) {
    const uint64_t ticks = cpu_ticks(p.pid());
    if (!wait_until(p, [&] {
          return step_written() || cpu_ticks(p.pid()) >= ticks + (30 + tick_ms - 1) / tick_ms;
        })) {
      break;  // the run ended
    }
    if (step_written() || !freeze(p)) break;
    // Longer than the interval: the pause that the interval is about, not a wait for a state.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    p.send(SIGCONT);
    ++pauses;
  }
  SCOPED_TRACE(std::to_string(pauses) + " pauses");
  ASSERT_TRUE(succeeds(p.wait()));
  const std::vector<std::string> steps = step_checkpoints(checkpoints);
  ASSERT_FALSE(steps.empty()) << "no step checkpoint after a pause longer than the interval";
  // The first one after epoch 1 lies inside a later epoch, at a span's end. (A slow build, under
  // a sanitizer, may take longer than the interval for a span and write some in epoch 0 too.)
  int64_t first_words = INT64_MAX;
  std::string first;
  for (const std::string& name : steps) {
    if (int_attribute(checkpoints + "/" + name, "epoch") < 1) continue;
    const int64_t w = int_attribute(checkpoints + "/" + name, "words_done");
    if (w < first_words) first_words = w, first = name;
  }
  ASSERT_FALSE(first.empty()) << "no step checkpoint after epoch 1";
  EXPECT_EQ(first, "step-" + std::to_string(first_words) + ".h5");
  const int64_t epoch = int_attribute(checkpoints + "/" + first, "epoch");
  EXPECT_GE(epoch, 1);
  EXPECT_LT(epoch, kEpochs);
  EXPECT_GT(int_attribute(checkpoints + "/" + first, "block"), 0);
  EXPECT_GT(first_words, epoch * static_cast<int64_t>(kTokens));
  EXPECT_LT(first_words, (epoch + 1) * static_cast<int64_t>(kTokens));
  EXPECT_EQ(words_trained(out), static_cast<int64_t>(kEpochs * kTokens));

  // Two epochs are enough here: spans end inside each, and the second follows a checkpoint.
  for (const char* interval : {"0", "100000"}) {
    SCOPED_TRACE(std::string("interval ") + interval);
    const std::string o = dir_.file(std::string("untimed-") + interval);
    ASSERT_TRUE(succeeds(run(
        dir_, with(with(with(fresh(o), "checkpoint-interval", interval), "keep-checkpoints", "100"),
                   "epochs", "2"))));
    EXPECT_TRUE(step_checkpoints(o + "/checkpoints").empty());
    EXPECT_TRUE(exists(o + "/checkpoints/epoch-2.h5"));
  }
}

}  // namespace
}  // namespace pagedw2v
