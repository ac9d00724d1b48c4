#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "io/ordered_blocks.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::entries;
using testing_util::read_file;
using testing_util::TempDir;

std::string block_text(uint64_t b) {
  return "block " + std::to_string(b) + std::string(b % 7, '.') + "\n";
}

// Blocks made out of order, at uneven speeds, come out in order, whatever the thread count.
TEST(OrderedBlocks, BlocksComeOutInOrder) {
  for (const uint32_t threads : {1u, 2u, 3u, 8u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const TempDir dir;
    const uint64_t blocks = 300;
    std::string want;
    for (uint64_t b = 0; b < blocks; ++b) want += block_text(b);
    AtomicFile out(dir.file("f.txt"));
    write_ordered_blocks(out, blocks, threads, [](uint64_t b, std::string& bytes) {
      EXPECT_TRUE(bytes.empty());
      std::mt19937 rng(static_cast<uint32_t>(b));
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      bytes = block_text(b);
    });
    out.commit();
    EXPECT_EQ(read_file(dir.file("f.txt")), want);
  }
}

TEST(OrderedBlocks, NoBlocksWritesNothing) {
  const TempDir dir;
  AtomicFile out(dir.file("f.txt"));
  write_ordered_blocks(out, 0, 4, [](uint64_t, std::string&) { FAIL() << "no block to make"; });
  out.commit();
  EXPECT_EQ(read_file(dir.file("f.txt")), "");
}

// A block that cannot be made stops the others and is the one error; the file is never committed.
TEST(OrderedBlocks, AFailedBlockIsThrownAndNothingIsLeft) {
  for (const uint32_t threads : {1u, 4u}) {
    const TempDir dir;
    {
      AtomicFile out(dir.file("f.txt"));
      EXPECT_THROW(write_ordered_blocks(out, 1000, threads,
                                        [](uint64_t b, std::string& bytes) {
                                          if (b == 37) throw Error("block 37 cannot be made");
                                          bytes = block_text(b);
                                        }),
                   Error);
    }
    EXPECT_TRUE(entries(dir.path()).empty());
  }
}

}  // namespace
}  // namespace pagedw2v
