#pragma once
/// @file mapped_write.hpp
/// Large writes into a file through a shared mapping of it, by several threads at once.
///
/// write(2) into one file takes the file's lock for each call, so threads writing one file's page
/// cache take turns: about 3.5 GB/s on the H200 machine's ext4 for a 2 GiB file, with 1, 2 or 8
/// threads. Page faults into a shared mapping of a range allocated beforehand (fallocate) fill
/// the page cache from every thread at once: 8–9 GB/s with 8 to 16 threads, 2026-12-02. The
/// range is allocated before it is mapped, so that no page of the mapping can lack disk space
/// (which would end the process with SIGBUS instead of an error).

#include <cstdint>
#include <functional>
#include <string>

namespace pagedw2v {

/// Makes bytes [offset, offset + bytes) of the open file `fd` (opened for reading and writing)
/// hold what `fill(at, n, dst)` writes: the n bytes from `at` (counted from `offset`) into
/// `dst`, called for pieces of a few MiB on up to `threads` threads. Returns false, having
/// written nothing, where that cannot be done so (a file system without fallocate, a descriptor
/// not open for reading and writing, no address space left), for the caller to write another
/// way; throws Error("cannot write 'PATH': …") when the disk or the quota is full, and the first
/// error that `fill` throws.
bool write_mapped(int fd, uint64_t offset, uint64_t bytes, uint32_t threads,
                  const std::string& path,
                  const std::function<void(uint64_t at, uint64_t n, char* dst)>& fill);

}  // namespace pagedw2v
