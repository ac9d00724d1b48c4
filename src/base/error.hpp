#pragma once
/// @file error.hpp
/// Exceptions a user can cause. `main` prints them as one line and exits 2 (usage) or 1 (runtime).

#include <stdexcept>
#include <string>

namespace pagedw2v {

/// A bad flag, value or combination of options: the command line must change. Exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A failure while running (bad file, out of memory, I/O error). Exit code 1.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Training stopped on a signal after writing a checkpoint. `main` exits with 128 + signal.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& what) : Error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace pagedw2v
