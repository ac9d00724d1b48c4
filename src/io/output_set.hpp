#pragma once
/// @file output_set.hpp
/// The files of one export (or one training run) in their directory are a set, and its manifest
/// says which: `DIR/manifest.json` lists every file of the set with its size and XXH64 and the
/// set's id. The manifest is moved into DIR before the set's files are (export.hpp), so that a
/// directory whose files are being replaced, or were left half replaced by a killed process,
/// holds files that its manifest does not describe: a reader refuses them (check_set_files())
/// rather than read new vectors beside an older vocabulary. A directory without a manifest (files
/// a user made, or written by versions before manifests) is read as it is.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v {

/// The manifest's name in a set's directory.
extern const char* const kManifestName;
/// The run record's name (a training run's set holds it beside the export files).
extern const char* const kRunRecordName;
/// The phrase table's name in a run's set (train --phrases; text/phrase_file.hpp).
extern const char* const kPhraseFileName;

/// Every name a set may hold in its directory: the export files (export_file_names()), the run
/// record and the manifest.
const std::vector<std::string>& output_set_names();

/// One file of a set as the manifest lists it.
struct SetMember {
  std::string name;
  uint64_t bytes = 0;
  uint64_t xxh64 = 0;
};

/// An id no other set has: the time, the process and random bits.
std::string new_set_id();

/// The size and XXH64 of the file `path`, listed as `name`. Throws Error naming `path` when it
/// cannot be read.
SetMember describe_set_member(const std::string& path, const std::string& name);

/// The manifest of the set `set_id` of `members`.
std::string manifest_text(const std::string& set_id, const std::vector<SetMember>& members);

/// Which file a reader opened: to tell afterwards that it was not replaced while it was read.
struct FileIdentity {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  bool present = false;
};

/// The identity of `path` now (before a reader reads it).
FileIdentity identify_file(const std::string& path);

/// For a reader about to read the files `read` (identified just before): throws Error (one line
/// naming the first file that does not belong) when a file's directory holds a manifest and the
/// file bears a set's name (output_set_names()) but is not the file the manifest lists (not
/// listed, another size or another hash: the directory mixes files of two sets), or when it is no
/// longer the file identified. Files in directories without a manifest, and files whose names no
/// set uses, are not checked.
void check_set_files(const std::vector<FileIdentity>& read);

/// For a reader that has read the files `read`: throws Error naming the first that was replaced
/// (renamed over) since it was identified, so that what was read is what was checked.
void check_unchanged(const std::vector<FileIdentity>& read);

}  // namespace pagedw2v
