#pragma once
/// @file word2vec_format.hpp
/// The two formats of the original word2vec.c (`-binary 1` and `-binary 0`), which gensim's
/// `KeyedVectors.load_word2vec_format` and most other tools read:
///
///     binary:  "V D\n", then per word: word ' ' D little-endian float32 '\n'
///     text:    "V D\n", then per word: word ' ' v1 ' ' … vD '\n'
///
/// Text values are written with the fewest digits that read back to the same float32.
///
/// The text format is also fastText's `.vec`; GloVe writes it without the header line.

#include <string>
#include <string_view>

#include "base/atomic_file.hpp"
#include "io/embeddings.hpp"
#include "model/host_table.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// Writes the binary format (through a temporary file renamed into place). Throws Error naming
/// `path` on failure, when `table` and `vocab` disagree in rows, or when a word is empty or
/// holds whitespace (the format could not be read back).
void write_word2vec_bin(const std::string& path, const Vocab& vocab, const HostTable& table);

/// Writes the text format; the same rules as write_word2vec_bin().
void write_word2vec_txt(const std::string& path, const Vocab& vocab, const HostTable& table);

/// Either format written from rows handed in id order a block at a time (write_word2vec_bin and
/// _txt write through it; a distributed run's rank 0 hands it the rows it gathers). The
/// vocabulary's words are checked first, as those functions check them; the file appears under
/// `path` only when commit() has checked that every row came.
class Word2vecWriter {
 public:
  Word2vecWriter(const std::string& path, const Vocab& vocab, uint32_t dim, bool binary);
  /// Rows first … first + n − 1 (`n × dim` row-major floats); `first` is the next row.
  void write(uint64_t first, uint64_t n, const float* rows);
  void commit();

 private:
  std::string path_;
  const Vocab& vocab_;
  uint32_t dim_;
  bool binary_;
  uint64_t next_ = 0;
  AtomicFile out_;
};

/// Reads either format. As tolerant as gensim: in the binary format the '\n' after each row is
/// optional; in the text format fields may be separated by runs of spaces or tabs and lines may
/// end in "\r\n" or trailing spaces. Counts are not stored, so `counts` is empty. Throws Error
/// naming `path` on malformed or truncated input.
LoadedEmbeddings read_word2vec(const std::string& path, bool binary);

/// The layouts of a file of words and vectors.
enum class Word2vecLayout {
  kBinary,          ///< word2vec.c `-binary 1`, gensim's binary: header, then float32 rows
  kText,            ///< word2vec.c `-binary 0`, gensim's text, fastText's `.vec`: header, text rows
  kHeaderlessText,  ///< GloVe: text rows without the "V D" header
  kUnknown,
};

/// Tells the layout from the first bytes: a "V D" header followed by a text row of D values is
/// text, followed by anything else binary; a first line of a word and numbers is headerless text.
Word2vecLayout sniff_word2vec(std::string_view bytes);

/// Reads `bytes` laid out as `layout`, with the tolerance of read_word2vec(); `path` names the
/// file in messages. A headerless file takes its dimension from the first line.
LoadedEmbeddings parse_word2vec(std::string_view bytes, const std::string& path,
                                Word2vecLayout layout);

}  // namespace pagedw2v
