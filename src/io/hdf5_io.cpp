#include "io/hdf5_io.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "config.hpp"
#include "error.hpp"
#include "io/atomic_file.hpp"
#include "io/checksum.hpp"
#include "io/hdf5_lock.hpp"
#include "io/isolated_call.hpp"
#include "worker_threads.hpp"

namespace pagedw2v {
namespace {

// One HDF5 identifier and the function that closes it.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Hid() { close(); }
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      close();
      id_ = std::exchange(other.id_, -1);
      closer_ = other.closer_;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  operator hid_t() const { return id_; }
  // Closes now; returns the closer's result so that a failed close (a failed flush) is seen.
  herr_t close() {
    herr_t status = 0;
    if (id_ >= 0) status = closer_(id_);
    id_ = -1;
    return status;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// HDF5 prints its error stack to stderr by default; errors here become exceptions instead.
class QuietErrors {
 public:
  QuietErrors() {
    // HDF5's exit handler closes whatever a failed call left open; after a failed flush (a full
    // disk) or a damaged file it can crash or print after the program's own error line. Files
    // here are closed by their owners, so the handler is switched off before first use.
    static const bool no_atexit = [] {
      H5dont_atexit();
      return true;
    }();
    (void)no_atexit;
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

herr_t innermost_error(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

// The message of the innermost entry of HDF5's error stack (where the failure was detected).
// For failed system calls it is long ("unable to open file: name = …, errno = 2, error
// message = 'No such file or directory', …"): only the system's message is kept.
std::string hdf5_reason() {
  std::string desc;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_error, &desc);
  H5Eclear2(H5E_DEFAULT);
  const std::string key = "error message = '";
  const size_t at = desc.find(key);
  if (at != std::string::npos) {
    const size_t end = desc.find('\'', at + key.size());
    desc = desc.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
  }
  return desc;
}

// Turns failed calls into one Error: "cannot write 'PATH': what (HDF5's reason)".
class Checker {
 public:
  explicit Checker(std::string prefix) : prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }
  template <class T>
  T check(T status, const std::string& what) const {
    if (status < 0) {
      const std::string reason = hdf5_reason();
      fail(reason.empty() ? what : what + " (" + reason + ")");
    }
    return status;
  }
  Hid make(hid_t id, Hid::Closer closer, const std::string& what) const {
    check(id, what);
    return Hid(id, closer);
  }

 private:
  std::string prefix_;
};

// A variable-length string type (UTF-8 unless told otherwise).
Hid vlen_string_type(const Checker& h5, H5T_cset_t cset = H5T_CSET_UTF8) {
  Hid type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  h5.check(H5Tset_size(type, H5T_VARIABLE), "cannot create a string type");
  h5.check(H5Tset_cset(type, cset), "cannot create a string type");
  return type;
}

/// The table's values in memory as HDF5 sees them: the allocation it lies in as rows × stride
/// floats, of which the table's dim columns are selected (interleaved tables share the rows).
/// I/O passes table.block() as the buffer.
Hid table_memory_space(const Checker& h5, const HostTable& table, const std::string& what) {
  const hsize_t dims[2] = {table.rows(), table.stride()};
  Hid space = h5.make(H5Screate_simple(2, dims, nullptr), H5Sclose, what);
  const auto* base = static_cast<const float*>(table.block());
  const hsize_t start[2] = {0, static_cast<hsize_t>(table.data() - base)};
  const hsize_t count[2] = {table.rows(), table.dim()};
  h5.check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr), what);
  return space;
}

/// File access with a metadata cache of 1 MiB that does not grow. libhdf5 keeps the global heap
/// collections that hold /vocab/words in that cache, and its default lets it grow to 32 MiB while
/// a vocabulary of millions of words is written beside the tables; they go to the file instead.
Hid small_metadata_cache(const Checker& h5) {
  const std::string what = "cannot create the file";
  Hid access = h5.make(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, what);
  H5AC_cache_config_t cache;
  cache.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  h5.check(H5Pget_mdc_config(access, &cache), what);
  constexpr size_t kBytes = size_t{1} << 20;
  cache.set_initial_size = true;
  cache.initial_size = kBytes;
  cache.min_size = kBytes;
  cache.max_size = kBytes;
  cache.incr_mode = H5C_incr__off;
  cache.flash_incr_mode = H5C_flash_incr__off;
  cache.decr_mode = H5C_decr__off;
  h5.check(H5Pset_mdc_config(access, &cache), what);
  return access;
}

/// Words of the vocabulary one write passes to libhdf5.
constexpr hsize_t kVocabSliceWords = hsize_t{1} << 16;

/// Writes `count` values of `type` from `values` to elements [first, first + count) of the 1-D
/// dataset `set` whose file space is `space` (its selection is changed).
void write_slice(const Checker& h5, const Hid& set, hid_t type, const Hid& space, hsize_t first,
                 hsize_t count, const void* values, const std::string& what) {
  h5.check(H5Sselect_hyperslab(space, H5S_SELECT_SET, &first, nullptr, &count, nullptr), what);
  Hid memory = h5.make(H5Screate_simple(1, &count, nullptr), H5Sclose, what);
  h5.check(H5Dwrite(set, type, memory, space, H5P_DEFAULT, values), what);
}

// The user block at the start of our files holds one line, written after libhdf5 closed the file:
//     pagedw2v-xxh64 <16 hex digits> <file size> <piece bytes>\n
// the XXH64 of the XXH64s of consecutive pieces of every byte after the user block
// (xxh64_of_file_pieces), which threads compute at once. Files of earlier versions hold
//     pagedw2v-xxh64 <16 hex digits> <file size>\n
// the XXH64 of those bytes whole; both are checked. libhdf5 and h5py skip the user block.
constexpr hsize_t kUserBlockBytes = 512;
constexpr char kIntegrityTag[] = "pagedw2v-xxh64 ";
// The only piece size a record may name: every version that writes pieces writes this one. Any
// other is a damaged record, refused even where it would cut the file into the same pieces (a
// file smaller than both), and a file cannot make the check take a hash per byte.
constexpr uint64_t kHashPieceBytes = uint64_t{64} << 20;

uint32_t hash_threads() { return std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  operator int() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

/// Writes the integrity record of the closed file `temp`: `hash` when the caller computed it for a
/// file of `bytes` bytes (write_pending), else from the file read back.
void write_integrity_record(const Checker& h5, const std::string& temp,
                            std::optional<uint64_t> hash = {}, uint64_t bytes = 0) {
  Fd fd(::open(temp.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (fd < 0) h5.fail(std::string("cannot reopen the file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) h5.fail(std::string("cannot stat the file: ") + std::strerror(errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  char signature[8] = {};
  if (size < kUserBlockBytes + sizeof signature ||
      ::pread(fd, signature, sizeof signature, kUserBlockBytes) != sizeof signature ||
      std::memcmp(signature, "\x89HDF\r\n\x1a\n", sizeof signature) != 0) {
    h5.fail("the file has no user block to hold its checksum");
  }
  // A hash computed for a file of another size (which nothing here should make) is not used.
  if (!hash || bytes != size) {
    hash = xxh64_of_file_pieces(fd, kUserBlockBytes, size - kUserBlockBytes, kHashPieceBytes,
                                hash_threads(), temp);
  }
  char line[96];
  const int n = std::snprintf(line, sizeof line, "%s%016" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
                              kIntegrityTag, *hash, size, kHashPieceBytes);
  if (::pwrite(fd, line, static_cast<size_t>(n), 0) != n) {
    h5.fail(std::string("cannot write the checksum: ") + std::strerror(errno));
  }
  if (::close(fd.release()) != 0) {
    h5.fail(std::string("cannot write the checksum: ") + std::strerror(errno));
  }
}

/// Creates /name, `rows × dim` float32. Its storage is allocated at once, contiguous and left
/// unfilled; the returned offset (from the start of the file, user block included) is where the
/// values go once libhdf5 has closed the file (large writes from the tables as they lie instead of
/// libhdf5's copy; written beside libhdf5's own writes, they measured slower: both wait on the
/// file's lock). Where the storage cannot be placed that way (a big-endian host), the offset is
/// kNoOffset and libhdf5 writes the values when the file is finished.
constexpr uint64_t kNoOffset = std::numeric_limits<uint64_t>::max();

uint64_t create_matrix(const Checker& h5, hid_t file, const std::string& name, uint64_t rows,
                       uint32_t dim, hid_t link_plist) {
  const std::string what = "cannot write /" + name;
  const hsize_t dims[2] = {rows, dim};
  Hid space = h5.make(H5Screate_simple(2, dims, nullptr), H5Sclose, what);
  Hid dcpl = h5.make(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, what);
  const bool direct = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && rows > 0 && dim > 0;
  if (direct) {
    h5.check(H5Pset_layout(dcpl, H5D_CONTIGUOUS), what);
    h5.check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), what);
    h5.check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), what);
  }
  Hid set =
      h5.make(H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space, link_plist, dcpl, H5P_DEFAULT),
              H5Dclose, what);
  uint64_t offset = kNoOffset;
  if (direct) {
    const haddr_t at = H5Dget_offset(set);
    if (at == HADDR_UNDEF) h5.fail(what + " (no storage was allocated)");
    offset = static_cast<uint64_t>(at);
  }
  h5.check(set.close(), what);
  return offset;
}

/// libhdf5 writes `table` into /name of the open file (the values of a table without a place of
/// its own in the file).
void write_matrix_values(const Checker& h5, hid_t file, const std::string& name,
                         const HostTable& table) {
  if (table.rows() == 0 || table.dim() == 0) return;
  const std::string what = "cannot write /" + name;
  if (table.storage() != Storage::kFp32) h5.fail(what + " (16-bit tables on a big-endian host)");
  Hid set = h5.make(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, what);
  Hid memory = table_memory_space(h5, table, what);
  h5.check(H5Dwrite(set, H5T_NATIVE_FLOAT, memory, H5S_ALL, H5P_DEFAULT, table.block()), what);
  h5.check(set.close(), what);
}

/// A table whose values go at `offset` of the closed file.
struct PendingMatrix {
  const HostTable* table;
  uint64_t offset;
  uint64_t bytes() const { return table->rows() * uint64_t{table->dim()} * sizeof(float); }
};

/// Hands out `bytes` bytes of a table's rows as the file holds them (fp32, row after row),
/// from byte `at` of the table: straight from the table where it lies so, else gathered.
class RowBytes {
 public:
  explicit RowBytes(const HostTable& t) : t_(t), row_bytes_(uint64_t{t.dim()} * sizeof(float)) {}

