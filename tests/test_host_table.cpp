#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"
#include "config/config.hpp"
#include "io/export.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "model/host_table.hpp"
#include "model/optimizer.hpp"
#include "test_util.hpp"
#include "train/backend_factory.hpp"
#include "train/checkpoint.hpp"
#include "train/run_check.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::TempDir;

/// `n` floats drawn from ±[0.1, 2): never zero, so a value left unwritten shows.
/// testing_util::random_vocab, shaped for this file.
Vocab random_vocab(uint32_t n, std::mt19937_64& rng) {
  testing_util::VocabShape shape;
  shape.fall = 2 * uint64_t{n};
  return testing_util::random_vocab(n, rng, shape);
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> magnitude(0.1f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = (rng() & 1) ? magnitude(rng) : -magnitude(rng);
  return v;
}

/// Writes fresh random values into `table` row by row (through row(), not copy_from).
void fill_random(HostTable& table, std::mt19937_64& rng) {
  const std::vector<float> v = random_floats(table.rows() * table.dim(), rng);
  for (uint64_t r = 0; r < table.rows(); ++r) {
    std::memcpy(table.row(r), v.data() + r * table.dim(), table.dim() * sizeof(float));
  }
}

/// The values of `table`, `rows × dim` contiguous, read row by row (not through copy_to).
std::vector<float> values_of(const HostTable& table) {
  std::vector<float> v(table.rows() * table.dim());
  for (uint64_t r = 0; r < table.rows(); ++r) {
    std::memcpy(v.data() + r * table.dim(), table.row(r), table.dim() * sizeof(float));
  }
  return v;
}

/// Whether `got` and `want` hold the same floats bit for bit; names the first that differs.
::testing::AssertionResult same_bits(const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " floats, expected " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure()
             << "float " << i << " is " << got[i] << ", expected " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

/// The first `n` floats at `p`.
std::vector<float> floats(const float* p, size_t n) { return std::vector<float>(p, p + n); }

std::vector<HostTable*> tables_of(Model& m) {
  std::vector<HostTable*> out = {&m.input, &m.output};
  for (HostTable& t : m.input_state) out.push_back(&t);
  for (HostTable& t : m.output_state) out.push_back(&t);
  return out;
}

std::vector<const HostTable*> tables_of(const Model& m) {
  std::vector<const HostTable*> out = {&m.input, &m.output};
  for (const HostTable& t : m.input_state) out.push_back(&t);
  for (const HostTable& t : m.output_state) out.push_back(&t);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Layout

class Interleaved : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t>> {};

TEST_P(Interleaved, LayoutSharingAndIsolation) {
  const auto [count, dim] = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint64_t rows = 1 + rng() % 50;
  SCOPED_TRACE("rows " + std::to_string(rows));

  std::vector<HostTable> tables = HostTable::interleaved(rows, dim, count, "test tables", "");
  ASSERT_EQ(tables.size(), count);
  ASSERT_NE(tables[0].block(), nullptr);
  float* const base = static_cast<float*>(tables[0].block());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 64, 0u);
  const size_t block_floats = rows * dim * count;
  for (uint32_t t = 0; t < count; ++t) {
    const HostTable& table = tables[t];
    EXPECT_EQ(table.rows(), rows);
    EXPECT_EQ(table.dim(), dim);
    EXPECT_EQ(table.stride(), uint64_t{count} * dim);
    EXPECT_EQ(table.contiguous(), count == 1);
    EXPECT_EQ(table.bytes(), rows * dim * sizeof(float));
    EXPECT_EQ(table.block(), tables[0].block());
    EXPECT_EQ(table.block_bytes(), block_floats * sizeof(float));
    EXPECT_EQ(table.data(), base + uint64_t{t} * dim);
    for (uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(table.row(r), base + (r * count + t) * dim) << "table " << t << " row " << r;
    }
  }
  for (size_t i = 0; i < block_floats; ++i) ASSERT_EQ(base[i], 0.0f) << "float " << i;

  // Every float of the block belongs to exactly one (table, row, column).
  std::vector<std::vector<float>> want(count);
  for (uint32_t t = 0; t < count; ++t) {
    fill_random(tables[t], rng);
    want[t] = values_of(tables[t]);
  }
  for (uint32_t t = 0; t < count; ++t) {
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t d = 0; d < dim; ++d) {
        ASSERT_EQ(base[(r * count + t) * dim + d], want[t][r * dim + d]);
      }
    }
  }

  // fill() of one table leaves the others alone.
  for (uint32_t t = 0; t < count; ++t) {
    const float value = 3.5f + static_cast<float>(t);
    tables[t].fill(value);
    want[t].assign(rows * dim, value);
    for (uint32_t u = 0; u < count; ++u) {
      ASSERT_TRUE(same_bits(values_of(tables[u]), want[u])) << "after fill of " << t << ": " << u;
    }
  }

  // copy_from / copy_to round trip, and copy_from writes only its own table.
  for (uint32_t t = 0; t < count; ++t) {
    const std::vector<float> in = random_floats(rows * dim, rng);
    tables[t].copy_from(in.data());
    want[t] = in;
    std::vector<float> out(rows * dim + 1, -999.0f);  // poisoned, with a canary past the end
    tables[t].copy_to(out.data());
    EXPECT_EQ(out.back(), -999.0f);
    out.pop_back();
    EXPECT_TRUE(same_bits(out, in));
    for (uint32_t u = 0; u < count; ++u) {
      ASSERT_TRUE(same_bits(values_of(tables[u]), want[u])) << "after copy_from " << t << ": " << u;
    }
  }

  // Moving a table out keeps the shared block alive after its siblings are gone.
  HostTable moved(std::move(tables[count - 1]));
  EXPECT_EQ(tables[count - 1].rows(), 0u);
  EXPECT_EQ(tables[count - 1].data(), nullptr);
  EXPECT_EQ(tables[count - 1].block(), nullptr);
  EXPECT_EQ(tables[count - 1].block_bytes(), 0u);
  HostTable assigned(1, 1, "placeholder", "");
  if (count > 1) {
    assigned = std::move(tables[0]);
    EXPECT_EQ(tables[0].data(), nullptr);
    EXPECT_EQ(tables[0].block(), nullptr);
  } else {  // one table: move-assign it there and back
    assigned = std::move(moved);
    EXPECT_EQ(moved.block(), nullptr);
    moved = std::move(assigned);
    EXPECT_EQ(assigned.block(), nullptr);
  }
  tables.clear();
  EXPECT_EQ(moved.block(), base);
  EXPECT_EQ(moved.block_bytes(), block_floats * sizeof(float));
  EXPECT_EQ(moved.stride(), uint64_t{count} * dim);
  EXPECT_TRUE(same_bits(values_of(moved), want[count - 1]));
  if (count > 1) {
    EXPECT_EQ(assigned.block(), base);
    EXPECT_TRUE(same_bits(values_of(assigned), want[0]));
    moved.fill(-1.25f);
    EXPECT_TRUE(same_bits(values_of(assigned), want[0]));
    {
      HostTable last = std::move(assigned);  // the other survivor goes; `moved` still reads
    }
  } else {
    moved.fill(-1.25f);
  }
  EXPECT_TRUE(same_bits(values_of(moved), std::vector<float>(rows * dim, -1.25f)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Interleaved,
                         ::testing::Combine(::testing::Values(1u, 2u, 3u, 4u),
                                            ::testing::Values(1u, 7u, 128u)),
                         [](const ::testing::TestParamInfo<std::tuple<uint32_t, uint32_t>>& info) {
                           return "count" + std::to_string(std::get<0>(info.param)) + "_dim" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(HostTable, ContiguousTable) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const uint32_t dim : {1u, 7u, 128u}) {
    const uint64_t rows = 1 + rng() % 50;
    HostTable t(rows, dim, "test table", "");
    EXPECT_EQ(t.rows(), rows);
    EXPECT_EQ(t.dim(), dim);
    EXPECT_EQ(t.stride(), dim);
    EXPECT_TRUE(t.contiguous());
    EXPECT_EQ(t.block(), static_cast<void*>(t.data()));
    EXPECT_EQ(t.block_bytes(), rows * dim * sizeof(float));
    for (uint64_t r = 0; r < rows; ++r) ASSERT_EQ(t.row(r), t.data() + r * dim);
    for (uint64_t i = 0; i < rows * dim; ++i) ASSERT_EQ(t.data()[i], 0.0f);
    const std::vector<float> in = random_floats(rows * dim, rng);
    t.copy_from(in.data());
    EXPECT_TRUE(same_bits(floats(t.data(), rows * dim), in));
    std::vector<float> out(rows * dim, -999.0f);
    t.copy_to(out.data());
    EXPECT_TRUE(same_bits(out, in));
    HostTable moved(std::move(t));
    EXPECT_EQ(t.data(), nullptr);
    EXPECT_TRUE(same_bits(values_of(moved), in));
  }
}

TEST(HostTable, AllZeroSeesEveryBitOfEveryRow) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const Storage storage : {Storage::kFp32, Storage::kBf16}) {
    // Large enough for several threads (a thread per 4 MiB of rows).
    const uint64_t rows = 70000 + rng() % 1000;
    const uint32_t dim = 33;
    HostTable t(rows, dim, "test table", "", default_host_allocator(), storage);
    for (const uint32_t threads : {1u, 4u, 16u}) EXPECT_TRUE(t.all_zero(threads));
    // One value anywhere, even -0.0, is not zero; the first and last rows included.
    for (const uint64_t r : {uint64_t{0}, rows - 1, rng() % rows}) {
      const uint32_t c = static_cast<uint32_t>(rng() % dim);
      std::vector<float> row(dim, 0.0f);
      row[c] = -0.0f;
      t.write_row(r, row.data());
      for (const uint32_t threads : {1u, 4u, 16u}) EXPECT_FALSE(t.all_zero(threads)) << r;
      row[c] = 0.0f;
      t.write_row(r, row.data());
      EXPECT_TRUE(t.all_zero(4));
    }
  }
}

