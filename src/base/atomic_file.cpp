#include "base/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/path_parts.hpp"
#include "base/worker_threads.hpp"

namespace pagedw2v {
namespace {

constexpr const char* kTempMarker = ".tmp-";

thread_local bool t_fsync = true;

void fsync_path(const std::string& path, int flags) {
  if (!t_fsync) return;
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

/// Six characters no other process can guess, different on every call.
std::string random_tag() {
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  uint64_t x = base + 0x9E3779B97F4A7C15ull * (counter.fetch_add(1) + 1);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string tag;
  for (int i = 0; i < 6; ++i) {
    tag += kChars[x % 62];
    x /= 62;
  }
  return tag;
}

std::string temp_candidate(const std::string& path) {
  return path + "." + random_tag() + kTempMarker + std::to_string(::getpid());
}

// The temporary files and directories this process made and has not committed or removed, for
// remove_own_temps_now(), which a signal handler calls: fixed slots that it reads without locks
// or allocation. A slot is free (0), being filled (1), or holds a file (2) or a directory (3).
constexpr int kTempSlots = 256;
constexpr size_t kTempPathBytes = 4096;
struct TempSlot {
  std::atomic<int> state{0};
  char path[kTempPathBytes];
};
TempSlot g_temp_slots[kTempSlots];

// 0: no set is being committed; > 0: that many are; -1: the process is stopping.
std::atomic<int> g_set_commits{0};

int remember_temp(const std::string& path, int kind) {
  if (path.size() >= kTempPathBytes) return -1;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kTempSlots; ++i) {
      int expected = 0;
      if (g_temp_slots[i].state.compare_exchange_strong(expected, 1)) {
        std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
        g_temp_slots[i].state.store(kind, std::memory_order_release);
        return i;
      }
    }
    // Every slot taken: those whose files another library removed are free again.
    for (int i = 0; i < kTempSlots; ++i) {
      int seen = g_temp_slots[i].state.load(std::memory_order_acquire);
      struct stat st {};
      if ((seen == 2 || seen == 3) && ::lstat(g_temp_slots[i].path, &st) != 0 && errno == ENOENT) {
        g_temp_slots[i].state.compare_exchange_strong(seen, 0);
      }
    }
  }
  return -1;
}

void forget_temp(int slot) {
  if (slot >= 0 && slot < kTempSlots) g_temp_slots[slot].state.store(0, std::memory_order_release);
}

void forget_temp(const std::string& path) {
  for (int i = 0; i < kTempSlots; ++i) {
    const int seen = g_temp_slots[i].state.load(std::memory_order_acquire);
    if ((seen == 2 || seen == 3) && path == g_temp_slots[i].path) {
      forget_temp(i);
      return;
    }
  }
}

/// The entries of the directory `path` and then the directory, with async-signal-safe calls only
/// (a writer may still add a file while they go: the listing is repeated).
void remove_directory_now(const char* path) {
  struct Dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  for (int round = 0; round < 16; ++round) {
    const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
        const char* name = d->name;
        const bool dot = name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
        if (!dot) ::unlinkat(fd, name, 0);
        at += d->reclen;
      }
    }
    ::close(fd);
    if (::rmdir(path) == 0 || errno == ENOENT) return;
  }
}

/// Creates a temporary file beside `path` exclusively; returns its descriptor and sets `*name`.
int create_temp(const std::string& path, std::string* name, int* slot = nullptr) {
  for (int attempt = 0;; ++attempt) {
    *name = temp_candidate(path);
    const int fd =
        ::open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const int s = remember_temp(*name, 2);
      if (slot != nullptr) *slot = s;
      return fd;
    }
    if (errno != EEXIST || attempt >= 16) {
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
    }
  }
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (pid == ::getpid()) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

bool fsync_on_commit() { return t_fsync; }

bool remove_own_temps_now() {
  int expected = 0;
  if (!g_set_commits.compare_exchange_strong(expected, -1) && expected != -1) return false;
  for (int i = 0; i < kTempSlots; ++i) {
    const int seen = g_temp_slots[i].state.load(std::memory_order_acquire);
    if (seen == 2) ::unlink(g_temp_slots[i].path);
    if (seen == 3) remove_directory_now(g_temp_slots[i].path);
  }
  return true;
}

SetCommitScope::SetCommitScope() {
  int seen = g_set_commits.load();
  do {
    if (seen < 0) throw Error("stopped by a signal before the files were moved into place");
  } while (!g_set_commits.compare_exchange_weak(seen, seen + 1));
}

SetCommitScope::~SetCommitScope() { g_set_commits.fetch_sub(1); }

int remember_temp_dir(const std::string& dir) { return remember_temp(dir, 3); }

void forget_temp_dir(int handle) { forget_temp(handle); }

FsyncScope::FsyncScope(bool fsync) : previous_(t_fsync) { t_fsync = fsync; }

FsyncScope::~FsyncScope() { t_fsync = previous_; }

std::string temp_name_for(const std::string& path) {
  std::string name;
  ::close(create_temp(path, &name));
  return name;
}

