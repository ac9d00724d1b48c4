#pragma once
/// @file ordered_blocks.hpp
/// A file made of consecutive blocks that several threads make at once and one thread writes in
/// order: text formats whose rows are formatted (word2vec text: the shortest digits of every
/// float, the slow part of an export) and whose offsets are not known before they are.

#include <cstdint>
#include <functional>
#include <string>

#include "base/atomic_file.hpp"

namespace pagedw2v {

/// Appends blocks 0 … blocks-1 to `out`, in order; `make(b, bytes)` fills `bytes` (cleared
/// first) with block b, on one of `threads` - 1 threads (on the calling thread when `threads`
/// is 1), at most 2 blocks a thread ahead of the block being written; the calling thread
/// writes. The first error, of a `make` or of a write, is thrown once every thread has stopped.
void write_ordered_blocks(AtomicFile& out, uint64_t blocks, uint32_t threads,
                          const std::function<void(uint64_t, std::string&)>& make);

}  // namespace pagedw2v
