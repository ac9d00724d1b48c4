#include "text/text_source.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef PAGEDW2V_HAVE_ZSTD
#include <zstd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "text/text_chunks.hpp"

namespace pagedw2v {
namespace {

/// Bytes of a text's start that sniff_format() looks at.
constexpr size_t kSniffBytes = 64 << 10;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

constexpr std::string_view kGzipMagic("\x1f\x8b", 2);
constexpr std::string_view kZstdMagic("\x28\xb5\x2f\xfd", 4);

void refuse(const std::string& name, const std::string& format) {
  if (format == "binary") {
    throw Error("'" + name +
                "' looks like binary data, not text (many control bytes); give a text corpus "
                "(UTF-8; gzip or zstd compressed is fine)");
  }
  throw Error("'" + name + "' is " + format +
              " data, which cannot be read; decompress it first (gzip and zstd are read "
              "directly)");
}

}  // namespace

std::string sniff_format(std::string_view head) {
  if (starts_with(head, kGzipMagic)) return "gzip";
  if (starts_with(head, kZstdMagic)) return "zstd";
  struct Magic {
    std::string_view bytes;
    const char* name;
  };
  static const Magic kOthers[] = {
      {std::string_view("BZh", 3), "bzip2"},
      {std::string_view("\xfd"
                        "7zXZ\0",
                        6),
       "xz"},
      {std::string_view("\x5d\x00\x00", 3), "lzma"},
      {std::string_view("PK\x03\x04", 4), "zip"},
      {std::string_view("PK\x05\x06", 4), "zip"},
      {std::string_view("7z\xbc\xaf\x27\x1c", 6), "7z"},
      {std::string_view("\x04\x22\x4d\x18", 4), "lz4"},
      {std::string_view("Rar!\x1a\x07", 6), "rar"},
      {std::string_view("\x1f\x9d", 2), "compress (.Z)"},
      {std::string_view("\x89HDF\r\n\x1a\n", 8), "HDF5"},
      {std::string_view("\x93NUMPY", 6), "numpy"},
      {std::string_view("%PDF-", 5), "PDF"},
  };
  for (const Magic& m : kOthers) {
    if (starts_with(head, m.bytes)) return m.name;
  }
  if (head.size() > 262 && head.compare(257, 5, "ustar") == 0) return "tar";
  // Text has few control bytes besides the spaces; binary data (random bytes, UTF-16, images)
  // has many. ESC is allowed for terminal colour codes.
  const size_t n = std::min(head.size(), kSniffBytes);
  size_t control = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(head[i]);
    control += (c < 0x20 && !is_space_byte(c) && c != 0x1b) || c == 0x7f || c == 0;
  }
  if (control * 16 > n) return "binary";
  return "text";
}

std::string decompress_gzip(std::string_view data, const std::string& name) {
  std::string out;
  out.resize(std::max<size_t>(data.size() * 4, 1 << 16));
  size_t used = 0;
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw Error("cannot start gzip decompression");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  size_t in_left = data.size();
  auto fail = [&](const std::string& why) {
    inflateEnd(&z);
    throw Error("'" + name + "': " + why);
  };
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const uInt in_now = static_cast<uInt>(std::min<size_t>(in_left, 1u << 30));
    const uInt out_now = static_cast<uInt>(std::min<size_t>(out.size() - used, 1u << 30));
    z.avail_in = in_now;
    z.next_out = reinterpret_cast<Bytef*>(&out[used]);
    z.avail_out = out_now;
    const int rc = inflate(&z, Z_NO_FLUSH);
    in_left -= in_now - z.avail_in;
    used += out_now - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated members are one stream (as gzip -d reads them).
      const std::string_view rest(reinterpret_cast<const char*>(z.next_in), in_left);
      if (rest.empty()) break;
      if (!starts_with(rest, kGzipMagic)) fail("trailing data after the gzip stream (corrupt?)");
      inflateReset(&z);
      continue;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      fail(std::string("corrupt gzip data (") + (z.msg != nullptr ? z.msg : "bad data") + ")");
    }
    if (rc == Z_MEM_ERROR) fail("out of memory while decompressing");
    if (rc == Z_BUF_ERROR && in_left == 0 && z.avail_out > 0) {
      fail("the gzip data is truncated (it ends before the stream does)");
    }
  }
  inflateEnd(&z);
  out.resize(used);
  return out;
}

