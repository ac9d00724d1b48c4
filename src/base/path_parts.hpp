#pragma once
/// @file path_parts.hpp
/// The folder and the file name of a path, as the code that writes, claims or reads files beside
/// one another needs them: split at the last '/', no file system asked.

#include <string>

namespace pagedw2v {

/// The folder holding `path`: "." for a bare name, "/" for a file at the root.
inline std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The last part of `path` (all of it without a '/').
inline std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace pagedw2v
