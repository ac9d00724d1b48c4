// Corpus inputs: compressed files, several files, directories, bad input, files that shrink.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef PAGEDW2V_HAVE_ZSTD
#include <zstd.h>
#endif

#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "corpus/corpus.hpp"
#include "io/npy.hpp"
#include "io/word2vec_format.hpp"
#include "test_util.hpp"
#include "text/text_source.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

#ifdef PAGEDW2V_HAVE_ZSTD
std::string zstd(const std::string& text) {
  // With a checksum, as the zstd tool writes by default.
  std::string out(ZSTD_compressBound(text.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), text.data(), text.size());
  ZSTD_freeCCtx(cctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}
#endif

std::string sample_text(uint64_t seed, size_t words) {
  std::mt19937_64 rng(seed);
  std::string t;
  for (size_t i = 0; i < words; ++i) {
    t += "w" + std::to_string(std::min(rng() % 3000, rng() % 3000));
    t += rng() % 15 == 0 ? "\n" : " ";
  }
  return t;
}

std::string joined(const CorpusText& t) {
  std::string s;
  for (std::string_view p : t.parts()) s += std::string(p) + "|";
  return s;
}

void expect_error(const std::vector<std::string>& paths, const std::string& needle) {
  try {
    CorpusText::open(paths);
    ADD_FAILURE() << "no error for " << paths[0];
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(CorpusText, GzipAndZstdAreReadByTheirMagicBytesNotTheirNames) {
  TempDir dir;
  const std::string text = sample_text(testing_util::fresh_seed(), 200000);
  write_file(dir.file("plain.txt"), text);
  write_file(dir.file("packed.txt"), gzip(text));  // no .gz in the name
  // Two gzip members, as `cat a.gz b.gz` makes.
  write_file(dir.file("two.gz"), gzip(text.substr(0, 1000)) + gzip(text.substr(1000)));
  for (const char* name : {"plain.txt", "packed.txt", "two.gz"}) {
    EXPECT_EQ(joined(CorpusText::open({dir.file(name)})), text + "|") << name;
  }
#ifdef PAGEDW2V_HAVE_ZSTD
  write_file(dir.file("z.bin"), zstd(text));
  EXPECT_EQ(joined(CorpusText::open({dir.file("z.bin")})), text + "|");
#else
  PAGEDW2V_SKIP_WITHOUT("built without libzstd");
#endif
}

TEST(CorpusText, TruncatedOrCorruptCompressedFilesAreOneClearError) {
  TempDir dir;
  const std::string text = sample_text(testing_util::fresh_seed(), 100000);
  std::vector<std::pair<std::string, std::string>> packed = {{"gz", gzip(text)}};
#ifdef PAGEDW2V_HAVE_ZSTD
  packed.push_back({"zst", zstd(text)});
#endif
  for (const auto& [ext, data] : packed) {
    SCOPED_TRACE(ext);
    write_file(dir.file("cut." + ext), data.substr(0, data.size() / 2));
    expect_error({dir.file("cut." + ext)}, "truncated");
    write_file(dir.file("end." + ext), data.substr(0, data.size() - 3));
    expect_error({dir.file("end." + ext)}, "");
    std::string bad = data;
    for (size_t i = data.size() / 3; i < data.size() / 3 + 64; ++i) bad[i] ^= 0x5a;
    write_file(dir.file("bad." + ext), bad);
    expect_error({dir.file("bad." + ext)}, "corrupt");
  }
}

TEST(CorpusText, OtherFormatsAndBinaryDataAreRefused) {
  TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"BZh91AY&SY" + std::string(100, 'x'), "bzip2"},
      {std::string("\xfd"
                   "7zXZ\0\0\0",
                   8) +
           std::string(100, 'x'),
       "xz"},
      {std::string("PK\x03\x04", 4) + std::string(100, 'x'), "zip"},
  };
  for (const auto& [data, needle] : cases) {
    write_file(dir.file("f"), data);
    expect_error({dir.file("f")}, needle);
  }
  std::mt19937_64 rng(testing_util::fresh_seed());
  std::string random(1 << 16, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  write_file(dir.file("random"), random);
  expect_error({dir.file("random")}, "binary");
  write_file(dir.file("random.gz"), gzip(random));
  expect_error({dir.file("random.gz")}, "binary");
  // UTF-16 text is binary to a byte reader.
  std::string utf16;
  for (char c : sample_text(1, 2000)) utf16 += std::string(1, c) + '\0';
  write_file(dir.file("utf16"), utf16);
  expect_error({dir.file("utf16")}, "binary");
  // Latin-1 and scattered control bytes are still text.
  std::string latin1 = "caf\xe9 na\xefve \x01 \x1b[1m bold\n";
  for (int i = 0; i < 10; ++i) latin1 += latin1;
  write_file(dir.file("latin1"), latin1);
  EXPECT_EQ(CorpusText::open({dir.file("latin1")}).bytes(), latin1.size());
}

TEST(CorpusText, SeveralInputsAndDirectoriesKeepTheirOrder) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("d").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir.file("d/sub").c_str(), 0755), 0);
  write_file(dir.file("d/b.txt"), "two");
  write_file(dir.file("d/a.gz"), gzip("one"));
  write_file(dir.file("d/c"), "three");
  write_file(dir.file("d/.hidden"), "hidden");
  write_file(dir.file("d/sub/x.txt"), "nested");
  write_file(dir.file("first.txt"), "zero");
  const CorpusText t = CorpusText::open({dir.file("first.txt"), dir.file("d")});
  EXPECT_EQ(joined(t), "zero|one|two|three|");
  EXPECT_EQ(t.names().back(), dir.file("d/c"));
  ASSERT_EQ(::mkdir(dir.file("empty").c_str(), 0755), 0);
  expect_error({dir.file("empty")}, "holds no corpus files");
  expect_error({dir.file("missing.txt")}, "cannot open");
}

