#include "io/mapped_write.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "worker_threads.hpp"

namespace pagedw2v {

bool write_mapped(int fd, uint64_t offset, uint64_t bytes, uint32_t threads,
                  const std::string& path,
                  const std::function<void(uint64_t at, uint64_t n, char* dst)>& fill) {
  if (bytes == 0) return true;
  const int access = ::fcntl(fd, F_GETFL);
  if (access < 0 || (access & O_ACCMODE) != O_RDWR) return false;
  if (::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) != 0) {
    if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG) {
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
    }
    return false;
  }
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t length = offset + bytes - start;
  void* map =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  if (map == MAP_FAILED) return false;
  char* base = static_cast<char*>(map) + (offset - start);
  constexpr uint64_t kPiece = uint64_t{8} << 20;
  const uint64_t pieces = (bytes + kPiece - 1) / kPiece;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  try {
    run_workers(static_cast<uint32_t>(std::clamp<uint64_t>(threads, 1, pieces)), [&](uint32_t) {
      try {
        for (uint64_t i = next++; i < pieces && !failed; i = next++) {
          const uint64_t at = i * kPiece;
          fill(at, std::min(kPiece, bytes - at), base + at);
        }
      } catch (...) {
        failed = true;
        throw;
      }
    });
  } catch (...) {
    ::munmap(map, length);
    throw;
  }
  ::munmap(map, length);
  return true;
}

}  // namespace pagedw2v
