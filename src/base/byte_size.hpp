#pragma once
/// @file byte_size.hpp
/// Sizes in bytes as people write them: `8GiB`, `512MiB`, `1.5GB`, `2G`, `100000000`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagedw2v {

/// Parses a byte size: a whole or decimal number, then optionally a unit, case-insensitive:
/// `B`; `KiB MiB GiB TiB` and the short `K M G T` (powers of 1024); `KB MB GB TB` (powers of
/// 1000). Spaces may separate number and unit. The result is rounded to the nearest byte; a
/// fraction of a byte without a unit is refused. Returns nullopt for anything else (a sign, an
/// exponent, an unknown unit, more than 2^64 − 1 bytes).
std::optional<uint64_t> parse_byte_size(std::string_view text);

/// `bytes` as the shortest exact text parse_byte_size reads back: `8GiB`, `3MiB`, `1000`.
std::string format_byte_size(uint64_t bytes);

/// `bytes` in GiB (2^30 bytes), for figures a caller prints with its own precision.
double gib(uint64_t bytes);

/// `bytes` in GiB with two decimals, for messages: `0.50 GiB`, `12.00 GiB`.
std::string format_gib(uint64_t bytes);

/// `bytes` in the largest binary unit it reaches (B to TiB) with one decimal, for messages about
/// sizes of any magnitude: `512.0 B`, `1.5 GiB`, `3072.0 TiB`. A double, so that a size past
/// 2^64 that a message refuses can still be written.
std::string format_bytes_rounded(double bytes);

}  // namespace pagedw2v
