#pragma once
/// @file rank_memory.hpp
/// What one rank of a distributed run held, as run.json records it for every rank.

#include <cstdint>

namespace pagedw2v::dist {

struct RankMemory {
  uint32_t rank = 0;
  uint64_t table_rows = 0;      ///< rows of each table of the model it held (owned_rows.hpp)
  uint64_t working_rows = 0;    ///< the most rows of each copy table (working_set.hpp)
  uint64_t peak_rss_bytes = 0;  ///< its peak resident memory (getrusage's ru_maxrss)
};

}  // namespace pagedw2v::dist
