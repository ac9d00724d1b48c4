// The binary on inputs made elsewhere or tampered with: a damaged encoded cache, vocabulary files
// with words the tokenizer cannot make or counts that overflow, a directory or a device as the
// config, a conflicting --vocab on resume, vectors with duplicated words, dimension 0, gzip
// trailers, unstorable words or terminal escape sequences, NaN gold scores. Each is refused with
// one line and the documented exit status (or handled), and the user's files are the same byte for
// byte afterwards.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::describe;
using testing_util::fails_cleanly;
using testing_util::Process;
using testing_util::read_file;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::with;
using testing_util::write_file;
using Args = std::vector<std::string>;

constexpr double kTimeoutSeconds = 120;

RunResult run(const TempDir& dir, const Args& args) {
  Process p(args, dir.path());
  return p.wait(kTimeoutSeconds);
}

::testing::AssertionResult succeeds(const RunResult& r) {
  if (r.timed_out || !r.exited || r.code != 0) return ::testing::AssertionFailure() << describe(r);
  return ::testing::AssertionSuccess();
}

/// Every regular file and link under `dir` (the logs of the runs left out) with its bytes (a
/// link: its target), to compare before and after a command.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("run-", 0) == 0) continue;
    if (e.is_symlink()) {
      files[e.path().string()] = "-> " + fs::read_symlink(e.path()).string();
    } else if (e.is_regular_file()) {
      files[e.path().string()] = read_file(e.path().string());
    }
  }
  return files;
}

/// Exactly `tokens` words over "w0".."w{distinct-1}", skewed, 5 to 30 words a line.
std::string corpus_text(uint64_t tokens, uint32_t distinct, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string text;
  uint64_t line = 5 + rng() % 26;
  for (uint64_t i = 0; i < tokens; ++i) {
    const uint64_t a = rng() % distinct, b = rng() % distinct;
    text += "w" + std::to_string(std::min(a, b));
    text += --line == 0 || i + 1 == tokens ? '\n' : ' ';
    if (line == 0) line = 5 + rng() % 26;
  }
  return text;
}

uint64_t fresh_seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

Args small_run(const std::string& corpus, const std::string& output) {
  return {"train", "--corpus",    corpus, "--output",  output, "--quiet",  "--dim", "4", "--epochs",
          "1",     "--min-count", "1",    "--threads", "2",    "--format", "npy"};
}

// ---------------------------------------------------------------------------------------------
// --cache-dir

TEST(HostileCache, TokenIdsDamagedWithinTheVocabularyAreRefused) {
  TempDir dir;
  write_file(dir.file("c.txt"), corpus_text(100000, 300, fresh_seed()));
  // Streamed (the encoded corpus is larger than the cap), with the cache kept.
  const Args args =
      with(with(small_run(dir.file("c.txt"), dir.file("out")), "cache-dir", dir.file("cache")),
           "max-corpus-memory", "64KiB");
  ASSERT_TRUE(succeeds(run(dir, args)));
  std::vector<std::string> caches = testing_util::entries(dir.file("cache"));
  ASSERT_EQ(caches.size(), 1u);
  const std::string cache = dir.file("cache/" + caches[0]);
  // The same run again reads the cache, which is intact.
  ASSERT_TRUE(succeeds(run(dir, with(args, "output", dir.file("again")))));
  EXPECT_TRUE(testing_util::exists(dir.file("again/vectors.npy")));

  // Two different ids of the first block swapped: every count and every id still fits.
  std::string bytes = read_file(cache);
  uint32_t counts[2];
  std::memcpy(counts, bytes.data() + 16, 8);
  const size_t tokens = 16 + 8 + size_t{counts[0]} * 4;
  ASSERT_GT(counts[1], 2u);
  size_t other = 1;
  while (other < counts[1] && std::memcmp(&bytes[tokens], &bytes[tokens + other * 4], 4) == 0) {
    ++other;
  }
  ASSERT_LT(other, counts[1]);
  for (int k = 0; k < 4; ++k) std::swap(bytes[tokens + k], bytes[tokens + other * 4 + k]);
  write_file(cache, bytes);

  const auto before = snapshot(dir.path());
  const RunResult r = run(dir, with(args, "output", dir.file("damaged")));
  EXPECT_TRUE(fails_cleanly(r, 1, "is damaged; delete it and run again")) << describe(r);
  EXPECT_FALSE(testing_util::exists(dir.file("damaged/vectors.npy")));
  auto after = snapshot(dir.path());
  for (auto it = after.begin(); it != after.end();) {
    it = it->first.find("/damaged/") != std::string::npos ? after.erase(it) : std::next(it);
  }
  EXPECT_TRUE(before == after) << "the user's files changed";
}

