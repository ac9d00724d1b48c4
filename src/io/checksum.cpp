#include "io/checksum.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "base/worker_threads.hpp"

namespace pagedw2v {
namespace {

constexpr uint64_t kP1 = 11400714785074694791ull;
constexpr uint64_t kP2 = 14029467366897019727ull;
constexpr uint64_t kP3 = 1609587929392839161ull;
constexpr uint64_t kP4 = 9650029242287828579ull;
constexpr uint64_t kP5 = 2870177450012600261ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

uint32_t load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

uint64_t merge_round(uint64_t acc, uint64_t val) {
  acc ^= round(0, val);
  return acc * kP1 + kP4;
}

}  // namespace

Xxh64::Xxh64(uint64_t seed)
    : acc_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, seed_(seed), buffer_{} {}

void Xxh64::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += bytes;
  if (buffered_ > 0) {
    const size_t take = std::min(bytes, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    bytes -= take;
    if (buffered_ < sizeof buffer_) return;
    for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(buffer_ + 8 * i));
    buffered_ = 0;
  }
  while (bytes >= 32) {
    for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(p + 8 * i));
    p += 32;
    bytes -= 32;
  }
  std::memcpy(buffer_, p, bytes);
  buffered_ = bytes;
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(acc_[0], 1) + rotl(acc_[1], 7) + rotl(acc_[2], 12) + rotl(acc_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge_round(h, acc_[i]);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const unsigned char* p = buffer_;
  size_t n = buffered_;
  while (n >= 8) {
    h ^= round(0, load64(p));
    h = rotl(h, 27) * kP1 + kP4;
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    h ^= uint64_t{load32(p)} * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
    n -= 4;
  }
  while (n > 0) {
    h ^= (*p) * kP5;
    h = rotl(h, 11) * kP1;
    ++p;
    --n;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t xxh64_of_file(int fd, uint64_t offset, uint64_t bytes, const std::string& path) {
  std::vector<unsigned char> buffer(size_t{1} << 20);
  Xxh64 hash;
  while (bytes > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes, buffer.size()));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
    if (got == 0) throw Error("cannot read '" + path + "': the file is shorter than expected");
    hash.update(buffer.data(), static_cast<size_t>(got));
    offset += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
  return hash.digest();
}

uint64_t xxh64_of_file_pieces(int fd, uint64_t offset, uint64_t bytes, uint64_t piece,
                              uint32_t threads, const std::string& path) {
  if (piece == 0) throw Error("cannot read '" + path + "': a checksum piece of 0 bytes");
  const uint64_t pieces = (bytes + piece - 1) / piece;
  std::vector<uint64_t> digests(pieces);
  const auto n = static_cast<uint32_t>(std::clamp<uint64_t>(pieces, 1, std::max(threads, 1u)));
  run_workers(n, [&](uint32_t k) {
    for (uint64_t i = pieces * k / n; i < pieces * (k + 1) / n; ++i) {
      const uint64_t at = i * piece;
      digests[i] = xxh64_of_file(fd, offset + at, std::min(piece, bytes - at), path);
    }
  });
  return xxh64_of_digests(digests);
}

uint64_t xxh64_of_digests(const std::vector<uint64_t>& digests) {
  Xxh64 all;
  for (const uint64_t d : digests) {
    unsigned char le[8];
    for (int b = 0; b < 8; ++b) le[b] = static_cast<unsigned char>(d >> (8 * b));
    all.update(le, sizeof le);
  }
  return all.digest();
}

}  // namespace pagedw2v
