#pragma once
/// @file hdf5_lock.hpp
/// One lock for the HDF5 writes of this process. libhdf5 is thread-safe only when built so; the
/// writers of hdf5_io.hpp hold it while they call libhdf5 (not while they write the tables'
/// values, which go to the file after libhdf5 has closed it), so that a checkpoint written in the
/// background and an export written at the same time do not depend on how the library was built.
/// The readers of hdf5_read.hpp hold it while they fork the child that parses a file, so that the
/// child's copy of libhdf5 is not caught in the middle of a write.

#include <mutex>

namespace pagedw2v {

inline std::mutex& hdf5_write_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace pagedw2v