TEST(HostTable, InterleavedNeedsATable) {
  EXPECT_THROW(HostTable::interleaved(4, 3, 0, "nothing", ""), Error);
}

// ---------------------------------------------------------------------------------------------
// allocate_model

class AllocateModel : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(AllocateModel, InterleavedInTheDocumentedOrder) {
  const OptimizerKind kind = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint64_t rows = 1 + rng() % 40;
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 20);
  const uint32_t n = state_tables(kind);
  const uint32_t count = 2 + 2 * n;

  Model m = allocate_model(rows, dim, kind, true, "");
  ASSERT_EQ(m.input_state.size(), n);
  ASSERT_EQ(m.output_state.size(), n);
  const std::vector<HostTable*> tables = tables_of(m);  // input, output, in state…, out state…
  ASSERT_EQ(tables.size(), count);
  float* const base = static_cast<float*>(m.input.block());
  ASSERT_NE(base, nullptr);
  for (uint32_t t = 0; t < count; ++t) {
    const HostTable& table = *tables[t];
    EXPECT_EQ(table.rows(), rows);
    EXPECT_EQ(table.dim(), dim);
    EXPECT_EQ(table.stride(), uint64_t{count} * dim);
    EXPECT_FALSE(table.contiguous());
    EXPECT_EQ(table.block(), base);
    EXPECT_EQ(table.block_bytes(), rows * dim * count * sizeof(float));
    EXPECT_EQ(table.data(), base + uint64_t{t} * dim) << "table " << t;
    for (uint64_t r = 0; r < rows; ++r) ASSERT_EQ(table.row(r), base + (r * count + t) * dim);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t d = 0; d < dim; ++d) ASSERT_EQ(table.row(r)[d], 0.0f);
    }
  }
}

