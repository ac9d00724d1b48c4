#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "io/checksum.hpp"
#include "io/hdf5_detail.hpp"
#include "io/hdf5_io.hpp"

namespace pagedw2v {
namespace detail {

void write_integrity_record(const Checker& h5, const std::string& temp,
                            std::optional<uint64_t> hash, uint64_t bytes) {
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

H5Integrity integrity_of(int fd, const std::string& path) {
  const std::string prefix = "cannot read '" + path + "': ";
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

}  // namespace detail

H5Integrity h5_integrity(const std::string& path) {
  detail::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  return detail::integrity_of(fd, path);
}

void seal_h5_file(const std::string& path) {
  detail::write_integrity_record(detail::Checker("cannot write '" + path + "': "), path);
}

}  // namespace pagedw2v
