#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "io/checksum.hpp"
#include "io/hdf5_io.hpp"
#include "io/isolated_call.hpp"
#include "model/host_table.hpp"
#include "test_util.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

/// The time limit of a child process that is not meant to hang: it only stops a hang.
constexpr double kNoHangSeconds = 120;

using testing_util::bytes_of;
using testing_util::entries;
using testing_util::expect_error_naming;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::run_python;
using testing_util::TempDir;
using testing_util::write_file;

/// testing_util::random_vocab, shaped for this file.
Vocab random_vocab(uint32_t n, uint64_t seed) {
  testing_util::VocabShape shape;
  shape.first_count = uint64_t{1} << 40;
  shape.fall = 2;
  shape.unicode = true;
  return testing_util::random_vocab(n, seed, shape);
}

HostTable random_table(uint64_t rows, uint32_t dim, uint64_t seed) {
  HostTable t(rows, dim, "test table", "");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint64_t i = 0; i < rows * dim; ++i) t.data()[i] = normal(rng);
  return t;
}

void expect_same(const LoadedEmbeddings& e, const Vocab& vocab, const HostTable& table) {
  EXPECT_EQ(e.rows, table.rows());
  EXPECT_EQ(e.dim, table.dim());
  EXPECT_EQ(e.words, vocab.words().to_strings());
  EXPECT_EQ(e.counts, vocab.counts());
  ASSERT_EQ(e.vectors.size(), table.rows() * table.dim());
  EXPECT_EQ(bytes_of(e.vectors.data(), e.vectors.size()),
            bytes_of(table.data(), table.rows() * table.dim()));
}

std::vector<Attribute> sample_attributes(uint64_t seed) {
  return {{"dim", int64_t{300}},
          {"seed", static_cast<int64_t>(seed)},
          {"alpha", 0.025},
          {"sample", 1e-4},
          {"version", std::string("0.1.0")},
          {"corpus", std::string("/data/text8 — ünïcode")},
          {"negative_count", int64_t{-5}}};
}

class Hdf5RoundTrip : public testing::TestWithParam<std::tuple<uint32_t, uint32_t, bool>> {};

TEST_P(Hdf5RoundTrip, ReadsBackWhatItWrote) {
  const auto [rows, dim, with_context] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const Vocab vocab = random_vocab(rows, seed);
  const HostTable vectors = random_table(rows, dim, seed + 1);
  const HostTable context = random_table(rows, dim, seed + 2);
  const std::vector<Attribute> attributes = sample_attributes(seed);
  const std::string path = dir.file("e.h5");

  testing::internal::CaptureStderr();
  write_embeddings_h5(path, vocab, vectors, with_context ? &context : nullptr, attributes);
  const LoadedEmbeddings e = read_embeddings_h5(path);
  std::vector<Attribute> read_back = read_attributes_h5(path);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  // Every file records the version that wrote it.
  const auto version = std::find_if(read_back.begin(), read_back.end(),
                                    [](const Attribute& a) { return a.name == kVersionAttribute; });
  ASSERT_NE(version, read_back.end());
  EXPECT_EQ(version->value,
            (std::variant<int64_t, double, std::string>(std::string(pagedw2v::version()))));
  read_back.erase(version);

  expect_same(e, vocab, vectors);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"e.h5"});

  // A vocabulary whose words are packed (as while a run trains) writes the same words.
  Vocab packed = random_vocab(rows, seed);
  packed.pack_words(3);
  ASSERT_TRUE(packed.words_packed());
  write_embeddings_h5(dir.file("packed.h5"), packed, vectors, with_context ? &context : nullptr,
                      attributes);
  expect_same(read_embeddings_h5(dir.file("packed.h5")), vocab, vectors);

  std::vector<Attribute> expected = attributes;
  std::sort(expected.begin(), expected.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  ASSERT_EQ(read_back.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(read_back[i].name, expected[i].name);
    EXPECT_EQ(read_back[i].value, expected[i].value) << expected[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Hdf5RoundTrip,
                         testing::Values(std::make_tuple(1u, 1u, false),
                                         std::make_tuple(6u, 3u, true),
                                         std::make_tuple(257u, 64u, false),
                                         std::make_tuple(1000u, 17u, true),
                                         std::make_tuple(0u, 8u, true),
                                         // the vocabulary goes in slices of 65,536 words
                                         std::make_tuple(2u * 65536u + 3u, 2u, true)));

// Tables large enough that their values are written by several threads into the closed file,
// and an interleaved one (rows apart in memory) among them: every value reads back, and the
// checksum covers them.
TEST(Hdf5, LargeTablesWrittenByThreadsReadBack) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::string path = dir.file("large.h5");
  const uint32_t rows = 9001, dim = 1200;
  const Vocab vocab = random_vocab(rows, seed);
  const HostTable vectors = random_table(rows, dim, seed + 1);
  std::vector<HostTable> pair = HostTable::interleaved(rows, dim, 2, "test tables", "");
  std::mt19937_64 rng(seed + 2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint32_t d = 0; d < dim; ++d) pair[1].row(r)[d] = u(rng);
  }
  write_embeddings_h5(path, vocab, vectors, &pair[1], {});
  expect_same(read_embeddings_h5(path), vocab, vectors);
  HostTable context(rows, dim, "context", "");
  read_matrix_h5(path, "context_vectors", context);
  for (uint64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(std::memcmp(context.row(r), pair[1].row(r), dim * sizeof(float)), 0) << "row " << r;
  }
}