/// The corpus of two files in `dir`: `a` as plain text (mapped), `b` gzip-compressed (in memory).
CorpusText open_plain_and_gzip(const TempDir& dir, const std::string& a, const std::string& b) {
  write_file(dir.file("a.txt"), a);
  write_file(dir.file("b.gz"), gzip(b));
  return CorpusText::open({dir.file("a.txt"), dir.file("b.gz")});
}

TEST(CorpusText, FilesEndSentencesAndGiveTheVocabularyOfTheJoinedText) {
  TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  const std::string a = sample_text(seed, 30000), b = sample_text(seed + 1, 20000);
  const CorpusText t = open_plain_and_gzip(dir, a, b);
  const std::string text = a + "\n" + b;
  VocabOptions vo;
  vo.min_count = 2;
  vo.threads = 3;
  const Vocab v = Vocab::count(t.parts(), vo);
  const Vocab ref = Vocab::count_serial(text, vo);
  EXPECT_EQ(v.words(), ref.words());
  EXPECT_EQ(v.counts(), ref.counts());
  EncodeOptions eo;
  eo.threads = 3;
  const EncodedCorpus c = encode_corpus(t.parts(), v, eo);
  const EncodedCorpus r = encode_corpus_serial(text, ref, EncodeOptions{});
  EXPECT_EQ(c.tokens, r.tokens);
  EXPECT_EQ(c.sentence_starts, r.sentence_starts);
}

// A count that lets the text it has read go (the trainer's: CorpusText::release of each slice)
// reads the same words, and afterwards every part still reads back whole: a mapped file's pages
// come back from the file, and a decompressed part, held in memory, is never released (dropping
// its pages would zero them).
TEST(CorpusText, TextLetGoWhileCountedStillReadsTheSame) {
  TempDir dir;
  const uint64_t seed = testing_util::fresh_seed();
  const std::string a = sample_text(seed, 400000), b = sample_text(seed + 1, 300000);
  const CorpusText t = open_plain_and_gzip(dir, a, b);
  ASSERT_TRUE(t.mapped(0));
  ASSERT_FALSE(t.mapped(1));
  VocabOptions vo;
  vo.threads = 3;
  vo.min_bytes_per_thread = 1;
  vo.keep_tokens = true;
  vo.read_slice_bytes = 5000;  // pages released many times over
  size_t released = 0;
  std::mutex m;
  vo.read_done = [&](std::string_view s) {
    t.release(s);
    std::lock_guard<std::mutex> lock(m);
    released += s.size();
  };
  const Vocab v = Vocab::count(t.parts(), vo);
  EXPECT_EQ(released, t.bytes());
  const std::string text = a + "\n" + b;
  const Vocab ref = Vocab::count_serial(text, VocabOptions{});
  EXPECT_EQ(v.words(), ref.words());
  EXPECT_EQ(v.counts(), ref.counts());
  EXPECT_EQ(std::string(t.parts()[0]), a);
  EXPECT_EQ(std::string(t.parts()[1]), b);
  // A view that lies in no part is left alone.
  const std::string other = "not a part";
  t.release(other);
  EXPECT_EQ(other, "not a part");
}