// ---------------------------------------------------------------------------------------------
// --vocab

TEST(HostileVocab, WordsTheTokenizerCannotMakeAreRefusedWithTheirLine) {
  TempDir dir;
  write_file(dir.file("c.txt"), corpus_text(2000, 20, fresh_seed()));
  const std::string long_word(101, 'x');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"w0\t5\n" + long_word + "\t3\n", "line 2: a word of 101 bytes"},
      {"w0\t5\nw1\t4\na b\t3\n", "line 3: the word holds a space"},
      {"w0\t5\nw\xff\t3\n", "line 2: the word is not UTF-8"},
      {"w0\t18446744073709551615\nw1\t1\n", "line 2: the counts add up past 2^64 - 1"},
  };
  for (const auto& [text, message] : cases) {
    write_file(dir.file("v.tsv"), text);
    const auto before = snapshot(dir.path());
    const RunResult r =
        run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "vocab", dir.file("v.tsv")));
    EXPECT_TRUE(fails_cleanly(r, 1, message)) << message;
    EXPECT_FALSE(testing_util::exists(dir.file("out/vectors.npy")));
    EXPECT_TRUE(before == snapshot(dir.path())) << message;
    std::filesystem::remove_all(dir.file("out"));
  }
}

TEST(HostileVocab, CountsFarBeyondTheCorpusTrain) {
  TempDir dir;
  write_file(dir.file("c.txt"), corpus_text(40000, 50, fresh_seed()));
  std::string vocab;
  for (int i = 0; i < 50; ++i)
    vocab += "w" + std::to_string(i) + "\t" + std::to_string(100000000000000ull - i) + "\n";
  write_file(dir.file("v.tsv"), vocab);
  const RunResult r =
      run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "vocab", dir.file("v.tsv")));
  ASSERT_TRUE(succeeds(r));
  EXPECT_EQ(read_file(dir.file("out/vocab.tsv")), vocab);
  // Said once, and not for counts the corpus can hold.
  EXPECT_EQ(r.err.find("pagedw2v: warning: the counts of --vocab '" + dir.file("v.tsv") +
                       "' sum to 4999999999998775, more words than the corpus's "),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  ASSERT_TRUE(
      succeeds(run(dir, {"train", "--corpus", dir.file("c.txt"), "--output", dir.file("again"),
                         "--quiet", "--dim", "4", "--epochs", "1", "--min-count", "1", "--threads",
                         "2", "--format", "npy", "--save-vocab", dir.file("counted.tsv")})));
  const RunResult counted = run(
      dir, with(small_run(dir.file("c.txt"), dir.file("third")), "vocab", dir.file("counted.tsv")));
  ASSERT_TRUE(succeeds(counted));
  EXPECT_EQ(counted.err, "");
}

// ---------------------------------------------------------------------------------------------
// --config and --resume

TEST(HostileConfig, DirectoryOrDeviceIsNotAnEmptyConfig) {
  TempDir dir;
  write_file(dir.file("c.txt"), corpus_text(2000, 20, fresh_seed()));
  std::filesystem::create_directory(dir.file("conf.d"));
  const std::pair<std::string, std::string> cases[] = {{dir.file("conf.d"), "is a directory"},
                                                       {"/dev/zero", "is not a regular file"}};
  for (const auto& [config, message] : cases) {
    const auto before = snapshot(dir.path());
    const RunResult r =
        run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "config", config));
    EXPECT_TRUE(fails_cleanly(r, 2, message)) << config;
    EXPECT_TRUE(before == snapshot(dir.path())) << config;
  }
}

TEST(HostileConfig, ResumeRefusesAnotherVocabulary) {
  TempDir dir;
  write_file(dir.file("c.txt"), corpus_text(4000, 20, fresh_seed()));
  ASSERT_TRUE(
      succeeds(run(dir, with(small_run(dir.file("c.txt"), dir.file("out")), "epochs", "2"))));
  write_file(dir.file("other.tsv"), "w0\t9\nw1\t8\n");
  const auto before = snapshot(dir.path());
  const RunResult r =
      run(dir, {"train", "--resume", dir.file("out/checkpoints/epoch-1.h5"), "--output",
                dir.file("out"), "--quiet", "--vocab", dir.file("other.tsv")});
  EXPECT_TRUE(fails_cleanly(r, 2, "--vocab cannot be given when resuming")) << describe(r);
  EXPECT_TRUE(before == snapshot(dir.path())) << "the run's files changed";
}

// ---------------------------------------------------------------------------------------------
// Vectors made elsewhere

