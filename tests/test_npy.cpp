#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "io/npy.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::entries;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::run_python;
using testing_util::TempDir;
using testing_util::write_file;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A hand-made .npy file: any version, any header text, any payload.
std::string npy_bytes(int major, const std::string& dict, const std::string& payload) {
  std::string header = dict;
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t unpadded = 8 + length_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < length_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + payload;
}

std::string payload_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

void expect_read_error(const std::string& path, const std::string& fragment) {
  try {
    read_npy(path);
    ADD_FAILURE() << "read_npy accepted " << path << " (expected: " << fragment << ")";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

struct Shape {
  uint64_t rows;
  uint32_t cols;
};

class NpyRoundTrip : public testing::TestWithParam<Shape> {};

TEST_P(NpyRoundTrip, ReadsBackWhatItWrote) {
  const Shape s = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::vector<float> data = random_floats(s.rows * s.cols, seed);
  write_npy(dir.file("m.npy"), data.data(), s.rows, s.cols);

  const NpyMatrix m = read_npy(dir.file("m.npy"));
  EXPECT_EQ(m.rows, s.rows);
  EXPECT_EQ(m.cols, s.cols);
  ASSERT_EQ(m.data.size(), data.size());
  EXPECT_EQ(m.data, data);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"m.npy"});
}

INSTANTIATE_TEST_SUITE_P(Shapes, NpyRoundTrip,
                         testing::Values(Shape{1, 1}, Shape{7, 3}, Shape{300, 64}, Shape{2, 1000},
                                         Shape{0, 5}, Shape{4, 0}));

// A matrix large enough that its rows are cut among writer threads: contiguous, and rows that
// lie apart (a stride wider than the row) gathered on the way.
TEST(Npy, LargeMatricesWrittenByThreadsReadBackWhole) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const uint64_t rows = 9001;
  const uint32_t cols = 2003, stride = cols + 5;
  const std::vector<float> data = random_floats(rows * stride, seed);
  write_npy(dir.file("whole.npy"), data.data(), rows * stride / cols, cols);
  const NpyMatrix whole = read_npy(dir.file("whole.npy"));
  ASSERT_EQ(whole.rows, rows * stride / cols);
  EXPECT_TRUE(std::equal(whole.data.begin(), whole.data.end(), data.begin()));

  write_npy(dir.file("strided.npy"), data.data(), rows, cols, stride);
  const NpyMatrix strided = read_npy(dir.file("strided.npy"));
  ASSERT_EQ(strided.rows, rows);
  ASSERT_EQ(strided.cols, cols);
  for (uint64_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(std::equal(data.begin() + r * stride, data.begin() + r * stride + cols,
                           strided.data.begin() + r * cols))
        << "row " << r;
  }
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"strided.npy", "whole.npy"}));
}

TEST(Npy, HeaderIsVersion1AlignedTo64Bytes) {
  const TempDir dir;
  const std::vector<float> data = random_floats(12 * 5, fresh_seed());
  write_npy(dir.file("m.npy"), data.data(), 12, 5);
  const std::string bytes = read_file(dir.file("m.npy"));

  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  const size_t header_length = static_cast<unsigned char>(bytes[8]) |
                               static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  const size_t data_start = 10 + header_length;
  EXPECT_EQ(data_start % 64, 0u);
  EXPECT_EQ(bytes[data_start - 1], '\n');
  const std::string header = bytes.substr(10, header_length);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (12, 5)"), std::string::npos) << header;
  EXPECT_EQ(bytes.size(), data_start + data.size() * sizeof(float));
  EXPECT_EQ(0, std::memcmp(bytes.data() + data_start, data.data(), data.size() * sizeof(float)));
}

TEST(Npy, ReadsVersions2And3AndOtherSpellings) {
  const TempDir dir;
  const std::vector<float> data = random_floats(6, fresh_seed());
  const std::string dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
      "{\"shape\": (3,2), \"fortran_order\": False, \"descr\": \"<f4\"}",
      "{'descr':'<f4','fortran_order':False,'shape':(3L, 2L)}",
  };
  int n = 0;
  for (int major : {1, 2, 3}) {
    for (const std::string& dict : dicts) {
      const std::string path = dir.file("v" + std::to_string(n++) + ".npy");
      write_file(path, npy_bytes(major, dict, payload_of(data)));
      const NpyMatrix m = read_npy(path);
      EXPECT_EQ(m.rows, 3u) << dict;
      EXPECT_EQ(m.cols, 2u) << dict;
      EXPECT_EQ(m.data, data) << dict;
    }
  }
}

