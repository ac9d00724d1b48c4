#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "io/word2vec_format.hpp"
#include "model/host_table.hpp"
#include "test_util.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::bytes_of;
using testing_util::entries;
using testing_util::expect_error_naming;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::run_python;
using testing_util::TempDir;
using testing_util::write_file;

// Random values over many magnitudes, plus the awkward ones for a text format: the extremes of
// float32, a subnormal and a negative zero.
/// testing_util::random_vocab, shaped for this file.
Vocab random_vocab(uint32_t n, uint64_t seed) {
  testing_util::VocabShape shape;
  shape.unicode = true;
  return testing_util::random_vocab(n, seed, shape);
}

HostTable random_table(uint64_t rows, uint32_t dim, uint64_t seed) {
  HostTable t(rows, dim, "test table", "");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 38);
  for (uint64_t i = 0; i < rows * dim; ++i) {
    t.data()[i] = normal(rng) * std::pow(10.0f, static_cast<float>(exponent(rng) / 4));
  }
  const float special[] = {std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::lowest(),
                           std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::denorm_min(),
                           -0.0f,
                           1.0f / 3.0f};
  for (size_t i = 0; i < std::size(special) && i < rows * dim; ++i) t.data()[i] = special[i];
  return t;
}

void expect_same(const LoadedEmbeddings& e, const Vocab& vocab, const HostTable& table) {
  EXPECT_EQ(e.rows, table.rows());
  EXPECT_EQ(e.dim, table.dim());
  EXPECT_EQ(e.words, vocab.words().to_strings());
  EXPECT_TRUE(e.counts.empty());
  ASSERT_EQ(e.vectors.size(), table.rows() * table.dim());
  // Bitwise: the text format must round-trip every float32, -0 and subnormals included.
  EXPECT_EQ(bytes_of(e.vectors.data(), e.vectors.size()),
            bytes_of(table.data(), table.rows() * table.dim()));
}

class Word2vecRoundTrip : public testing::TestWithParam<std::tuple<uint32_t, uint32_t, bool>> {};

