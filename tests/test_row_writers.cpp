// The writers fed by row blocks (a distributed run's rank 0 writes its checkpoints and export from
// the rows it gathers, a block at a time) write the files the whole-table writers write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "io/export.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "io/row_block.hpp"
#include "io/word2vec_format.hpp"
#include "model/model.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {
namespace {

using testing_util::bytes_of;
using testing_util::fresh_seed;
using testing_util::random_vocab;
using testing_util::read_file;
using testing_util::TempDir;

void fill_random(HostTable& t, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (uint64_t r = 0; r < t.rows(); ++r) {
    for (uint32_t k = 0; k < t.dim(); ++k) t.row(r)[k] = normal(rng);
  }
}

/// Hands `tables` (whole, rows × dim) to `take` in blocks of random sizes, in id order, each
/// block a copy (as a gather gives it): 1 row, then up to `most`.
void feed_blocks(const std::vector<const HostTable*>& tables, std::mt19937_64& rng, uint64_t most,
                 const std::function<void(const RowBlock&)>& take) {
  const uint64_t rows = tables[0]->rows();
  const uint32_t dim = tables[0]->dim();
  std::vector<std::vector<float>> copies(tables.size());
  for (uint64_t first = 0, n = 1; first < rows; first += n, n = 1 + rng() % most) {
    n = std::min(n, rows - first);
    RowBlock b{first, n, dim, {}};
    for (size_t t = 0; t < tables.size(); ++t) {
      copies[t].assign(tables[t]->row(first), tables[t]->row(first) + n * dim);
      b.tables.push_back(copies[t].data());
    }
    take(b);
  }
}

std::vector<float> values(const HostTable& t) { return {t.data(), t.data() + t.rows() * t.dim()}; }

TEST(RowWriters, AnExportFromRowBlocksIsTheExportOfTheWholeTables) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const uint32_t words = 1037, dim = 13;
  const Vocab vocab = random_vocab(words, rng);
  Model model{HostTable(words, dim, "in", ""), HostTable(words, dim, "out", "")};
  fill_random(model.input, rng);
  fill_random(model.output, rng);
  ExportOptions options;
  options.save_context = true;
  options.attributes = {{"model", std::string("cbow")}, {"dim", int64_t{dim}}, {"alpha", 0.025}};

  StagedFiles whole(dir.file("whole"));
  write_export(whole, vocab, model, options);
  const std::vector<std::string> whole_paths = whole.commit(export_file_names());
  StagedFiles blocks(dir.file("blocks"));
  {
    ExportRowWriter out(blocks, vocab, dim, options);
    feed_blocks({&model.input, &model.output}, rng, 300, [&](const RowBlock& b) { out.write(b); });
    out.finish();
  }
  const std::vector<std::string> block_paths = blocks.commit(export_file_names());

  ASSERT_EQ(block_paths.size(), whole_paths.size());
  for (size_t i = 0; i < whole_paths.size(); ++i) {
    const std::string name = whole_paths[i].substr(whole_paths[i].rfind('/') + 1);
    ASSERT_EQ(block_paths[i], dir.file("blocks/" + name));
    const std::string a = read_file(whole_paths[i]), b = read_file(block_paths[i]);
    EXPECT_EQ(a.size(), b.size()) << name;
    // HDF5 stamps each object with the time it was made: those files are compared by content.
    if (name != "embeddings.h5") {
      EXPECT_TRUE(a == b) << name << " differs";
    }
  }
  const std::string a = dir.file("whole/embeddings.h5"), b = dir.file("blocks/embeddings.h5");
  const LoadedEmbeddings ea = read_embeddings_h5(a), eb = read_embeddings_h5(b);
  EXPECT_EQ(eb.words, ea.words);
  EXPECT_EQ(eb.counts, ea.counts);
  EXPECT_EQ(eb.rows, ea.rows);
  EXPECT_TRUE(eb.vectors == values(model.input));
  HostTable context(words, dim, "context", "");
  read_matrix_h5(b, "context_vectors", context);
  EXPECT_TRUE(values(context) == values(model.output));
  const std::vector<Attribute> aa = read_attributes_h5(a), ab = read_attributes_h5(b);
  ASSERT_EQ(ab.size(), aa.size());
  for (size_t i = 0; i < aa.size(); ++i) {
    EXPECT_EQ(ab[i].name, aa[i].name);
    EXPECT_TRUE(ab[i].value == aa[i].value) << aa[i].name;
  }
}

