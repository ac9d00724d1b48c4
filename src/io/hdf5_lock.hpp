#pragma once
/// @file hdf5_lock.hpp
/// One lock for the HDF5 writes of this process. libhdf5 is thread-safe only when built so; a
/// checkpoint written in the background and an export written at the same time take this lock,
/// so that neither depends on how the library was built.

#include <mutex>

namespace pagedw2v {

inline std::mutex& hdf5_write_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace pagedw2v
