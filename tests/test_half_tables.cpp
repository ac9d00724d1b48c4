// Host tables of 16-bit storage (bf16, fp16): layout and conversions of HostTable, the model's
// allocation and initial values, checkpoints that hold the stored values exactly and record the
// storage, fp32 exports in every format, the run check, and the CPU backend's refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "io/export.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "io/word2vec_format.hpp"
#include "model/host_table.hpp"
#include "model/model.hpp"
#include "model/storage.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/run_check.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::fresh_seed;
using testing_util::TempDir;

/// Fresh values from ±[0.001, 2), never zero.
/// testing_util::random_vocab, shaped for this file.
Vocab random_vocab(uint32_t n, std::mt19937_64& rng) {
  testing_util::VocabShape shape;
  shape.fall = 2 * uint64_t{n};
  return testing_util::random_vocab(n, rng, shape);
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> magnitude(0.001f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = (rng() & 1) ? magnitude(rng) : -magnitude(rng);
  return v;
}

std::vector<HostTable*> tables_of(Model& m) {
  std::vector<HostTable*> out = {&m.input, &m.output};
  for (HostTable& t : m.input_state) out.push_back(&t);
  for (HostTable& t : m.output_state) out.push_back(&t);
  return out;
}

/// The stored 16-bit values of `t`, row by row.
std::vector<uint16_t> stored(const HostTable& t) {
  std::vector<uint16_t> v(t.rows() * t.dim());
  for (uint64_t r = 0; r < t.rows(); ++r) {
    std::memcpy(v.data() + r * t.dim(), t.raw_row(r), t.dim() * sizeof(uint16_t));
  }
  return v;
}

/// The values of `t` as fp32, through read_row.
std::vector<float> values(const HostTable& t) {
  std::vector<float> v(t.rows() * t.dim());
  for (uint64_t r = 0; r < t.rows(); ++r) t.read_row(r, v.data() + r * t.dim());
  return v;
}

class HalfTable : public ::testing::TestWithParam<std::tuple<Storage, bool>> {};

TEST_P(HalfTable, StoresRoundedValuesInHalfTheBytes) {
  const auto [storage, interleaved] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint32_t rows = 3 + static_cast<uint32_t>(rng() % 50);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 40);
  Model m = allocate_model(rows, dim, OptimizerKind::kAdam, interleaved, "", storage);
  Model f = allocate_model(rows, dim, OptimizerKind::kAdam, interleaved, "");
  const std::vector<HostTable*> half = tables_of(m), full = tables_of(f);
  ASSERT_EQ(half.size(), 6u);
  for (size_t t = 0; t < half.size(); ++t) {
    EXPECT_EQ(half[t]->storage(), storage);
    EXPECT_EQ(half[t]->value_bytes(), 2u);
    EXPECT_EQ(half[t]->bytes() * 2, full[t]->bytes());
    EXPECT_EQ(half[t]->block_bytes() * 2, full[t]->block_bytes());
    EXPECT_EQ(half[t]->data(), nullptr) << "a 16-bit table has no float view";
    EXPECT_EQ(half[t]->contiguous(), !interleaved);
  }
  // Zeroed on allocation.
  for (uint16_t v : stored(m.input)) ASSERT_EQ(v, 0u);

  std::vector<std::vector<float>> want(half.size());
  for (size_t t = 0; t < half.size(); ++t) {
    const std::vector<float> v = random_floats(size_t{rows} * dim, rng);
    if (t % 2 == 0) {
      half[t]->copy_from(v.data());
    } else {
      for (uint32_t r = 0; r < rows; ++r) half[t]->write_row(r, v.data() + size_t{r} * dim);
    }
    for (float x : v) want[t].push_back(half_to_float(storage, half_round_nearest(storage, x)));
  }
  // Each table reads back its own rounded values (interleaved tables do not overlap).
  for (size_t t = 0; t < half.size(); ++t) {
    std::vector<float> got(size_t{rows} * dim);
    half[t]->copy_to(got.data());
    EXPECT_EQ(std::memcmp(got.data(), want[t].data(), got.size() * 4), 0) << "table " << t;
    EXPECT_EQ(values(*half[t]), want[t]) << "table " << t;
    const uint32_t first = static_cast<uint32_t>(rng() % rows);
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % (rows - first));
    std::vector<float> some(size_t{n} * dim, -7.0f);
    half[t]->read_rows(first, n, some.data());
    EXPECT_TRUE(std::equal(some.begin(), some.end(), want[t].begin() + size_t{first} * dim));
  }
  // Bit copies into a table of the other layout.
  Model other = allocate_model(rows, dim, OptimizerKind::kAdam, !interleaved, "", storage);
  const std::vector<HostTable*> to = tables_of(other);
  for (size_t t = 0; t < half.size(); ++t) {
    half[t]->copy_values_to(*to[t]);
    EXPECT_EQ(stored(*to[t]), stored(*half[t])) << "table " << t;
  }
  EXPECT_THROW(half[0]->copy_values_to(*full[0]), Error);
  m.output.fill(0.3f);
  for (float v : values(m.output)) {
    ASSERT_EQ(v, half_to_float(storage, half_round_nearest(storage, 0.3f)));
  }
  EXPECT_EQ(values(m.input), want[0]) << "fill reached another table";
}