// A 16-bit table's file holds fp32 values; its checksum is computed from rows gathered and
// widened in memory, over more than one checksum piece, and must match the file read back.
TEST(Hdf5, SixteenBitTablesAreWrittenAndHashedAsFloats) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::string path = dir.file("half.h5");
  const uint32_t rows = 9001, dim = 2048;  // 73.7 MB as fp32: two checksum pieces
  const Vocab vocab = random_vocab(rows, seed);
  const HostTable values = random_table(rows, dim, seed + 1);
  HostTable half(rows, dim, "half", "", default_host_allocator(), Storage::kBf16);
  std::vector<float> row(dim);
  for (uint64_t r = 0; r < rows; ++r) half.write_row(r, values.row(r));
  write_embeddings_h5(path, vocab, half, nullptr, {});
  EXPECT_EQ(h5_integrity(path), H5Integrity::kVerified);
  const LoadedEmbeddings e = read_embeddings_h5(path);
  ASSERT_EQ(e.vectors.size(), uint64_t{rows} * dim);
  for (uint64_t r = 0; r < rows; r += 997) {
    half.read_rows(r, 1, row.data());
    ASSERT_EQ(std::memcmp(row.data(), e.vectors.data() + r * dim, dim * sizeof(float)), 0)
        << "row " << r;
  }
}

TEST(Hdf5, PreparedFileTakesItsValuesAndLateAttributes) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::string path = dir.file("p.h5");
  const uint32_t rows = 300, dim = 24;
  const Vocab vocab = random_vocab(rows, seed);
  const HostTable vectors = random_table(rows, dim, seed + 1);
  const HostTable state = random_table(rows, dim, seed + 2);
  PreparedH5 file =
      prepare_embeddings_h5(path, vocab, {{"vectors", rows, dim}, {"optimizer/input_0", rows, dim}},
                            {{"early", int64_t{7}}});
  ASSERT_TRUE(file.ready());
  // Only a temporary file so far: the path appears when the values are in.
  const std::vector<std::string> before = entries(dir.path());
  ASSERT_EQ(before.size(), 1u);
  EXPECT_NE(before[0], "p.h5");
  finish_embeddings_h5(file, {{"vectors", &vectors}, {"optimizer/input_0", &state}},
                       {{"late", std::string("value")}, {"lr", 0.25}});
  EXPECT_FALSE(file.ready());
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"p.h5"});
  EXPECT_EQ(h5_integrity(path), H5Integrity::kVerified);
  expect_same(read_embeddings_h5(path), vocab, vectors);
  HostTable back(rows, dim, "back", "");
  read_matrix_h5(path, "optimizer/input_0", back);
  for (uint64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(std::memcmp(back.row(r), state.row(r), dim * sizeof(float)), 0) << "row " << r;
  }
  const std::vector<Attribute> a = read_attributes_h5(path, {"early", "late", "lr"});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(a[0].value), 7);
  EXPECT_EQ(std::get<std::string>(a[1].value), "value");
  EXPECT_EQ(std::get<double>(a[2].value), 0.25);
}

