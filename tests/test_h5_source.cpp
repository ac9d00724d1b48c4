// Reading HDF5 files through one open file, parsed in a child process: a path replaced while it
// is read, heap objects that claim more than their collection, tables stored otherwise than as
// float32 row after row, and the child's processor-time limit.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "io/hdf5_io.hpp"
#include "io/isolated_call.hpp"
#include "model/host_table.hpp"
#include "robustness/h5_heap.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::grow_heap_object;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

void expect_error_naming(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown (expected: " << fragment << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

/// A model of `rows × dim` whose values are `first`, `first + 1/8`, ….
Model model_from(uint64_t rows, uint32_t dim, float first) {
  Model m{HostTable(rows, dim, "in", ""), HostTable(rows, dim, "out", "")};
  for (uint64_t i = 0; i < rows * dim; ++i) {
    m.input.data()[i] = first + 0.125f * static_cast<float>(i);
    m.output.data()[i] = -first - 0.25f * static_cast<float>(i);
  }
  return m;
}

void write_checkpoint(const std::string& path, const std::vector<std::string>& words, uint32_t dim,
                      float first, uint32_t epoch) {
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = dim;
  c.epochs = 4;
  std::vector<uint64_t> counts;
  for (size_t i = 0; i < words.size(); ++i) counts.push_back(10 - i);
  const Vocab vocab = Vocab::from_words(words, counts);
  const Model m = model_from(words.size(), dim, first);
  save_checkpoint(path, c, vocab, m, TrainPosition{epoch, 0, 40ull * epoch},
                  CorpusFingerprint{100, 5, 5}, 0.002f);
}

// A checkpoint is read from the file that was opened, every part of it, even when its path
// names another file by the time the parts are read (a run's latest.h5 moving on).
TEST(H5Source, EveryPartComesFromTheFileOpened) {
  const TempDir dir;
  const std::string path = dir.file("latest.h5");
  write_checkpoint(path, {"a", "b", "c"}, 2, 1.0f, 1);
  write_checkpoint(dir.file("next.h5"), {"x", "y", "z", "w"}, 3, 7.0f, 2);
  const H5Source file(path);
  ASSERT_EQ(std::rename(dir.file("next.h5").c_str(), path.c_str()), 0);
  const Checkpoint ck = load_checkpoint(file);
  EXPECT_EQ(ck.position.epoch, 1u);
  ASSERT_EQ(ck.vocab.size(), 3u);
  EXPECT_EQ(ck.vocab.word(0), "a");
  EXPECT_EQ(ck.vocab.word(2), "c");
  ASSERT_EQ(ck.model.input.dim(), 2u);
  const Model want = model_from(3, 2, 1.0f);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ck.model.input.data()[i], want.input.data()[i]);
    EXPECT_EQ(ck.model.output.data()[i], want.output.data()[i]);
  }
  // The path itself now reads as the other file.
  EXPECT_EQ(load_checkpoint(path).position.epoch, 2u);
}

std::string corpus_text(uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text;
  for (int s = 0; s < 300; ++s) {
    for (int w = 0; w < 12; ++w) text += "w" + std::to_string(rng() % 50) + " ";
    text += "\n";
  }
  return text;
}

