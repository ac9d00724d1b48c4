#pragma once
/// @file export.hpp
/// Writing a trained model to a run directory:
///
///     DIR/vocab.tsv             word<TAB>count, one line per row (with any format)
///     DIR/vectors.npy           [V, D] float32 input vectors            (format "npy")
///     DIR/context_vectors.npy   [V, D] float32 output vectors           ("npy" + save_context)
///     DIR/embeddings.h5         vectors (+ /context_vectors), vocabulary, attributes ("h5")
///     DIR/vectors.bin           word2vec.c binary                        (format "bin")
///     DIR/context_vectors.bin   the output vectors, word2vec.c binary    ("bin" + save_context)
///     DIR/vectors.txt           word2vec.c text                          (format "txt")
///     DIR/context_vectors.txt   the output vectors, word2vec.c text      ("txt" + save_context)
///
/// The files of one export are a set: they are all written under a temporary directory inside DIR
/// (`DIR/export.RANDOM.tmp-PID/`) and moved into DIR only when every one is complete, after
/// DIR/manifest.json, which lists them with their sizes and hashes (output_set.hpp); the files of
/// an older set that are not part of the new one are removed then. A reader that finds files of
/// two sets in DIR (a process killed while it moved them) refuses them. A failure leaves DIR as it
/// was; so does a stop signal (remove_own_temps_now() removes the temporary directory). The formats
/// are written at the same time, one thread each, and fsync'ed as the calling thread's FsyncScope
/// says (atomic_file.hpp).

#include <memory>
#include <string>
#include <vector>

#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "io/row_block.hpp"
#include "io/word2vec_format.hpp"
#include "model/model.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

struct ExportOptions {
  /// Any of "npy", "h5", "bin", "txt"; empty for none (no file at all).
  std::vector<std::string> formats = {"npy", "h5", "bin", "txt"};
  /// Also write the output (context) vectors, in every format asked for.
  bool save_context = false;
  /// Stored on the root group of embeddings.h5.
  std::vector<Attribute> attributes;
};

/// Files that are written under a temporary directory inside `dir` and moved into `dir` together.
/// Destroyed before commit(), it removes the temporary directory and all it holds.
class StagedFiles {
 public:
  /// Creates `dir` (and its parents) when needed and the temporary directory in it; throws Error
  /// naming the directory when either cannot be created.
  explicit StagedFiles(std::string dir);
  ~StagedFiles();
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  const std::string& dir() const { return dir_; }
  /// The set's id, which its manifest records (new_set_id()).
  const std::string& set_id() const { return set_id_; }
  /// Where to write the file `name` (no directory part) so that commit() moves it into dir().
  std::string path_for(const std::string& name);
  /// The names staged so far, in order.
  const std::vector<std::string>& names() const { return names_; }
  /// Writes `contents` as the file `name`.
  void add(const std::string& name, const std::string& contents);
  /// Writes the manifest of the staged files, moves it into dir(), removes the `stale` names that
  /// are not part of this set, moves every staged file into dir(), fsyncs the directory (as
  /// fsync_on_commit() says) and returns the final paths in the order they were staged (the
  /// manifest not among them). With no file staged, no manifest is written (an older one is
  /// removed when `stale` names it).
  std::vector<std::string> commit(const std::vector<std::string>& stale = {});

 private:
  std::string dir_;
  std::string set_id_;
  std::string staging_;
  int staging_handle_ = -1;
  std::vector<std::string> names_;
  bool committed_ = false;
};

/// The names of every file an export may write (vocab.tsv, vectors.npy, …).
const std::vector<std::string>& export_file_names();

/// Writes the export files of `model` (above) into `files`, all formats at once; the caller
/// commits. The vocabulary's words may be packed (Vocab::pack_words). Throws Error when a file
/// cannot be written, UsageError for an unknown format.
void write_export(StagedFiles& files, const Vocab& vocab, const Model& model,
                  const ExportOptions& options);

/// The files write_export() writes, from row blocks handed in id order: table 0 of each block is
/// the input vectors, table 1 (read only with save_context) the output vectors. A distributed
/// run's rank 0 writes its export this way from the rows it gathers, a block at a time. The files
/// are staged in `files` under write_export()'s names, in its order; each block goes to every
/// file at once, one thread each; finish() writes vocab.tsv and completes every file, and the
/// caller commits `files`. Throws as write_export().
class ExportRowWriter {
 public:
  ExportRowWriter(StagedFiles& files, const Vocab& vocab, uint32_t dim,
                  const ExportOptions& options);
  ~ExportRowWriter();
  ExportRowWriter(const ExportRowWriter&) = delete;
  ExportRowWriter& operator=(const ExportRowWriter&) = delete;

  void write(const RowBlock& block);
  void finish();

 private:
  const Vocab& vocab_;
  bool context_;
  std::string vocab_path_;
  std::vector<std::pair<size_t, std::unique_ptr<NpyRowWriter>>> npy_;
  std::vector<std::pair<size_t, std::unique_ptr<Word2vecWriter>>> word2vec_;
  std::unique_ptr<H5RowWriter> h5_;
};

/// Creates `dir` (and its parents) when needed, writes the files above and commits them as a set.
/// Returns the paths written. Throws Error when the directory cannot be created or a file cannot
/// be written (nothing in `dir` changes then), and UsageError for an unknown format.
std::vector<std::string> export_model(const std::string& dir, const Vocab& vocab,
                                      const Model& model, const ExportOptions& options);

/// Parses `--format`'s comma-separated list ("npy,h5"), dropping repeats; "none" alone is the
/// empty list. Throws UsageError("--format: unknown format 'x' (expected npy, h5, bin, txt or
/// none)") for an unknown name, UsageError saying that no file is written compressed for a
/// compressed one ("txt.gz", "npy.gz"), and UsageError when the list is empty.
std::vector<std::string> parse_formats(const std::string& csv);

/// Throws UsageError when `dir`, the directory an export goes to (`--output`), is named like a
/// compressed file ("vectors.npy.gz") and is not an existing directory: the export files are
/// written into a directory, uncompressed.
void check_output_directory_name(const std::string& dir);

}  // namespace pagedw2v