TEST_P(AllocateModel, ApartEachInItsOwnBlock) {
  const OptimizerKind kind = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint64_t rows = 1 + rng() % 40;
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 20);
  const uint32_t n = state_tables(kind);

  Model m = allocate_model(rows, dim, kind, false, "");
  ASSERT_EQ(m.input_state.size(), n);
  ASSERT_EQ(m.output_state.size(), n);
  const std::vector<HostTable*> tables = tables_of(m);
  for (size_t t = 0; t < tables.size(); ++t) {
    const HostTable& table = *tables[t];
    EXPECT_EQ(table.rows(), rows);
    EXPECT_EQ(table.dim(), dim);
    EXPECT_TRUE(table.contiguous());
    EXPECT_EQ(table.stride(), dim);
    EXPECT_EQ(table.block(), static_cast<const void*>(table.data()));
    EXPECT_EQ(table.block_bytes(), rows * dim * sizeof(float));
    for (size_t u = 0; u < t; ++u) EXPECT_NE(table.block(), tables[u]->block());
    for (uint64_t i = 0; i < rows * dim; ++i) ASSERT_EQ(table.data()[i], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, AllocateModel,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                           OptimizerKind::kAdam, OptimizerKind::kAdadelta),
                         [](const ::testing::TestParamInfo<OptimizerKind>& info) {
                           return to_string(info.param);
                         });

