// The binary on files made to read elsewhere, to mislead or to present bad results as good:
// every one is refused with one line or reported, and nothing outside the file is read.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"
#include "io/hdf5_io.hpp"
#include "run_binary.hpp"
#include "text/utf8.hpp"
#include "train/checkpoint.hpp"

namespace pagedw2v {
namespace {

using testing_util::clear_failure_problem;
using testing_util::read_file;
using testing_util::run_binary;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;

const std::string kSecret = "TOP-SECRET-0123456789-TOP-SECRET-0123456789-TOP-SECRET-0123456789";

/// A checkpoint of 4 words of dimension 2 (also an embeddings file) at `path`.
void write_checkpoint(const std::string& path, const std::string& corpus) {
  Config c;
  c.dim = 2;
  c.epochs = 2;
  c.corpus = corpus;
  const Vocab vocab = Vocab::from_words({"w0", "w1", "w2", "w3"}, {9, 8, 7, 6});
  Model m{HostTable(4, 2, "in", ""), HostTable(4, 2, "out", "")};
  for (int i = 0; i < 8; ++i) {
    m.input.data()[i] = 0.1f * static_cast<float>(i + 1);
    m.output.data()[i] = 0.2f;
  }
  save_checkpoint(path, c, vocab, m, TrainPosition{1, 0, 20}, CorpusFingerprint{30, 4, 1}, 0.01f);
}

/// Points /vectors of `path` at the secret file (HDF5 external raw storage) or, with `link`,
/// makes it an external link into `other`; then seals the file again, or wipes its integrity
/// record (`foreign`).
void redirect_vectors(const std::string& path, const std::string& secret, bool link,
                      const std::string& other, bool foreign) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "vectors", H5P_DEFAULT), 0);
  if (link) {
    ASSERT_GE(
        H5Lcreate_external(other.c_str(), "vectors", file, "vectors", H5P_DEFAULT, H5P_DEFAULT), 0);
  } else {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ASSERT_GE(H5Pset_external(dcpl, secret.c_str(), 0, H5F_UNLIMITED), 0);
    const hsize_t dims[2] = {4, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t set =
        H5Dcreate2(file, "vectors", H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(set, 0);
    H5Dclose(set);
    H5Sclose(space);
    H5Pclose(dcpl);
  }
  ASSERT_GE(H5Fclose(file), 0);
  if (foreign) {
    std::string bytes = read_file(path);
    std::fill(bytes.begin(), bytes.begin() + 64, '\0');
    write_file(path, bytes);
  } else {
    seal_h5_file(path);
  }
}

/// Every file under `dir` (recursively) and `out`, concatenated.
std::string everything_written(const std::string& dir, const RunResult& r) {
  std::string all = r.out + r.err;
  if (std::filesystem::exists(dir)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) all += read_file(e.path().string());
    }
  }
  return all;
}

TEST(UntrustedFiles, ExternalStorageAndLinksReadNothingOutsideTheFile) {
  const TempDir dir;
  const std::string secret = dir.file("secret.txt");
  write_file(secret, kSecret);
  write_file(dir.file("corpus.txt"), "w0 w1 w2 w3 w0\nw1 w2\n");
  write_file(dir.file("pairs.tsv"), "w0\tw1\t1\nw2\tw3\t2\nw0\tw3\t3\n");
  const std::string other = dir.file("other.h5");
  write_checkpoint(other, dir.file("corpus.txt"));
  for (const bool link : {false, true}) {
    for (const bool foreign : {false, true}) {
      SCOPED_TRACE(std::string(link ? "external link" : "external storage") +
                   (foreign ? ", no checksum" : ", sealed"));
      const std::string path = dir.file("crafted.h5");
      write_checkpoint(path, dir.file("corpus.txt"));
      redirect_vectors(path, secret, link, other, foreign);
      const std::string why = link ? "/vectors is a link to another object or file"
                                   : "/vectors keeps its data in external files";
      const std::vector<std::vector<std::string>> commands = {
          {"similar", "--vectors", path, "w0"},
          {"eval", "--vectors", path, "--similarity", dir.file("pairs.tsv")},
          {"export", "--checkpoint", path, "--output", dir.file("out"), "--format", "txt,npy"},
          {"train", "--resume", path, "--output", dir.file("out"), "--quiet"},
      };
      for (const auto& command : commands) {
        std::filesystem::remove_all(dir.file("out"));
        const RunResult r = run_binary(command, dir.path());
        EXPECT_EQ(clear_failure_problem(r, 1, why), "");
        const std::string written = everything_written(dir.file("out"), r);
        EXPECT_EQ(written.find("TOP-SECRET"), std::string::npos) << r.command;
      }
    }
  }
}

