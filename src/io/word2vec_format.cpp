#include "io/word2vec_format.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>
#include <thread>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "io/ordered_blocks.hpp"
#include "text/tokenizer.hpp"
#include "text/utf8.hpp"

namespace pagedw2v {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "word2vec binary rows are written straight from memory as little-endian float32");

void check_rows(const std::string& path, const Vocab& vocab, const HostTable& table) {
  if (table.rows() != vocab.size()) {
    throw Error("cannot write '" + path + "': the vocabulary has " + std::to_string(vocab.size()) +
                " words but the table " + std::to_string(table.rows()) + " rows");
  }
}

void check_words(const std::string& path, const Vocab& vocab) {
  for (uint32_t i = 0; i < vocab.size(); ++i) {
    const std::string_view w = vocab.word(i);
    bool bad = w.empty();
    for (const char c : w) bad = bad || is_space_byte(static_cast<unsigned char>(c));
    if (bad) {
      throw Error("cannot write '" + path + "': word " + std::to_string(i) +
                  " is empty or holds whitespace, which the word2vec format cannot store");
    }
  }
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A cursor over the mapped file that reports errors with the path and where: the line of a
// text file, the row (counted from 1) of a binary one, whose bytes need not form lines.
class Reader {
 public:
  Reader(const std::string& path, std::string_view bytes, bool binary)
      : path_(path), s_(bytes), binary_(binary) {}

  [[noreturn]] void fail(const std::string& why) const {
    const std::string where =
        binary_ && row_ > 0 ? " row " + std::to_string(row_) : " line " + std::to_string(line_);
    throw Error("cannot read '" + path_ + "'" + where + ": " + why);
  }
  [[noreturn]] void fail_unnumbered(const std::string& why) const {
    throw Error("cannot read '" + path_ + "': " + why);
  }

  size_t remaining() const { return s_.size() - pos_; }
  bool at_end() const { return pos_ == s_.size(); }

  // Skips spaces, tabs, CRs and (when `newlines`) LFs.
  void skip_space(bool newlines) {
    while (pos_ < s_.size() && (is_blank(s_[pos_]) || (newlines && s_[pos_] == '\n'))) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }

  // The next run of bytes up to a space, tab, CR or LF (empty at the end of a line).
  std::string_view field() {
    skip_space(false);
    const size_t start = pos_;
    while (pos_ < s_.size() && !is_blank(s_[pos_]) && s_[pos_] != '\n') ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // Consumes the rest of the line, which must be blank.
  void end_line() {
    skip_space(false);
    if (pos_ < s_.size() && s_[pos_] != '\n') fail("unexpected text at the end of the line");
    if (pos_ < s_.size()) {
      ++pos_;
      ++line_;
    }
  }

  uint64_t unsigned_field(const char* what) {
    const std::string_view f = field();
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (f.empty() || ec != std::errc() || end != f.data() + f.size()) {
      fail(std::string("expected the header \"V D\", bad ") + what);
    }
    return v;
  }

  /// What fixes a row's number of values, as the errors name it: the header's dimension, or
  /// (GloVe, no header) the first row's.
  void set_dimension_source(const std::string& source) { dimension_source_ = source; }

  // Consumes the rest of a row's line, which must hold no more values.
  void end_row() {
    skip_space(false);
    if (pos_ < s_.size() && s_[pos_] != '\n') fail("more values than " + dimension_source_);
    end_line();
  }

  float float_field() {
    std::string_view f = field();
    if (f.empty()) fail("fewer values than " + dimension_source_);
    if (f.front() == '+') f.remove_prefix(1);
    float v = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size()) {
      fail("bad number '" + std::string(f) + "'");
    }
    return v;
  }

  // Binary rows: the word runs up to the next space.
  std::string_view binary_word() {
    skip_space(true);
    const size_t space = s_.find(' ', pos_);
    if (space == std::string_view::npos) fail("truncated row");
    const std::string_view w = s_.substr(pos_, space - pos_);
    pos_ = space + 1;
    return w;
  }

  void set_row(uint64_t row) { row_ = row; }

  const char* take(size_t bytes) {
    if (remaining() < bytes) fail("truncated row");
    const char* p = s_.data() + pos_;
    pos_ += bytes;
    return p;
  }

 private:
  const std::string& path_;
  std::string_view s_;
  bool binary_;
  size_t pos_ = 0;
  uint64_t line_ = 1;
  uint64_t row_ = 0;
  std::string dimension_source_ = "the dimension in the header";
};

}  // namespace

Word2vecWriter::Word2vecWriter(const std::string& path, const Vocab& vocab, uint32_t dim,
                               bool binary)
    : path_(path), vocab_(vocab), dim_(dim), binary_(binary), out_(path) {
  check_words(path, vocab);
  out_.write(std::to_string(vocab.size()) + " " + std::to_string(dim) + "\n");
}