// ---------------------------------------------------------------------------------------------
// HDF5

TEST(InterleavedIo, Hdf5WriteAndReadBack) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const uint32_t rows = 20 + static_cast<uint32_t>(rng() % 40);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 33);
  const Vocab vocab = random_vocab(rows, rng);
  std::vector<HostTable> tables = HostTable::interleaved(rows, dim, 3, "written", "");
  for (HostTable& t : tables) fill_random(t, rng);
  const std::string path = dir.file("e.h5");
  write_embeddings_h5(path, vocab, tables[0], &tables[1], {{"dim", int64_t{dim}}},
                      {{"optimizer/input_0", &tables[2]}});

  const LoadedEmbeddings e = read_embeddings_h5(path);
  EXPECT_EQ(e.rows, rows);
  EXPECT_EQ(e.dim, dim);
  EXPECT_EQ(e.words, vocab.words().to_strings());
  EXPECT_TRUE(same_bits(e.vectors, values_of(tables[0])));

  // Into each table of an interleaved target (the last one's rows end at the block's end), its
  // siblings poisoned: they must keep their poison.
  const std::vector<std::string> names = {"vectors", "context_vectors", "optimizer/input_0"};
  for (uint32_t slot = 0; slot < 3; ++slot) {
    for (uint32_t which = 0; which < 3; ++which) {
      SCOPED_TRACE("/" + names[which] + " into table " + std::to_string(slot));
      std::vector<HostTable> target = HostTable::interleaved(rows, dim, 3, "read", "");
      for (uint32_t t = 0; t < 3; ++t) target[t].fill(-100.0f - static_cast<float>(t));
      read_matrix_h5(path, names[which], target[slot]);
      EXPECT_TRUE(same_bits(values_of(target[slot]), values_of(tables[which])));
      for (uint32_t t = 0; t < 3; ++t) {
        if (t == slot) continue;
        EXPECT_TRUE(same_bits(values_of(target[t]),
                              std::vector<float>(rows * dim, -100.0f - static_cast<float>(t))));
      }
    }
  }
  for (uint32_t which = 0; which < 3; ++which) {
    HostTable contiguous(rows, dim, "read", "");
    contiguous.fill(-100.0f);
    read_matrix_h5(path, names[which], contiguous);
    EXPECT_TRUE(same_bits(floats(contiguous.data(), rows * dim), values_of(tables[which])))
        << names[which];
  }

  // A contiguous copy of the same values writes the same datasets.
  HostTable in(rows, dim, "in", ""), out(rows, dim, "out", "");
  in.copy_from(values_of(tables[0]).data());
  out.copy_from(values_of(tables[1]).data());
  write_embeddings_h5(dir.file("c.h5"), vocab, in, &out, {});
  HostTable back = std::move(HostTable::interleaved(rows, dim, 2, "read", "")[1]);
  read_matrix_h5(dir.file("c.h5"), "context_vectors", back);
  EXPECT_TRUE(same_bits(values_of(back), values_of(tables[1])));
  EXPECT_TRUE(same_bits(read_embeddings_h5(dir.file("c.h5")).vectors, e.vectors));
}