TEST(UntrustedFiles, CountsPastTheRangeAndShiftedBinaryRowsAreRefused) {
  const TempDir dir;
  std::filesystem::create_directory(dir.file("tsv"));
  const float row[2] = {0.5f, -0.25f};
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }";
  header.resize(117, ' ');
  header += '\n';
  npy += std::string(1, static_cast<char>(header.size())) + std::string(1, '\0') + header;
  npy += std::string(reinterpret_cast<const char*>(row), sizeof row);
  write_file(dir.file("tsv/vectors.npy"), npy);
  write_file(dir.file("tsv/vocab.tsv"), "w0\t18446744073709551615\n");
  EXPECT_EQ(run_binary({"similar", "--vectors", dir.file("tsv"), "w0"}, dir.path()).code, 0);
  write_file(dir.file("tsv/vocab.tsv"), "w0\t18446744073709551616\n");
  EXPECT_EQ(
      clear_failure_problem(run_binary({"similar", "--vectors", dir.file("tsv"), "w0"}, dir.path()),
                            1, "vocab.tsv' line 1"),
      "");

  // word2vec .bin: the word runs to the first space, so "a b" shifts every later byte.
  const std::string floats(reinterpret_cast<const char*>(row), sizeof row);
  write_file(dir.file("ok.bin"), "2 2\nab " + floats + "\ncd " + floats + "\n");
  EXPECT_EQ(run_binary({"similar", "--vectors", dir.file("ok.bin"), "ab"}, dir.path()).code, 0);
  write_file(dir.file("space.bin"), "2 2\na b " + floats + "\ncd " + floats + "\n");
  EXPECT_EQ(clear_failure_problem(
                run_binary({"similar", "--vectors", dir.file("space.bin"), "cd"}, dir.path()), 1,
                "the word is not UTF-8 text"),
            "");
}

TEST(UntrustedFiles, NaNRowsAreLeftOutAndCounted) {
  const TempDir dir;
  write_file(dir.file("v.txt"), "5 2\nw0 1 0\nw1 0.9 0.1\nw2 nan 1\nw3 inf 0\nw4 -1 0.2\n");
  const RunResult similar =
      run_binary({"similar", "--vectors", dir.file("v.txt"), "w0"}, dir.path());
  EXPECT_EQ(similar.code, 0) << similar.err;
  EXPECT_NE(similar.out.find("left out: 2 of 5 rows with NaN or infinite values"),
            std::string::npos)
      << similar.out;
  EXPECT_EQ(similar.out.find("nan"), std::string::npos) << similar.out;
  EXPECT_EQ(clear_failure_problem(
                run_binary({"similar", "--vectors", dir.file("v.txt"), "w2"}, dir.path()), 1,
                "holds NaN or infinite values"),
            "");

  // All pairs on NaN rows: nothing to correlate is an error, not a Spearman of -1.
  write_file(dir.file("nan.tsv"), "w2\tw3\t1\nw3\tw2\t2\n");
  EXPECT_EQ(clear_failure_problem(run_binary({"eval", "--vectors", dir.file("v.txt"),
                                              "--similarity", dir.file("nan.tsv")},
                                             dir.path()),
                                  1, "no word pair to evaluate"),
            "");
  write_file(dir.file("p.tsv"), "w0\tw1\t9\nw0\tw4\t1\nw1\tw4\t2\nw0\tw2\t5\n");
  const RunResult eval = run_binary(
      {"eval", "--vectors", dir.file("v.txt"), "--similarity", dir.file("p.tsv"), "--json"},
      dir.path());
  EXPECT_EQ(eval.code, 0) << eval.err;
  EXPECT_NE(eval.out.find("\"pairs\":3,\"oov\":1,\"nonfinite_rows\":2"), std::string::npos)
      << eval.out;
}

