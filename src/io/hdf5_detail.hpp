#pragma once
/// @file hdf5_detail.hpp
/// What the HDF5 writer (hdf5_io.cpp), the integrity record (hdf5_integrity.cpp) and the parse of
/// a file in a child process (hdf5_parse.cpp) share: owned libhdf5 identifiers, errors as
/// exceptions, and the layout of our user block. Internal to src/io.

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "base/error.hpp"

namespace pagedw2v {

enum class H5Integrity;

namespace detail {

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

/// The message of the innermost entry of HDF5's error stack (where the failure was detected).
/// For failed system calls it is long ("unable to open file: name = …, errno = 2, error
/// message = 'No such file or directory', …"): only the system's message is kept.
std::string hdf5_reason();

// Turns failed calls into one Error: "cannot write 'PATH': what (HDF5's reason)".
class Checker {
 public:
  explicit Checker(std::string prefix) : prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }
  const std::string& prefix() const { return prefix_; }
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

/// A variable-length string type (UTF-8 unless told otherwise).
Hid vlen_string_type(const Checker& h5, H5T_cset_t cset = H5T_CSET_UTF8);

// The user block at the start of our files holds one line, written after libhdf5 closed the file:
//     pagedw2v-xxh64 <16 hex digits> <file size> <piece bytes>\n
// the XXH64 of the XXH64s of consecutive pieces of every byte after the user block
// (xxh64_of_file_pieces), which threads compute at once. Files of earlier versions hold
//     pagedw2v-xxh64 <16 hex digits> <file size>\n
// the XXH64 of those bytes whole; both are checked. libhdf5 and h5py skip the user block.
inline constexpr hsize_t kUserBlockBytes = 512;
inline constexpr char kIntegrityTag[] = "pagedw2v-xxh64 ";
// The only piece size a record may name: every version that writes pieces writes this one. Any
// other is a damaged record, refused even where it would cut the file into the same pieces (a
// file smaller than both), and a file cannot make the check take a hash per byte.
inline constexpr uint64_t kHashPieceBytes = uint64_t{64} << 20;

inline uint32_t hash_threads() {
  return std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16);
}

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
/// file of `bytes` bytes (the writer hashes what it writes), else from the file read back.
void write_integrity_record(const Checker& h5, const std::string& temp,
                            std::optional<uint64_t> hash = {}, uint64_t bytes = 0);

/// h5_integrity() of the open file `fd`, named `path` in errors.
H5Integrity integrity_of(int fd, const std::string& path);

}  // namespace detail
}  // namespace pagedw2v
