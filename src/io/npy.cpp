#include "io/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/mapped_file.hpp"

namespace pagedw2v {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              ".npy files are written as '<f4' straight from memory");

constexpr std::string_view kMagic("\x93NUMPY", 6);
// numpy aligns the data to 64 bytes since 1.x so that it can be memory-mapped with any dtype.
constexpr size_t kAlign = 64;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

// Reads the header dict, a Python literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only the subset numpy writes is understood: string keys, string / bool / int-tuple values.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string error_prefix)
      : s_(text), prefix_(std::move(error_prefix)) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!eat('}')) {
      const std::string key = string_literal("a key");
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() == '[') fail("structured dtypes are not supported (expected '<f4')");
        h.descr = string_literal("the dtype");
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        has_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the header");
    if (!has_descr || !has_order || !has_shape) {
      fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    }
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(prefix_ + "bad .npy header: " + why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool eat(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal(const char* what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(std::string("expected a string for ") + what);
    const size_t close = s_.find(quote, pos_ + 1);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string value(s_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    size_t end = pos_;
    while (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) ++end;
    const std::string_view word = s_.substr(pos_, end - pos_);
    pos_ = end;
    if (word == "True") return true;
    if (word == "False") return false;
    fail("expected True or False for 'fortran_order'");
  }
  uint64_t integer() {
    skip_space();
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected an integer in 'shape'");
    uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const uint64_t digit = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) fail("dimension too large");
      v = v * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2's long literals, written by old numpy versions
    return v;
  }
  std::vector<uint64_t> tuple() {
    std::vector<uint64_t> dims;
    expect('(');
    while (!eat(')')) {
      if (dims.size() == 64) fail("too many dimensions");
      dims.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string prefix_;
};

uint64_t read_le(const char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace

void write_npy(const std::string& path, const float* data, uint64_t rows, uint32_t cols) {
  write_npy(path, data, rows, cols, cols);
}

namespace {

/// The magic, version, header length and header of a `rows × cols` float32 matrix.
std::string npy_preamble(const std::string& path, uint64_t rows, uint32_t cols) {
  if (cols != 0 && rows > std::numeric_limits<size_t>::max() / sizeof(float) / cols) {
    throw Error("cannot write '" + path + "': matrix too large");
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + header + '\n' must end on the alignment.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  header += '\n';

  std::string preamble(kMagic);
  preamble += '\x01';
  preamble += '\x00';
  preamble += static_cast<char>(header.size() & 0xff);
  preamble += static_cast<char>(header.size() >> 8);
  return preamble + header;
}

}  // namespace

void write_npy(const std::string& path, const float* data, uint64_t rows, uint32_t cols,
               uint64_t stride) {
  const std::string preamble = npy_preamble(path, rows, cols);
  AtomicFile out(path);
  out.write(preamble);
  out.write_rows(data, rows, size_t{cols} * sizeof(float), stride * sizeof(float));
  out.commit();
}

void write_npy(const std::string& path, uint64_t rows, uint32_t cols, uint64_t chunk_rows,
               const std::function<void(uint64_t, uint64_t, float*)>& rows_at) {
  const std::string preamble = npy_preamble(path, rows, cols);
  AtomicFile out(path);
  out.write(preamble);
  chunk_rows = std::max<uint64_t>(chunk_rows, 1);
  std::vector<float> buffer(std::min(chunk_rows, rows) * cols);
  for (uint64_t r = 0; r < rows; r += chunk_rows) {
    const uint64_t n = std::min(chunk_rows, rows - r);
    rows_at(r, n, buffer.data());
    out.write(buffer.data(), n * cols * sizeof(float));
  }
  out.commit();
}

NpyRowWriter::NpyRowWriter(const std::string& path, uint64_t rows, uint32_t cols)
    : path_(path), rows_(rows), cols_(cols), out_(path) {
  out_.write(npy_preamble(path, rows, cols));
}

void NpyRowWriter::write(const float* rows, uint64_t n) {
  if (n > rows_ - written_) throw Error("cannot write '" + path_ + "': more rows than its shape");
  out_.write(rows, n * cols_ * sizeof(float));
  written_ += n;
}

void NpyRowWriter::commit() {
  if (written_ != rows_) {
    throw Error("cannot write '" + path_ + "': " + std::to_string(written_) + " of " +
                std::to_string(rows_) + " rows were written");
  }
  out_.commit();
}

NpyMatrix read_npy(const std::string& path) {
  const MappedFile file(path);
  return file.read([&](std::string_view bytes) { return parse_npy(bytes, path); });
}

NpyMatrix parse_npy(std::string_view bytes, const std::string& path) {
  const std::string prefix = "cannot read '" + path + "': ";

  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic) {
    throw Error(prefix + "not a NumPy .npy file");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  size_t length_bytes = 0;
  if (major == 1 && minor == 0) {
    length_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    length_bytes = 4;
  } else {
    throw Error(prefix + "unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor));
  }
  const size_t header_start = 8 + length_bytes;
  if (bytes.size() < header_start) throw Error(prefix + "truncated .npy header");
  const uint64_t header_length = read_le(bytes.data() + 8, length_bytes);
  if (header_length > bytes.size() - header_start) throw Error(prefix + "truncated .npy header");
  const size_t data_start = header_start + static_cast<size_t>(header_length);

  const NpyHeader header = HeaderParser(bytes.substr(header_start, header_length), prefix).parse();
  if (header.descr != "<f4") {
    throw Error(prefix + "dtype '" + header.descr + "' is not little-endian float32 ('<f4')");
  }
  if (header.fortran_order) throw Error(prefix + "Fortran-order arrays are not supported");
  if (header.shape.size() != 2) {
    throw Error(prefix + "expected a 2-D array, found shape " + shape_string(header.shape));
  }
  const uint64_t rows = header.shape[0];
  const uint64_t cols = header.shape[1];
  if (cols > std::numeric_limits<uint32_t>::max() ||
      (cols != 0 && rows > std::numeric_limits<size_t>::max() / sizeof(float) / cols)) {
    throw Error(prefix + "shape " + shape_string(header.shape) + " is too large");
  }
  const size_t data_bytes = static_cast<size_t>(rows * cols * sizeof(float));
  const size_t available = bytes.size() - data_start;
  if (available < data_bytes) {
    throw Error(prefix + "truncated: shape " + shape_string(header.shape) + " needs " +
                std::to_string(data_bytes) + " bytes of data, the file holds " +
                std::to_string(available));
  }
  if (available > data_bytes) {
    throw Error(prefix + std::to_string(available - data_bytes) +
                " unexpected bytes after the data of shape " + shape_string(header.shape));
  }

  NpyMatrix m;
  m.rows = rows;
  m.cols = static_cast<uint32_t>(cols);
  m.data.resize(static_cast<size_t>(rows * cols));
  if (data_bytes > 0) std::memcpy(m.data.data(), bytes.data() + data_start, data_bytes);
  return m;
}

}  // namespace pagedw2v
