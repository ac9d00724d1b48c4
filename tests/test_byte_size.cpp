#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "base/byte_size.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

constexpr uint64_t kKi = uint64_t{1} << 10, kMi = uint64_t{1} << 20, kGi = uint64_t{1} << 30,
                   kTi = uint64_t{1} << 40;

TEST(ByteSize, UnitsBinaryAndDecimal) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"100000000", 100000000},
      {"0", 0},
      {"7B", 7},
      {"8GiB", 8 * kGi},
      {"512MiB", 512 * kMi},
      {"1.5GB", 1500000000},
      {"2G", 2 * kGi},
      {"3K", 3 * kKi},
      {"3KiB", 3 * kKi},
      {"3KB", 3000},
      {"4M", 4 * kMi},
      {"4MB", 4000000},
      {"1T", kTi},
      {"1TiB", kTi},
      {"2TB", 2000000000000},
      {"0.5KiB", 512},
      {"1.25MiB", kMi + kMi / 4},
      {"8 GiB", 8 * kGi},
      {"1.0", 1},
      {"00012", 12},
      {"16777215TiB", 16777215 * kTi},
      {"18446744073709551615", UINT64_MAX},
  };
  for (const auto& [text, bytes] : cases) {
    const std::optional<uint64_t> parsed = parse_byte_size(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(*parsed, bytes) << text;
  }
}

TEST(ByteSize, UnitsAreCaseInsensitive) {
  for (const char* text : {"8gib", "8GIB", "8Gib", "8gIb", "8g", "8G"}) {
    EXPECT_EQ(parse_byte_size(text), std::optional<uint64_t>(8 * kGi)) << text;
  }
  for (const char* text : {"2gb", "2GB", "2Gb", "2gB"}) {
    EXPECT_EQ(parse_byte_size(text), std::optional<uint64_t>(2000000000)) << text;
  }
}

TEST(ByteSize, FractionsRoundToTheNearestByte) {
  EXPECT_EQ(parse_byte_size("0.0001KiB"), std::optional<uint64_t>(0));  // 0.1024 bytes
  EXPECT_EQ(parse_byte_size("0.0005KiB"), std::optional<uint64_t>(1));  // 0.512 bytes
  EXPECT_EQ(parse_byte_size("1.999999999999999999999GB"), std::optional<uint64_t>(2000000000));
  EXPECT_EQ(parse_byte_size("0.1KB"), std::optional<uint64_t>(100));
}

TEST(ByteSize, RejectsWhatIsNotASize) {
  for (const char* text : {"",
                           "x",
                           "GiB",
                           "-1",
                           "+1",
                           "-1GiB",
                           "1e9",
                           "1,5GB",
                           "1.5",
                           "1.",
                           ".5G",
                           "8GiBs",
                           "8 ",
                           " 8",
                           "8XB",
                           "8iB",
                           "8gi",
                           "nan",
                           "inf",
                           "1..5G",
                           "1.5.5G",
                           "8\tGiB",
                           "auto",
                           "18446744073709551616",
                           "16777216TiB",
                           "99999999999999999999999",
                           "0x10"}) {
    EXPECT_FALSE(parse_byte_size(text).has_value()) << "'" << text << "'";
  }
}

TEST(ByteSize, GibForMessages) {
  EXPECT_EQ(format_gib(0), "0.00 GiB");
  EXPECT_EQ(format_gib(kGi / 2), "0.50 GiB");
  EXPECT_EQ(format_gib(12 * kGi), "12.00 GiB");
  EXPECT_EQ(format_gib(1536 * kMi + kMi), "1.50 GiB");
  EXPECT_EQ(format_gib(uint64_t{5} << 40), "5120.00 GiB");
}

TEST(ByteSize, GibIsBytesOverTwoToTheThirty) {
  EXPECT_EQ(gib(0), 0.0);
  EXPECT_EQ(gib(kGi / 2), 0.5);
  EXPECT_EQ(gib(3 * kGi), 3.0);
  EXPECT_EQ(gib(kGi + kMi), 1.0 + 1.0 / 1024);
}

TEST(ByteSize, RoundedForMessagesOfAnySize) {
  EXPECT_EQ(format_bytes_rounded(0), "0.0 B");
  EXPECT_EQ(format_bytes_rounded(1023), "1023.0 B");
  EXPECT_EQ(format_bytes_rounded(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes_rounded(1536.0 * kMi), "1.5 GiB");
  EXPECT_EQ(format_bytes_rounded(3.0 * (uint64_t{1} << 50)), "3072.0 TiB");
  // Past 2^64 bytes (a size a message refuses) still reads as a number.
  EXPECT_EQ(format_bytes_rounded(std::ldexp(1.0, 70)), "1073741824.0 TiB");
}

TEST(ByteSize, FormatReadsBack) {
  EXPECT_EQ(format_byte_size(0), "0");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(8 * kGi), "8GiB");
  EXPECT_EQ(format_byte_size(1536 * kMi), "1536MiB");
  EXPECT_EQ(format_byte_size(3 * kTi), "3TiB");
  EXPECT_EQ(format_byte_size(5 * kKi), "5KiB");
  std::mt19937_64 rng(testing_util::fresh_seed());
  for (int i = 0; i < 10000; ++i) {
    // Sizes of every magnitude, many of them whole multiples of a unit.
    const uint64_t bytes = (rng() >> (rng() % 64)) << (rng() % 3 == 0 ? 10 * (rng() % 5) : 0);
    const std::string text = format_byte_size(bytes);
    ASSERT_EQ(parse_byte_size(text), std::optional<uint64_t>(bytes)) << text;
  }
}

}  // namespace
}  // namespace pagedw2v