TEST(Npy, RejectsBadFilesWithAClearError) {
  const TempDir dir;
  const std::vector<float> data = random_floats(6, fresh_seed());
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
  const std::string good = npy_bytes(1, good_dict, payload_of(data));

  struct Case {
    const char* name;
    std::string bytes;
    const char* fragment;
  };
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  std::string version4 = good;
  version4[6] = 4;
  std::string bad_length = good;
  bad_length[8] = '\xff';
  bad_length[9] = '\x7f';
  const Case cases[] = {
      {"empty", "", "not a NumPy .npy file"},
      {"magic", bad_magic, "not a NumPy .npy file"},
      {"text", "hello, this is not an array at all\n", "not a NumPy .npy file"},
      {"version", version4, "unsupported .npy format version 4.0"},
      {"header_cut", good.substr(0, 40), "truncated .npy header"},
      {"length_too_long", bad_length, "truncated .npy header"},
      {"preamble_cut", good.substr(0, 9), "truncated .npy header"},
      {"data_cut", good.substr(0, good.size() - 1), "truncated"},
      {"trailing", good + "xyz", "unexpected bytes after the data"},
      {"fortran",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", payload_of(data)),
       "Fortran"},
      {"f8",
       npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1), }",
                 payload_of(data)),
       "'<f8'"},
      {"big_endian",
       npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }",
                 payload_of(data)),
       "'>f4'"},
      {"structured",
       npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }",
                 payload_of(data)),
       "structured"},
      {"one_d",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", payload_of(data)),
       "2-D array, found shape (6,)"},
      {"three_d",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 2), }",
                 payload_of(data)),
       "2-D array, found shape (1, 3, 2)"},
      {"huge",
       npy_bytes(1,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, "
                 "1099511627776), }",
                 payload_of(data)),
       "too large"},
      {"huge_rows",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1), }",
                 payload_of(data)),
       "truncated"},
      {"wide",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296), }", ""),
       "too large"},
      {"overflow",
       npy_bytes(1,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, "
                 "1), }",
                 payload_of(data)),
       "dimension too large"},
      {"missing_key", npy_bytes(1, "{'descr': '<f4', 'shape': (3, 2), }", payload_of(data)),
       "lacks"},
      {"unknown_key",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x': 1}",
                 payload_of(data)),
       "unexpected key 'x'"},
      {"garbage_header", npy_bytes(1, "not a dict", payload_of(data)), "bad .npy header"},
      {"unterminated", npy_bytes(1, "{'descr: (3, 2)", payload_of(data)), "unterminated"},
      {"bad_bool",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 2), }",
                 payload_of(data)),
       "True or False"},
      {"after_dict",
       npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2)} extra",
                 payload_of(data)),
       "unexpected text"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file(std::string(c.name) + ".npy");
    write_file(path, c.bytes);
    expect_read_error(path, c.fragment);
  }
}

TEST(Npy, RandomCorruptionNeverCrashes) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::vector<float> data = random_floats(4 * 3, seed);
  write_npy(dir.file("m.npy"), data.data(), 4, 3);
  const std::string good = read_file(dir.file("m.npy"));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 500; ++i) {
    std::string bytes = good.substr(0, rng() % (good.size() + 1));
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips && !bytes.empty(); ++f) {
      bytes[rng() % std::min<size_t>(bytes.size(), 128)] = static_cast<char>(rng());
    }
    write_file(dir.file("c.npy"), bytes);
    try {
      const NpyMatrix m = read_npy(dir.file("c.npy"));
      EXPECT_EQ(m.data.size(), m.rows * m.cols);
    } catch (const Error&) {
    }
  }
}

TEST(Npy, MissingFileIsAnError) {
  const TempDir dir;
  EXPECT_THROW(read_npy(dir.file("absent.npy")), Error);
}

TEST(Npy, FailedWriteLeavesNoFile) {
  const TempDir dir;
  const std::vector<float> data = random_floats(6, fresh_seed());
  const std::string path = dir.file("missing/m.npy");
  try {
    write_npy(path, data.data(), 3, 2);
    ADD_FAILURE() << "write_npy into a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(Npy, OverwriteReplacesTheFileWholly) {
  const uint64_t seed = fresh_seed();
  const TempDir dir;
  const std::vector<float> first = random_floats(50 * 8, seed);
  const std::vector<float> second = random_floats(3 * 2, seed + 1);
  write_npy(dir.file("m.npy"), first.data(), 50, 8);
  write_npy(dir.file("m.npy"), second.data(), 3, 2);
  const NpyMatrix m = read_npy(dir.file("m.npy"));
  EXPECT_EQ(m.rows, 3u);
  EXPECT_EQ(m.data, second);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"m.npy"});
}

TEST(NpyPython, NumpyReadsOurFiles) {
  PAGEDW2V_REQUIRE_PYTHON("numpy");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const std::vector<float> data = random_floats(37 * 11, seed);
  write_npy(dir.file("m.npy"), data.data(), 37, 11);
  ASSERT_EQ(0, run_python(dir, R"(
import numpy as np
a = np.load('m.npy')
assert a.dtype == np.float32, a.dtype
assert a.shape == (37, 11), a.shape
assert a.flags['C_CONTIGUOUS']
m = np.load('m.npy', mmap_mode='r')
assert np.array_equal(np.asarray(m), a)
a.astype('<f4').tofile('out.f32')
)"));
  EXPECT_EQ(read_file(dir.file("out.f32")), payload_of(data));
}

TEST(NpyPython, ReadsFilesNumpyWrote) {
  PAGEDW2V_REQUIRE_PYTHON("numpy");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  ASSERT_EQ(0, run_python(dir, R"(
import numpy as np
a = np.random.default_rng()" + std::to_string(seed) +
                                   R"().standard_normal((23, 9)).astype('<f4')
a.tofile('expected.f32')
np.save('v1.npy', a)
for version in [(2, 0), (3, 0)]:
    with open('v%d.npy' % version[0], 'wb') as f:
        np.lib.format.write_array(f, a, version=version)
np.save('fortran.npy', np.asfortranarray(a))
np.save('f8.npy', a.astype(np.float64))
np.save('vector.npy', a[0])
)"));
  const std::string expected = read_file(dir.file("expected.f32"));
  for (const char* name : {"v1.npy", "v2.npy", "v3.npy"}) {
    SCOPED_TRACE(name);
    const NpyMatrix m = read_npy(dir.file(name));
    EXPECT_EQ(m.rows, 23u);
    EXPECT_EQ(m.cols, 9u);
    EXPECT_EQ(payload_of(m.data), expected);
  }
  expect_read_error(dir.file("fortran.npy"), "Fortran");
  expect_read_error(dir.file("f8.npy"), "'<f8'");
  expect_read_error(dir.file("vector.npy"), "2-D");
}

}  // namespace
}  // namespace pagedw2v