  /// Calls feed(pointer, n) for consecutive pieces of bytes [at, at + bytes) of the table.
  template <class Feed>
  void read(uint64_t at, uint64_t bytes, Feed&& feed) {
    if (t_.contiguous() && t_.storage() == Storage::kFp32) {
      feed(static_cast<const char*>(t_.raw_row(0)) + at, bytes);
      return;
    }
    const uint64_t rows_per_gather = std::max<uint64_t>(1, (uint64_t{4} << 20) / row_bytes_);
    buffer_.resize(rows_per_gather * t_.dim());
    while (bytes > 0) {
      const uint64_t r = at / row_bytes_;
      const uint64_t n = std::min(rows_per_gather, t_.rows() - r);
      t_.read_rows(r, n, buffer_.data());
      const uint64_t skip = at - r * row_bytes_;
      const uint64_t take = std::min(bytes, n * row_bytes_ - skip);
      feed(reinterpret_cast<const char*>(buffer_.data()) + skip, take);
      at += take;
      bytes -= take;
    }
  }

 private:
  const HostTable& t_;
  uint64_t row_bytes_;
  std::vector<float> buffer_;
};

/// Writes the pending tables' values into the closed file `temp` and returns the file's integrity
/// hash (xxh64_of_file_pieces of the `file_bytes` - kUserBlockBytes bytes after the user block),
/// computed from the tables in memory and, between them, from the file as libhdf5 left it, so
/// that the file is never read back. Two threads write (a file's buffered writes take its lock one
/// at a time, so more threads only wait on one another), the others hash.
uint64_t write_pending(const Checker& h5, const std::string& temp,
                       std::vector<PendingMatrix> pending, uint64_t file_bytes) {
  Fd fd(::open(temp.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (fd < 0) h5.fail(std::string("cannot reopen the file: ") + std::strerror(errno));
  std::sort(pending.begin(), pending.end(),
            [](const PendingMatrix& a, const PendingMatrix& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < pending.size(); ++i) {
    const uint64_t end = pending[i].offset + pending[i].bytes();
    if (pending[i].offset < kUserBlockBytes || end > file_bytes ||
        (i + 1 < pending.size() && end > pending[i + 1].offset)) {
      h5.fail("the tables' storage does not lie inside the file");
    }
  }
  std::string error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
  auto fail = [&](const std::string& e) {
    const std::lock_guard<std::mutex> lock(error_mutex);
    if (error.empty()) error = e;
    failed = true;
  };
  uint64_t payload = 0;
  for (const PendingMatrix& m : pending) payload += m.bytes();
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  const auto writers = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::min<uint32_t>(cores, 2), 1, payload / (uint64_t{32} << 20) + 1));
  const uint64_t hashed = file_bytes - kUserBlockBytes;
  const uint64_t pieces = (hashed + kHashPieceBytes - 1) / kHashPieceBytes;
  const auto hashers = static_cast<uint32_t>(std::clamp<uint64_t>(
      pieces, 1, std::clamp<uint32_t>(cores > writers ? cores - writers : 1, 1, 16)));
  std::vector<uint64_t> digests(pieces);
  std::atomic<uint64_t> next_piece{0};

  // Writer k writes the k-th share of every table's rows.
  auto write_share = [&](uint32_t k) {
    for (const PendingMatrix& m : pending) {
      const uint64_t row_bytes = uint64_t{m.table->dim()} * sizeof(float);
      const uint64_t first = m.table->rows() * k / writers * row_bytes;
      const uint64_t last = m.table->rows() * (k + 1) / writers * row_bytes;
      uint64_t at = m.offset + first;
      RowBytes(*m.table).read(first, last - first, [&](const char* src, uint64_t n) {
        for (uint64_t done = 0; done < n && !failed;) {
          const ssize_t w = ::pwrite(fd, src + done, n - done, static_cast<off_t>(at + done));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            fail(w < 0 ? std::strerror(errno) : "nothing written");
            return;
          }
          done += static_cast<uint64_t>(w);
        }
        at += n;
      });
      if (failed) return;
    }
  };
  // A hasher takes pieces in turn; a piece's bytes come from the tables it crosses and, between
  // them, from the file.
  auto hash_pieces = [&] {
    std::vector<char> buffer;
    for (uint64_t i = next_piece++; i < pieces && !failed; i = next_piece++) {
      uint64_t at = kUserBlockBytes + i * kHashPieceBytes;
      const uint64_t end = std::min(file_bytes, at + kHashPieceBytes);
      Xxh64 hash;
      auto feed = [&](const char* p, uint64_t n) { hash.update(p, static_cast<size_t>(n)); };
      auto table = std::upper_bound(
          pending.begin(), pending.end(), at,
          [](uint64_t a, const PendingMatrix& m) { return a < m.offset + m.bytes(); });
      while (at < end && !failed) {
        if (table != pending.end() && at >= table->offset) {
          const uint64_t until = std::min(end, table->offset + table->bytes());
          RowBytes(*table->table).read(at - table->offset, until - at, feed);
          at = until;
          ++table;
          continue;
        }
        const uint64_t until = std::min(end, table != pending.end() ? table->offset : end);
        buffer.resize(static_cast<size_t>(std::min<uint64_t>(until - at, uint64_t{1} << 20)));
        const ssize_t got = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          fail(got < 0 ? std::strerror(errno) : "the file is shorter than its storage");
          return;
        }
        feed(buffer.data(), static_cast<uint64_t>(got));
        at += static_cast<uint64_t>(got);
      }
      digests[i] = hash.digest();
    }
  };
  try {
    run_workers(writers + hashers, [&](uint32_t k) {
      try {
        if (k < writers) {
          write_share(k);
        } else {
          hash_pieces();
        }
      } catch (const std::exception& e) {
        fail(e.what());
      }
    });
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (::close(fd.release()) != 0 && error.empty()) error = std::strerror(errno);
  if (!error.empty()) h5.fail("cannot write the tables: " + error);
  return xxh64_of_digests(digests);
}

void write_attribute(const Checker& h5, hid_t object, const Attribute& attribute) {
  const std::string what = "cannot write attribute '" + attribute.name + "'";
  Hid space = h5.make(H5Screate(H5S_SCALAR), H5Sclose, what);
  if (const auto* i = std::get_if<int64_t>(&attribute.value)) {
    Hid attr = h5.make(
        H5Acreate2(object, attribute.name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose, what);
    h5.check(H5Awrite(attr, H5T_NATIVE_INT64, i), what);
  } else if (const auto* d = std::get_if<double>(&attribute.value)) {
    Hid attr = h5.make(
        H5Acreate2(object, attribute.name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose, what);
    h5.check(H5Awrite(attr, H5T_NATIVE_DOUBLE, d), what);
  } else {
    const char* s = std::get<std::string>(attribute.value).c_str();
    Hid type = vlen_string_type(h5);
    Hid attr =
        h5.make(H5Acreate2(object, attribute.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose, what);
    h5.check(H5Awrite(attr, type, &s), what);
  }
}

// Frees the strings HDF5 allocated while reading variable-length data.
class VlenReclaim {
 public:
  VlenReclaim(hid_t type, hid_t space, void* buffer) : type_(type), space_(space), buf_(buffer) {}
  ~VlenReclaim() {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(type_, space_, H5P_DEFAULT, buf_);
#else
    H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, buf_);
#endif
  }
  VlenReclaim(const VlenReclaim&) = delete;
  VlenReclaim& operator=(const VlenReclaim&) = delete;

 private:
  hid_t type_;
  hid_t space_;
  void* buf_;
};

// A dataset's storage as the file declares it, checked before anything is allocated for it:
// no storage outside the file (external raw data, virtual datasets), no filter but the standard
// ones, and no more values than the bytes that hold them can give.
void check_storage(const Checker& h5, hid_t set, const std::string& label, uint64_t file_size) {
  const std::string what = "cannot read " + label;
  Hid plist = h5.make(H5Dget_create_plist(set), H5Pclose, what);
  const H5D_layout_t layout = H5Pget_layout(plist);
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) {
    h5.fail(label + " keeps its data outside the file, which this program does not read");
  }
  if (h5.check(H5Pget_external_count(plist), what) > 0) {
    h5.fail(label + " keeps its data in external files, which this program does not read");
  }
  const int nfilters = h5.check(H5Pget_nfilters(plist), what);
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    size_t nvalues = 0;
    unsigned config = 0;
    const H5Z_filter_t id = H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &nvalues,
                                           nullptr, 0, nullptr, &config);
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32) {
      h5.fail(label + " is stored through filter " + std::to_string(id) +
              ", which this program does not read (only deflate, shuffle and fletcher32)");
    }
  }
  Hid type = h5.make(H5Dget_type(set), H5Tclose, what);
  Hid space = h5.make(H5Dget_space(set), H5Sclose, what);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points < 0) h5.fail(what);
  const size_t type_size = H5Tget_size(type);
  if (type_size == 0) h5.fail(what);
  const long double declared = static_cast<long double>(points) * type_size;
  const auto stored = static_cast<long double>(H5Dget_storage_size(set));
  if (stored > static_cast<long double>(file_size)) {
    h5.fail(label + " declares more storage than the file holds");
  }
  // deflate packs at most 1032 bytes into one, so compressed data is bounded by its storage too.
  const long double most = nfilters > 0 ? stored * 1032.0L : stored;
  if (declared > most) h5.fail(label + " holds less data than its shape needs");
}