TEST(RowWriters, ACheckpointFromRowBlocksIsTheCheckpointOfTheWholeTables) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const uint32_t words = 523, dim = 9;
  const Vocab vocab = random_vocab(words, rng);
  Config config;
  config.corpus = "/some/corpus.txt";
  config.dim = dim;
  config.optimizer = OptimizerKind::kAdam;
  Model model = allocate_model(words, dim, config.optimizer, false, "");
  std::vector<const HostTable*> tables = {&model.input, &model.output};
  for (size_t k = 0; k < model.input_state.size(); ++k) {
    tables.push_back(&model.input_state[k]);
    tables.push_back(&model.output_state[k]);
  }
  ASSERT_EQ(tables.size(), checkpoint_tables(config.optimizer));
  for (const HostTable* t : tables) fill_random(const_cast<HostTable&>(*t), rng);
  const CorpusFingerprint fp{vocab.total_count(), 20, 0xF00DBABEDEADBEEFull};
  const TrainPosition pos{1, 17, fp.words + 4567};
  make_directories(dir.file("whole"));
  make_directories(dir.file("blocks"));
  CheckpointDir whole(dir.file("whole"), 2, 200000);
  const std::string a = whole.write(true, config, vocab, model, pos, fp, 0.0125f);
  CheckpointDir blocks(dir.file("blocks"), 2, 200000);
  std::string b;
  {
    CheckpointRowWriter out(blocks, true, config, vocab, pos, fp, 0.0125f);
    feed_blocks(tables, rng, 100, [&](const RowBlock& block) { out.write(block); });
    b = out.commit();
  }
  EXPECT_EQ(b, dir.file("blocks/checkpoints/epoch-1.h5"));
  EXPECT_EQ(read_file(dir.file("blocks/checkpoints/latest.h5")).size(), read_file(b).size());
  EXPECT_EQ(read_file(a).size(), read_file(b).size());

  const Checkpoint ca = load_checkpoint(a), cb = load_checkpoint(b);
  EXPECT_EQ(cb.vocab.words(), ca.vocab.words());
  EXPECT_EQ(cb.vocab.counts(), ca.vocab.counts());
  EXPECT_EQ(cb.position.epoch, pos.epoch);
  EXPECT_EQ(cb.position.block, pos.block);
  EXPECT_EQ(cb.position.words_done, pos.words_done);
  EXPECT_EQ(cb.lr, ca.lr);
  EXPECT_TRUE(cb.corpus == ca.corpus);
  EXPECT_EQ(cb.config.optimizer, OptimizerKind::kAdam);
  EXPECT_TRUE(values(cb.model.input) == values(model.input));
  EXPECT_TRUE(values(cb.model.output) == values(model.output));
  ASSERT_EQ(cb.model.input_state.size(), model.input_state.size());
  for (size_t k = 0; k < model.input_state.size(); ++k) {
    EXPECT_TRUE(values(cb.model.input_state[k]) == values(model.input_state[k])) << k;
    EXPECT_TRUE(values(cb.model.output_state[k]) == values(model.output_state[k])) << k;
  }
  const std::vector<Attribute> aa = read_attributes_h5(a), ab = read_attributes_h5(b);
  ASSERT_EQ(ab.size(), aa.size());
  for (size_t i = 0; i < aa.size(); ++i) {
    EXPECT_EQ(ab[i].name, aa[i].name);
    EXPECT_TRUE(ab[i].value == aa[i].value) << aa[i].name;
  }
}

TEST(RowWriters, AFileMissingRowsIsRefusedAndLeavesNothing) {
  std::mt19937_64 rng(7);
  TempDir dir;
  const Vocab vocab = random_vocab(10, rng);
  const std::vector<float> rows(9 * 4, 0.5f);
  {
    H5RowWriter h5(dir.file("e.h5"), vocab, 4, true, {});
    h5.write_rows(0, 0, 9, rows.data());
    h5.write_rows(1, 1, 9, rows.data());
    EXPECT_THROW(h5.write_rows(0, 2, 9, rows.data()), Error);  // past the last row
    EXPECT_THROW(h5.commit(), Error);                          // row 9 of /vectors never came
  }
  {
    NpyRowWriter npy(dir.file("v.npy"), 10, 4);
    npy.write(rows.data(), 9);
    EXPECT_THROW(npy.commit(), Error);
  }
  {
    Word2vecWriter txt(dir.file("v.txt"), vocab, 4, false);
    txt.write(0, 5, rows.data());
    EXPECT_THROW(txt.write(6, 1, rows.data()), Error);  // out of order
    EXPECT_THROW(txt.commit(), Error);
  }
  EXPECT_TRUE(testing_util::entries(dir.path()).empty());
}

}  // namespace
}  // namespace pagedw2v
