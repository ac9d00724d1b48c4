#include "io/output_claim.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "base/path_parts.hpp"
#include "io/output_set.hpp"

namespace pagedw2v {
namespace {

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/// Creates `dir` (and its parents) and checks that it can be written.
void prepare_directory(const std::string& dir) {
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      const std::string partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        throw Error("cannot create output directory '" + partial + "': " + std::strerror(errno));
      }
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error("output '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Error("cannot write to output directory '" + dir + "': " + std::strerror(errno));
  }
}

/// The set's files in `dir` that exist now.
std::vector<std::string> present_set_files(const std::string& dir) {
  std::vector<std::string> found;
  for (const std::string& name : output_set_names()) {
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) == 0) found.push_back(name);
  }
  return found;
}

void check_inputs(const OutputClaim& c) {
  const std::string& out = c.dir;
  for (const FlagPath& in : c.inputs) {
    if (in.path.empty() || in.path == "-") continue;
    struct stat st {};
    if (::stat(in.path.c_str(), &st) != 0) continue;  // the command reports it when it reads
    if (S_ISDIR(st.st_mode)) {
      if (same_file(st, out)) {
        throw Error(in.flag + " '" + in.path + "' is the --output directory: this " + c.command +
                    "'s files would be read as its input; choose another --output");
      }
      continue;
    }
    for (const std::string& name : output_set_names()) {
      const std::string path = out + "/" + name;
      if (same_file(st, path)) {
        throw Error(in.flag + " '" + in.path + "' is '" + path + "', a file this " + c.command +
                    " writes or replaces; choose another --output (pagedw2v never changes its "
                    "input)");
      }
    }
    for (const std::string& path : c.earlier_files) {
      if (same_file(st, path)) {
        throw Error(in.flag + " '" + in.path + "' is '" + path + "', a file this " + c.command +
                    " replaces; choose another --output");
      }
    }
  }
}

void check_other_outputs(const OutputClaim& c) {
  for (const FlagPath& o : c.other_outputs) {
    if (o.path.empty()) continue;
    const std::string dir = dir_of(o.path);
    const std::string name = name_of(o.path);
    struct stat target {};
    const bool exists = ::stat(o.path.c_str(), &target) == 0;
    for (const FlagPath& in : c.inputs) {
      if (in.path.empty() || in.path == "-") continue;
      struct stat ist {};
      if (::stat(in.path.c_str(), &ist) != 0) continue;
      if (S_ISDIR(ist.st_mode) ? same_file(ist, dir) : (exists && same_file(ist, o.path))) {
        throw Error(o.flag + " '" + o.path + "' " + (S_ISDIR(ist.st_mode) ? "lies in " : "is ") +
                    in.flag + " '" + in.path + "', which this " + c.command +
                    " reads; name another file");
      }
    }
    const auto& names = output_set_names();
    if (same_directory(dir, c.dir) && std::find(names.begin(), names.end(), name) != names.end()) {
      throw Error(o.flag + " '" + o.path + "' is a file of the set this " + c.command +
                  " writes into '" + c.dir + "'; name another file");
    }
    if (exists && S_ISDIR(target.st_mode)) {
      throw Error(o.flag + " '" + o.path + "' is a directory; name a file");
    }
    if (exists && !c.overwrite && !c.continues) {
      throw Error(o.flag + " '" + o.path +
                  "' exists; name another file, or add --overwrite to replace it");
    }
  }
}

}  // namespace

bool same_directory(const std::string& a, const std::string& b) {
  struct stat sa {};
  return ::stat(a.c_str(), &sa) == 0 && S_ISDIR(sa.st_mode) && same_file(sa, b);
}

OutputLock claim_output(const OutputClaim& c) {
  prepare_directory(c.dir);
  OutputLock lock(c.dir);
  remove_stale_temps(c.dir);
  remove_stale_temps(c.dir + "/checkpoints");
  check_inputs(c);
  check_other_outputs(c);
  const std::vector<std::string> set_files = present_set_files(c.dir);
  if (c.continues || c.overwrite || (set_files.empty() && c.earlier_files.empty())) return lock;
  std::string list;
  size_t shown = 0;
  for (const std::string& n : set_files) {
    if (shown++ < 3) list += (list.empty() ? "" : ", ") + n;
  }
  for (const std::string& path : c.earlier_files) {
    const std::string shown_name =
        path.rfind(c.dir + "/", 0) == 0 ? path.substr(c.dir.size() + 1) : path;
    if (shown++ < 3) list += (list.empty() ? "" : ", ") + shown_name;
  }
  if (shown > 3) list += ", …";
  throw Error("output '" + c.dir + "' holds the files of another run (" + list +
              "); choose another --output, or add --overwrite to replace them");
}

}  // namespace pagedw2v
