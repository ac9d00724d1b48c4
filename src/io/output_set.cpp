#include "io/output_set.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "base/error.hpp"
#include "base/path_parts.hpp"
#include "io/checksum.hpp"
#include "io/export.hpp"

namespace pagedw2v {

const char* const kManifestName = "manifest.json";
const char* const kRunRecordName = "run.json";
const char* const kPhraseFileName = "phrases.tsv";

namespace {

constexpr uint64_t kHashPiece = uint64_t{64} << 20;
constexpr int kManifestVersion = 1;
// A manifest lists a few files: anything much larger is not one.
constexpr uint64_t kMaxManifestBytes = 1 << 20;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

/// The members a manifest lists, by name; throws Error naming the manifest when it is not one.
std::map<std::string, SetMember> read_manifest(const std::string& path) {
  std::string text;
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw Error("cannot read '" + path + "': " + std::strerror(errno));
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= kMaxManifestBytes) {
      text.append(buf, n);
    }
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) throw Error("cannot read '" + path + "'");
    if (text.size() > kMaxManifestBytes) {
      throw Error("'" + path + "' is not a pagedw2v manifest (too large)");
    }
  }
  std::map<std::string, SetMember> members;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.at("pagedw2v_output_set").get<int>() != kManifestVersion) {
      throw Error("'" + path + "' is a manifest of another version of pagedw2v");
    }
    for (const nlohmann::json& f : doc.at("files")) {
      SetMember m;
      m.name = f.at("name").get<std::string>();
      m.bytes = f.at("bytes").get<uint64_t>();
      const std::string hash = f.at("xxh64").get<std::string>();
      if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
        throw Error("'" + path + "' is not a pagedw2v manifest (a hash is not 16 hex digits)");
      }
      m.xxh64 = std::stoull(hash, nullptr, 16);
      members[m.name] = m;
    }
  } catch (const nlohmann::json::exception&) {
    throw Error("'" + path +
                "' is not a pagedw2v manifest; remove it to read the files beside it "
                "as they are");
  }
  return members;
}

bool is_set_name(const std::string& name) {
  const std::vector<std::string>& names = output_set_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::string>& output_set_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = export_file_names();
    n.push_back(kRunRecordName);
    n.push_back(kPhraseFileName);
    n.push_back(kManifestName);
    return n;
  }();
  return names;
}

std::string new_set_id() {
  std::random_device rd;
  const uint64_t random = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
  return hex64(static_cast<uint64_t>(micros)) + "-" + std::to_string(::getpid()) + "-" +
         hex64(random);
}

SetMember describe_set_member(const std::string& path, const std::string& name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error("cannot read '" + path + "': " + std::strerror(err));
  }
  SetMember m;
  m.name = name;
  m.bytes = static_cast<uint64_t>(st.st_size);
  try {
    const uint32_t threads = std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16);
    m.xxh64 = xxh64_of_file_pieces(fd, 0, m.bytes, kHashPiece, threads, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return m;
}

std::string manifest_text(const std::string& set_id, const std::vector<SetMember>& members) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const SetMember& m : members) {
    files.push_back({{"name", m.name}, {"bytes", m.bytes}, {"xxh64", hex64(m.xxh64)}});
  }
  const nlohmann::ordered_json doc = {
      {"pagedw2v_output_set", kManifestVersion}, {"set", set_id}, {"files", files}};
  return doc.dump(2) + "\n";
}

FileIdentity identify_file(const std::string& path) {
  FileIdentity id;
  id.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.device = st.st_dev;
    id.inode = st.st_ino;
    id.present = true;
  }
  return id;
}

void check_unchanged(const std::vector<FileIdentity>& read) {
  for (const FileIdentity& id : read) {
    const FileIdentity now = identify_file(id.path);
    if (!id.present || !now.present || now.device != id.device || now.inode != id.inode) {
      throw Error("'" + id.path + "' was replaced while it was read (another process is writing '" +
                  dir_of(id.path) + "'); read it again when that process has ended");
    }
  }
}

void check_set_files(const std::vector<FileIdentity>& read) {
  for (const FileIdentity& id : read) {
    const std::string name = name_of(id.path);
    if (!is_set_name(name) || name == kManifestName) continue;
    const std::string dir = dir_of(id.path);
    const std::string manifest = dir + "/" + kManifestName;
    struct stat mst {};
    if (::stat(manifest.c_str(), &mst) != 0) continue;
    check_unchanged({id});
    const std::map<std::string, SetMember> members = read_manifest(manifest);
    const auto it = members.find(name);
    const std::string mixed =
        "; the directory mixes the files of two runs or exports (one was stopped while it moved "
        "its files in, or files were copied in): write it again, or remove '" +
        manifest + "' to read the files as they are";
    if (it == members.end()) {
      throw Error("'" + id.path + "' is not one of the files that '" + manifest + "' lists" +
                  mixed);
    }
    const SetMember actual = describe_set_member(id.path, name);
    if (actual.bytes != it->second.bytes || actual.xxh64 != it->second.xxh64) {
      throw Error("'" + id.path + "' is not the file that '" + manifest + "' lists (" +
                  (actual.bytes != it->second.bytes ? "another size" : "another hash") + ")" +
                  mixed);
    }
  }
}

}  // namespace pagedw2v