void Word2vecWriter::write(uint64_t first, uint64_t n, const float* rows) {
  if (first != next_ || n > vocab_.size() - first) {
    throw Error("cannot write '" + path_ + "': rows " + std::to_string(first) + " to " +
                std::to_string(first + n) + " out of order");
  }
  // Rows formatted in blocks of about a MiB by every thread, written in order (the text of
  // 2 M rows × 128 takes 16.7 s on one thread).
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  const uint64_t guess = binary_ ? row_bytes + 16 : uint64_t{dim_} * 11 + 16;
  const uint64_t per_block = std::max<uint64_t>(1, (uint64_t{1} << 20) / guess);
  const uint64_t blocks = (n + per_block - 1) / per_block;
  write_ordered_blocks(out_, blocks, std::max(1u, std::thread::hardware_concurrency()),
                       [&](uint64_t b, std::string& bytes) {
                         char number[64];
                         const uint64_t end = std::min(n, (b + 1) * per_block);
                         for (uint64_t k = b * per_block; k < end; ++k) {
                           const float* row = rows + k * dim_;
                           bytes += vocab_.word(static_cast<uint32_t>(first + k));
                           if (binary_) {
                             bytes += ' ';
                             bytes.append(reinterpret_cast<const char*>(row), row_bytes);
                           } else {
                             for (uint32_t j = 0; j < dim_; ++j) {
                               bytes += ' ';
                               // Shortest form that parses back to the same float32.
                               const auto result =
                                   std::to_chars(number, number + sizeof number, row[j]);
                               bytes.append(number, result.ptr);
                             }
                           }
                           bytes += '\n';
                         }
                       });
  next_ = first + n;
}

void Word2vecWriter::commit() {
  if (next_ != vocab_.size()) {
    throw Error("cannot write '" + path_ + "': " + std::to_string(next_) + " of " +
                std::to_string(vocab_.size()) + " rows were written");
  }
  out_.commit();
}

namespace {

void write_word2vec(const std::string& path, const Vocab& vocab, const HostTable& table,
                    bool binary) {
  check_rows(path, vocab, table);
  Word2vecWriter out(path, vocab, table.dim(), binary);
  if (table.storage() == Storage::kFp32 && table.contiguous()) {
    out.write(0, table.rows(), table.data());
  } else {
    // 16-bit storage goes out as float32, interleaved rows side by side: 64 Ki rows at a time.
    const uint64_t chunk = std::min<uint64_t>(table.rows(), uint64_t{1} << 16);
    std::vector<float> rows(chunk * table.dim());
    for (uint64_t r = 0; r < table.rows(); r += chunk) {
      const uint64_t n = std::min(chunk, table.rows() - r);
      table.read_rows(r, n, rows.data());
      out.write(r, n, rows.data());
    }
  }
  out.commit();
}

}  // namespace

void write_word2vec_bin(const std::string& path, const Vocab& vocab, const HostTable& table) {
  write_word2vec(path, vocab, table, true);
}

void write_word2vec_txt(const std::string& path, const Vocab& vocab, const HostTable& table) {
  write_word2vec(path, vocab, table, false);
}

LoadedEmbeddings read_word2vec(const std::string& path, bool binary) {
  const MappedFile file(path);
  return file.read([&](std::string_view bytes) {
    return parse_word2vec(bytes, path, binary ? Word2vecLayout::kBinary : Word2vecLayout::kText);
  });
}

namespace {

// The fields of the first line of `bytes` (at most `limit` bytes looked at), split at blanks.
std::vector<std::string_view> first_line_fields(std::string_view bytes, size_t limit,
                                                size_t* line_end) {
  const size_t newline = bytes.find('\n');
  const size_t end = std::min(newline == std::string_view::npos ? bytes.size() : newline, limit);
  *line_end = newline == std::string_view::npos ? bytes.size() : newline + 1;
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < end) {
    while (i < end && is_blank(bytes[i])) ++i;
    const size_t start = i;
    while (i < end && !is_blank(bytes[i])) ++i;
    if (i > start) fields.push_back(bytes.substr(start, i - start));
  }
  return fields;
}

bool is_unsigned(std::string_view f, uint64_t* value) {
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *value);
  return !f.empty() && ec == std::errc() && end == f.data() + f.size();
}

bool is_float(std::string_view f) {
  if (!f.empty() && f.front() == '+') f.remove_prefix(1);
  float v = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  return !f.empty() && ec == std::errc() && end == f.data() + f.size();
}

// A word followed by numbers only: a row of a text file.
bool is_text_row(const std::vector<std::string_view>& fields, uint64_t dim) {
  if (fields.size() < 2 || (dim > 0 && fields.size() != dim + 1)) return false;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (!is_float(fields[i])) return false;
  }
  return true;
}

constexpr size_t kSniffBytes = size_t{1} << 20;

}  // namespace