TEST_P(HalfTable, InitialValuesAreTheFp32OnesRounded) {
  const auto [storage, interleaved] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const uint32_t rows = 5000, dim = 12;
  Model h = allocate_model(rows, dim, OptimizerKind::kSgd, interleaved, "", storage);
  Model f = allocate_model(rows, dim, OptimizerKind::kSgd, interleaved, "");
  for (float v : values(h.output)) ASSERT_EQ(v, 0.0f);
  h.output.fill(1.0f);  // init must zero the output vectors again
  init_model(h, seed, 3);
  init_model(f, seed, 1);
  std::vector<float> fp32(size_t{rows} * dim);
  f.input.copy_to(fp32.data());
  const std::vector<float> got = values(h.input);
  size_t differ = 0;
  for (size_t i = 0; i < fp32.size(); ++i) {
    differ += got[i] != half_to_float(storage, half_round_nearest(storage, fp32[i]));
  }
  EXPECT_EQ(differ, 0u);
  for (float v : values(h.output)) ASSERT_EQ(v, 0.0f);
}

TEST_P(HalfTable, CheckpointHoldsTheStoredValuesAndTheStorage) {
  const auto [storage, interleaved] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const uint32_t rows = 3 + static_cast<uint32_t>(rng() % 300);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 20);
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = dim;
  c.optimizer = OptimizerKind::kAdam;
  c.storage = storage;
  const Vocab vocab = random_vocab(rows, rng);
  Model m = allocate_model(rows, dim, OptimizerKind::kAdam, interleaved, "", storage);
  for (HostTable* t : tables_of(m)) t->copy_from(random_floats(size_t{rows} * dim, rng).data());
  const std::string path = dir.file("c.h5");
  save_checkpoint(path, c, vocab, m, TrainPosition{1, 5, 777},
                  CorpusFingerprint{uint64_t{1} << 40, 10, 42}, 0.01f);
  // The file is fp32 that any reader takes; its values are the stored ones, exactly.
  const LoadedEmbeddings e = read_embeddings_h5(path);
  EXPECT_EQ(e.vectors, values(m.input));

  for (bool interleave : {false, true}) {
    SCOPED_TRACE(interleave ? "loaded interleaved" : "loaded apart");
    const Checkpoint ck =
        load_checkpoint(path, [&](uint64_t, const Config&) { return interleave; });
    EXPECT_EQ(ck.config.storage, storage);
    EXPECT_EQ(option_value(ck.config, "storage"), to_string(storage));
    const std::vector<HostTable*> want = tables_of(m);
    const std::vector<const HostTable*> got = {
        &ck.model.input,          &ck.model.output,          &ck.model.input_state[0],
        &ck.model.input_state[1], &ck.model.output_state[0], &ck.model.output_state[1]};
    for (size_t t = 0; t < got.size(); ++t) {
      EXPECT_EQ(got[t]->storage(), storage);
      EXPECT_EQ(got[t]->contiguous(), !interleave);
      EXPECT_EQ(stored(*got[t]), stored(*want[t])) << "table " << t;
    }
  }
  // An fp32 checkpoint says fp32 (and one from before the option reads as fp32 by default).
  Config c32 = c;
  c32.storage = Storage::kFp32;
  Model m32 = allocate_model(rows, dim, OptimizerKind::kAdam, false, "");
  save_checkpoint(dir.file("f.h5"), c32, vocab, m32, TrainPosition{1, 5, 777},
                  CorpusFingerprint{uint64_t{1} << 40, 10, 42}, 0.01f);
  EXPECT_EQ(load_checkpoint(dir.file("f.h5")).config.storage, Storage::kFp32);
  // A run's storage that is not its tables' would resume into other tables: refused, no file.
  try {
    save_checkpoint(dir.file("mixed.h5"), c32, vocab, m, TrainPosition{1, 5, 777},
                    CorpusFingerprint{uint64_t{1} << 40, 10, 42}, 0.01f);
    ADD_FAILURE() << "a checkpoint of " << to_string(storage) << " tables recorded fp32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--storage"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("mixed.h5")));
}