TEST(Hdf5, APreparedFileNotFinishedLeavesNothing) {
  const uint64_t seed = fresh_seed();
  const TempDir dir;
  const std::string path = dir.file("p.h5");
  const Vocab vocab = random_vocab(20, seed);
  const HostTable vectors = random_table(20, 5, seed + 1);
  {
    PreparedH5 file = prepare_embeddings_h5(path, vocab, {{"vectors", 20, 5}}, {});
    EXPECT_EQ(entries(dir.path()).size(), 1u);
  }
  EXPECT_TRUE(entries(dir.path()).empty());
  // Tables other than those prepared are refused, and the prepared file goes.
  PreparedH5 file = prepare_embeddings_h5(path, vocab, {{"vectors", 20, 6}}, {});
  EXPECT_THROW(finish_embeddings_h5(file, {{"vectors", &vectors}}), Error);
  EXPECT_FALSE(file.ready());
  EXPECT_TRUE(entries(dir.path()).empty());
  EXPECT_THROW(finish_embeddings_h5(file, {{"vectors", &vectors}}), Error);
  EXPECT_THROW(prepare_embeddings_h5(path, vocab, {{"vectors", 21, 5}}, {}), Error);
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(Hdf5, OverwriteReplacesTheFile) {
  const uint64_t seed = fresh_seed();
  const TempDir dir;
  const std::string path = dir.file("e.h5");
  write_embeddings_h5(path, random_vocab(50, seed), random_table(50, 10, seed), nullptr,
                      sample_attributes(seed));
  const Vocab vocab = random_vocab(7, seed + 3);
  const HostTable vectors = random_table(7, 4, seed + 4);
  write_embeddings_h5(path, vocab, vectors, nullptr, {});
  expect_same(read_embeddings_h5(path), vocab, vectors);
  const std::vector<Attribute> left = read_attributes_h5(path);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, kVersionAttribute);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"e.h5"});
}

