#pragma once
/// @file embeddings.hpp
/// Loading trained embeddings back from any format that `export_model` writes, for evaluation
/// and inspection.

#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v {

/// Embeddings read from disk: row i of `vectors` belongs to `words[i]`.
struct LoadedEmbeddings {
  std::vector<std::string> words;
  std::vector<uint64_t> counts;  ///< one per word, or empty when the format does not store them
  std::vector<float> vectors;    ///< `rows × dim`, row-major
  uint64_t rows = 0;
  uint32_t dim = 0;

  const float* row(uint64_t r) const { return vectors.data() + r * dim; }
};

/// Loads embeddings from `path`, which is either a run directory or a single file.
///
/// A directory is searched in this order: `vectors.npy` with `vocab.tsv`, `embeddings.h5`,
/// `vectors.bin`, `vectors.txt`. A file is read by its extension: `.npy` (with `vocab.tsv` in the
/// same directory), `.h5`, `.bin` (word2vec binary) or `.txt` (word2vec text).
///
/// Throws Error when nothing can be read or the words and the matrix disagree in rows, and
/// UsageError when a file's extension names no known format.
LoadedEmbeddings load_embeddings(const std::string& path);

}  // namespace pagedw2v