TEST_P(HalfTable, ExportsAreFp32InEveryFormat) {
  const auto [storage, interleaved] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const uint32_t rows = 5 + static_cast<uint32_t>(rng() % 200);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 40);
  const Vocab vocab = random_vocab(rows, rng);
  Model m = allocate_model(rows, dim, OptimizerKind::kSgd, interleaved, "", storage);
  for (HostTable* t : tables_of(m)) t->copy_from(random_floats(size_t{rows} * dim, rng).data());
  const std::vector<float> want = values(m.input), want_context = values(m.output);

  ExportOptions options;
  options.formats = {"npy", "h5", "bin", "txt"};
  options.save_context = true;
  export_model(dir.file("out"), vocab, m, options);

  const NpyMatrix npy = read_npy(dir.file("out/vectors.npy"));
  EXPECT_EQ(npy.rows, rows);
  EXPECT_EQ(npy.cols, dim);
  EXPECT_EQ(npy.data, want);
  EXPECT_EQ(read_npy(dir.file("out/context_vectors.npy")).data, want_context);
  const LoadedEmbeddings h5 = read_embeddings_h5(dir.file("out/embeddings.h5"));
  EXPECT_EQ(h5.vectors, want);
  EXPECT_EQ(h5.words, vocab.words().to_strings());
  const LoadedEmbeddings bin = read_word2vec(dir.file("out/vectors.bin"), true);
  EXPECT_EQ(bin.vectors, want);
  const LoadedEmbeddings txt = read_word2vec(dir.file("out/vectors.txt"), false);
  EXPECT_EQ(txt.vectors, want);  // shortest round-trip text of each float
}

TEST_P(HalfTable, RunCheckFindsNonFiniteRows) {
  const auto [storage, interleaved] = GetParam();
  Model m = allocate_model(40, 9, OptimizerKind::kSgd, interleaved, "", storage);
  EXPECT_EQ(nonfinite_rows(m.input), 0u);
  std::vector<float> row(9, 0.5f);
  row[3] = INFINITY;
  m.input.write_row(7, row.data());
  row[3] = 0.5f;
  row[8] = NAN;
  m.input.write_row(30, row.data());
  m.input.write_row(31, row.data());
  EXPECT_EQ(nonfinite_rows(m.input), 3u);
  EXPECT_EQ(nonfinite_rows(m.output), 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, HalfTable,
                         ::testing::Combine(::testing::Values(Storage::kBf16, Storage::kFp16),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_interleaved" : "_apart");
                         });

TEST(StorageOption, ParsesAndIsRefusedOnTheCpu) {
  Config c;
  EXPECT_EQ(c.storage, Storage::kFp32);
  apply_option(c, "storage", "bf16");
  EXPECT_EQ(c.storage, Storage::kBf16);
  apply_option(c, "storage", "fp16");
  EXPECT_EQ(c.storage, Storage::kFp16);
  EXPECT_THROW(apply_option(c, "storage", "half"), UsageError);
  EXPECT_TRUE(checkpoint_records("storage")) << "a resumed run keeps the checkpoint's storage";

  c.corpus = "c.txt";
  c.output = "out";
  apply_option(c, "device", "cpu");
  try {
    validate(c);
    FAIL() << "--storage fp16 --device cpu was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
  apply_option(c, "storage", "fp32");
  EXPECT_NO_THROW(validate(c));
}

}  // namespace
}  // namespace pagedw2v