/// A word2vec text file of `words`, dimension 3, distinct rows.
std::string text_vectors(const std::vector<std::string>& words) {
  std::string s = std::to_string(words.size()) + " 3\n";
  for (size_t i = 0; i < words.size(); ++i) {
    s += words[i] + " " + std::to_string(0.5 + i) + " " + std::to_string(1.0 - 0.25 * i) + " " +
         std::to_string(0.1 * (i % 3)) + "\n";
  }
  return s;
}

std::string gzip_of(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// An HDF5 file as another tool writes embeddings: /vectors (rows × 2 float32) and /vocab/words
/// (variable-length strings), no integrity record.
void write_foreign_h5(const std::string& path, const std::vector<std::string>& words) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hsize_t dims[2] = {words.size(), 2};
  std::vector<float> values(words.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.1f * static_cast<float>(i + 1);
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t set =
      H5Dcreate2(file, "vectors", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(set);
  H5Sclose(space);
  const hid_t group = H5Gcreate2(file, "vocab", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hsize_t n = words.size();
  const hid_t wspace = H5Screate_simple(1, &n, nullptr);
  const hid_t wset =
      H5Dcreate2(group, "words", type, wspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<const char*> ptrs;
  for (const std::string& w : words) ptrs.push_back(w.c_str());
  ASSERT_GE(H5Dwrite(wset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), 0);
  H5Dclose(wset);
  H5Sclose(wspace);
  H5Tclose(type);
  H5Gclose(group);
  H5Fclose(file);
}

TEST(HostileVectors, WordsNoVocabularyFileCanStoreAreRefusedByIndex) {
  TempDir dir;
  write_foreign_h5(dir.file("newline.h5"), {"w0", "two\nlines", "w2"});
  write_file(dir.file("nul.txt"), text_vectors({"w0", "w1", std::string("a\0b", 3)}));
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"similar", "--vectors", dir.file("newline.h5"), "w0"}, "word 1 holds a line break"},
      {{"export", "--vectors", dir.file("newline.h5"), "--output", dir.file("exp"), "--format",
        "npy"},
       "word 1 holds a line break"},
      {{"similar", "--vectors", dir.file("nul.txt"), "w0"}, "word 2 holds a NUL byte"},
      {{"export", "--vectors", dir.file("nul.txt"), "--output", dir.file("exp"), "--format", "h5"},
       "word 2 holds a NUL byte"},
  };
  for (const auto& [args, message] : cases) {
    const auto before = snapshot(dir.path());
    const RunResult r = run(dir, args);
    EXPECT_TRUE(fails_cleanly(r, 1, message)) << describe(r);
    EXPECT_TRUE(before == snapshot(dir.path())) << message;
  }
}

TEST(HostileVectors, DuplicatedWordsDimensionZeroGzipTrailersAreRefused) {
  TempDir dir;
  write_file(dir.file("dup.txt"), text_vectors({"w0", "w1", "w2", "w1"}));
  write_file(dir.file("dim0.txt"), "3 0\nw0\nw1\nw2\n");
  const std::string good = text_vectors({"w0", "w1", "w2"});
  write_file(dir.file("good.txt.gz"), gzip_of(good));
  write_file(dir.file("trailer.txt.gz"), gzip_of(good) + "trailing garbage");
  write_file(dir.file("two.txt.gz"), gzip_of(good.substr(0, 20)) + gzip_of(good.substr(20)));
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"similar", "--vectors", dir.file("dup.txt"), "w0"}, "the word 'w1' has two rows, 1 and 3"},
      {{"similar", "--vectors", dir.file("dim0.txt"), "--vectors-format", "txt", "w0"},
       "dimension 0"},
      {{"similar", "--vectors", dir.file("trailer.txt.gz"), "w0"}, "trailing data after the gzip"},
  };
  for (const auto& [args, message] : cases) {
    const auto before = snapshot(dir.path());
    const RunResult r = run(dir, args);
    EXPECT_TRUE(fails_cleanly(r, 1, message)) << describe(r);
    EXPECT_TRUE(before == snapshot(dir.path())) << message;
  }
  // Members one after another are one stream, as gzip -d reads them.
  for (const char* name : {"good.txt.gz", "two.txt.gz"}) {
    const RunResult r = run(dir, {"similar", "--vectors", dir.file(name), "w0", "--top", "1"});
    EXPECT_TRUE(succeeds(r)) << name;
    EXPECT_NE(r.out.find("w0\n"), std::string::npos) << r.out;
  }
}

