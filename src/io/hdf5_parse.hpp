#pragma once
/// @file hdf5_parse.hpp
/// The part of reading an HDF5 file that libhdf5 does: run only in a child process
/// (hdf5_read.cpp), whose answer comes back as bytes that this file's decoder checks. Internal
/// to src/io.

#include <cstdint>
#include <string>

#include "io/hdf5_read.hpp"

namespace pagedw2v::detail {

/// Parses the file open as `fd` (of `file_size` bytes, named `path` in errors) as `request`
/// asks: the answer as bytes for decode_h5_contents(). A dataset that is asked for and missing
/// is reported absent, not an error. Throws Error for a file that is not one this program reads.
std::string parse_h5_contents(int fd, uint64_t file_size, const std::string& path,
                              const H5Request& request);

/// The answer of parse_h5_contents() for `request`; throws Error when the bytes are not one.
H5Contents decode_h5_contents(const std::string& bytes, const std::string& path,
                              const H5Request& request);

/// Writes the values of `table` (as parse_h5_contents() found it) of the file open as `fd` to
/// `out_fd` as float32 values of this host, row after row from offset 0. Throws Error.
void convert_h5_table(int fd, uint64_t file_size, const std::string& path, const H5Table& table,
                      int out_fd);

}  // namespace pagedw2v::detail