TEST(InterleavedIo, Hdf5ShapeMismatchIsRefused) {
  const TempDir dir;
  std::mt19937_64 rng(fresh_seed());
  const Vocab vocab = random_vocab(5, rng);
  std::vector<HostTable> tables = HostTable::interleaved(5, 4, 2, "written", "");
  for (HostTable& t : tables) fill_random(t, rng);
  write_embeddings_h5(dir.file("e.h5"), vocab, tables[0], &tables[1], {});
  std::vector<HostTable> wrong = HostTable::interleaved(5, 3, 2, "read", "");
  EXPECT_THROW(read_matrix_h5(dir.file("e.h5"), "vectors", wrong[1]), Error);
}

// ---------------------------------------------------------------------------------------------
// npy

TEST(InterleavedIo, NpyStridedRows) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const std::vector<std::pair<uint32_t, uint64_t>> shapes = {{1, 1},  {1, 3},     {7, 7},
                                                             {7, 28}, {128, 129}, {128, 512}};
  for (const auto& [cols, stride] : shapes) {
    SCOPED_TRACE("cols " + std::to_string(cols) + " stride " + std::to_string(stride));
    const uint64_t rows = 1 + rng() % 30;
    const std::vector<float> buffer = random_floats(rows * stride, rng);
    const std::string path = dir.file("m" + std::to_string(cols) + "_" + std::to_string(stride));
    write_npy(path + ".npy", buffer.data(), rows, cols, stride);
    const NpyMatrix m = read_npy(path + ".npy");
    EXPECT_EQ(m.rows, rows);
    EXPECT_EQ(m.cols, cols);
    std::vector<float> want;
    for (uint64_t r = 0; r < rows; ++r) {
      want.insert(want.end(), buffer.begin() + r * stride, buffer.begin() + r * stride + cols);
    }
    EXPECT_TRUE(same_bits(m.data, want));
    if (stride == cols) {  // the plain overload writes the same file
      write_npy(path + "_plain.npy", buffer.data(), rows, cols);
      EXPECT_EQ(read_file(path + "_plain.npy"), read_file(path + ".npy"));
    }
  }

  // The last table of an interleaved block (its rows end at the block's end).
  std::vector<HostTable> tables = HostTable::interleaved(17, 5, 4, "tables", "");
  for (HostTable& t : tables) fill_random(t, rng);
  write_npy(dir.file("last.npy"), tables[3].data(), 17, 5, tables[3].stride());
  EXPECT_TRUE(same_bits(read_npy(dir.file("last.npy")).data, values_of(tables[3])));
}

// ---------------------------------------------------------------------------------------------
// Checkpoint