std::string decompress_zstd(std::string_view data, const std::string& name) {
#ifdef PAGEDW2V_HAVE_ZSTD
  std::string out;
  out.resize(std::max<size_t>(data.size() * 4, 1 << 16));
  size_t used = 0;
  ZSTD_DStream* z = ZSTD_createDStream();
  if (z == nullptr) throw Error("cannot start zstd decompression");
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  size_t last = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    ZSTD_outBuffer o{&out[used], out.size() - used, 0};
    last = ZSTD_decompressStream(z, &o, &in);
    used += o.pos;
    if (ZSTD_isError(last)) {
      const std::string why = ZSTD_getErrorName(last);
      ZSTD_freeDStream(z);
      throw Error("'" + name + "': corrupt zstd data (" + why + ")");
    }
    if (in.pos == in.size && o.pos < o.size) break;  // all input read, all output flushed
  }
  ZSTD_freeDStream(z);
  if (last != 0) throw Error("'" + name + "': the zstd data is truncated (it ends mid-frame)");
  out.resize(used);
  return out;
#else
  (void)data;
  throw Error("'" + name + "' is zstd data, and this pagedw2v was built without zstd");
#endif
}

CorpusText CorpusText::open(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("no corpus given");
  CorpusText t;
  for (const std::string& path : paths) {
    if (path == "-") {
      t.add_stream(STDIN_FILENO, "standard input");
      continue;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw Error("cannot open '" + path + "': " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
      t.add_file(path);
      continue;
    }
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    size_t files = 0;
    for (const std::string& name : names) {
      const std::string file = path + (path.back() == '/' ? "" : "/") + name;
      struct stat fst {};
      if (::stat(file.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
      t.add_file(file);
      ++files;
    }
    if (files == 0) throw Error("directory '" + path + "' holds no corpus files");
  }
  return t;
}

CorpusText CorpusText::of_text(std::string text, const std::string& name) {
  CorpusText corpus;
  corpus.add_buffer(std::move(text), name);
  return corpus;
}

void CorpusText::add_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A pipe or a device: read it as a stream. O_NONBLOCK: opening a FIFO with no writer
    // would otherwise wait, deaf to SIGINT.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    try {
      add_stream(fd, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  MappedFile map(path);
  std::string format;
  run_guarded([&] { format = sniff_format(map.view().substr(0, kSniffBytes)); }, path.c_str());
  if (format == "text") {
    parts_.push_back(map.view());
    names_.push_back(path);
    mapped_.push_back(true);
    maps_.push_back(std::move(map));
    return;
  }
  if (format != "gzip" && format != "zstd") refuse(path, format);
  std::string text;
  run_guarded(
      [&] {
        text = format == "gzip" ? decompress_gzip(map.view(), path)
                                : decompress_zstd(map.view(), path);
      },
      path.c_str());
  add_buffer(std::move(text), path);
}

void CorpusText::add_stream(int fd, const std::string& name) {
  std::string data;
  size_t used = 0;
  bool sniffed = false;
  for (;;) {
    if (data.size() - used < (1 << 16)) data.resize(std::max<size_t>(data.size() * 2, 1 << 20));
    const ssize_t got = ::read(fd, &data[used], data.size() - used);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read '" + name + "': " + std::strerror(errno));
    }
    if (got == 0) break;
    used += static_cast<size_t>(got);
    if (!sniffed && used >= kSniffBytes) {
      // Refuse an endless binary stream (/dev/zero) before it fills the memory.
      const std::string format = sniff_format(std::string_view(data.data(), used));
      if (format != "text" && format != "gzip" && format != "zstd") refuse(name, format);
      sniffed = true;
    }
  }
  data.resize(used);
  const std::string format = sniff_format(data);
  if (format == "gzip") {
    data = decompress_gzip(data, name);
  } else if (format == "zstd") {
    data = decompress_zstd(data, name);
  } else if (format != "text") {
    refuse(name, format);
  }
  add_buffer(std::move(data), name);
}

void CorpusText::add_buffer(std::string data, const std::string& name) {
  const std::string format = sniff_format(data);
  if (format != "text") refuse(name, format == "gzip" || format == "zstd" ? "binary" : format);
  buffers_.push_back(std::make_unique<std::string>(std::move(data)));
  parts_.push_back(*buffers_.back());
  mapped_.push_back(false);
  names_.push_back(name);
}

void CorpusText::release(size_t i, size_t begin, size_t end) const {
  if (!mapped(i) || begin >= end) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside the range only: a page shared with bytes still to read stays.
  const uintptr_t base = reinterpret_cast<uintptr_t>(parts_[i].data());
  const uintptr_t first = (base + begin + page - 1) / page * page;
  const uintptr_t last = (base + std::min(end, parts_[i].size())) / page * page;
  if (last > first) {
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }
}

void CorpusText::release(std::string_view text) const {
  const uintptr_t at = reinterpret_cast<uintptr_t>(text.data());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(parts_[i].data());
    if (at >= first && at + text.size() <= first + parts_[i].size()) {
      const size_t begin = static_cast<size_t>(at - first);
      release(i, begin, begin + text.size());
      return;
    }
  }
}

uint64_t CorpusText::bytes() const {
  uint64_t n = 0;
  for (std::string_view p : parts_) n += p.size();
  return n;
}

}  // namespace pagedw2v
