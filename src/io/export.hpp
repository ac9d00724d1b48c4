#pragma once
/// @file export.hpp
/// Writing a trained model to a run directory:
///
///     DIR/vocab.tsv             word<TAB>count, one line per row (always)
///     DIR/vectors.npy           [V, D] float32 input vectors            (format "npy")
///     DIR/context_vectors.npy   [V, D] float32 output vectors           ("npy" + save_context)
///     DIR/embeddings.h5         vectors, vocabulary, attributes          (format "h5")
///     DIR/vectors.bin           word2vec.c binary                        (format "bin")
///     DIR/vectors.txt           word2vec.c text                          (format "txt")
///
/// Every file is written to a temporary name and renamed into place when complete.

#include <string>
#include <vector>

#include "io/hdf5_io.hpp"
#include "model.hpp"
#include "vocab.hpp"

namespace pagedw2v {

struct ExportOptions {
  /// Any of "npy", "h5", "bin", "txt".
  std::vector<std::string> formats = {"npy", "h5", "bin", "txt"};
  /// Also write the output (context) vectors: context_vectors.npy and /context_vectors.
  bool save_context = false;
  /// Stored on the root group of embeddings.h5.
  std::vector<Attribute> attributes;
};

/// Creates `dir` (and its parents) when needed and writes the files above. Throws Error when the
/// directory cannot be created or a file cannot be written, and UsageError for an unknown format.
void export_model(const std::string& dir, const Vocab& vocab, const Model& model,
                  const ExportOptions& options);

/// Parses `--format`'s comma-separated list ("npy,h5"), dropping repeats. Throws
/// UsageError("--format: unknown format 'x' (expected npy, h5, bin, txt)") for an unknown name
/// and UsageError when the list is empty.
std::vector<std::string> parse_formats(const std::string& csv);

}  // namespace pagedw2v