TEST(Hdf5, FailedWriteLeavesNoFileAndPrintsNothing) {
  const uint64_t seed = fresh_seed();
  const TempDir dir;
  const Vocab vocab = random_vocab(5, seed);
  const HostTable vectors = random_table(5, 3, seed);

  testing::internal::CaptureStderr();
  const std::string missing = dir.file("missing/e.h5");
  expect_error_naming([&] { write_embeddings_h5(missing, vocab, vectors, nullptr, {}); },
                      "cannot write '" + missing + "': ");
  // A failure half-way (the second attribute of the same name) removes the temporary file.
  const std::string path = dir.file("e.h5");
  expect_error_naming(
      [&] {
        write_embeddings_h5(path, vocab, vectors, nullptr,
                            {{"a", int64_t{1}}, {"a", std::string("again")}});
      },
      "cannot write '" + path + "': cannot write attribute 'a'");
  const HostTable wrong_rows = random_table(4, 3, seed);
  expect_error_naming([&] { write_embeddings_h5(path, vocab, wrong_rows, nullptr, {}); },
                      "has 5 words but the vectors 4 rows");
  const HostTable wrong_dim = random_table(5, 2, seed);
  expect_error_naming([&] { write_embeddings_h5(path, vocab, vectors, &wrong_dim, {}); },
                      "differ in shape");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(Hdf5, ReadErrorsNameThePath) {
  const TempDir dir;
  testing::internal::CaptureStderr();
  const std::string absent = dir.file("absent.h5");
  expect_error_naming([&] { read_embeddings_h5(absent); }, "cannot read '" + absent + "'");
  const std::string text = dir.file("text.h5");
  write_file(text, "this is not an HDF5 file\n");
  expect_error_naming([&] { read_embeddings_h5(text); },
                      "cannot read '" + text + "': not an HDF5 file");
  expect_error_naming([&] { read_attributes_h5(text); },
                      "cannot read '" + text + "': not an HDF5 file");
  expect_error_naming([&] { read_embeddings_h5(dir.path()); }, "not a regular file");

  // A real HDF5 file cut short.
  const uint64_t seed = fresh_seed();
  const std::string good = dir.file("good.h5");
  write_embeddings_h5(good, random_vocab(200, seed), random_table(200, 50, seed), nullptr, {});
  const std::string cut = dir.file("cut.h5");
  const std::string bytes = read_file(good);
  write_file(cut, bytes.substr(0, bytes.size() / 2));
  expect_error_naming([&] { read_embeddings_h5(cut); }, "cannot read '" + cut + "'");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Hdf5Python, H5pyReadsOurFiles) {
  PAGEDW2V_REQUIRE_PYTHON("numpy, h5py");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const Vocab vocab = random_vocab(123, seed);
  const HostTable vectors = random_table(123, 19, seed + 1);
  const HostTable context = random_table(123, 19, seed + 2);
  write_embeddings_h5(dir.file("e.h5"), vocab, vectors, &context, sample_attributes(seed));

  ASSERT_EQ(0, run_python(dir, R"(
import h5py, numpy as np
def text(x):
    return x.decode('utf-8') if isinstance(x, bytes) else x
with h5py.File('e.h5', 'r') as f:
    v, c = f['vectors'], f['context_vectors']
    assert v.dtype == np.float32 and v.shape == (123, 19), (v.dtype, v.shape)
    assert c.dtype == np.float32 and c.shape == (123, 19), (c.dtype, c.shape)
    v[()].astype('<f4').tofile('vectors.f32')
    c[()].astype('<f4').tofile('context.f32')
    words = [text(w) for w in f['vocab/words'][()]]
    with open('words.txt', 'w', encoding='utf-8', newline='\n') as out:
        out.write('\n'.join(words) + '\n')
    counts = f['vocab/counts']
    assert counts.dtype == np.int64, counts.dtype
    counts[()].astype('<i8').tofile('counts.i64')
    with open('attrs.txt', 'w', encoding='utf-8', newline='\n') as out:
        for name in sorted(f.attrs):
            value = f.attrs[name]
            kind = 'i' if isinstance(value, (np.integer, int)) else 'f' if isinstance(value, (np.floating, float)) else 's'
            out.write('%s=%s:%s\n' % (name, kind, text(value) if kind == 's' else repr(value.item() if hasattr(value, 'item') else value)))
)"));
  EXPECT_EQ(read_file(dir.file("vectors.f32")), bytes_of(vectors.data(), 123 * 19));
  EXPECT_EQ(read_file(dir.file("context.f32")), bytes_of(context.data(), 123 * 19));
  std::string words;
  for (const std::string_view w : vocab.words()) {
    words += w;
    words += '\n';
  }
  EXPECT_EQ(read_file(dir.file("words.txt")), words);
  std::vector<int64_t> counts(vocab.counts().begin(), vocab.counts().end());
  EXPECT_EQ(read_file(dir.file("counts.i64")),
            std::string(reinterpret_cast<const char*>(counts.data()), counts.size() * 8));
  EXPECT_EQ(read_file(dir.file("attrs.txt")),
            "alpha=f:0.025\ncorpus=s:/data/text8 — ünïcode\ndim=i:300\nnegative_count=i:-5\n"
            "pagedw2v_version=s:" +
                std::string(pagedw2v::version()) +
                "\nsample=f:0.0001\nseed=i:" + std::to_string(seed) + "\nversion=s:0.1.0\n");
}

TEST(Hdf5Python, ReadsFilesH5pyWrote) {
  PAGEDW2V_REQUIRE_PYTHON("numpy, h5py");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  ASSERT_EQ(0, run_python(dir, R"(
import h5py, numpy as np
rng = np.random.default_rng()" + std::to_string(seed) +
                                   R"()
a = rng.standard_normal((31, 6))
a.astype('<f4').tofile('expected.f32')
words = ['w%d' % i for i in range(31)]
def make(name, vectors=a, words=words, counts=None, fixed=False, skip_words=False):
    with h5py.File(name, 'w') as f:
        if vectors is not None:
            f['vectors'] = vectors
        if not skip_words:
            f['vocab/words'] = np.array([w.encode() for w in words], dtype='S') if fixed else words
        if counts is not None:
            f['vocab/counts'] = counts
make('f64_fixed.h5', counts=np.arange(31, 0, -1, dtype=np.uint32), fixed=True)
make('vlen_f32.h5', vectors=a.astype(np.float32))
make('no_vectors.h5', vectors=None)
make('no_words.h5', skip_words=True)
make('int_vectors.h5', vectors=np.ones((31, 6), dtype=np.int32))
make('three_d.h5', vectors=np.ones((31, 2, 3), dtype=np.float32))
make('short_words.h5', words=words[:30])
make('short_counts.h5', counts=np.arange(30))
make('negative_counts.h5', counts=-np.arange(31))
make('string_counts.h5', counts=np.array([b'x'] * 31))
with h5py.File('unwritten.h5', 'w') as f:
    f.create_dataset('vectors', shape=(1 << 30, 1 << 10), dtype='f4')
with h5py.File('chunked_huge.h5', 'w') as f:
    f.create_dataset('vectors', shape=(1 << 36, 1 << 10), dtype='f4', chunks=(1, 16))
)"));
  const std::string expected = read_file(dir.file("expected.f32"));
  std::vector<std::string> words;
  for (int i = 0; i < 31; ++i) words.push_back("w" + std::to_string(i));

  const LoadedEmbeddings fixed = read_embeddings_h5(dir.file("f64_fixed.h5"));
  EXPECT_EQ(fixed.rows, 31u);
  EXPECT_EQ(fixed.dim, 6u);
  EXPECT_EQ(bytes_of(fixed.vectors.data(), fixed.vectors.size()), expected);
  EXPECT_EQ(fixed.words, words);
  ASSERT_EQ(fixed.counts.size(), 31u);
  EXPECT_EQ(fixed.counts.front(), 31u);
  EXPECT_EQ(fixed.counts.back(), 1u);

  const LoadedEmbeddings vlen = read_embeddings_h5(dir.file("vlen_f32.h5"));
  EXPECT_EQ(bytes_of(vlen.vectors.data(), vlen.vectors.size()), expected);
  EXPECT_EQ(vlen.words, words);
  EXPECT_TRUE(vlen.counts.empty());

  testing::internal::CaptureStderr();
  const std::pair<const char*, const char*> bad[] = {
      {"no_vectors.h5", "no /vectors dataset"},
      {"no_words.h5", "no /vocab/words dataset"},
      {"int_vectors.h5", "/vectors is not floating point"},
      {"three_d.h5", "/vectors has 3 dimensions, expected 2"},
      {"short_words.h5", "/vocab/words has 30 words but /vectors 31 rows"},
      {"short_counts.h5", "/vocab/counts has 30 entries"},
      {"negative_counts.h5", "/vocab/counts holds a negative count"},
      {"string_counts.h5", "/vocab/counts does not hold integers"},
      {"unwritten.h5", "/vectors holds less data than its shape needs"},
      {"chunked_huge.h5", "/vectors holds less data than its shape needs"},
  };
  for (const auto& [name, fragment] : bad) {
    SCOPED_TRACE(name);
    expect_error_naming([&] { read_embeddings_h5(dir.file(name)); },
                        "cannot read '" + dir.file(name) + "': " + fragment);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// ---------------------------------------------------------------------------------------------
// The integrity record, and files that try to make the reader read elsewhere or too much

/// An embeddings file of ours with `rows` random rows of dimension 3.
std::string our_file(const TempDir& dir, const std::string& name, uint32_t rows = 9) {
  const Vocab vocab = random_vocab(rows, 5);
  const HostTable table = random_table(rows, 3, 6);
  write_embeddings_h5(dir.file(name), vocab, table, nullptr, {});
  return dir.file(name);
}

/// Edits the file through the HDF5 C API; then seals it again (a file of ours that holds the
/// edit), or wipes the record (a file from another program).
enum class After { kSeal, kWipe };
void edit_h5(const std::string& path, const std::function<void(hid_t)>& edit, After after) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  edit(file);
  ASSERT_GE(H5Fclose(file), 0);
  if (after == After::kSeal) {
    seal_h5_file(path);
  } else {
    std::string bytes = read_file(path);
    std::fill(bytes.begin(), bytes.begin() + 64, '\0');
    write_file(path, bytes);
  }
}

/// Replaces /vectors by a `rows` x 3 float dataset made with `dcpl`, values left unwritten.
void replace_vectors(hid_t file, hid_t dcpl, hsize_t rows = 9) {
  ASSERT_GE(H5Ldelete(file, "vectors", H5P_DEFAULT), 0);
  const hsize_t dims[2] = {rows, 3};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t set =
      H5Dcreate2(file, "vectors", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(set, 0);
  H5Dclose(set);
  H5Sclose(space);
}

TEST(Hdf5Integrity, XxHash64MatchesTheReference) {
  // The reference implementation's values (xxhsum -H64).
  const auto hash = [](const std::string& s) {
    Xxh64 h;
    h.update(s.data(), s.size());
    return h.digest();
  };
  EXPECT_EQ(hash(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(hash("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(hash("abc"), 0x44BC2CF5AD770999ull);
  // Fed in pieces, the same as in one piece.
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7);
  Xxh64 pieces;
  for (size_t at = 0; at < text.size(); at += 13) {
    pieces.update(text.data() + at, std::min<size_t>(13, text.size() - at));
  }
  EXPECT_EQ(pieces.digest(), hash(text));
}

TEST(Hdf5Integrity, OurFilesAreVerifiedBeforeParsing) {
  const TempDir dir;
  const std::string path = our_file(dir, "e.h5");
  EXPECT_EQ(h5_integrity(path), H5Integrity::kVerified);
  const std::string good = read_file(path);

  // Any byte after the user block is covered: libhdf5 never sees a damaged file of ours.
  for (const size_t at : {size_t{512}, size_t{600}, good.size() / 2, good.size() - 1}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    write_file(path, bad);
    expect_error_naming([&] { read_embeddings_h5(path); },
                        "cannot read '" + path +
                            "': the file is damaged (its checksum does not match its contents)");
  }
  write_file(path, good + "x");
  expect_error_naming([&] { read_attributes_h5(path); }, "the file is damaged (");
  write_file(path, good.substr(0, good.size() - 100));
  expect_error_naming([&] { read_embeddings_h5(path); }, "the file is damaged (");
  std::string record = good;
  record[20] = 'z';  // inside the hex digits
  write_file(path, record);
  expect_error_naming([&] { read_embeddings_h5(path); }, "its checksum record cannot be read");
}

TEST(Hdf5Integrity, TheHashOfPiecesIsTheHashOfTheirHashes) {
  const TempDir dir;
  const std::string path = dir.file("bytes");
  std::mt19937_64 rng(fresh_seed());
  std::string bytes(100000 + rng() % 5000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  write_file(path, bytes);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const uint64_t offset = 100, n = bytes.size() - offset;
  for (const uint64_t piece : {uint64_t{4096}, uint64_t{777}, uint64_t{1} << 20}) {
    Xxh64 all;
    for (uint64_t at = 0; at < n; at += piece) {
      Xxh64 h;
      h.update(bytes.data() + offset + at, std::min(piece, n - at));
      const uint64_t d = h.digest();
      unsigned char le[8];
      for (int b = 0; b < 8; ++b) le[b] = static_cast<unsigned char>(d >> (8 * b));
      all.update(le, sizeof le);
    }
    for (const uint32_t threads : {1u, 3u, 16u}) {
      EXPECT_EQ(xxh64_of_file_pieces(fd, offset, n, piece, threads, path), all.digest())
          << "piece " << piece << ", " << threads << " threads";
    }
  }
  EXPECT_THROW(xxh64_of_file_pieces(fd, offset, n + 1, 4096, 4, path), Error);
  ::close(fd);
}

TEST(Hdf5Integrity, RecordsOfEarlierVersionsAreChecked) {
  // Files written before the hash was taken in pieces hold the XXH64 of the bytes whole.
  const TempDir dir;
  const std::string path = our_file(dir, "e.h5");
  const std::string good = read_file(path);
  Xxh64 whole;
  whole.update(good.data() + 512, good.size() - 512);
  char line[96];
  const int n = std::snprintf(line, sizeof line, "pagedw2v-xxh64 %016llx %llu\n",
                              static_cast<unsigned long long>(whole.digest()),
                              static_cast<unsigned long long>(good.size()));
  std::string old = good;
  old.replace(0, static_cast<size_t>(n), std::string(line, static_cast<size_t>(n)));
  std::fill(old.begin() + n, old.begin() + 512, '\0');
  write_file(path, old);
  EXPECT_EQ(h5_integrity(path), H5Integrity::kVerified);
  old[good.size() / 2] = static_cast<char>(old[good.size() / 2] ^ 0x01);
  write_file(path, old);
  expect_error_naming([&] { read_embeddings_h5(path); },
                      "the file is damaged (its checksum does not match its contents)");

  // A piece size other than the 64 MiB written is a record that cannot be read: a tiny one (not
  // a slow check), and one that cuts this small file into the same single piece.
  const size_t last_space =
      good.find('\n') == std::string::npos ? 0 : good.rfind(' ', good.find('\n'));
  ASSERT_GT(last_space, 0u);
  ASSERT_EQ(good.substr(last_space + 1, good.find('\n') - last_space - 1), "67108864");
  for (const char* piece : {"64", "69108864"}) {
    std::string other = good;
    other.replace(last_space + 1, other.find('\n') - last_space - 1, piece);
    write_file(path, other);
    expect_error_naming([&] { read_embeddings_h5(path); }, "its checksum record cannot be read");
  }
}

TEST(Hdf5Integrity, FilesWithoutTheRecordAreReadThroughAChild) {
  const TempDir dir;
  const std::string path = our_file(dir, "e.h5");
  const LoadedEmbeddings before = read_embeddings_h5(path);
  edit_h5(
      path, [](hid_t) {}, After::kWipe);
  EXPECT_EQ(h5_integrity(path), H5Integrity::kNone);
  const LoadedEmbeddings after = read_embeddings_h5(path);
  EXPECT_EQ(after.words, before.words);
  EXPECT_EQ(after.vectors, before.vectors);
  // An error found in the child is the reader's error.
  edit_h5(
      path, [](hid_t file) { ASSERT_GE(H5Ldelete(file, "vectors", H5P_DEFAULT), 0); },
      After::kWipe);
  expect_error_naming([&] { read_embeddings_h5(path); },
                      "cannot read '" + path + "': no /vectors dataset");
  // seal_h5_file refuses a file with no user block rather than overwrite its superblock.
  std::string bytes = read_file(path);
  write_file(path, bytes.substr(512));
  expect_error_naming([&] { seal_h5_file(path); }, "no user block");
}

// Only the child that never ends meets the time limit: the others run under one far above what
// they take, so that a loaded machine cannot make them miss it.
TEST(Hdf5Isolation, ACrashOrAHangInTheChildIsOneError) {
  IsolationLimits limits;
  limits.seconds = kNoHangSeconds;
  IsolationLimits short_limit;
  short_limit.seconds = 1;
  EXPECT_NO_THROW(run_isolated("p: ", limits, [] {}));
  expect_error_naming([&] { run_isolated("p: ", limits, [] { throw Error("p: refused"); }); },
                      "p: refused");
  expect_error_naming([&] { run_isolated("p: ", limits, [] { ::raise(SIGSEGV); }); },
                      "p: the HDF5 library crashed reading it (");
  expect_error_naming([&] { run_isolated("p: ", limits, [] { ::abort(); }); },
                      "p: the HDF5 library crashed reading it (");
  expect_error_naming(
      [&] {
        run_isolated("p: ", short_limit, [] {
          for (;;) ::pause();
        });
      },
      "p: reading it did not finish within 1 s");
  expect_error_naming([&] { run_isolated("p: ", limits, [] { ::_exit(3); }); },
                      "p: the HDF5 library crashed reading it (exit status 3)");
}

// What a child process returns comes back whole, however long, whatever its bytes.
TEST(Hdf5Isolation, AReplyComesBackWhole) {
  IsolationLimits limits;
  limits.seconds = kNoHangSeconds;
  std::string want((1 << 20) + 7, '\0');
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(i * 131 + i / 977);
  EXPECT_EQ(run_isolated_reply("p: ", limits, [&] { return want; }), want);
  EXPECT_EQ(run_isolated_reply("p: ", limits, [] { return std::string(); }), "");
  expect_error_naming(
      [&] {
        run_isolated_reply("p: ", limits, []() -> std::string { throw Error("p: refused"); });
      },
      "p: refused");
}

// A file without our record is parsed in a child process only, and what comes back from it is
// what the file holds: its attributes of every kind, its words, counts and vectors.
TEST(Hdf5Untrusted, AFileWithoutItsRecordIsReadApartAndReadsTheSame) {
  const TempDir dir;
  const Vocab vocab = random_vocab(9, 5);
  const HostTable table = random_table(9, 3, 6);
  const std::vector<Attribute> attrs = {
      {"count", int64_t{-42}}, {"rate", 0.125}, {"name", std::string("a b\tc")}};
  write_embeddings_h5(dir.file("ours.h5"), vocab, table, nullptr, attrs);
  std::string bytes = read_file(dir.file("ours.h5"));
  std::fill(bytes.begin(), bytes.begin() + 64, '\0');
  write_file(dir.file("foreign.h5"), bytes);
  ASSERT_EQ(h5_integrity(dir.file("foreign.h5")), H5Integrity::kNone);
  const LoadedEmbeddings a = read_embeddings_h5(dir.file("ours.h5"));
  const LoadedEmbeddings b = read_embeddings_h5(dir.file("foreign.h5"));
  EXPECT_EQ(b.words, a.words);
  EXPECT_EQ(b.counts, a.counts);
  EXPECT_EQ(b.vectors, a.vectors);
  EXPECT_EQ(b.rows, a.rows);
  EXPECT_EQ(b.dim, a.dim);
  EXPECT_EQ(b.format, a.format);
  EXPECT_FALSE(b.vectors.empty());
  EXPECT_TRUE(read_embeddings_h5(dir.file("foreign.h5"), false).vectors.empty());
  const std::vector<std::string> names = {"count", "rate", "name", "absent"};
  const std::vector<Attribute> x = read_attributes_h5(dir.file("ours.h5"), names);
  const std::vector<Attribute> y = read_attributes_h5(dir.file("foreign.h5"), names);
  ASSERT_EQ(y.size(), 3u);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i].name, x[i].name);
    EXPECT_EQ(y[i].value, x[i].value);
  }
}

TEST(Hdf5Untrusted, ExternalRawStorageIsRefused) {
  const TempDir dir;
  const std::string secret = dir.file("secret.txt");
  write_file(secret, std::string(9 * 3 * 4, 'S'));
  for (const After after : {After::kSeal, After::kWipe}) {
    const std::string path = our_file(dir, "external.h5");
    edit_h5(
        path,
        [&](hid_t file) {
          const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
          ASSERT_GE(H5Pset_external(dcpl, secret.c_str(), 0, H5F_UNLIMITED), 0);
          replace_vectors(file, dcpl);
          H5Pclose(dcpl);
        },
        after);
    const std::string why = "/vectors keeps its data in external files";
    expect_error_naming([&] { read_embeddings_h5(path); }, why);
    HostTable out(9, 3, "t", "");
    expect_error_naming([&] { read_matrix_h5(path, "vectors", out); }, why);
  }
}

TEST(Hdf5Untrusted, ExternalAndSoftLinksAreNotFollowed) {
  const TempDir dir;
  const std::string other = our_file(dir, "other.h5");
  for (const After after : {After::kSeal, After::kWipe}) {
    const std::string path = our_file(dir, "links.h5");
    edit_h5(
        path,
        [&](hid_t file) {
          ASSERT_GE(H5Ldelete(file, "vectors", H5P_DEFAULT), 0);
          ASSERT_GE(H5Lcreate_external(other.c_str(), "vectors", file, "vectors", H5P_DEFAULT,
                                       H5P_DEFAULT),
                    0);
        },
        after);
    expect_error_naming([&] { read_embeddings_h5(path); },
                        "/vectors is a link to another object or file");
    const std::string soft = our_file(dir, "soft.h5");
    edit_h5(
        soft,
        [&](hid_t file) {
          ASSERT_GE(H5Lmove(file, "vocab", file, "elsewhere", H5P_DEFAULT, H5P_DEFAULT), 0);
          ASSERT_GE(H5Lcreate_soft("/elsewhere", file, "vocab", H5P_DEFAULT, H5P_DEFAULT), 0);
        },
        after);
    expect_error_naming([&] { read_embeddings_h5(soft); },
                        "/vocab is a link to another object or file");
  }
}

TEST(Hdf5Untrusted, UnknownFiltersAndUnboundedSizesAreRefusedBeforeAllocating) {
  const TempDir dir;
  for (const After after : {After::kSeal, After::kWipe}) {
    const std::string filtered = our_file(dir, "filter.h5");
    edit_h5(
        filtered,
        [&](hid_t file) {
          const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
          const hsize_t chunk[2] = {3, 3};
          ASSERT_GE(H5Pset_chunk(dcpl, 2, chunk), 0);
          ASSERT_GE(H5Pset_filter(dcpl, 32000, H5Z_FLAG_OPTIONAL, 0, nullptr), 0);
          replace_vectors(file, dcpl);
          H5Pclose(dcpl);
        },
        after);
    expect_error_naming([&] { read_embeddings_h5(filtered); },
                        "/vectors is stored through filter 32000");

    // 2^40 x 3 compressed floats declared, a few bytes stored: refused, nothing allocated.
    const std::string bomb = our_file(dir, "bomb.h5");
    edit_h5(
        bomb,
        [&](hid_t file) {
          const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
          const hsize_t chunk[2] = {1 << 16, 3};
          ASSERT_GE(H5Pset_chunk(dcpl, 2, chunk), 0);
          ASSERT_GE(H5Pset_deflate(dcpl, 9), 0);
          replace_vectors(file, dcpl, hsize_t{1} << 40);
          H5Pclose(dcpl);
        },
        after);
    expect_error_naming([&] { read_embeddings_h5(bomb); },
                        "/vectors holds less data than its shape needs");
  }
}

}  // namespace
}  // namespace pagedw2v