TEST(CorpusText, AFileTruncatedWhileReadIsAnErrorNotACrash) {
  TempDir dir;
  const std::string text = sample_text(testing_util::fresh_seed(), 2000000);
  write_file(dir.file("c.txt"), text);
  const CorpusText t = CorpusText::open({dir.file("c.txt")});
  ASSERT_EQ(::truncate(dir.file("c.txt").c_str(), 0), 0);
  for (uint32_t threads : {1u, 2u}) {
    VocabOptions vo;
    vo.threads = threads;
    try {
      Vocab::count(t.parts(), vo);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("changed while it was read"), std::string::npos)
          << e.what();
    }
  }
}

// Vectors, vocabularies and evaluation files are mapped too: each read of a map runs under the
// same guard as the corpus reader's (MappedFile::read), so a file cut while it is read is one
// Error naming it, and the process goes on.
TEST(MappedFile, EveryReaderOfAMapTurnsATruncationIntoAnError) {
  TempDir dir;
  std::mt19937_64 rng(testing_util::fresh_seed());
  const uint64_t rows = 20000;
  const uint32_t dim = 8;
  std::string text = std::to_string(rows) + " " + std::to_string(dim) + "\n";
  for (uint64_t r = 0; r < rows; ++r) {
    text += "w" + std::to_string(r);
    for (uint32_t k = 0; k < dim; ++k) text += " " + std::to_string(static_cast<int>(rng() % 999));
    text += "\n";
  }
  write_file(dir.file("v.txt"), text);
  write_npy(dir.file("v.npy"), rows, dim, 4096, [&](uint64_t, uint64_t n, float* out) {
    for (uint64_t i = 0; i < n * dim; ++i) out[i] = static_cast<float>(rng() % 1000) / 7.0f;
  });
  using Parse = std::function<void(std::string_view, const std::string&)>;
  const std::vector<std::pair<std::string, Parse>> readers = {
      {"v.txt", [](std::string_view b,
                   const std::string& p) { parse_word2vec(b, p, Word2vecLayout::kText); }},
      {"v.npy", [](std::string_view b, const std::string& p) { parse_npy(b, p); }},
  };
  for (const auto& [name, parse] : readers) {
    const std::string path = dir.file(name);
    // Whole, the file reads.
    {
      const MappedFile whole(path);
      EXPECT_NO_THROW(whole.read([&](std::string_view b) { parse(b, path); })) << name;
    }
    const std::string bytes = read_file(path);
    ASSERT_GT(bytes.size(), size_t{1} << 18) << name;
    const MappedFile map(path);
    ASSERT_EQ(::truncate(path.c_str(), 0), 0);
    try {
      // The guard jumps out of the parser without running its destructors (mapped_file.hpp):
      // what the parser held leaks, once, on an error that ends the command. Not a leak to
      // report here.
      const testing_util::LeaksNotChecked leaks_not_checked;
      map.read([&](std::string_view b) { parse(b, path); });
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "'" + path + "' changed while it was read (truncated?); read it again");
    }
    write_file(path, bytes);
  }
  // A value read out of a map as the result of the guarded call.
  const MappedFile map(dir.file("v.txt"));
  EXPECT_EQ(map.read([](std::string_view b) { return b.substr(0, 6); }), "20000 ");
}

}  // namespace
}  // namespace pagedw2v
