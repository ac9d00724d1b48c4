#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error.hpp"
#include "io/mapped_write.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::read_file;
using testing_util::TempDir;

char byte_at(uint64_t i) { return static_cast<char>((i * 2654435761u) >> 13); }

// Whether the file system under `dir` allocates ranges (fallocate): where it does, the mapping
// must be used.
bool allocates(const std::string& dir) {
  const std::string probe = dir + "/probe";
  const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT, 0644);
  const bool ok = fd >= 0 && ::fallocate(fd, 0, 0, 4096) == 0;
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return ok;
}

// Bytes at an offset that is not on a page, more than one piece, by several threads; what lies
// before the range stays.
TEST(MappedWrite, FillsTheRangeAndKeepsWhatLiesBefore) {
  const TempDir dir;
  const bool expected = allocates(dir.path());
  const std::string path = dir.file("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  const std::string head = "a head of 37 bytes, not a page long..";
  ASSERT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  const uint64_t bytes = (uint64_t{8} << 20) * 3 + 12345;
  const bool mapped =
      write_mapped(fd, head.size(), bytes, 4, path, [](uint64_t at, uint64_t n, char* dst) {
        for (uint64_t i = 0; i < n; ++i) dst[i] = byte_at(at + i);
      });
  ::close(fd);
  EXPECT_EQ(mapped, expected);
  if (!mapped) {
    EXPECT_EQ(read_file(path), head);
    return;
  }
  const std::string got = read_file(path);
  ASSERT_EQ(got.size(), head.size() + bytes);
  EXPECT_EQ(got.substr(0, head.size()), head);
  for (uint64_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(got[head.size() + i], byte_at(i)) << "byte " << i;
  }
}

TEST(MappedWrite, ADescriptorNotOpenForReadingIsLeftToTheCaller) {
  const TempDir dir;
  const std::string path = dir.file("f");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  bool called = false;
  EXPECT_FALSE(
      write_mapped(fd, 0, 1 << 20, 2, path, [&](uint64_t, uint64_t, char*) { called = true; }));
  ::close(fd);
  EXPECT_FALSE(called);
  EXPECT_EQ(read_file(path), "");
}

TEST(MappedWrite, AFailedFillIsThrown) {
  const TempDir dir;
  if (!allocates(dir.path())) GTEST_SKIP() << "the file system does not allocate ranges";
  const std::string path = dir.file("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_THROW(write_mapped(fd, 0, uint64_t{40} << 20, 3, path,
                            [](uint64_t at, uint64_t, char*) {
                              if (at >= (uint64_t{16} << 20)) throw Error("cannot make it");
                            }),
               Error);
  ::close(fd);
}

}  // namespace
}  // namespace pagedw2v