TEST(InterleavedIo, CheckpointRoundTrip) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const uint32_t rows = 3 + static_cast<uint32_t>(rng() % 30);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 17);
  Config c;
  c.corpus = "/some/corpus.txt";
  c.dim = dim;
  c.optimizer = OptimizerKind::kAdam;
  const Vocab vocab = random_vocab(rows, rng);
  Model m = allocate_model(rows, dim, OptimizerKind::kAdam, true, "");
  ASSERT_FALSE(m.input.contiguous());
  ASSERT_EQ(m.input_state.size(), 2u);
  for (HostTable* t : tables_of(m)) fill_random(*t, rng);
  std::vector<std::vector<float>> want;
  for (const HostTable* t : tables_of(static_cast<const Model&>(m))) {
    want.push_back(values_of(*t));
  }
  const std::string path = dir.file("c.h5");
  save_checkpoint(path, c, vocab, m, TrainPosition{1, 5, 777},
                  CorpusFingerprint{uint64_t{1} << 40, 10, 42}, 0.01f);

  const auto expect_model = [&](const Checkpoint& ck, bool interleaved) {
    EXPECT_EQ(ck.vocab.words(), vocab.words());
    EXPECT_EQ(ck.config.optimizer, OptimizerKind::kAdam);
    EXPECT_EQ(ck.position.words_done, 777u);
    const std::vector<const HostTable*> tables = tables_of(ck.model);
    ASSERT_EQ(tables.size(), want.size());
    for (size_t t = 0; t < tables.size(); ++t) {
      EXPECT_EQ(tables[t]->rows(), rows);
      EXPECT_EQ(tables[t]->dim(), dim);
      EXPECT_EQ(tables[t]->contiguous(), !interleaved) << "table " << t;
      if (interleaved) {
        EXPECT_EQ(tables[t]->block(), ck.model.input.block());
        EXPECT_EQ(tables[t]->data(), static_cast<float*>(ck.model.input.block()) + t * dim);
      }
      EXPECT_TRUE(same_bits(values_of(*tables[t]), want[t])) << "table " << t;
    }
  };

  uint64_t asked_rows = 0;
  uint32_t asked_dim = 0;
  OptimizerKind asked_kind = OptimizerKind::kSgd;
  int calls = 0;
  const Checkpoint interleaved = load_checkpoint(path, [&](uint64_t r, const Config& recorded) {
    ++calls;
    asked_rows = r;
    asked_dim = recorded.dim;
    asked_kind = recorded.optimizer;
    return true;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(asked_rows, rows);
  EXPECT_EQ(asked_dim, dim);
  EXPECT_EQ(asked_kind, OptimizerKind::kAdam);
  {
    SCOPED_TRACE("interleaved");
    expect_model(interleaved, true);
  }
  {
    SCOPED_TRACE("no chooser");
    expect_model(load_checkpoint(path), false);
  }
  {
    SCOPED_TRACE("chooser says apart");
    expect_model(load_checkpoint(path, [](uint64_t, const Config&) { return false; }), false);
  }
  // And saving the interleaved copy again gives the same tables back.
  save_checkpoint(dir.file("again.h5"), interleaved.config, interleaved.vocab, interleaved.model,
                  interleaved.position, interleaved.corpus, interleaved.lr);
  {
    SCOPED_TRACE("saved again");
    expect_model(load_checkpoint(dir.file("again.h5")), false);
  }
}

// ---------------------------------------------------------------------------------------------
// Export

TEST(InterleavedIo, ExportMatchesContiguous) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const TempDir dir;
  const uint32_t rows = 5 + static_cast<uint32_t>(rng() % 40);
  const uint32_t dim = 1 + static_cast<uint32_t>(rng() % 40);
  const Vocab vocab = random_vocab(rows, rng);
  Model interleaved = allocate_model(rows, dim, OptimizerKind::kAdam, true, "");
  for (HostTable* t : tables_of(interleaved)) fill_random(*t, rng);
  Model apart = allocate_model(rows, dim, OptimizerKind::kAdam, false, "");
  const std::vector<HostTable*> from = tables_of(interleaved);
  const std::vector<HostTable*> to = tables_of(apart);
  for (size_t t = 0; t < from.size(); ++t) to[t]->copy_from(values_of(*from[t]).data());

  ExportOptions options;
  options.formats = {"npy", "h5", "bin", "txt"};
  options.save_context = true;
  export_model(dir.file("i"), vocab, interleaved, options);
  export_model(dir.file("c"), vocab, apart, options);

  const NpyMatrix vectors = read_npy(dir.file("i/vectors.npy"));
  EXPECT_EQ(vectors.rows, rows);
  EXPECT_EQ(vectors.cols, dim);
  EXPECT_TRUE(same_bits(vectors.data, floats(apart.input.data(), rows * dim)));
  const NpyMatrix context = read_npy(dir.file("i/context_vectors.npy"));
  EXPECT_TRUE(same_bits(context.data, floats(apart.output.data(), rows * dim)));
  for (const char* name :
       {"vectors.npy", "context_vectors.npy", "vectors.bin", "vectors.txt", "vocab.tsv"}) {
    const std::string a = read_file(dir.file(std::string("i/") + name));
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, read_file(dir.file(std::string("c/") + name))) << name;
  }
  const LoadedEmbeddings h5 = read_embeddings_h5(dir.file("i/embeddings.h5"));
  EXPECT_TRUE(same_bits(h5.vectors, floats(apart.input.data(), rows * dim)));
  HostTable h5_context(rows, dim, "context", "");
  read_matrix_h5(dir.file("i/embeddings.h5"), "context_vectors", h5_context);
  EXPECT_TRUE(
      same_bits(floats(h5_context.data(), rows * dim), floats(apart.output.data(), rows * dim)));
}