TEST_P(Word2vecRoundTrip, ReadsBackWhatItWrote) {
  const auto [rows, dim, binary] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const Vocab vocab = random_vocab(rows, seed);
  const HostTable table = random_table(rows, dim, seed + 1);
  const std::string path = dir.file(binary ? "v.bin" : "v.txt");
  if (binary) {
    write_word2vec_bin(path, vocab, table);
  } else {
    write_word2vec_txt(path, vocab, table);
  }
  expect_same(read_word2vec(path, binary), vocab, table);
  EXPECT_EQ(entries(dir.path()).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Word2vecRoundTrip,
                         testing::Combine(testing::Values(1u, 9u, 500u, 20000u),
                                          testing::Values(1u, 7u, 100u), testing::Bool()));

TEST(Word2vec, EmptyVocabulary) {
  const TempDir dir;
  const Vocab vocab = Vocab::from_words({}, {});
  const HostTable table(0, 5, "test table", "");
  write_word2vec_bin(dir.file("v.bin"), vocab, table);
  write_word2vec_txt(dir.file("v.txt"), vocab, table);
  EXPECT_EQ(read_file(dir.file("v.bin")), "0 5\n");
  EXPECT_EQ(read_file(dir.file("v.txt")), "0 5\n");
  EXPECT_EQ(read_word2vec(dir.file("v.bin"), true).rows, 0u);
  EXPECT_EQ(read_word2vec(dir.file("v.txt"), false).dim, 5u);
}

TEST(Word2vec, BinaryLayoutIsWord2vecs) {
  const TempDir dir;
  const Vocab vocab = Vocab::from_words({"ab", "c"}, {3, 1});
  HostTable table(2, 3, "test table", "");
  const float values[] = {0.5f, -1.0f, 0.25f, 3.0f, 1e-3f, -7.5f};
  std::memcpy(table.data(), values, sizeof values);
  write_word2vec_bin(dir.file("v.bin"), vocab, table);
  const std::string expected =
      "2 3\nab " + bytes_of(values, 3) + "\nc " + bytes_of(values + 3, 3) + "\n";
  EXPECT_EQ(read_file(dir.file("v.bin")), expected);
}

TEST(Word2vec, TextLayoutIsWord2vecsWithShortestDigits) {
  const TempDir dir;
  const Vocab vocab = Vocab::from_words({"ab", "c"}, {3, 1});
  HostTable table(2, 3, "test table", "");
  const float values[] = {0.5f, -1.0f, 0.1f, 3.4028235e38f, 1e-3f, -7.5f};
  std::memcpy(table.data(), values, sizeof values);
  write_word2vec_txt(dir.file("v.txt"), vocab, table);
  EXPECT_EQ(read_file(dir.file("v.txt")), "2 3\nab 0.5 -1 0.1\nc 3.4028235e+38 0.001 -7.5\n");
}

TEST(Word2vec, ReadingIsTolerant) {
  const TempDir dir;
  const float values[] = {0.5f, -1.0f, 0.25f, 3.0f, 1e-3f, -7.5f};
  // Binary without the '\n' after each row, and with a "\r\n" header.
  write_file(dir.file("a.bin"),
             "2 3\r\nab " + bytes_of(values, 3) + "c " + bytes_of(values + 3, 3));
  // Binary with extra newlines between rows and at the end.
  write_file(dir.file("b.bin"),
             "2 3\nab " + bytes_of(values, 3) + "\n\nc " + bytes_of(values + 3, 3) + "\n\n");
  // word2vec.c's "%lf " text (trailing space), CRLF, tabs, '+' signs and blank lines.
  write_file(dir.file("a.txt"),
             "2 3 \r\nab 0.500000 -1.000000 0.250000 \r\n\r\nc\t3 +0.001  -7.5e0\r\n\n");
  for (const auto& [name, binary] :
       {std::pair{"a.bin", true}, std::pair{"b.bin", true}, std::pair{"a.txt", false}}) {
    SCOPED_TRACE(name);
    const LoadedEmbeddings e = read_word2vec(dir.file(name), binary);
    EXPECT_EQ(e.rows, 2u);
    EXPECT_EQ(e.dim, 3u);
    EXPECT_EQ(e.words, (std::vector<std::string>{"ab", "c"}));
    EXPECT_EQ(e.vectors, std::vector<float>(values, values + 6));
  }
}

TEST(Word2vec, RejectsBadFilesWithAClearError) {
  const TempDir dir;
  const float values[] = {0.5f, -1.0f, 0.25f, 3.0f, 1e-3f, -7.5f};
  const std::string good_bin =
      "2 3\nab " + bytes_of(values, 3) + "\nc " + bytes_of(values + 3, 3) + "\n";
  struct Case {
    const char* name;
    bool binary;
    std::string bytes;
    const char* fragment;
  };
  const Case cases[] = {
      {"empty", false, "", "empty file"},
      {"header_words", false, "two three\n", "expected the header \"V D\""},
      {"header_one", false, "2\n", "expected the header \"V D\""},
      {"header_extra", false, "2 3 4\n", "unexpected text at the end of the line"},
      {"header_negative", true, "-2 3\n", "expected the header \"V D\""},
      {"no_rows", false, "2 3\n", "truncated"},
      {"huge_header", true, "999999999999999 999999999\nab ", "truncated"},
      {"huge_header_txt", false, "999999999999999 999999999\nab 1", "truncated"},
      {"wide", false, "1 99999999999\nab 1\n", "dimension too large"},
      {"bin_cut", true, good_bin.substr(0, good_bin.size() - 3), "row 2: truncated row"},
      {"bin_no_space", true, "1 3\nabc", "truncated"},
      {"bin_extra", true, good_bin + "d " + bytes_of(values, 3), "row 3: more rows than the 2"},
      {"txt_short_row", false, "2 3\nab 1 2 3\nc 1 2\n", "line 3: fewer values"},
      {"txt_long_row", false, "2 3\nab 1 2 3 4\nc 1 2 3\n",
       "line 2: more values than the dimension in the header"},
      {"txt_bad_number", false, "2 3\nab 1 2 x3\nc 1 2 3\n", "line 2: bad number 'x3'"},
      {"txt_overflow", false, "1 1\nab 1e999\n", "bad number '1e999'"},
      {"txt_missing_row", false, "3 1\nab 1.00000\nc 2.0000000\n",
       "the header announces 3 rows, the file holds 2"},
      {"txt_extra_row", false, "1 1\nab 1\nc 2\n", "line 3: more rows than the 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file(std::string(c.name) + (c.binary ? ".bin" : ".txt"));
    write_file(path, c.bytes);
    expect_error_naming([&] { read_word2vec(path, c.binary); }, "cannot read '" + path + "'");
    expect_error_naming([&] { read_word2vec(path, c.binary); }, c.fragment);
  }
  expect_error_naming([&] { read_word2vec(dir.file("absent.bin"), true); }, "absent.bin");
}

TEST(Word2vec, RandomCorruptionNeverCrashes) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const Vocab vocab = random_vocab(20, seed);
  const HostTable table = random_table(20, 4, seed);
  write_word2vec_bin(dir.file("v.bin"), vocab, table);
  write_word2vec_txt(dir.file("v.txt"), vocab, table);
  std::mt19937_64 rng(seed);
  for (const bool binary : {true, false}) {
    const std::string good = read_file(dir.file(binary ? "v.bin" : "v.txt"));
    for (int i = 0; i < 300; ++i) {
      std::string bytes = good.substr(0, rng() % (good.size() + 1));
      for (int f = 0; f < 3 && !bytes.empty(); ++f)
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      write_file(dir.file("c"), bytes);
      try {
        const LoadedEmbeddings e = read_word2vec(dir.file("c"), binary);
        EXPECT_EQ(e.words.size(), e.rows);
        EXPECT_EQ(e.vectors.size(), e.rows * e.dim);
      } catch (const Error&) {
      }
    }
  }
}

TEST(Word2vec, FailedWritesLeaveNoFile) {
  const uint64_t seed = fresh_seed();
  const TempDir dir;
  const Vocab vocab = random_vocab(5, seed);
  const HostTable table = random_table(5, 3, seed);
  for (const bool binary : {true, false}) {
    const auto write = binary ? write_word2vec_bin : write_word2vec_txt;
    const std::string missing = dir.file("missing/v");
    expect_error_naming([&] { write(missing, vocab, table); }, "cannot write '" + missing + "'");
    const HostTable short_table = random_table(4, 3, seed);
    expect_error_naming([&] { write(dir.file("v"), vocab, short_table); },
                        "has 5 words but the table 4 rows");
    const Vocab spaced = Vocab::from_words({"a", "b c"}, {2, 1});
    const HostTable two = random_table(2, 3, seed);
    expect_error_naming([&] { write(dir.file("v"), spaced, two); },
                        "word 1 is empty or holds whitespace");
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(Word2vecPython, GensimReadsOurFiles) {
  PAGEDW2V_REQUIRE_PYTHON("numpy, gensim");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  const Vocab vocab = random_vocab(321, seed);
  const HostTable table = random_table(321, 23, seed + 1);
  write_word2vec_bin(dir.file("v.bin"), vocab, table);
  write_word2vec_txt(dir.file("v.txt"), vocab, table);
  ASSERT_EQ(0, run_python(dir, R"(
from gensim.models import KeyedVectors
for name, binary in [('v.bin', True), ('v.txt', False)]:
    kv = KeyedVectors.load_word2vec_format(name, binary=binary)
    assert kv.vectors.shape == (321, 23), kv.vectors.shape
    kv.vectors.astype('<f4').tofile(name + '.f32')
    with open(name + '.words', 'w', encoding='utf-8', newline='\n') as out:
        out.write('\n'.join(kv.index_to_key) + '\n')
)"));
  std::string words;
  for (const std::string_view w : vocab.words()) {
    words += w;
    words += '\n';
  }
  for (const char* name : {"v.bin", "v.txt"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(read_file(dir.file(std::string(name) + ".words")), words);
    const std::string got = read_file(dir.file(std::string(name) + ".f32"));
    ASSERT_EQ(got.size(), table.bytes());
    // gensim parses text through Python's float and then rounds to float32, which may differ
    // from a direct parse by one unit in the last place; the binary file must match exactly.
    const float* g = reinterpret_cast<const float*>(got.data());
    for (uint64_t i = 0; i < table.rows() * table.dim(); ++i) {
      const float want = table.data()[i];
      if (name == std::string("v.bin")) {
        ASSERT_EQ(std::memcmp(&g[i], &want, sizeof(float)), 0) << i;
      } else {
        ASSERT_LE(std::fabs(g[i] - want), std::fabs(std::nextafter(want, INFINITY) - want)) << i;
      }
    }
  }
}

TEST(Word2vecPython, ReadsFilesGensimWrote) {
  PAGEDW2V_REQUIRE_PYTHON("numpy, gensim");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir dir;
  ASSERT_EQ(0, run_python(dir, R"(
import numpy as np
from gensim.models import KeyedVectors
rng = np.random.default_rng()" + std::to_string(seed) +
                                   R"()
kv = KeyedVectors(vector_size=13)
words = ['w%d' % i for i in range(41)] + ['café']
kv.add_vectors(words, rng.standard_normal((42, 13)).astype(np.float32))
kv.save_word2vec_format('g.bin', binary=True)
kv.save_word2vec_format('g.txt', binary=False)
kv.vectors.astype('<f4').tofile('expected.f32')
)"));
  const std::string expected = read_file(dir.file("expected.f32"));
  std::vector<std::string> words;
  for (int i = 0; i < 41; ++i) words.push_back("w" + std::to_string(i));
  words.push_back("café");
  for (const auto& [name, binary] : {std::pair{"g.bin", true}, std::pair{"g.txt", false}}) {
    SCOPED_TRACE(name);
    const LoadedEmbeddings e = read_word2vec(dir.file(name), binary);
    EXPECT_EQ(e.rows, 42u);
    EXPECT_EQ(e.dim, 13u);
    EXPECT_EQ(e.words, words);
    if (binary) {
      EXPECT_EQ(bytes_of(e.vectors.data(), e.vectors.size()), expected);
    } else {
      // gensim writes text with repr(), the shortest form for float32: also exact.
      const float* want = reinterpret_cast<const float*>(expected.data());
      for (size_t i = 0; i < e.vectors.size(); ++i) EXPECT_FLOAT_EQ(e.vectors[i], want[i]) << i;
    }
  }
}

}  // namespace
}  // namespace pagedw2v
