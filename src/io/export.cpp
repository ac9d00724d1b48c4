#include "io/export.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "io/npy.hpp"
#include "io/output_set.hpp"
#include "io/word2vec_format.hpp"

namespace pagedw2v {
namespace {

constexpr const char* kFormats[] = {"npy", "h5", "bin", "txt"};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void check_format(const std::string& name) {
  if (name == "gz" || name == "gzip" || ends_with(name, ".gz")) {
    const std::string base = name.substr(0, name.find('.'));
    if (base == "npy" || base == "h5") {
      throw UsageError("--format: '" + name +
                       "': .npy and HDF5 files are written uncompressed (numpy and h5py map "
                       "them; a gzip of the whole file is read by neither); use " +
                       base);
    }
    throw UsageError("--format: '" + name + "': no format is written compressed; write " +
                     (base == "bin" || base == "txt" ? base : std::string("bin or txt")) +
                     " and gzip the file afterwards (similar, eval and export read .gz)");
  }
  if (std::find(std::begin(kFormats), std::end(kFormats), name) == std::end(kFormats)) {
    throw UsageError("--format: unknown format '" + name +
                     "' (expected npy, h5, bin, txt or none)");
  }
}

bool wants(const ExportOptions& options, const char* format) {
  return std::find(options.formats.begin(), options.formats.end(), format) != options.formats.end();
}

/// Runs the tasks at once, one thread each (one after another where no thread can be started);
/// rethrows the first failure after all have ended.
void run_all(const std::vector<std::function<void()>>& tasks) {
  std::vector<std::exception_ptr> errors(tasks.size());
  const bool fsync = fsync_on_commit();  // the caller's, on every thread
  auto run = [&](size_t i) {
    const FsyncScope scope(fsync);
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  size_t started = 0;
  try {
    for (; started + 1 < tasks.size(); ++started) threads.emplace_back(run, started);
  } catch (const std::system_error&) {
    // No more threads: the rest run here.
  }
  for (size_t i = started; i < tasks.size(); ++i) run(i);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

StagedFiles::StagedFiles(std::string dir) : dir_(std::move(dir)), set_id_(new_set_id()) {
  if (dir_.empty()) dir_ = ".";
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  make_directories(dir_);
  // A directory made exclusively by mkdir, readable only by us: nothing can be planted in it.
  const std::string probe = temp_name_for(dir_ + "/export");
  std::remove(probe.c_str());
  if (::mkdir(probe.c_str(), 0700) != 0) {
    throw Error("cannot write to '" + dir_ + "': " + std::strerror(errno));
  }
  staging_ = probe;
  staging_handle_ = remember_temp_dir(staging_);
}

StagedFiles::~StagedFiles() {
  if (!committed_) {
    std::error_code ec;
    std::filesystem::remove_all(staging_, ec);
  }
  forget_temp_dir(staging_handle_);
}

std::string StagedFiles::path_for(const std::string& name) {
  if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
  return staging_ + "/" + name;
}

void StagedFiles::add(const std::string& name, const std::string& contents) {
  AtomicFile out(path_for(name));
  out.write(contents);
  out.commit();
}

std::vector<std::string> StagedFiles::commit(const std::vector<std::string>& stale) {
  // The manifest lists every staged file; it goes into dir() first, the files after it, so that
  // until the last of them is in place the directory holds files it does not describe, which
  // readers refuse (output_set.hpp).
  const bool has_set = !names_.empty();
  if (has_set) {
    std::vector<SetMember> members;
    for (const std::string& name : names_) {
      members.push_back(describe_set_member(staging_ + "/" + name, name));
    }
    add(kManifestName, manifest_text(set_id_, members));
    names_.pop_back();
  }
  auto move_in = [&](const std::string& name) {
    const std::string path = dir_ + "/" + name;
    if (std::rename((staging_ + "/" + name).c_str(), path.c_str()) != 0) {
      throw Error("cannot rename onto '" + path + "': " + std::strerror(errno));
    }
    return path;
  };
  const SetCommitScope committing;
  if (has_set) move_in(kManifestName);
  for (const std::string& name : stale) {
    if (std::find(names_.begin(), names_.end(), name) != names_.end()) continue;
    if (has_set && name == kManifestName) continue;
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && std::remove(path.c_str()) != 0) {
      throw Error("cannot remove the older '" + path + "': " + std::strerror(errno));
    }
  }
  std::vector<std::string> paths;
  for (const std::string& name : names_) paths.push_back(move_in(name));
  committed_ = true;
  std::error_code ec;
  std::filesystem::remove_all(staging_, ec);
  const int fd = fsync_on_commit() ? ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return paths;
}

const std::vector<std::string>& export_file_names() {
  static const std::vector<std::string> names = {
      "vocab.tsv",   "vectors.npy",         "context_vectors.npy", "embeddings.h5",
      "vectors.bin", "context_vectors.bin", "vectors.txt",         "context_vectors.txt"};
  return names;
}

std::vector<std::string> parse_formats(const std::string& csv) {
  std::vector<std::string> formats;
  size_t start = 0;
  bool none = false;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    std::string name = csv.substr(start, end - start);
    const size_t first = name.find_first_not_of(" \t");
    name = first == std::string::npos
               ? ""
               : name.substr(first, name.find_last_not_of(" \t") + 1 - first);
    if (name == "none") {
      none = true;
    } else if (!name.empty()) {
      check_format(name);
      if (std::find(formats.begin(), formats.end(), name) == formats.end()) {
        formats.push_back(name);
      }
    }
    start = end + 1;
  }
  if (none && !formats.empty()) {
    throw UsageError("--format: 'none' cannot be combined with other formats");
  }
  if (formats.empty() && !none) {
    throw UsageError("--format: expected at least one of npy, h5, bin, txt (or none)");
  }
  return formats;
}

void check_output_directory_name(const std::string& dir) {
  std::string name = dir;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  if (!ends_with(name, ".gz")) return;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
  throw UsageError("--output '" + dir +
                   "' is named like a compressed file, but it is the directory the files "
                   "(vocab.tsv, vectors.npy, ...) are written into, uncompressed; name a "
                   "directory");
}

namespace {

/// Throws for a request that cannot be written, before anything is.
void check_request(const std::string& dir, const Vocab& vocab, const Model& model,
                   const ExportOptions& options) {
  for (const std::string& name : options.formats) check_format(name);
  if (model.input.rows() != vocab.size()) {
    throw Error("cannot export to '" + dir + "': the vocabulary has " +
                std::to_string(vocab.size()) + " words but the model " +
                std::to_string(model.input.rows()) + " rows");
  }
  if (options.save_context &&
      (model.output.rows() != model.input.rows() || model.output.dim() != model.input.dim())) {
    throw Error("cannot export to '" + dir +
                "': the context vectors and the vectors differ in shape");
  }
}

}  // namespace

void write_export(StagedFiles& files, const Vocab& vocab, const Model& model,
                  const ExportOptions& options) {
  check_request(files.dir(), vocab, model, options);
  if (options.formats.empty()) return;

  // The word2vec formats read the words by row: packed words (Vocab::pack_words) are read from a
  // copy unpacked for them. vocab.tsv and HDF5 read them a slice at a time.
  Vocab unpacked;
  const bool by_row = wants(options, "bin") || wants(options, "txt");
  if (by_row && vocab.words_packed()) {
    unpacked = vocab.with_words_unpacked(std::max(1u, std::thread::hardware_concurrency()));
  }
  const Vocab& row_vocab = by_row && vocab.words_packed() ? unpacked : vocab;
  // Paths are named here, in a fixed order, so that the list commit() returns does not depend on
  // which thread finishes first.
  std::vector<std::function<void()>> tasks;
  const std::string vocab_path = files.path_for("vocab.tsv");
  tasks.push_back([&vocab, vocab_path] { vocab.save_tsv(vocab_path); });
  auto table_task = [&](const char* format, const char* name, const HostTable& table) {
    const std::string path = files.path_for(name);
    if (std::strcmp(format, "npy") == 0) {
      tasks.push_back([&table, path] {
        if (table.storage() == Storage::kFp32) {
          write_npy(path, table.data(), table.rows(), table.dim(), table.stride());
          return;
        }
        // 16-bit storage goes out as float32, converted a few MiB at a time.
        const uint64_t chunk = (uint64_t{4} << 20) / (uint64_t{table.dim()} * sizeof(float) + 1);
        write_npy(
            path, table.rows(), table.dim(), chunk,
            [&table](uint64_t first, uint64_t n, float* out) { table.read_rows(first, n, out); });
      });
    } else if (std::strcmp(format, "bin") == 0) {
      tasks.push_back([&row_vocab, &table, path] { write_word2vec_bin(path, row_vocab, table); });
    } else {
      tasks.push_back([&row_vocab, &table, path] { write_word2vec_txt(path, row_vocab, table); });
    }
  };
  for (const char* format : {"npy", "bin", "txt"}) {
    if (!wants(options, format)) continue;
    const std::string suffix = std::string(".") + format;
    table_task(format, ("vectors" + suffix).c_str(), model.input);
    if (options.save_context)
      table_task(format, ("context_vectors" + suffix).c_str(), model.output);
  }
  if (wants(options, "h5")) {
    const std::string path = files.path_for("embeddings.h5");
    tasks.push_back([&, path] {
      write_embeddings_h5(path, vocab, model.input, options.save_context ? &model.output : nullptr,
                          options.attributes);
    });
  }
  run_all(tasks);
}

ExportRowWriter::ExportRowWriter(StagedFiles& files, const Vocab& vocab, uint32_t dim,
                                 const ExportOptions& options)
    : vocab_(vocab), context_(options.save_context) {
  for (const std::string& name : options.formats) check_format(name);
  if (options.formats.empty()) return;
  // The names in write_export()'s order, so that commit() lists the same paths.
  vocab_path_ = files.path_for("vocab.tsv");
  for (const char* format : {"npy", "bin", "txt"}) {
    if (!wants(options, format)) continue;
    for (size_t table = 0; table < (options.save_context ? 2u : 1u); ++table) {
      const std::string path =
          files.path_for((table == 0 ? "vectors." : "context_vectors.") + std::string(format));
      if (std::strcmp(format, "npy") == 0) {
        npy_.emplace_back(table, std::make_unique<NpyRowWriter>(path, vocab.size(), dim));
      } else {
        word2vec_.emplace_back(
            table, std::make_unique<Word2vecWriter>(path, vocab, dim, format[0] == 'b'));
      }
    }
  }
  if (wants(options, "h5")) {
    h5_ = std::make_unique<H5RowWriter>(files.path_for("embeddings.h5"), vocab, dim,
                                        options.save_context, options.attributes);
  }
}

ExportRowWriter::~ExportRowWriter() = default;

void ExportRowWriter::write(const RowBlock& block) {
  std::vector<std::function<void()>> tasks;
  for (auto& [table, out] : npy_) {
    tasks.push_back([&block, t = table, w = out.get()] { w->write(block.tables[t], block.rows); });
  }
  for (auto& [table, out] : word2vec_) {
    tasks.push_back(
        [&block, t = table, w = out.get()] { w->write(block.first, block.rows, block.tables[t]); });
  }
  if (h5_) {
    tasks.push_back([&] {
      h5_->write_rows(0, block.first, block.rows, block.tables[0]);
      if (context_) {
        h5_->write_rows(1, block.first, block.rows, block.tables[1]);
      }
    });
  }
  run_all(tasks);
}

void ExportRowWriter::finish() {
  if (vocab_path_.empty()) return;
  vocab_.save_tsv(vocab_path_);
  for (auto& [table, out] : npy_) out->commit();
  for (auto& [table, out] : word2vec_) out->commit();
  if (h5_) h5_->commit();
}

std::vector<std::string> export_model(const std::string& dir, const Vocab& vocab,
                                      const Model& model, const ExportOptions& options) {
  check_request(dir, vocab, model, options);
  StagedFiles files(dir);
  write_export(files, vocab, model, options);
  return files.commit(output_set_names());
}

}  // namespace pagedw2v
