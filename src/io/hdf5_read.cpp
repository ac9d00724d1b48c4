#include "io/hdf5_read.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/hdf5_detail.hpp"
#include "io/hdf5_lock.hpp"
#include "io/hdf5_parse.hpp"
#include "io/isolated_call.hpp"

namespace pagedw2v {
namespace {

/// Limits of a child that parses or converts about `bytes` bytes: processor time for one pass
/// over them at a rate far below any machine's (PAGEDW2V_H5_PARSE_CPU_SECONDS sets it), wall time
/// well beyond that for a child that waits instead, and memory for the values and the library.
IsolationLimits child_limits(uint64_t bytes) {
  IsolationLimits limits;
  limits.cpu_seconds = 5.0 + static_cast<double>(bytes) / 20e6;
  if (const char* v = std::getenv("PAGEDW2V_H5_PARSE_CPU_SECONDS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(v, &end);
    if (end != v && *end == '\0' && seconds > 0) limits.cpu_seconds = seconds;
  }
  limits.seconds = 60.0 + 4.0 * limits.cpu_seconds;
  limits.memory_bytes = (uint64_t{1} << 30) + 4 * bytes;
  limits.fork_lock = &hdf5_write_mutex();
  return limits;
}

/// Reads `bytes` bytes at `at` of `fd` into `out`; a short read means a table that the file
/// does not hold whole.
void read_exactly(int fd, uint64_t at, uint64_t bytes, char* out, const std::string& path,
                  const std::string& label) {
  while (bytes > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes, uint64_t{1} << 30));
    const ssize_t got = ::pread(fd, out, want, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read '" + path + "': " + label + ": " + std::strerror(errno));
    if (got == 0) throw Error("cannot read '" + path + "': the file ends inside " + label);
    out += got;
    at += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
}

/// An anonymous memory file, closed with the object.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& path)
      : fd_(::memfd_create("pagedw2v-table", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      throw Error("cannot read '" + path +
                  "': no scratch memory to convert a table in: " + std::strerror(errno));
    }
  }
  ~ScratchFile() { ::close(fd_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

const H5Table* H5Contents::table(const std::string& name) const {
  for (const H5Table& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const H5Table& require_table(const H5Contents& contents, const std::string& name,
                             const std::string& path) {
  const H5Table* t = contents.table(name);
  if (t == nullptr || !t->present)
    throw Error("cannot read '" + path + "': no /" + name + " dataset");
  return *t;
}

H5Source::H5Source(const std::string& path) : path_(path) {
  // O_NONBLOCK: a FIFO at the path must not block the open (it is refused below).
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw Error("cannot read '" + path + "': " + std::strerror(err));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  try {
    (void)detail::integrity_of(fd_, path);  // also refuses what is not a regular file
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

H5Source::~H5Source() {
  if (fd_ >= 0) ::close(fd_);
}

H5Source::H5Source(H5Source&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

H5Contents H5Source::parse(const H5Request& request) const {
  const std::string reply =
      run_isolated_reply("cannot read '" + path_ + "': ", child_limits(size_),
                         [&] { return detail::parse_h5_contents(fd_, size_, path_, request); });
  return detail::decode_h5_contents(reply, path_, request);
}

template <class Read>
void H5Source::with_rows(const H5Table& table, Read&& read) const {
  const std::string label = "/" + table.name;
  if (!table.present) throw Error("cannot read '" + path_ + "': no " + label + " dataset");
  const uint64_t bytes = table.rows * table.dim * sizeof(float);
  if (bytes == 0) return;
  if (table.offset != H5Table::kConverted) {
    if (table.offset > size_ || bytes > size_ - table.offset) {
      throw Error("cannot read '" + path_ + "': " + label + " lies outside the file");
    }
    read(fd_, table.offset);
    return;
  }
  // Stored otherwise: a child converts the values to float32, row after row, in memory that
  // this process then reads as it reads the file.
  const ScratchFile scratch(path_);
  run_isolated("cannot read '" + path_ + "': ", child_limits(size_ + bytes),
               [&] { detail::convert_h5_table(fd_, size_, path_, table, scratch.fd()); });
  struct stat st {};
  if (::fstat(scratch.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) != bytes) {
    throw Error("cannot read '" + path_ + "': " + label + " was not converted whole");
  }
  read(scratch.fd(), uint64_t{0});
}

void H5Source::read_table(const H5Table& table, float* out) const {
  with_rows(table, [&](int fd, uint64_t at) {
    read_exactly(fd, at, table.rows * table.dim * sizeof(float), reinterpret_cast<char*>(out),
                 path_, "/" + table.name);
  });
}

void H5Source::read_table(const H5Table& table, HostTable& out, RowSelection selection) const {
  const std::string label = "/" + table.name;
  const uint64_t rows = out.rows();
  const uint32_t dim = out.dim();
  const bool every_row = selection.first == 0 && selection.step == 1;
  if (!table.present) throw Error("cannot read '" + path_ + "': no " + label + " dataset");
  if (selection.step == 0 || selection.count(table.rows) != rows || table.dim != dim) {
    const std::string expected = every_row ? std::to_string(rows)
                                           : "rows of which " + std::to_string(selection.first) +
                                                 " + k·" + std::to_string(selection.step) +
                                                 " make " + std::to_string(rows);
    throw Error("cannot read '" + path_ + "': " + label + " is " + std::to_string(table.rows) +
                " x " + std::to_string(table.dim) + ", expected " + expected + " x " +
                std::to_string(dim));
  }
  if (rows == 0 || dim == 0) return;
  with_rows(table, [&](int fd, uint64_t base) {
    const uint64_t row_bytes = uint64_t{dim} * sizeof(float);
    if (every_row && out.contiguous() && out.storage() == Storage::kFp32) {
      read_exactly(fd, base, rows * row_bytes, reinterpret_cast<char*>(out.data()), path_, label);
      return;
    }
    // A few MiB of the rows at a time, of which every step-th is the next selected one.
    const uint64_t per_read =
        std::clamp<uint64_t>((uint64_t{4} << 20) / (row_bytes * selection.step), 1, rows);
    std::vector<float> buffer(static_cast<size_t>(((per_read - 1) * selection.step + 1) * dim));
    for (uint64_t k = 0; k < rows; k += per_read) {
      const uint64_t n = std::min(per_read, rows - k);
      const uint64_t span = (n - 1) * selection.step + 1;
      const uint64_t first = selection.first + k * selection.step;
      read_exactly(fd, base + first * row_bytes, span * row_bytes,
                   reinterpret_cast<char*>(buffer.data()), path_, label);
      for (uint64_t i = 0; i < n; ++i)
        out.write_row(k + i, buffer.data() + i * selection.step * dim);
    }
  });
}

LoadedEmbeddings read_embeddings_h5(const std::string& path, bool with_vectors) {
  const H5Source file(path);
  H5Request request;
  request.tables = {"vectors"};
  request.vocabulary = true;
  H5Contents c = file.parse(request);
  const H5Table& vectors = require_table(c, "vectors", path);
  const std::string prefix = "cannot read '" + path + "': ";
  if (!c.has_words) throw Error(prefix + "no /vocab/words dataset");
  if (c.words.size() != vectors.rows) {
    throw Error(prefix + "/vocab/words has " + std::to_string(c.words.size()) +
                " words but /vectors " + std::to_string(vectors.rows) + " rows");
  }
  if (c.has_counts && c.counts.size() != vectors.rows) {
    throw Error(prefix + "/vocab/counts has " + std::to_string(c.counts.size()) +
                " entries but /vectors " + std::to_string(vectors.rows) + " rows");
  }
  LoadedEmbeddings e;
  e.rows = vectors.rows;
  e.dim = vectors.dim;
  e.words = std::move(c.words);
  e.counts = std::move(c.counts);
  if (with_vectors && e.rows * e.dim > 0) {
    const uint64_t n = e.rows * e.dim;
    if (n > std::numeric_limits<size_t>::max() / sizeof(float))
      throw Error(prefix + "/vectors is too large");
    try {
      e.vectors.resize(static_cast<size_t>(n));
    } catch (const std::exception&) {  // std::bad_alloc or std::length_error
      throw Error(prefix + "not enough memory for /vectors (" + std::to_string(n * sizeof(float)) +
                  " bytes)");
    }
    file.read_table(vectors, e.vectors.data());
  }
  return e;
}

void read_matrix_h5(const std::string& path, const std::string& name, HostTable& out,
                    RowSelection rows) {
  const H5Source file(path);
  H5Request request;
  request.tables = {name};
  const H5Contents c = file.parse(request);
  file.read_table(require_table(c, name, path), out, rows);
}

std::vector<Attribute> read_attributes_h5(const std::string& path,
                                          const std::vector<std::string>& only) {
  const H5Source file(path);
  H5Request request;
  request.all_attributes = only.empty();
  request.attributes = only;
  return file.parse(request).attributes;
}

}  // namespace pagedw2v