Word2vecLayout sniff_word2vec(std::string_view bytes) {
  size_t header_end = 0;
  const std::vector<std::string_view> first = first_line_fields(bytes, kSniffBytes, &header_end);
  uint64_t rows = 0;
  uint64_t dim = 0;
  if (first.size() == 2 && is_unsigned(first[0], &rows) && is_unsigned(first[1], &dim) && dim > 0) {
    const std::string_view rest = bytes.substr(header_end);
    if (rows == 0 || rest.empty()) return Word2vecLayout::kText;
    size_t unused = 0;
    // A text row of the announced dimension; anything else after a header is binary.
    if (is_text_row(first_line_fields(rest, kSniffBytes, &unused), dim)) {
      return Word2vecLayout::kText;
    }
    // A binary row: a word without blanks or line breaks, a space, then dim floats.
    const size_t space = rest.find(' ');
    if (space != std::string_view::npos && space > 0 && space < kSniffBytes &&
        rest.substr(0, space).find_first_of("\n\t\r") == std::string_view::npos) {
      return Word2vecLayout::kBinary;
    }
    return Word2vecLayout::kUnknown;
  }
  if (is_text_row(first, 0)) return Word2vecLayout::kHeaderlessText;
  return Word2vecLayout::kUnknown;
}

LoadedEmbeddings parse_word2vec(std::string_view bytes, const std::string& path,
                                Word2vecLayout layout) {
  const bool binary = layout == Word2vecLayout::kBinary;
  if (layout == Word2vecLayout::kUnknown) {
    throw Error("cannot read '" + path + "': not word2vec, GloVe or fastText vectors");
  }
  Reader in(path, bytes, binary);
  if (in.at_end()) in.fail_unnumbered("empty file (expected the header \"V D\")");

  uint64_t rows = 0;
  uint64_t dim = 0;
  if (layout == Word2vecLayout::kHeaderlessText) {
    // GloVe: no header; the first line gives the dimension, the non-blank lines the rows.
    size_t unused = 0;
    const std::vector<std::string_view> first = first_line_fields(bytes, bytes.size(), &unused);
    if (first.size() < 2) in.fail("expected a word and its values");
    dim = first.size() - 1;
    in.set_dimension_source("the first row's " + std::to_string(dim) +
                            " (a file without a header)");
    size_t pos = 0;
    while (pos < bytes.size()) {
      size_t end = bytes.find('\n', pos);
      if (end == std::string_view::npos) end = bytes.size();
      for (size_t i = pos; i < end; ++i) {
        if (!is_blank(bytes[i])) {
          ++rows;
          break;
        }
      }
      pos = end + 1;
    }
  } else {
    rows = in.unsigned_field("V");
    dim = in.unsigned_field("D");
    in.end_line();
  }
  if (dim > std::numeric_limits<uint32_t>::max()) in.fail_unnumbered("dimension too large");
  // Every row takes at least this many bytes, so the header cannot ask for more memory than the
  // file could fill.
  const uint64_t min_row = binary ? 2 + dim * sizeof(float) : 1 + 2 * dim;
  if (rows > (in.remaining() + 1) / min_row) {
    if (layout == Word2vecLayout::kHeaderlessText) {
      in.fail_unnumbered("its " + std::to_string(rows) +
                         " rows are too short for the first row's " + std::to_string(dim) +
                         " values (a file without a header)");
    }
    in.fail_unnumbered("truncated: the header announces " + std::to_string(rows) + " rows of " +
                       std::to_string(dim) + " values, the file is too short for them");
  }

  LoadedEmbeddings e;
  e.rows = rows;
  e.dim = static_cast<uint32_t>(dim);
  e.words.reserve(static_cast<size_t>(rows));
  e.vectors.resize(static_cast<size_t>(rows * dim));
  float* out = e.vectors.data();
  for (uint64_t r = 0; r < rows; ++r, out += dim) {
    if (binary) {
      in.set_row(r + 1);
      const std::string_view w = in.binary_word();
      if (w.empty()) in.fail("empty word");
      // A word written with a space in it shifts every later row: its next part and the vector
      // bytes then read as words, which gensim (UTF-8, strict) refuses as well.
      bool control = false;
      for (const char c : w) control = control || static_cast<unsigned char>(c) < 0x20;
      if (control || !is_valid_utf8(w)) {
        in.fail("the word is not UTF-8 text (a word with a space, or a damaged row)");
      }
      e.words.emplace_back(w);
      const char* row = in.take(dim * sizeof(float));
      if (dim > 0) std::memcpy(out, row, dim * sizeof(float));
    } else {
      in.skip_space(true);
      if (in.at_end()) {
        in.fail_unnumbered("truncated: the header announces " + std::to_string(rows) +
                           " rows, the file holds " + std::to_string(r));
      }
      e.words.emplace_back(in.field());
      for (uint64_t j = 0; j < dim; ++j) out[j] = in.float_field();
      in.end_row();
    }
  }
  in.set_row(rows + 1);
  in.skip_space(true);
  if (!in.at_end()) {
    in.fail("more rows than the " + std::to_string(rows) + " that the header announces");
  }
  return e;
}

}  // namespace pagedw2v
