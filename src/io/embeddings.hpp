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
  std::string format;  ///< what was read, e.g. "word2vec binary" or "GloVe text (gzip)"

  const float* row(uint64_t r) const { return vectors.data() + r * dim; }
};

/// The file formats load_embeddings() reads; kAuto tells them by content.
enum class VectorsFormat {
  kAuto,
  kNpy,    ///< `.npy` matrix with `vocab.tsv` beside it
  kH5,     ///< `embeddings.h5` or a checkpoint
  kBin,    ///< word2vec binary with its "V D" header (also gensim's)
  kTxt,    ///< word2vec text with its header (also gensim's and fastText's `.vec`)
  kGlove,  ///< text rows without a header (GloVe)
};

/// "auto", "npy", "h5", "bin", "txt" (also "vec", "word2vec") or "glove"; throws UsageError
/// naming `--vectors-format` otherwise.
VectorsFormat parse_vectors_format(const std::string& name);

/// Loads embeddings from `path`, which is either a run directory or a single file.
///
/// A directory is searched in this order: `vectors.npy` with `vocab.tsv`, `embeddings.h5`,
/// `vectors.bin`, `vectors.txt`, `vectors.vec`. A file is told by its content, whatever its name:
/// a numpy array (with `vocab.tsv` in the same directory), HDF5, a word2vec binary or text file
/// with the "V D" header (gensim's and fastText's `.vec` among them), or text rows without the
/// header (GloVe); any of the last three may be gzip-compressed. `format` other than kAuto
/// reads the file as that format instead.
///
/// Files that bear the names of a set's files (vocab.tsv, vectors.npy, …) in a directory that
/// holds a manifest are checked against it (output_set.hpp): files of two exports mixed in one
/// directory are refused, with one line naming the first file that does not belong.
///
/// Throws Error when nothing can be read, the content is none of these, the words and the
/// matrix disagree in rows, or the files are not the set their manifest lists.
LoadedEmbeddings load_embeddings(const std::string& path,
                                 VectorsFormat format = VectorsFormat::kAuto);

}  // namespace pagedw2v
