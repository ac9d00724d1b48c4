#include "io/hdf5_io.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/version.hpp"
#include "base/worker_threads.hpp"
#include "io/checksum.hpp"
#include "io/hdf5_detail.hpp"
#include "io/hdf5_lock.hpp"

namespace pagedw2v {

using detail::Checker;
using detail::Fd;
using detail::Hid;
using detail::kHashPieceBytes;
using detail::kUserBlockBytes;
using detail::QuietErrors;
using detail::vlen_string_type;
using detail::write_integrity_record;

namespace {

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

}  // namespace pagedw2v
