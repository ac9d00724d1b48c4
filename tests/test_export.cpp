#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "io/embeddings.hpp"
#include "io/export.hpp"
#include "io/npy.hpp"
#include "io/word2vec_format.hpp"
#include "test_util.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::bytes_of;
using testing_util::entries;
using testing_util::expect_error_naming;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

/// testing_util::random_vocab, shaped for this file.
Vocab random_vocab(uint32_t n, uint64_t seed) {
  testing_util::VocabShape shape;
  shape.fall = 4;
  shape.unicode = true;
  return testing_util::random_vocab(n, seed, shape);
}

HostTable random_table(uint64_t rows, uint32_t dim, uint64_t seed) {
  HostTable t(rows, dim, "test table", "");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (uint64_t i = 0; i < rows * dim; ++i) t.data()[i] = normal(rng);
  return t;
}

Model random_model(uint32_t rows, uint32_t dim, uint64_t seed) {
  return Model{random_table(rows, dim, seed), random_table(rows, dim, seed + 1)};
}

void expect_same(const LoadedEmbeddings& e, const Vocab& vocab, const HostTable& table,
                 bool with_counts) {
  EXPECT_EQ(e.rows, table.rows());
  EXPECT_EQ(e.dim, table.dim());
  EXPECT_EQ(e.words, vocab.words().to_strings());
  if (with_counts) {
    EXPECT_EQ(e.counts, vocab.counts());
  } else {
    EXPECT_TRUE(e.counts.empty());
  }
  EXPECT_EQ(bytes_of(e.vectors.data(), e.vectors.size()),
            bytes_of(table.data(), table.rows() * table.dim()));
}

TEST(Export, WritesEveryFormatAndEachLoadsBack) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir tmp;
  const Vocab vocab = random_vocab(211, seed);
  const Model model = random_model(211, 24, seed + 1);
  const std::string dir = tmp.file("runs/a/b");  // parents do not exist yet
  export_model(dir, vocab, model, ExportOptions{});

  EXPECT_EQ(entries(dir), (std::vector<std::string>{"embeddings.h5", "manifest.json", "vectors.bin",
                                                    "vectors.npy", "vectors.txt", "vocab.tsv"}));
  expect_same(load_embeddings(dir), vocab, model.input, true);
  expect_same(load_embeddings(dir + "/"), vocab, model.input, true);
  expect_same(load_embeddings(dir + "/vectors.npy"), vocab, model.input, true);
  expect_same(load_embeddings(dir + "/embeddings.h5"), vocab, model.input, true);
  expect_same(load_embeddings(dir + "/vectors.bin"), vocab, model.input, false);
  expect_same(load_embeddings(dir + "/vectors.txt"), vocab, model.input, false);
  EXPECT_EQ(Vocab::load_tsv(dir + "/vocab.tsv").counts(), vocab.counts());
}

// A vocabulary whose words are packed (as a run's are while it trains) exports the same files,
// byte for byte, in every format and over more than one slice of packed words.
TEST(Export, PackedWordsExportTheSameFiles) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir tmp;
  const uint32_t rows = PackedWords::kSliceWords + 77;
  const Vocab vocab = random_vocab(rows, seed);
  Vocab packed = random_vocab(rows, seed);
  packed.pack_words(3);
  ASSERT_TRUE(packed.words_packed());
  const Model model = random_model(rows, 3, seed + 1);
  export_model(tmp.file("plain"), vocab, model, ExportOptions{});
  export_model(tmp.file("packed"), packed, model, ExportOptions{});
  EXPECT_TRUE(packed.words_packed());
  const std::vector<std::string> names = entries(tmp.file("plain"));
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(entries(tmp.file("packed")), names);
  for (const std::string& name : names) {
    if (name == "embeddings.h5") continue;  // libhdf5 records when its objects were made
    if (name == "manifest.json") continue;  // each set has its own id
    EXPECT_EQ(read_file(tmp.file("packed/" + name)), read_file(tmp.file("plain/" + name))) << name;
  }
  expect_same(load_embeddings(tmp.file("packed/embeddings.h5")), vocab, model.input, true);
}

