#pragma once
/// @file text_source.hpp
/// The corpus inputs people have, read into text parts (one per file) for the ingest:
/// - a regular file: mapped (read in place), or, when it starts with gzip's or zstd's magic
///   bytes, decompressed into memory (the name does not matter);
/// - `-`: standard input, and any other stream (a pipe, `<(zcat f.gz)`): read into memory, and
///   decompressed too when compressed;
/// - a directory: its regular files (not hidden ones, not subdirectories) in sorted name order.
/// Each file is its own part, so a file's end ends a sentence. Input that looks binary (control
/// bytes) or is in another compression or archive format (bzip2, xz, zip, ...) is refused with
/// one line naming the file.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.hpp"

namespace pagedw2v {

class CorpusText {
 public:
  CorpusText() = default;
  CorpusText(CorpusText&&) = default;
  CorpusText& operator=(CorpusText&&) = default;

  /// Reads every input of `paths` in order; throws Error naming the input on any problem.
  static CorpusText open(const std::vector<std::string>& paths);
  /// A corpus of one part held in memory: `text` (made from other inputs, such as the text with
  /// phrases joined), named `name` in errors. Refused as open() refuses an input that is not text.
  static CorpusText of_text(std::string text, const std::string& name);

  /// The texts of the files, in corpus order (views into maps and buffers this object owns).
  const std::vector<std::string_view>& parts() const { return parts_; }
  /// The input names of parts(), in the same order.
  const std::vector<std::string>& names() const { return names_; }
  uint64_t bytes() const;
  /// Whether part `i` is a mapped file (read in place; the others are held in memory).
  bool mapped(size_t i) const { return i < mapped_.size() && mapped_[i]; }
  /// Tells the kernel that bytes [begin, end) of part `i` will not be read again soon, so that
  /// their pages leave this process's resident memory (they stay in the page cache). Only mapped
  /// parts are affected; reading them later is still correct.
  void release(size_t i, size_t begin, size_t end) const;
  /// release() of the bytes `text` views, which lie inside one part (a view of parts()).
  void release(std::string_view text) const;

 private:
  void add_file(const std::string& path);
  void add_stream(int fd, const std::string& name);
  void add_buffer(std::string data, const std::string& name);

  std::vector<MappedFile> maps_;
  std::vector<std::unique_ptr<std::string>> buffers_;
  std::vector<std::string_view> parts_;
  std::vector<std::string> names_;
  std::vector<bool> mapped_;  ///< per part
};

/// What the first bytes of a file say it is: text, gzip, zstd, or another format that cannot be
/// read (a name such as "bzip2"); "binary" when too many control bytes make it look binary.
std::string sniff_format(std::string_view head);

/// Decompresses a whole gzip (several members allowed) or zstd stream; throws Error naming
/// `name` when it is truncated or corrupt.
std::string decompress_gzip(std::string_view data, const std::string& name);
std::string decompress_zstd(std::string_view data, const std::string& name);

}  // namespace pagedw2v
