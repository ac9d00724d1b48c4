#pragma once
/// @file packed_words.hpp
/// A WordList compressed for the time nothing reads its words: a trained vocabulary's words are
/// read only when a checkpoint or the export is written, while the tables and the corpus fill the
/// host memory. The words go in slices of kSliceWords, each its buffer (every word and its NUL)
/// deflated on its own (zlib, level 1), so that a slice comes back alone (a checkpoint, vocab.tsv
/// and an HDF5 export write the vocabulary a slice at a time, holding one slice unpacked) and
/// slices pack and unpack on several threads. The lengths and the marks of the list are not kept: a
/// slice finds its words at its NULs again, and names the rare words that hold a NUL with their
/// lengths.
///
/// Owns: the compressed slices. May not touch: what the words mean (vocab.hpp).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "vocab/word_list.hpp"

namespace pagedw2v {

class PackedWords {
 public:
  /// Words a slice holds (the last may hold fewer).
  static constexpr size_t kSliceWords = size_t{1} << 16;

  PackedWords() = default;
  /// Packs `words` on up to `threads` threads. Throws Error when memory or zlib fails.
  PackedWords(const WordList& words, uint32_t threads);

  size_t size() const { return size_; }
  size_t slices() const { return slices_.size(); }
  /// The bytes of the words and their NULs (WordList::bytes() of the list packed).
  uint64_t bytes() const { return bytes_; }

  /// Slice `k`'s words: those of rows [k · kSliceWords, min(size(), (k + 1) · kSliceWords)).
  WordList slice(size_t k) const;
  /// The whole list again, its slices unpacked on up to `threads` threads.
  WordList unpack(uint32_t threads) const;

  /// The bytes its buffers hold.
  size_t memory_bytes() const;

 private:
  struct Slice {
    std::vector<unsigned char> packed;  ///< the deflated buffer
    uint64_t bytes = 0;                 ///< of the buffer unpacked
    uint32_t words = 0;
    /// {word in the slice, length} of its words that hold a NUL, ascending.
    std::vector<std::pair<uint64_t, uint64_t>> nul_words;
  };

  /// Slice `k`'s buffer unpacked into `out` (bytes of it); throws Error when it does not unpack.
  void inflate_into(size_t k, char* out) const;

  std::vector<Slice> slices_;
  size_t size_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace pagedw2v