// A resumed run reads the checkpoint that Config::resume_file holds open, not what its path names
// by the time the trainer loads it: the run gives the bits of a straight run from that file.
TEST(H5Source, AResumedRunReadsTheCheckpointOpenedOnce) {
  const TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text(5));
  Config straight = testing_util::small_cpu_config(dir, "a", 6, 2);
  run_training(straight);
  Config other = straight;
  other.output = dir.file("o");
  other.seed = straight.seed + 1;
  run_training(other);
  const std::string path = dir.file("resume.h5");
  std::filesystem::copy_file(dir.file("a/checkpoints/epoch-1.h5"), path);
  std::filesystem::copy_file(dir.file("o/checkpoints/epoch-1.h5"), dir.file("next.h5"));
  Config resumed = testing_util::small_cpu_config(dir, "b", 0, 0, path);
  resumed.resume_file = std::make_shared<const H5Source>(path);
  ASSERT_EQ(std::rename(dir.file("next.h5").c_str(), path.c_str()), 0);
  run_training(resumed);
  const std::string a = read_file(dir.file("a/vectors.npy"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(read_file(dir.file("b/vectors.npy")), a);
  EXPECT_NE(read_file(dir.file("o/vectors.npy")), a);
}

// Heap objects of /vocab/words grown by 64 B … 2^49 B (past their collection, or over the
// objects after them), the integrity
// record computed again: the read says the file is damaged, in words and in checkpoints.
TEST(H5HeapObjects, GrownPastTheirCollectionAreRefused) {
  const TempDir dir;
  const std::vector<std::string> words = {"alpha", "beta", "gamma", "delta"};
  for (const uint64_t delta : {uint64_t{64}, uint64_t{1} << 12, uint64_t{1} << 20,
                               uint64_t{1} << 30, uint64_t{1} << 40, uint64_t{1} << 49}) {
    SCOPED_TRACE("grown by " + std::to_string(delta));
    const std::string path = dir.file("c.h5");
    write_checkpoint(path, words, 2, 0.5f, 1);
    std::string bytes = read_file(path);
    ASSERT_NE(grow_heap_object(bytes, "gamma", delta), std::string::npos);
    write_file(path, bytes);
    seal_h5_file(path);
    ASSERT_EQ(h5_integrity(path), H5Integrity::kVerified);
    // Grown within its collection, the object hides the ones after it.
    const std::string why = "/vocab/words is damaged (";
    expect_error_naming([&] { read_embeddings_h5(path); }, why);
    expect_error_naming([&] { load_checkpoint(path); }, why);
  }
}

// A heap object shorter than the string that names it: the string is not taken from beyond it.
TEST(H5HeapObjects, AStringLongerThanItsObjectIsRefused) {
  const TempDir dir;
  const std::string path = dir.file("c.h5");
  write_checkpoint(path, {"alpha", "beta", "gamma"}, 2, 0.5f, 1);
  std::string bytes = read_file(path);
  ASSERT_NE(grow_heap_object(bytes, "beta", ~uint64_t{0}), std::string::npos);  // 4 → 3 bytes
  write_file(path, bytes);
  seal_h5_file(path);
  expect_error_naming([&] { read_embeddings_h5(path); },
                      "/vocab/words is damaged (a string's length is not its heap object's)");
}

/// Writes `values` (rows × dim) as /vectors of `path`, chunked and deflated in `type`, with words
/// "w0", "w1", … in a chunked, deflated variable-length string dataset.
void write_compressed(const std::string& path, const std::vector<double>& values, hsize_t rows,
                      hsize_t dim, hid_t type) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hsize_t dims[2] = {rows, dim}, chunk[2] = {2, dim};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk);
  H5Pset_deflate(dcpl, 6);
  const hid_t set = H5Dcreate2(file, "vectors", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(set, 0);
  ASSERT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(set);
  H5Pclose(dcpl);
  H5Sclose(space);
  const hid_t group = H5Gcreate2(file, "vocab", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, H5T_VARIABLE);
  const hid_t words_space = H5Screate_simple(1, &rows, nullptr);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t word_chunk = 2;
  H5Pset_chunk(dcpl, 1, &word_chunk);
  H5Pset_deflate(dcpl, 6);
  const hid_t words = H5Dcreate2(group, "words", str, words_space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<std::string> names;
  std::vector<const char*> ptrs;
  for (hsize_t i = 0; i < rows; ++i) names.push_back("w" + std::to_string(i));
  for (const std::string& n : names) ptrs.push_back(n.c_str());
  ASSERT_GE(H5Dwrite(words, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), 0);
  H5Dclose(words);
  H5Pclose(dcpl);
  H5Sclose(words_space);
  H5Tclose(str);
  H5Gclose(group);
  ASSERT_GE(H5Fclose(file), 0);
}

// Tables stored otherwise (chunked, deflated, float64) are converted by a child and read with a
// row selection into tables of every storage as the plain ones are.
TEST(H5Source, ConvertedTablesReadAsStored) {
  const TempDir dir;
  const hsize_t rows = 8, dim = 3;
  std::vector<double> values;
  for (hsize_t i = 0; i < rows * dim; ++i) values.push_back(0.5 * static_cast<double>(i) - 3.0);
  for (const hid_t type : {H5T_IEEE_F64LE, H5T_IEEE_F32BE}) {
    const std::string path = dir.file("c.h5");
    write_compressed(path, values, rows, dim, type);
    const LoadedEmbeddings e = read_embeddings_h5(path);
    ASSERT_EQ(e.rows, rows);
    ASSERT_EQ(e.words.size(), rows);
    EXPECT_EQ(e.words[6], "w6");
    for (hsize_t i = 0; i < rows * dim; ++i) EXPECT_EQ(e.vectors[i], static_cast<float>(values[i]));
    for (const Storage storage : {Storage::kFp32, Storage::kBf16}) {
      HostTable t(3, dim, "t", "", default_host_allocator(), storage);
      read_matrix_h5(path, "vectors", t, RowSelection{1, 3});  // rows 1, 4 and 7
      std::vector<float> row(dim);
      for (uint64_t k = 0; k < 3; ++k) {
        t.read_row(k, row.data());
        for (hsize_t j = 0; j < dim; ++j) {
          EXPECT_EQ(row[j], static_cast<float>(values[(1 + 3 * k) * dim + j])) << k << " " << j;
        }
      }
    }
  }
}

// A child that computes without end is stopped by its processor-time limit, however long the
// wall-clock limit.
TEST(H5Source, AChildThatLoopsEndsAtItsProcessorTimeLimit) {
  IsolationLimits limits;
  limits.cpu_seconds = 1;
  limits.seconds = 600;
  try {
    run_isolated("p: ", limits, [] {
      volatile uint64_t x = 0;
      for (;;) x = x + 1;
    });
    ADD_FAILURE() << "the loop came back";
  } catch (const DamagedFile& e) {
    EXPECT_NE(
        std::string(e.what()).find("p: reading it did not finish within 1 s of processor time"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pagedw2v