TEST(Export, SaveContextWritesTheOutputVectors) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir tmp;
  const Vocab vocab = random_vocab(40, seed);
  const Model model = random_model(40, 8, seed + 1);
  ExportOptions options;
  options.formats = {"npy", "h5"};
  options.save_context = true;
  options.attributes = {{"dim", int64_t{8}}, {"model", std::string("sgns")}};
  export_model(tmp.path(), vocab, model, options);

  EXPECT_EQ(entries(tmp.path()),
            (std::vector<std::string>{"context_vectors.npy", "embeddings.h5", "manifest.json",
                                      "vectors.npy", "vocab.tsv"}));
  const NpyMatrix context = read_npy(tmp.file("context_vectors.npy"));
  EXPECT_EQ(context.rows, 40u);
  EXPECT_EQ(context.cols, 8u);
  EXPECT_EQ(bytes_of(context.data.data(), context.data.size()),
            bytes_of(model.output.data(), 40 * 8));
  const std::vector<Attribute> attributes = read_attributes_h5(tmp.file("embeddings.h5"));
  ASSERT_EQ(attributes.size(), 3u);  // the two given and pagedw2v_version
  EXPECT_EQ(attributes[0].name, "dim");
  EXPECT_EQ(attributes[1].value, (std::variant<int64_t, double, std::string>("sgns")));
  EXPECT_EQ(attributes[2].name, kVersionAttribute);
}

TEST(Export, DirectoriesAreSearchedInOrder) {
  const uint64_t seed = fresh_seed();
  const TempDir tmp;
  const Vocab vocab = random_vocab(15, seed);
  const Model model = random_model(15, 4, seed + 1);
  for (const char* format : {"npy", "h5", "bin", "txt"}) {
    SCOPED_TRACE(format);
    const std::string dir = tmp.file(format);
    ExportOptions options;
    options.formats = {format};
    export_model(dir, vocab, model, options);
    EXPECT_EQ(entries(dir).size(), 3u);  // the format's file, vocab.tsv and the manifest
    const bool counts = format == std::string("npy") || format == std::string("h5");
    expect_same(load_embeddings(dir), vocab, model.input, counts);
  }
  // h5 comes before bin and txt; vectors.npy without vocab.tsv is passed over.
  ExportOptions options;
  options.formats = {"txt", "h5", "bin"};
  export_model(tmp.file("mixed"), vocab, model, options);
  expect_same(load_embeddings(tmp.file("mixed")), vocab, model.input, true);
  std::filesystem::remove(tmp.file("npy/vocab.tsv"));
  std::filesystem::remove(tmp.file("npy/manifest.json"));  // files by hand: no set any more
  std::filesystem::copy_file(tmp.file("bin/vectors.bin"), tmp.file("npy/vectors.bin"));
  expect_same(load_embeddings(tmp.file("npy")), vocab, model.input, false);
}

TEST(Export, ParseFormats) {
  EXPECT_EQ(parse_formats("npy"), std::vector<std::string>{"npy"});
  EXPECT_EQ(parse_formats("txt,npy, h5 ,bin"),
            (std::vector<std::string>{"txt", "npy", "h5", "bin"}));
  EXPECT_EQ(parse_formats("h5,h5,npy,"), (std::vector<std::string>{"h5", "npy"}));
  expect_error_naming<UsageError>(
      [] { parse_formats("npy,xls"); },
      "--format: unknown format 'xls' (expected npy, h5, bin, txt or none)");
  expect_error_naming<UsageError>([] { parse_formats("NPY"); }, "unknown format 'NPY'");
  expect_error_naming<UsageError>([] { parse_formats(""); }, "--format");
  expect_error_naming<UsageError>([] { parse_formats(" , "); }, "--format");
}