TEST(UntrustedFiles, EvalJsonIsUtf8WhateverTheFilesHold) {
  const TempDir dir;
  write_file(dir.file("v.txt"), "4 2\na 1 0\nb 0 1\nc 1 1\nd 0.5 1\n");
  write_file(dir.file("q.txt"), ": caf\xE9 \xFF\xFE\na b c d\n");
  const std::string weird = dir.file("q-\xC0\xAF.txt");
  write_file(weird, read_file(dir.file("q.txt")));
  const RunResult r = run_binary(
      {"eval", "--vectors", dir.file("v.txt"), "--analogies", weird, "--json"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(is_valid_utf8(r.out)) << r.out;
  EXPECT_NE(r.out.find("caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << r.out;
}

// As gensim and word2vec.c, a run that subsampling leaves nothing to train writes its vectors as
// they started, and says so in one warning line.
TEST(UntrustedFiles, ARunThatTrainsNothingWarnsAndWritesItsVectors) {
  const TempDir dir;
  std::string corpus;
  for (int i = 0; i < 200; ++i)
    corpus += "w" + std::to_string(i % 30) + " w" + std::to_string(i % 7) + " x y\n";
  write_file(dir.file("corpus.txt"), corpus);
  const RunResult r = run_binary(
      {"train", "--corpus", dir.file("corpus.txt"), "--output", dir.file("run"), "--dim", "4",
       "--min-count", "1", "--epochs", "1", "--threads", "1", "--sample", "1e-300", "--quiet"},
      dir.path());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.err.find("pagedw2v: warning: no (word, context) example"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("run/vectors.npy")));
}

// A checkpoint whose position lies past the epochs its own run asked for (one byte of its
// 'epoch' changed, the integrity record computed again) is damaged: `train --resume` says so in
// one line with exit 1, not that the run has finished and --epochs should be raised.
TEST(UntrustedFiles, ACheckpointPastItsOwnEpochsIsDamaged) {
  const TempDir dir;
  std::string corpus;
  for (int i = 0; i < 200; ++i)
    corpus += "w" + std::to_string(i % 30) + " w" + std::to_string(i % 7) + "\n";
  write_file(dir.file("corpus.txt"), corpus);
  const RunResult trained =
      run_binary({"train", "--corpus", dir.file("corpus.txt"), "--output", dir.file("run"), "--dim",
                  "4", "--min-count", "1", "--epochs", "2", "--threads", "1", "--quiet"},
                 dir.path());
  ASSERT_EQ(trained.code, 0) << describe(trained);
  const std::string checkpoint = dir.file("run/checkpoints/epoch-1.h5");
  const hid_t file = H5Fopen(checkpoint.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attr = H5Aopen_by_name(file, "/", "epoch", H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  const int64_t epoch = 65025;  // 1 with its second byte changed
  EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &epoch), 0);
  H5Aclose(attr);
  H5Fclose(file);
  seal_h5_file(checkpoint);
  for (const char* epochs : {"", "3", "70000"}) {
    SCOPED_TRACE(std::string("--epochs ") + epochs);
    std::vector<std::string> args = {"train", "--resume", checkpoint, "--output", dir.file("out")};
    if (*epochs != '\0') args.insert(args.end(), {"--epochs", epochs});
    EXPECT_TRUE(fails_cleanly(run_binary(args, dir.path()), 1,
                              "is damaged: 'epoch' is 65025, outside 0..2"));
  }
}

// A checkpoint whose read makes libhdf5 loop (one byte of a checkpoint changed, its integrity
// record cleared; kept in tests/robustness/data): `train --resume` reads it once, in a child
// that is stopped at its processor-time limit (4 s here: PAGEDW2V_H5_PARSE_CPU_SECONDS), and
// ends with that one line, instead of reading it a second time. The children of the run are
// watched while it runs: a read that hangs lives until its limit, so none is missed, and exactly
// one is started.
TEST(UntrustedFiles, ACheckpointWhoseReadHangsEndsAfterOneRead) {
  const TempDir dir;
  const std::string hangs =
      std::string(PAGEDW2V_SOURCE_DIR) + "/tests/robustness/data/hangs-hdf5.h5";
  ::setenv("PAGEDW2V_H5_PARSE_CPU_SECONDS", "4", 1);
  // In ASan builds LeakSanitizer checks at exit from a tracer task of its own, which would count
  // as a child here: this run is about reads, not leaks.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_before = asan != nullptr ? asan : "";
  ::setenv("ASAN_OPTIONS",
           (asan_before + (asan_before.empty() ? "" : ":") + "detect_leaks=0").c_str(), 1);
  testing_util::Process p(
      {"train", "--resume", hangs, "--output", dir.file("run"), "--format", "npy"}, dir.path());
  ::unsetenv("PAGEDW2V_H5_PARSE_CPU_SECONDS");
  if (asan != nullptr) {
    ::setenv("ASAN_OPTIONS", asan_before.c_str(), 1);
  } else {
    ::unsetenv("ASAN_OPTIONS");
  }
  std::set<pid_t> readers;
  while (p.running()) {
    for (const pid_t child : testing_util::children_of(p.pid())) readers.insert(child);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const RunResult r = p.wait();
  EXPECT_EQ(clear_failure_problem(r, 1, "did not finish within 4 s of processor time"), "");
  EXPECT_EQ(readers.size(), 1u) << "the damaged checkpoint was read more than once";
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/vectors.npy")));
}

}  // namespace
}  // namespace pagedw2v