// Whether the dataset `name` ("a/b/c") exists, each step a hard link: soft and external links
// would make the file name another object or another file, so they are refused.
bool has_dataset(const Checker& h5, hid_t location, const std::string& name) {
  size_t end = 0;
  while (end != std::string::npos) {
    end = name.find('/', end + 1);
    const std::string step = name.substr(0, end);
    const std::string what = "cannot look up /" + step;
    if (h5.check(H5Lexists(location, step.c_str(), H5P_DEFAULT), what) <= 0) return false;
#if H5_VERSION_GE(1, 12, 0)
    H5L_info2_t info{};
    h5.check(H5Lget_info2(location, step.c_str(), &info, H5P_DEFAULT), what);
#else
    H5L_info_t info{};
    h5.check(H5Lget_info(location, step.c_str(), &info, H5P_DEFAULT), what);
#endif
    if (info.type != H5L_TYPE_HARD) {
      h5.fail("/" + step + " is a link to another object or file, which this program does not " +
              "follow");
    }
  }
  return true;
}

// The extent of a 1-D or 2-D dataset; fails unless it has `rank` dimensions.
std::vector<hsize_t> extent(const Checker& h5, hid_t set, int rank, const std::string& name) {
  Hid space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + name);
  const int n = h5.check(H5Sget_simple_extent_ndims(space), "cannot read " + name);
  if (n != rank) {
    h5.fail(name + " has " + std::to_string(n) + " dimensions, expected " + std::to_string(rank));
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  h5.check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "cannot read " + name);
  return dims;
}