bool is_temp_name(const std::string& name, long* pid) {
  const size_t at = name.rfind(kTempMarker);
  if (at == std::string::npos || at == 0) return false;
  const size_t digits = at + std::strlen(kTempMarker);
  if (digits == name.size() || name.size() - digits > 10) return false;
  long value = 0;
  for (size_t i = digits; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    value = value * 10 + (name[i] - '0');
  }
  if (pid != nullptr) *pid = value;
  return true;
}

size_t remove_stale_temps(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    long pid = 0;
    if (is_temp_name(e->d_name, &pid) && !process_alive(pid)) stale.emplace_back(e->d_name);
  }
  ::closedir(d);
  size_t removed = 0;
  for (const std::string& name : stale) {
    std::error_code ec;
    // remove_all does not follow a link: a planted link is removed, not what it points at.
    if (std::filesystem::remove_all(dir + "/" + name, ec) > 0 && !ec) ++removed;
  }
  return removed;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const int fd = create_temp(path_, &temp_path_, &slot_);
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    ::close(fd);
    std::remove(temp_path_.c_str());
    forget_temp(slot_);
    throw Error("cannot write '" + path_ + "': " + std::strerror(err));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 4 << 20);
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_path_.c_str());
  forget_temp(slot_);
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  }
}

void AtomicFile::write_rows(const void* data, uint64_t rows, size_t row_bytes,
                            size_t stride_bytes) {
  const uint64_t bytes = rows * row_bytes;
  if (bytes == 0) return;
  const off_t start = std::fflush(file_) == 0 ? ::ftello(file_) : -1;
  if (start < 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  const int fd = ::fileno(file_);
  const uint32_t threads = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::min<uint64_t>(std::thread::hardware_concurrency(), 16), 1,
                           bytes / (uint64_t{32} << 20) + 1));
  std::atomic<int> error{0};
  run_workers(threads, [&](uint32_t k) {
    const uint64_t first = rows * k / threads, last = rows * (k + 1) / threads;
    const bool contiguous = stride_bytes == row_bytes;
    const uint64_t per_write =
        contiguous ? last - first : std::max<uint64_t>(1, (uint64_t{4} << 20) / row_bytes);
    std::vector<char> buffer(contiguous ? 0 : per_write * row_bytes);
    const char* base = static_cast<const char*>(data);
    for (uint64_t r = first; r < last && error == 0; r += per_write) {
      const uint64_t n = std::min(per_write, last - r);
      const char* src = base + r * stride_bytes;
      if (!contiguous) {
        for (uint64_t i = 0; i < n; ++i) {
          std::memcpy(buffer.data() + i * row_bytes, base + (r + i) * stride_bytes, row_bytes);
        }
        src = buffer.data();
      }
      for (uint64_t done = 0; done < n * row_bytes;) {
        const ssize_t w =
            ::pwrite(fd, src + done, n * row_bytes - done,
                     static_cast<off_t>(static_cast<uint64_t>(start) + r * row_bytes + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          int none = 0;
          error.compare_exchange_strong(none, w < 0 ? errno : ENOSPC);
          return;
        }
        done += static_cast<uint64_t>(w);
      }
    }
  });
  if (error != 0) throw Error("cannot write '" + path_ + "': " + std::strerror(error));
  if (::fseeko(file_, start + static_cast<off_t>(bytes), SEEK_SET) != 0) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  const bool flushed = std::fflush(file_) == 0 && (!t_fsync || ::fsync(fileno(file_)) == 0);
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
  forget_temp(slot_);
  fsync_path(dir_of(path_), O_RDONLY | O_DIRECTORY);
}

void commit_file(const std::string& temp_path, const std::string& path) {
  const int fd = ::open(temp_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || (t_fsync && ::fsync(fd) != 0)) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    std::remove(temp_path.c_str());
    forget_temp(temp_path);
    throw Error("cannot write '" + path + "': " + std::strerror(err));
  }
  ::close(fd);
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_path.c_str());
    forget_temp(temp_path);
    throw Error("cannot rename onto '" + path + "': " + std::strerror(err));
  }
  forget_temp(temp_path);
  fsync_path(dir_of(path), O_RDONLY | O_DIRECTORY);
}

void replace_symlink(const std::string& target, const std::string& link) {
  for (int attempt = 0;; ++attempt) {
    const std::string temp = temp_candidate(link);
    // symlink() never follows or replaces an existing entry: it is exclusive by itself.
    if (::symlink(target.c_str(), temp.c_str()) == 0) {
      if (std::rename(temp.c_str(), link.c_str()) != 0) {
        const int err = errno;
        std::remove(temp.c_str());
        throw Error("cannot update '" + link + "': " + std::strerror(err));
      }
      return;
    }
    if (errno != EEXIST || attempt >= 16) {
      throw Error("cannot update '" + link + "': " + std::strerror(errno));
    }
  }
}

void make_directories(const std::string& dir) {
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      const std::string partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        throw Error("cannot create directory '" + partial + "': " + std::strerror(errno));
      }
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("cannot create directory '" + dir + "': a file of that name exists");
  }
}

OutputLock::OutputLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open output directory '" + dir + "': " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw Error(
          "output directory '" + dir +
          "' is in use by another pagedw2v process; wait for it or choose another --output");
    }
    throw Error("cannot lock output directory '" + dir + "': " + std::strerror(err));
  }
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

OutputLock::OutputLock(OutputLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

}  // namespace pagedw2v