TEST(Export, BadRequestsFailBeforeWriting) {
  const uint64_t seed = fresh_seed();
  const TempDir tmp;
  const Vocab vocab = random_vocab(10, seed);
  const Model model = random_model(10, 4, seed + 1);
  ExportOptions unknown;
  unknown.formats = {"npy", "parquet"};
  expect_error_naming<UsageError>([&] { export_model(tmp.file("out"), vocab, model, unknown); },
                                  "unknown format 'parquet'");
  const Model short_model = random_model(9, 4, seed);
  expect_error_naming<Error>([&] { export_model(tmp.file("out"), vocab, short_model, {}); },
                             "has 10 words but the model 9 rows");
  ExportOptions context;
  context.save_context = true;
  Model no_context{random_table(10, 4, seed), HostTable()};
  expect_error_naming<Error>([&] { export_model(tmp.file("out"), vocab, no_context, context); },
                             "differ in shape");
  EXPECT_TRUE(entries(tmp.path()).empty());

  write_file(tmp.file("file"), "a regular file\n");
  expect_error_naming<Error>([&] { export_model(tmp.file("file"), vocab, model, {}); },
                             "cannot create directory '" + tmp.file("file") + "'");
  expect_error_naming<Error>([&] { export_model(tmp.file("file/sub"), vocab, model, {}); },
                             "cannot create directory '" + tmp.file("file/sub") + "'");
  EXPECT_EQ(entries(tmp.path()), std::vector<std::string>{"file"});
}

TEST(Export, LoadErrors) {
  const uint64_t seed = fresh_seed();
  const TempDir tmp;
  expect_error_naming<Error>([&] { load_embeddings(tmp.file("absent")); },
                             "cannot read '" + tmp.file("absent") + "'");
  expect_error_naming<Error>([&] { load_embeddings(tmp.path()); }, "holds no embeddings");
  write_file(tmp.file("v.csv"), "1,2,3\n");
  expect_error_naming<Error>([&] { load_embeddings(tmp.file("v.csv")); }, "cannot tell the format");

  // A vocabulary and a matrix that disagree in rows.
  const Vocab vocab = random_vocab(12, seed);
  const Model model = random_model(12, 5, seed + 1);
  ExportOptions npy;
  npy.formats = {"npy"};
  export_model(tmp.file("run"), vocab, model, npy);
  std::filesystem::remove(tmp.file("run/manifest.json"));  // files by hand: no set any more
  random_vocab(11, seed).save_tsv(tmp.file("run/vocab.tsv"));
  expect_error_naming<Error>([&] { load_embeddings(tmp.file("run")); }, "11 words but");
  expect_error_naming<Error>([&] { load_embeddings(tmp.file("run/vectors.npy")); }, "12 rows");
  std::filesystem::remove(tmp.file("run/vocab.tsv"));
  expect_error_naming<Error>([&] { load_embeddings(tmp.file("run/vectors.npy")); },
                             "vocab.tsv' is missing");
}

TEST(ExportPython, CheckExportsScriptAgreesAndCatchesMismatches) {
  PAGEDW2V_REQUIRE_PYTHON("numpy, h5py, gensim");
  const std::string script = std::string(PAGEDW2V_SOURCE_DIR) + "/scripts/check_exports.py";
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TempDir tmp;
  const Vocab vocab = random_vocab(150, seed);
  const Model model = random_model(150, 32, seed + 1);
  ExportOptions options;
  options.save_context = true;
  export_model(tmp.file("run"), vocab, model, options);

  const std::string run = "/usr/bin/python3 '" + script + "' '" + tmp.file("run") + "' > '" +
                          tmp.file("report.txt") + "' 2>&1";
  ASSERT_EQ(0, std::system(run.c_str())) << read_file(tmp.file("report.txt"));
  const std::string report = read_file(tmp.file("report.txt"));
  for (const char* line : {"npy  ok", "h5   ok", "bin  ok", "txt  ok", "context ok"}) {
    EXPECT_NE(report.find(line), std::string::npos) << report;
  }

  // One changed value in the text file must be caught.
  HostTable changed = random_table(150, 32, seed + 1);
  changed.row(77)[5] += 0.5f;
  write_word2vec_txt(tmp.file("run/vectors.txt"), vocab, changed);
  EXPECT_NE(0, std::system(run.c_str()));
  EXPECT_NE(read_file(tmp.file("report.txt")).find("txt  MISMATCH 1 values differ"),
            std::string::npos)
      << read_file(tmp.file("report.txt"));
}

}  // namespace
}  // namespace pagedw2v