template <class T>
void resize_or_fail(const Checker& h5, std::vector<T>& v, uint64_t n, const std::string& name) {
  if (n > std::numeric_limits<size_t>::max() / sizeof(T)) h5.fail(name + " is too large");
  try {
    v.resize(static_cast<size_t>(n));
  } catch (const std::exception&) {  // std::bad_alloc or std::length_error
    h5.fail("not enough memory for " + name + " (" + std::to_string(n * sizeof(T)) + " bytes)");
  }
}

std::vector<std::string> read_strings(const Checker& h5, hid_t set, uint64_t n,
                                      const std::string& name) {
  Hid file_type = h5.make(H5Dget_type(set), H5Tclose, "cannot read " + name);
  if (H5Tget_class(file_type) != H5T_STRING) h5.fail(name + " does not hold strings");
  const htri_t variable = h5.check(H5Tis_variable_str(file_type), "cannot read " + name);
  std::vector<std::string> out;
  resize_or_fail(h5, out, n, name);
  if (n == 0) return out;
  if (variable > 0) {
    const H5T_cset_t cset = H5Tget_cset(file_type);
    Hid mem_type = vlen_string_type(h5, cset == H5T_CSET_ERROR ? H5T_CSET_UTF8 : cset);
    Hid space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + name);
    std::vector<char*> ptrs;
    resize_or_fail(h5, ptrs, n, name);
    const VlenReclaim reclaim(mem_type, space, ptrs.data());
    h5.check(H5Dread(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()),
             "cannot read " + name);
    for (size_t i = 0; i < n; ++i) {
      if (ptrs[i] != nullptr) out[i] = ptrs[i];
    }
  } else {
    const size_t size = H5Tget_size(file_type);
    if (size == 0) h5.fail("cannot read " + name);
    if (n > std::numeric_limits<size_t>::max() / size) h5.fail(name + " is too large");
    Hid mem_type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, "cannot read " + name);
    h5.check(H5Tset_size(mem_type, size), "cannot read " + name);
    h5.check(H5Tset_strpad(mem_type, H5T_STR_NULLPAD), "cannot read " + name);
    std::vector<char> buffer;
    resize_or_fail(h5, buffer, n * size, name);
    h5.check(H5Dread(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
             "cannot read " + name);
    for (size_t i = 0; i < n; ++i) {
      const char* s = buffer.data() + i * size;
      out[i].assign(s, strnlen(s, size));
    }
  }
  return out;
}

uint64_t require_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error("cannot read '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw Error("cannot read '" + path + "': not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

// An open file and its size, the bound of every size it declares.
struct OpenFile {
  Hid file;
  uint64_t size = 0;
};

OpenFile open_for_reading(const Checker& h5, const std::string& path) {
  OpenFile f;
  f.size = require_file(path);
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) h5.fail("not an HDF5 file");
  h5.check(is_hdf5, "cannot open the file");
  f.file =
      h5.make(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "cannot open the file");
  return f;
}

// Called by H5Aiterate2 from C: must not throw, so it only collects the names.
herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  try {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  } catch (...) {
    return -1;
  }
}

// Appends the attribute `name` of `object` to `out` when it is a scalar number or string.
void read_attribute(const Checker& h5, hid_t object, const std::string& name, uint64_t file_size,
                    std::vector<Attribute>& out) {
  const std::string what = "cannot read attribute '" + name + "'";
  Hid attr = h5.make(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, what);
  Hid space = h5.make(H5Aget_space(attr), H5Sclose, what);
  if (H5Sget_simple_extent_type(space) != H5S_SCALAR) return;
  Hid type = h5.make(H5Aget_type(attr), H5Tclose, what);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      int64_t v = 0;
      h5.check(H5Aread(attr, H5T_NATIVE_INT64, &v), what);
      out.push_back({name, v});
      break;
    }
    case H5T_FLOAT: {
      double v = 0;
      h5.check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), what);
      out.push_back({name, v});
      break;
    }
    case H5T_STRING: {
      if (h5.check(H5Tis_variable_str(type), what) > 0) {
        Hid mem_type = vlen_string_type(h5, H5Tget_cset(type));
        char* s = nullptr;
        const VlenReclaim reclaim(mem_type, space, &s);
        h5.check(H5Aread(attr, mem_type, &s), what);
        out.push_back({name, std::string(s != nullptr ? s : "")});
      } else {
        const size_t size = H5Tget_size(type);
        if (size == 0 || size > file_size) h5.fail(what + " (its size is damaged)");
        std::string s(size, '\0');
        Hid mem_type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, what);
        h5.check(H5Tset_size(mem_type, size), what);
        h5.check(H5Tset_strpad(mem_type, H5T_STR_NULLPAD), what);
        h5.check(H5Aread(attr, mem_type, s.data()), what);
        s.resize(strnlen(s.data(), size));
        out.push_back({name, std::move(s)});
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace

PreparedH5& PreparedH5::operator=(PreparedH5&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_ = std::exchange(other.temp_, std::string());
    shapes_ = std::move(other.shapes_);
    offsets_ = std::move(other.offsets_);
  }
  return *this;
}

PreparedH5::~PreparedH5() { discard(); }

void PreparedH5::discard() {
  if (!temp_.empty()) std::remove(temp_.c_str());
  temp_.clear();
}

