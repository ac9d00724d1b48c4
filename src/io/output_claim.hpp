#pragma once
/// @file output_claim.hpp
/// The one rule of every command that writes an output set (`train`, `export`): it never
/// deletes or rewrites a file it did not create in this call unless --overwrite says so, and never
/// one of its own inputs, even with --overwrite. claim_output() takes the output directory for the
/// command (its lock), removes what killed commands left there, and refuses, before any work, a
/// request that would break the rule, with one line naming the file.

#include <string>
#include <vector>

#include "base/atomic_file.hpp"

namespace pagedw2v {

/// A file or directory as a command's flag names it ("--corpus", "data/c.txt").
struct FlagPath {
  std::string flag;
  std::string path;
};

/// What a writing command reads and writes.
struct OutputClaim {
  std::string dir;              ///< --output: the set's directory, created when missing
  std::string command = "run";  ///< what the messages call the command ("run", "export")
  bool overwrite = false;       ///< --overwrite: another set's files in `dir` may be replaced
  /// Files and directories the command reads: never written or removed, whatever the flags.
  /// A directory among them may not be `dir` (its files would be read as input again).
  std::vector<FlagPath> inputs;
  /// Other files the command writes (--save-vocab): never an input, inside an input directory or
  /// a file of the set; an existing one is replaced only with --overwrite or `continues`.
  std::vector<FlagPath> other_outputs;
  /// Further files in `dir` of the run that wrote it (a training run's checkpoints), replaced
  /// only with --overwrite or `continues`.
  std::vector<std::string> earlier_files;
  /// The command continues the run that wrote `dir` (train --resume from its checkpoints): the
  /// files there are its own.
  bool continues = false;
};

/// Creates `claim.dir` (and its parents) where missing, takes its OutputLock (a second writer of
/// the same directory is refused), removes the temporary files and staging directories of ended
/// processes there (and in `dir/checkpoints`), and throws Error (one line naming the file) when
/// the command would write or remove one of its inputs, write into an input directory or over
/// another set's files without --overwrite. Returns the lock, to hold until the set is written.
OutputLock claim_output(const OutputClaim& claim);

/// Whether `a` and `b` name the same directory.
bool same_directory(const std::string& a, const std::string& b);

}  // namespace pagedw2v
