#include "io/hdf5_heap_strings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"

namespace pagedw2v::detail {
namespace {

// A global heap collection: "GCOL", version 1, 3 reserved bytes, its size (8 bytes, header
// included), then its objects, each a 2-byte index, a 2-byte reference count, 4 reserved bytes,
// its size (8 bytes) and its data padded to a multiple of 8. Index 0 is the free space, last,
// whose size counts its header.
constexpr uint64_t kCollectionHeader = 16;
constexpr uint64_t kObjectHeader = 16;
constexpr uint64_t kHeapIdBytes = 16;

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Collection {
  std::vector<unsigned char> bytes;
  /// Where each object's data begins in `bytes`, and its size, by index (size ~0: no object).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> objects;
};

class Reader {
 public:
  Reader(const HeapStringSource& file, std::string what) : file_(file), what_(std::move(what)) {}

  [[noreturn]] void damaged(const std::string& why) const {
    throw Error(what_ + " is damaged (" + why + ")");
  }

  void read(uint64_t at, uint64_t bytes, void* out) const {
    if (at > file_.file_size || bytes > file_.file_size - at) damaged("it points outside the file");
    auto* p = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t got =
          ::pread(file_.fd, p, static_cast<size_t>(std::min<uint64_t>(bytes, 1u << 30)),
                  static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error(what_ + ": " + std::strerror(errno));
      if (got == 0) damaged("the file ends inside it");
      p += got;
      at += static_cast<uint64_t>(got);
      bytes -= static_cast<uint64_t>(got);
    }
  }

  const Collection& collection(uint64_t address) {
    const auto found = collections_.find(address);
    if (found != collections_.end()) return found->second;
    if (address > file_.file_size || file_.base > file_.file_size - address) {
      damaged("a heap collection lies outside the file");
    }
    const uint64_t at = file_.base + address;
    unsigned char header[kCollectionHeader];
    read(at, sizeof header, header);
    if (std::memcmp(header, "GCOL", 4) != 0 || header[4] != 1) {
      damaged("a heap collection without its signature");
    }
    const uint64_t size = le(header + 8, 8);
    if (size < kCollectionHeader || size > file_.file_size - at) {
      damaged("a heap collection runs past the end of the file");
    }
    Collection c;
    c.bytes.resize(static_cast<size_t>(size));
    read(at, size, c.bytes.data());
    uint64_t p = kCollectionHeader;
    while (size - p >= kObjectHeader) {
      const unsigned char* h = c.bytes.data() + p;
      const auto index = static_cast<uint32_t>(le(h, 2));
      const uint64_t object = le(h + 8, 8);
      const uint64_t data = p + kObjectHeader;
      if (index == 0) {
        // The free space, the rest of the collection: its size counts its header.
        if (object > size - p) damaged("a heap object runs past its collection");
        break;
      }
      if (object > size - data) damaged("a heap object runs past its collection");
      if (!c.objects.emplace(index, std::make_pair(data, object)).second) {
        damaged("a heap object is named twice");
      }
      const uint64_t padded = (object + 7) / 8 * 8;
      if (padded > size - data) break;  // the last object fills the collection
      p = data + padded;
    }
    return collections_.emplace(address, std::move(c)).first->second;
  }

 private:
  const HeapStringSource& file_;
  std::string what_;
  std::unordered_map<uint64_t, Collection> collections_;
};

}  // namespace

std::vector<std::string> read_heap_strings(const HeapStringSource& file, uint64_t at, uint64_t n,
                                           const std::string& prefix, const std::string& label) {
  Reader reader(file, prefix + label);
  if (n > file.file_size / kHeapIdBytes) reader.damaged("more strings than the file can hold");
  std::vector<std::string> out(static_cast<size_t>(n));
  constexpr uint64_t kIdsPerRead = 1 << 16;
  std::vector<unsigned char> ids(static_cast<size_t>(std::min(n, kIdsPerRead) * kHeapIdBytes));
  for (uint64_t first = 0; first < n; first += kIdsPerRead) {
    const uint64_t count = std::min(kIdsPerRead, n - first);
    reader.read(at + first * kHeapIdBytes, count * kHeapIdBytes, ids.data());
    for (uint64_t i = 0; i < count; ++i) {
      const unsigned char* id = ids.data() + i * kHeapIdBytes;
      const uint64_t length = le(id, 4);
      const uint64_t address = le(id + 4, 8);
      const auto index = static_cast<uint32_t>(le(id + 12, 4));
      if (length == 0) continue;
      const Collection& c = reader.collection(address);
      const auto object = c.objects.find(index);
      if (object == c.objects.end()) reader.damaged("a string names a missing heap object");
      if (object->second.second != length) {
        reader.damaged("a string's length is not its heap object's");
      }
      // Up to its first NUL, as libhdf5 hands a string out.
      const char* data = reinterpret_cast<const char*>(c.bytes.data() + object->second.first);
      out[first + i].assign(data, strnlen(data, static_cast<size_t>(length)));
    }
  }
  return out;
}

}  // namespace pagedw2v::detail