PreparedH5 prepare_embeddings_h5(const std::string& path, const Vocab& vocab,
                                 const std::vector<TableShape>& tables,
                                 const std::vector<Attribute>& attributes) {
  const Checker h5("cannot write '" + path + "': ");
  if (tables.empty() || tables[0].name != "vectors") h5.fail("the first table must be /vectors");
  if (tables[0].rows != vocab.size()) {
    h5.fail("the vocabulary has " + std::to_string(vocab.size()) + " words but the vectors " +
            std::to_string(tables[0].rows) + " rows");
  }
  const std::lock_guard<std::mutex> lock(hdf5_write_mutex());
  const QuietErrors quiet;
  PreparedH5 prepared;
  prepared.path_ = path;
  prepared.temp_ = temp_name_for(path);
  prepared.shapes_ = tables;
  const std::string& temp = prepared.temp_;
  // The file's room is asked for before libhdf5 writes: a full disk or a file size limit is then
  // one error here, where inside libhdf5 it fails part way (and libhdf5 keeps what it allocated).
  {
    uint64_t need = uint64_t{1} << 20;
    for (const TableShape& t : tables) need += t.rows * t.dim * sizeof(float);
    need += vocab.word_bytes() + uint64_t{24} * vocab.size();
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd < 0) h5.fail(std::strerror(errno));
    if (::fallocate(fd, 0, 0, static_cast<off_t>(need)) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS) {
      h5.fail(std::strerror(errno));
    }
  }
  {
    Hid create = h5.make(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "cannot create the file");
    h5.check(H5Pset_userblock(create, kUserBlockBytes), "cannot create the file");
    Hid access = small_metadata_cache(h5);
    Hid file = h5.make(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, create, access), H5Fclose,
                       "cannot create the file");
    Hid links = h5.make(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "cannot write the tables");
    h5.check(H5Pset_create_intermediate_group(links, 1), "cannot write the tables");
    for (const TableShape& t : tables) {
      prepared.offsets_.push_back(create_matrix(h5, file, t.name, t.rows, t.dim, links));
    }

    Hid group = h5.make(H5Gcreate2(file, "vocab", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                        "cannot create /vocab");
    const hsize_t n = vocab.size();
    Hid space = h5.make(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot write /vocab");
    {
      Hid type = vlen_string_type(h5);
      Hid set =
          h5.make(H5Dcreate2(group, "words", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose, "cannot write /vocab/words");
      // In slices: libhdf5 converts what one write passes (a pointer and a heap object a word),
      // so a vocabulary of tens of millions of words written whole took hundreds of MB beside
      // the tables.
      // A word is a C string in place (WordList ends each with a NUL). Packed words come a
      // slice at a time (Vocab::for_each_word_run).
      std::vector<const char*> ptrs;
      vocab.for_each_word_run([&](uint64_t run_first, const WordList& run) {
        auto word = run.begin();
        for (hsize_t at = 0; at < run.size(); at += kVocabSliceWords) {
          const hsize_t count = std::min<hsize_t>(kVocabSliceWords, run.size() - at);
          ptrs.clear();
          for (hsize_t i = 0; i < count; ++i, ++word) ptrs.push_back((*word).data());
          write_slice(h5, set, type, space, run_first + at, count, ptrs.data(),
                      "cannot write /vocab/words");
        }
      });
      h5.check(set.close(), "cannot write /vocab/words");
    }
    {
      Hid set = h5.make(
          H5Dcreate2(group, "counts", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose, "cannot write /vocab/counts");
      std::vector<int64_t> counts;
      auto it = vocab.counts().begin();
      for (hsize_t first = 0; first < n; first += kVocabSliceWords) {
        const hsize_t count = std::min<hsize_t>(kVocabSliceWords, n - first);
        counts.clear();
        for (hsize_t i = 0; i < count; ++i, ++it) counts.push_back(static_cast<int64_t>(*it));
        write_slice(h5, set, H5T_NATIVE_INT64, space, first, count, counts.data(),
                    "cannot write /vocab/counts");
      }
      h5.check(set.close(), "cannot write /vocab/counts");
    }
    h5.check(group.close(), "cannot write /vocab");

    Hid root = h5.make(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
    for (const Attribute& attribute : attributes) write_attribute(h5, root, attribute);
    // Every file records the version that wrote it (unless the caller copies an older file's).
    bool has_version = false;
    for (const Attribute& a : attributes) has_version = has_version || a.name == kVersionAttribute;
    if (!has_version) write_attribute(h5, root, {kVersionAttribute, std::string(version())});
    h5.check(root.close(), "cannot write the attributes");
    h5.check(file.close(), "cannot close the file");
  }
  return prepared;
}

void finish_embeddings_h5(PreparedH5& prepared, const std::vector<NamedTable>& tables,
                          const std::vector<Attribute>& attributes) {
  const Checker h5("cannot write '" + prepared.path() + "': ");
  if (!prepared.ready()) h5.fail("the file was not prepared, or is already written");
  // Whatever fails from here on, the temporary file goes with `prepared`.
  PreparedH5 file = std::move(prepared);
  if (tables.size() != file.shapes_.size()) h5.fail("the tables are not those prepared");
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableShape& s = file.shapes_[i];
    if (tables[i].name != s.name || tables[i].table == nullptr ||
        tables[i].table->rows() != s.rows || tables[i].table->dim() != s.dim) {
      h5.fail("/" + tables[i].name + " is not the table prepared");
    }
  }
  const QuietErrors quiet;
  const std::string& temp = file.temp_;
  std::vector<PendingMatrix> pending;
  bool reopen = !attributes.empty();
  for (size_t i = 0; i < tables.size(); ++i) {
    if (file.offsets_[i] != kNoOffset) pending.push_back({tables[i].table, file.offsets_[i]});
    reopen = reopen ||
             (file.offsets_[i] == kNoOffset && file.shapes_[i].rows > 0 && file.shapes_[i].dim > 0);
  }
  if (reopen) {
    const std::lock_guard<std::mutex> lock(hdf5_write_mutex());
    Hid f = h5.make(H5Fopen(temp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose,
                    "cannot reopen the file");
    for (size_t i = 0; i < tables.size(); ++i) {
      if (file.offsets_[i] == kNoOffset)
        write_matrix_values(h5, f, tables[i].name, *tables[i].table);
    }
    Hid root = h5.make(H5Gopen2(f, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
    for (const Attribute& attribute : attributes) write_attribute(h5, root, attribute);
    h5.check(root.close(), "cannot write the attributes");
    h5.check(f.close(), "cannot close the file");
  }
  struct stat st {};
  if (::stat(temp.c_str(), &st) != 0)
    h5.fail(std::string("cannot stat the file: ") + std::strerror(errno));
  uint64_t bytes = static_cast<uint64_t>(st.st_size);
  for (const PendingMatrix& m : pending) bytes = std::max(bytes, m.offset + m.bytes());
  if (bytes < kUserBlockBytes) h5.fail("the file has no user block to hold its checksum");
  const uint64_t hash = write_pending(h5, temp, pending, bytes);
  write_integrity_record(h5, temp, hash, bytes);
  commit_file(temp, file.path_);
  file.temp_.clear();
}

void write_embeddings_h5(const std::string& path, const Vocab& vocab, const HostTable& vectors,
                         const HostTable* context, const std::vector<Attribute>& attributes,
                         const std::vector<NamedTable>& extra) {
  const Checker h5("cannot write '" + path + "': ");
  if (context != nullptr &&
      (context->rows() != vectors.rows() || context->dim() != vectors.dim())) {
    h5.fail("the context vectors and the vectors differ in shape");
  }
  std::vector<NamedTable> tables = {{"vectors", &vectors}};
  if (context != nullptr) tables.push_back({"context_vectors", context});
  tables.insert(tables.end(), extra.begin(), extra.end());
  std::vector<TableShape> shapes;
  for (const NamedTable& t : tables) shapes.push_back({t.name, t.table->rows(), t.table->dim()});
  PreparedH5 file = prepare_embeddings_h5(path, vocab, shapes, attributes);
  finish_embeddings_h5(file, tables);
}

struct H5RowWriter::Impl {
  explicit Impl(const std::string& path) : h5("cannot write '" + path + "': ") {}
  Checker h5;
  PreparedH5 file;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<uint64_t> written;  ///< rows written of each table
  int fd = -1;
};

H5RowWriter::H5RowWriter(const std::string& path, const Vocab& vocab, uint32_t dim, bool context,
                         const std::vector<Attribute>& attributes,
                         const std::vector<std::string>& extra)
    : impl_(std::make_unique<Impl>(path)) {
  Impl& m = *impl_;
  if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) m.h5.fail("row blocks are written little-endian");
  m.rows = vocab.size();
  m.dim = dim;
  if (m.rows == 0 || dim == 0) m.h5.fail("row blocks need rows and columns");
  std::vector<TableShape> shapes = {{"vectors", m.rows, dim}};
  if (context) shapes.push_back({"context_vectors", m.rows, dim});
  for (const std::string& name : extra) shapes.push_back({name, m.rows, dim});
  m.file = prepare_embeddings_h5(path, vocab, shapes, attributes);
  m.written.assign(shapes.size(), 0);
  m.fd = ::open(m.file.temp_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (m.fd < 0) m.h5.fail(std::string("cannot reopen the file: ") + std::strerror(errno));
}

H5RowWriter::~H5RowWriter() {
  if (impl_->fd >= 0) ::close(impl_->fd);
}

void H5RowWriter::write_rows(size_t table, uint64_t first, uint64_t n, const float* rows) {
  Impl& m = *impl_;
  if (table >= m.written.size() || first > m.rows || n > m.rows - first || m.fd < 0) {
    m.h5.fail("rows " + std::to_string(first) + " to " + std::to_string(first + n) + " of table " +
              std::to_string(table) + " lie outside the file's tables");
  }
  const uint64_t row_bytes = uint64_t{m.dim} * sizeof(float);
  const char* src = reinterpret_cast<const char*>(rows);
  const uint64_t at = m.file.offsets_[table] + first * row_bytes;
  for (uint64_t done = 0; done < n * row_bytes;) {
    const ssize_t w =
        ::pwrite(m.fd, src + done, n * row_bytes - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      m.h5.fail(std::string("cannot write the tables: ") +
                (w < 0 ? std::strerror(errno) : "nothing written"));
    }
    done += static_cast<uint64_t>(w);
  }
  m.written[table] += n;
}

void H5RowWriter::commit() {
  Impl& m = *impl_;
  for (size_t t = 0; t < m.written.size(); ++t) {
    if (m.written[t] != m.rows) {
      m.h5.fail(std::to_string(m.written[t]) + " of " + std::to_string(m.rows) + " rows of table " +
                std::to_string(t) + " were written");
    }
  }
  const int fd = std::exchange(m.fd, -1);
  if (::close(fd) != 0) m.h5.fail(std::string("cannot write the tables: ") + std::strerror(errno));
  write_integrity_record(m.h5, m.file.temp_);
  const std::string temp = std::exchange(m.file.temp_, std::string());
  commit_file(temp, m.file.path_);
}

void seal_h5_file(const std::string& path) {
  write_integrity_record(Checker("cannot write '" + path + "': "), path);
}

H5Integrity h5_integrity(const std::string& path) {
  const std::string prefix = "cannot read '" + path + "': ";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd < 0) throw Error(prefix + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(prefix + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(prefix + "not a regular file");
  char line[96] = {};
  const ssize_t got = ::pread(fd, line, sizeof line - 1, 0);
  const size_t tag = sizeof kIntegrityTag - 1;
  if (got < static_cast<ssize_t>(tag) || std::memcmp(line, kIntegrityTag, tag) != 0) {
    return H5Integrity::kNone;
  }
  const char* p = line + tag;
  char* end = nullptr;
  uint64_t want_hash = 0;
  uint64_t want_size = 0;
  bool ok = std::strspn(p, "0123456789abcdef") == 16 && p[16] == ' ';
  if (ok) {
    want_hash = std::strtoull(p, &end, 16);
    p += 17;
    ok = std::strspn(p, "0123456789") > 0 && std::strspn(p, "0123456789") <= 20;
  }
  uint64_t piece = 0;  // 0: the XXH64 of the bytes whole
  if (ok) {
    errno = 0;
    want_size = std::strtoull(p, &end, 10);
    ok = errno == 0 && (*end == '\n' || *end == ' ');
  }
  if (ok && *end == ' ') {
    p = end + 1;
    ok = std::strspn(p, "0123456789") > 0 && std::strspn(p, "0123456789") <= 20;
    if (ok) {
      errno = 0;
      piece = std::strtoull(p, &end, 10);
      ok = errno == 0 && *end == '\n' && piece == kHashPieceBytes;
    }
  }
  if (!ok) throw Error(prefix + "the file is damaged (its checksum record cannot be read)");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size != want_size || size < kUserBlockBytes) {
    throw Error(prefix + "the file is damaged (" + std::to_string(size) + " bytes, written with " +
                std::to_string(want_size) + ")");
  }
  const uint64_t hash = piece == 0
                            ? xxh64_of_file(fd, kUserBlockBytes, size - kUserBlockBytes, path)
                            : xxh64_of_file_pieces(fd, kUserBlockBytes, size - kUserBlockBytes,
                                                   piece, hash_threads(), path);
  if (hash != want_hash) {
    throw Error(prefix + "the file is damaged (its checksum does not match its contents)");
  }
  return H5Integrity::kVerified;
}

namespace {

/// Time and memory for a parse of `path` apart, in proportion to the file: a parse needs about
/// one pass over its bytes, and the values it holds (compression is refused beyond deflate's
/// bound).
IsolationLimits vet_limits(const std::string& path) {
  const uint64_t size = require_file(path);
  IsolationLimits limits;
  limits.seconds = 5.0 + static_cast<double>(size) / 50e6;
  limits.memory_bytes = (uint64_t{1} << 30) + 4 * size;
  return limits;
}

/// Attributes as bytes, to come back from a child process: per attribute its name's length and
/// name, a kind byte (0 integer, 1 float, 2 text), and 8 bytes or a text's length and bytes.
std::string encode_attributes(const std::vector<Attribute>& attrs) {
  std::string out;
  const auto put = [&](const void* p, size_t n) {
    if (n > 0) out.append(static_cast<const char*>(p), n);  // data() of an empty vector may be null
  };
  for (const Attribute& a : attrs) {
    const uint64_t name = a.name.size();
    put(&name, 8);
    out += a.name;
    const char kind = static_cast<char>(a.value.index());
    out += kind;
    if (const auto* i = std::get_if<int64_t>(&a.value)) put(i, 8);
    if (const auto* d = std::get_if<double>(&a.value)) put(d, 8);
    if (const auto* t = std::get_if<std::string>(&a.value)) {
      const uint64_t n = t->size();
      put(&n, 8);
      out += *t;
    }
  }
  return out;
}

std::vector<Attribute> decode_attributes(const std::string& bytes, const std::string& path) {
  std::vector<Attribute> out;
  size_t at = 0;
  const auto take = [&](void* p, size_t n) {
    if (bytes.size() - at < n)
      throw Error("cannot read '" + path + "': its attributes came back cut");
    if (n > 0) std::memcpy(p, bytes.data() + at, n);
    at += n;
  };
  const auto text = [&] {
    uint64_t n = 0;
    take(&n, 8);
    if (bytes.size() - at < n)
      throw Error("cannot read '" + path + "': its attributes came back cut");
    std::string t = bytes.substr(at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
    return t;
  };
  while (at < bytes.size()) {
    Attribute a;
    a.name = text();
    char kind = 0;
    take(&kind, 1);
    if (kind == 0) {
      int64_t v = 0;
      take(&v, 8);
      a.value = v;
    } else if (kind == 1) {
      double v = 0;
      take(&v, 8);
      a.value = v;
    } else if (kind == 2) {
      a.value = text();
    } else {
      throw Error("cannot read '" + path + "': its attributes came back damaged");
    }
    out.push_back(std::move(a));
  }
  return out;
}

/// Embeddings as bytes, to come back from a child process: rows, dim, the words (each its
/// length and bytes), the counts (their number, then each), the vectors, the format's name.
std::string encode_embeddings(const LoadedEmbeddings& e) {
  std::string out;
  const auto put = [&](const void* p, size_t n) {
    if (n > 0) out.append(static_cast<const char*>(p), n);  // data() of an empty vector may be null
  };
  const auto text = [&](const std::string& t) {
    const uint64_t n = t.size();
    put(&n, 8);
    out += t;
  };
  const uint64_t words = e.words.size(), counts = e.counts.size(), values = e.vectors.size();
  put(&e.rows, 8);
  put(&e.dim, 4);
  put(&words, 8);
  for (const std::string& w : e.words) text(w);
  put(&counts, 8);
  put(e.counts.data(), counts * 8);
  put(&values, 8);
  put(e.vectors.data(), values * 4);
  text(e.format);
  return out;
}

LoadedEmbeddings decode_embeddings(const std::string& bytes, const std::string& path) {
  size_t at = 0;
  const auto take = [&](void* p, uint64_t n) {
    if (bytes.size() - at < n) throw Error("cannot read '" + path + "': its vectors came back cut");
    if (n == 0) return;  // an empty vector's data() may be null
    std::memcpy(p, bytes.data() + at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
  };
  const auto count = [&](uint64_t item_bytes) {
    uint64_t n = 0;
    take(&n, 8);
    if (n > (bytes.size() - at) / item_bytes) {
      throw Error("cannot read '" + path + "': its vectors came back cut");
    }
    return n;
  };
  const auto text = [&] {
    std::string t(static_cast<size_t>(count(1)), '\0');
    take(t.data(), t.size());
    return t;
  };
  LoadedEmbeddings e;
  take(&e.rows, 8);
  take(&e.dim, 4);
  e.words.resize(static_cast<size_t>(count(8)));
  for (std::string& w : e.words) w = text();
  e.counts.resize(static_cast<size_t>(count(8)));
  take(e.counts.data(), e.counts.size() * 8);
  e.vectors.resize(static_cast<size_t>(count(4)));
  take(e.vectors.data(), e.vectors.size() * 4);
  e.format = text();
  if (at != bytes.size() || (!e.vectors.empty() && e.vectors.size() != e.rows * e.dim)) {
    throw Error("cannot read '" + path + "': its vectors came back damaged");
  }
  return e;
}

}  // namespace

void vet_h5_file(const std::string& path, const std::function<void()>& trial) {
  if (h5_integrity(path) == H5Integrity::kVerified) return;
  run_isolated("cannot read '" + path + "': ", vet_limits(path), trial);
}

LoadedEmbeddings read_embeddings_h5(const std::string& path, H5Check check, bool with_vectors) {
  if (check == H5Check::kVet && h5_integrity(path) != H5Integrity::kVerified) {
    // Read in a child process, and only there: they come back as bytes (run_isolated_reply).
    return decode_embeddings(run_isolated_reply("cannot read '" + path + "': ", vet_limits(path),
                                                [&] {
                                                  return encode_embeddings(read_embeddings_h5(
                                                      path, H5Check::kAlreadyVetted, with_vectors));
                                                }),
                             path);
  }
  const Checker h5("cannot read '" + path + "': ");
  const QuietErrors quiet;
  OpenFile open = open_for_reading(h5, path);
  Hid& file = open.file;

  LoadedEmbeddings e;
  if (!has_dataset(h5, file, "vectors")) h5.fail("no /vectors dataset");
  {
    Hid set = h5.make(H5Dopen2(file, "vectors", H5P_DEFAULT), H5Dclose, "cannot open /vectors");
    check_storage(h5, set, "/vectors", open.size);
    Hid type = h5.make(H5Dget_type(set), H5Tclose, "cannot read /vectors");
    if (H5Tget_class(type) != H5T_FLOAT) h5.fail("/vectors is not floating point");
    const std::vector<hsize_t> dims = extent(h5, set, 2, "/vectors");
    if (dims[1] > std::numeric_limits<uint32_t>::max()) h5.fail("/vectors is too wide");
    if (dims[1] != 0 && dims[0] > std::numeric_limits<size_t>::max() / sizeof(float) / dims[1]) {
      h5.fail("/vectors is too large");
    }
    e.rows = dims[0];
    e.dim = static_cast<uint32_t>(dims[1]);
    if (with_vectors) resize_or_fail(h5, e.vectors, e.rows * e.dim, "/vectors");
    if (!e.vectors.empty()) {
      h5.check(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.vectors.data()),
               "cannot read /vectors");
    }
  }

  if (!has_dataset(h5, file, "vocab/words")) h5.fail("no /vocab/words dataset");
  {
    Hid set =
        h5.make(H5Dopen2(file, "vocab/words", H5P_DEFAULT), H5Dclose, "cannot open /vocab/words");
    check_storage(h5, set, "/vocab/words", open.size);
    const std::vector<hsize_t> dims = extent(h5, set, 1, "/vocab/words");
    if (dims[0] != e.rows) {
      h5.fail("/vocab/words has " + std::to_string(dims[0]) + " words but /vectors " +
              std::to_string(e.rows) + " rows");
    }
    e.words = read_strings(h5, set, dims[0], "/vocab/words");
  }

  if (has_dataset(h5, file, "vocab/counts")) {
    Hid set =
        h5.make(H5Dopen2(file, "vocab/counts", H5P_DEFAULT), H5Dclose, "cannot open /vocab/counts");
    check_storage(h5, set, "/vocab/counts", open.size);
    Hid type = h5.make(H5Dget_type(set), H5Tclose, "cannot read /vocab/counts");
    if (H5Tget_class(type) != H5T_INTEGER) h5.fail("/vocab/counts does not hold integers");
    const std::vector<hsize_t> dims = extent(h5, set, 1, "/vocab/counts");
    if (dims[0] != e.rows) {
      h5.fail("/vocab/counts has " + std::to_string(dims[0]) + " entries but /vectors " +
              std::to_string(e.rows) + " rows");
    }
    std::vector<int64_t> counts;
    resize_or_fail(h5, counts, dims[0], "/vocab/counts");
    if (!counts.empty()) {
      h5.check(H5Dread(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts.data()),
               "cannot read /vocab/counts");
    }
    e.counts.reserve(counts.size());
    for (const int64_t c : counts) {
      if (c < 0) h5.fail("/vocab/counts holds a negative count");
      e.counts.push_back(static_cast<uint64_t>(c));
    }
  }
  h5.check(file.close(), "cannot close the file");
  return e;
}

std::vector<Attribute> read_attributes_h5(const std::string& path,
                                          const std::vector<std::string>& only, H5Check check) {
  if (check == H5Check::kVet && h5_integrity(path) != H5Integrity::kVerified) {
    // Read in a child process, and only there: they come back as bytes (run_isolated_reply).
    return decode_attributes(run_isolated_reply("cannot read '" + path + "': ", vet_limits(path),
                                                [&] {
                                                  return encode_attributes(read_attributes_h5(
                                                      path, only, H5Check::kAlreadyVetted));
                                                }),
                             path);
  }
  const Checker h5("cannot read '" + path + "': ");
  const QuietErrors quiet;
  OpenFile open = open_for_reading(h5, path);
  Hid& file = open.file;
  Hid root = h5.make(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
  std::vector<std::string> names;
  if (only.empty()) {
    hsize_t index = 0;
    h5.check(H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, &index, collect_name, &names),
             "cannot list the attributes");
  } else {
    // Looking names up one by one avoids listing the attribute table, whose parsing in
    // libhdf5 1.10 trusts a damaged file too much.
    for (const std::string& name : only) {
      if (h5.check(H5Aexists(root, name.c_str()), "cannot look up attribute '" + name + "'") > 0) {
        names.push_back(name);
      }
    }
  }
  std::vector<Attribute> out;
  for (const std::string& name : names) read_attribute(h5, root, name, open.size, out);
  return out;
}

void read_matrix_h5(const std::string& path, const std::string& name, HostTable& out, H5Check check,
                    RowSelection selection) {
  if (check == H5Check::kVet) {
    vet_h5_file(path, [&] { read_matrix_h5(path, name, out, H5Check::kAlreadyVetted, selection); });
  }
  const uint64_t rows = out.rows();
  const uint32_t dim = out.dim();
  const Checker h5("cannot read '" + path + "': ");
  const QuietErrors quiet;
  OpenFile open = open_for_reading(h5, path);
  Hid& file = open.file;
  const std::string label = "/" + name;
  if (!has_dataset(h5, file, name)) h5.fail("no " + label + " dataset");
  Hid set = h5.make(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + label);
  check_storage(h5, set, label, open.size);
  Hid type = h5.make(H5Dget_type(set), H5Tclose, "cannot read " + label);
  if (H5Tget_class(type) != H5T_FLOAT) h5.fail(label + " is not floating point");
  const std::vector<hsize_t> dims = extent(h5, set, 2, label);
  const bool every_row = selection.first == 0 && selection.step == 1;
  if (selection.step == 0 || selection.count(dims[0]) != rows || dims[1] != dim) {
    const std::string expected = every_row ? std::to_string(rows)
                                           : "rows of which " + std::to_string(selection.first) +
                                                 " + k·" + std::to_string(selection.step) +
                                                 " make " + std::to_string(rows);
    h5.fail(label + " is " + std::to_string(dims[0]) + " x " + std::to_string(dims[1]) +
            ", expected " + expected + " x " + std::to_string(dim));
  }
  if (rows > 0 && dim > 0 && out.storage() == Storage::kFp32 && !every_row) {
    // Every step-th row, straight into the table.
    Hid memory = table_memory_space(h5, out, "cannot read " + label);
    Hid file_space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + label);
    const hsize_t start[2] = {selection.first, 0}, stride[2] = {selection.step, 1};
    const hsize_t count[2] = {rows, 1}, block[2] = {1, dim};
    h5.check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, stride, count, block),
             "cannot read " + label);
    h5.check(H5Dread(set, H5T_NATIVE_FLOAT, memory, file_space, H5P_DEFAULT, out.block()),
             "cannot read " + label);
  } else if (rows > 0 && dim > 0 && out.storage() == Storage::kFp32) {
    Hid memory = table_memory_space(h5, out, "cannot read " + label);
    h5.check(H5Dread(set, H5T_NATIVE_FLOAT, memory, H5S_ALL, H5P_DEFAULT, out.block()),
             "cannot read " + label);
  } else if (rows > 0 && dim > 0) {
    // A 16-bit table: a few MiB of rows at a time as fp32, each value rounded to the nearest
    // stored one (exact for values a 16-bit table wrote).
    const uint64_t step = std::max<uint64_t>(1, (uint64_t{4} << 20) / (uint64_t{dim} * 4));
    std::vector<float> buffer(std::min(step, rows) * dim);
    Hid file_space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + label);
    for (uint64_t r = 0; r < rows; r += step) {
      const uint64_t n = std::min(step, rows - r);
      const hsize_t start[2] = {selection.first + r * selection.step, 0};
      const hsize_t stride[2] = {selection.step, 1}, count[2] = {n, 1}, block[2] = {1, dim};
      h5.check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, stride, count, block),
               "cannot read " + label);
      const hsize_t shape[2] = {n, dim};
      Hid memory = h5.make(H5Screate_simple(2, shape, nullptr), H5Sclose, "cannot read " + label);
      h5.check(H5Dread(set, H5T_NATIVE_FLOAT, memory, file_space, H5P_DEFAULT, buffer.data()),
               "cannot read " + label);
      for (uint64_t i = 0; i < n; ++i) out.write_row(r + i, buffer.data() + i * dim);
    }
  }
  h5.check(file.close(), "cannot close the file");
}

}  // namespace pagedw2v
