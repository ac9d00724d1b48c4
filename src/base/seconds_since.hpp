#pragma once
/// @file seconds_since.hpp
/// Seconds of the steady clock since a time point: how long a stage of a run took.

#include <chrono>

namespace pagedw2v {

/// Seconds of std::chrono::steady_clock from `t` to now.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace pagedw2v
