#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"

namespace pagedw2v {
namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string temp_name_for(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_path_(temp_name_for(path_)) {
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  const bool flushed = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(flushed ? errno : err));
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw Error("cannot rename onto '" + path_ + "': " + std::strerror(errno));
  }
  committed_ = true;
  fsync_path(dir_of(path_), O_RDONLY | O_DIRECTORY);
}

void commit_file(const std::string& temp_path, const std::string& path) {
  const int fd = ::open(temp_path.c_str(), O_RDWR);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    std::remove(temp_path.c_str());
    throw Error("cannot write '" + path + "': " + std::strerror(err));
  }
  ::close(fd);
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_path.c_str());
    throw Error("cannot rename onto '" + path + "': " + std::strerror(err));
  }
  fsync_path(dir_of(path), O_RDONLY | O_DIRECTORY);
}

}  // namespace pagedw2v