// ---------------------------------------------------------------------------------------------
// CPU backend

class CpuBackendLayout : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(CpuBackendLayout, RefusesInterleavedTables) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::string text;
  for (int s = 0; s < 40; ++s) {
    for (int i = 0; i < 10; ++i) text += "w" + std::to_string(rng() % 25) + " ";
    text += "\n";
  }
  Config c;
  c.dim = 8;
  c.epochs = 1;
  c.min_count = 1;
  c.optimizer = GetParam();
  const TrainingSet set = make_training_set(text, c);
  const TrainData data = set.train_data(c);
  const uint32_t rows = set.vocab.size();

  Model interleaved = allocate_model(rows, c.dim, c.optimizer, true, "");
  init_model(interleaved, seed);
  EXPECT_THROW(make_cpu_backend(interleaved, data, 1), Error);
  EXPECT_THROW(make_backend(RunPlan{}, interleaved, data, 1), Error);

  // The same model allocated apart trains. (Its output table starts at zero, so a batched
  // optimizer's first step moves only the output vectors: watch those.)
  Model apart = allocate_model(rows, c.dim, c.optimizer, false, "");
  init_model(apart, seed);
  const std::vector<float> before = values_of(apart.output);
  std::unique_ptr<Backend> backend = make_cpu_backend(apart, data, 1);
  const SpanStats stats = backend->train(0, 0, set.block_count());
  EXPECT_EQ(stats.words, 400u);
  EXPECT_FALSE(same_bits(values_of(apart.output), before));
}

INSTANTIATE_TEST_SUITE_P(Kinds, CpuBackendLayout,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam),
                         [](const ::testing::TestParamInfo<OptimizerKind>& info) {
                           return to_string(info.param);
                         });

// init_model cuts the rows among threads; the values are keyed by (seed, row, column), so every
// thread count gives the same bits, interleaved or apart, and the output table is all zero.
TEST(InitModel, EveryThreadCountGivesTheSameValues) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const uint64_t rows = 3 * 4096 + 77;
  const uint32_t dim = 7;
  Model ref = allocate_model(rows, dim, OptimizerKind::kSgd, false, "");
  init_model(ref, seed);
  const std::vector<float> ref_input = values_of(ref.input);
  for (bool interleaved : {false, true}) {
    for (uint32_t threads : {2u, 3u, 5u}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      Model m = allocate_model(rows, dim, OptimizerKind::kAdam, interleaved, "");
      m.output.fill(1.5f);  // poison: init_model must zero it
      init_model(m, seed, threads);
      EXPECT_TRUE(same_bits(values_of(m.input), ref_input));
      for (float x : values_of(m.output)) ASSERT_EQ(x, 0.0f);
    }
  }
}

// nonfinite_rows counts the rows holding a NaN or an infinity, in any column, of a table large
// enough to be cut among threads; the largest float and subnormals are finite.
TEST(RunCheck, NonfiniteRowsCountsEveryBadRowOnce) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<HostTable> pair = HostTable::interleaved(120001, 37, 2, "test tables", "");
  HostTable& t = pair[0];
  for (uint64_t r = 0; r < t.rows(); ++r) {
    for (uint32_t d = 0; d < t.dim(); ++d) t.row(r)[d] = static_cast<float>(rng() % 1000) - 500;
  }
  t.row(5)[3] = std::numeric_limits<float>::max();
  t.row(6)[0] = std::numeric_limits<float>::denorm_min();
  pair[1].row(9)[0] = std::numeric_limits<float>::quiet_NaN();  // the other table's row
  EXPECT_EQ(nonfinite_rows(t), 0u);
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  std::vector<uint64_t> rows;
  for (int i = 0; i < 40; ++i) rows.push_back(rng() % t.rows());
  rows.push_back(t.rows() - 1);
  for (uint64_t r : rows) t.row(r)[rng() % t.dim()] = bad[rng() % 3];
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  EXPECT_EQ(nonfinite_rows(t), rows.size());
}

}  // namespace
}  // namespace pagedw2v