TEST(HostileEval, NanGoldScoreIsRefusedWithItsLine) {
  TempDir dir;
  write_file(dir.file("v.txt"), text_vectors({"w0", "w1", "w2", "w3"}));
  for (const char* score : {"nan", "inf", "-NaN"}) {
    write_file(dir.file("pairs.tsv"),
               "w0\tw1\t3.5\nw1\tw2\t" + std::string(score) + "\nw2\tw3\t1.0\n");
    const auto before = snapshot(dir.path());
    const RunResult r =
        run(dir, {"eval", "--vectors", dir.file("v.txt"), "--similarity", dir.file("pairs.tsv")});
    EXPECT_TRUE(fails_cleanly(
        r, 1, "line 2: the score '" + std::string(score) + "' is not a finite number"))
        << describe(r);
    EXPECT_TRUE(before == snapshot(dir.path())) << score;
  }
}

// ---------------------------------------------------------------------------------------------
// Words shown on a terminal

/// Runs the binary with its stdout and stderr on a new pseudo-terminal; returns what the
/// terminal was sent (CRs that the terminal adds to line ends dropped) and sets `*code` to the
/// exit status (-1 when it did not exit).
std::string run_on_terminal(const Args& args, int* code) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    ADD_FAILURE() << "no pseudo-terminal";
    return "";
  }
  // This end of the terminal stays open here too, so that what the child wrote is read after
  // it has ended (no hang-up), to the last byte.
  const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  const int null = ::open("/dev/null", O_RDONLY);
  if (tty < 0 || null < 0) {
    ADD_FAILURE() << "cannot open the terminal";
    return "";
  }
  std::vector<std::string> storage = {PAGEDW2V_BINARY};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(null, 0);
    ::dup2(tty, 1);
    ::dup2(tty, 2);
    ::execv(PAGEDW2V_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(null);
  std::string got;
  char buf[4096];
  auto drain = [&](int timeout_ms) {
    pollfd p{master, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
      timeout_ms = 0;
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  for (;;) {
    drain(10);
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out";
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
  }
  drain(0);
  ::close(tty);
  ::close(master);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string kept;
  for (const char c : got) {
    if (c != '\r') kept += c;
  }
  return kept;
}

TEST(HostileVectors, EscapeSequencesInWordsReachATerminalOnlyShown) {
  TempDir dir;
  const std::string red = "\x1b[31mred", bell = "ring\x07",
                    c1 = "c1\xc2\x9b"
                         "2J";
  write_file(dir.file("v.txt"), text_vectors({"w0", red, bell, c1}));
  // Piped, the bytes are kept as the file has them.
  const RunResult piped = run(dir, {"similar", "--vectors", dir.file("v.txt"), "w0"});
  ASSERT_TRUE(succeeds(piped));
  for (const std::string& w : {red, bell, c1}) {
    EXPECT_NE(piped.out.find("  " + w + " "), std::string::npos) << piped.out;
  }
  // On a terminal, shown as \xNN.
  int code = -1;
  const std::string shown =
      run_on_terminal({"similar", "--vectors", dir.file("v.txt"), "w0"}, &code);
  EXPECT_EQ(code, 0) << shown;
  EXPECT_NE(shown.find("\\x1b[31mred"), std::string::npos) << shown;
  EXPECT_NE(shown.find("ring\\x07"), std::string::npos) << shown;
  EXPECT_NE(shown.find("c1\\xc2\\x9b2J"), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x07'), std::string::npos) << shown;
  // A section name of an analogy file, as eval reports it.
  write_file(dir.file("questions.txt"), ": sec\x1b[2J\nw0 " + red + " " + bell + " " + c1 + "\n");
  const Args eval = {"eval", "--vectors", dir.file("v.txt"), "--analogies",
                     dir.file("questions.txt")};
  const RunResult eval_piped = run(dir, eval);
  ASSERT_TRUE(succeeds(eval_piped));
  EXPECT_NE(eval_piped.out.find("  sec\x1b[2J: "), std::string::npos) << eval_piped.out;
  const std::string eval_shown = run_on_terminal(eval, &code);
  EXPECT_EQ(code, 0) << eval_shown;
  EXPECT_NE(eval_shown.find("  sec\\x1b[2J: "), std::string::npos) << eval_shown;
  EXPECT_EQ(eval_shown.find('\x1b'), std::string::npos) << eval_shown;
  // And in the one error line, a query's words from the terminal too.
  const std::string error =
      run_on_terminal({"similar", "--vectors", dir.file("v.txt"), "no\x1b]0;title\x07"}, &code);
  EXPECT_EQ(code, 1) << error;
  EXPECT_NE(error.find("no\\x1b]0;title\\x07"), std::string::npos) << error;
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
}

}  // namespace
}  // namespace pagedw2v
