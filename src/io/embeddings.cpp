#include "io/embeddings.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "io/word2vec_format.hpp"
#include "vocab.hpp"

namespace pagedw2v {
namespace {

enum class Kind { kMissing, kFile, kDirectory, kOther };

Kind kind_of(const std::string& path, int* err = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (err != nullptr) *err = errno;
    return Kind::kMissing;
  }
  if (S_ISDIR(st.st_mode)) return Kind::kDirectory;
  return S_ISREG(st.st_mode) ? Kind::kFile : Kind::kOther;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

LoadedEmbeddings load_npy(const std::string& npy_path, const std::string& vocab_path) {
  if (kind_of(vocab_path) != Kind::kFile) {
    throw Error("cannot read '" + npy_path + "': its vocabulary '" + vocab_path + "' is missing");
  }
  NpyMatrix m = read_npy(npy_path);
  Vocab vocab = Vocab::load_tsv(vocab_path);
  if (vocab.size() != m.rows) {
    throw Error("'" + vocab_path + "' has " + std::to_string(vocab.size()) + " words but '" +
                npy_path + "' " + std::to_string(m.rows) + " rows");
  }
  LoadedEmbeddings e;
  e.words = vocab.words();
  e.counts = vocab.counts();
  e.vectors = std::move(m.data);
  e.rows = m.rows;
  e.dim = m.cols;
  return e;
}

LoadedEmbeddings load_file(const std::string& path) {
  if (ends_with(path, ".npy")) return load_npy(path, dir_of(path) + "/vocab.tsv");
  if (ends_with(path, ".h5") || ends_with(path, ".hdf5")) return read_embeddings_h5(path);
  if (ends_with(path, ".bin")) return read_word2vec(path, true);
  if (ends_with(path, ".txt")) return read_word2vec(path, false);
  throw UsageError("cannot tell the format of '" + path +
                   "' (expected a run directory or a .npy, .h5, .bin or .txt file)");
}

LoadedEmbeddings load_directory(const std::string& dir) {
  const std::string base = ends_with(dir, "/") ? dir : dir + "/";
  if (kind_of(base + "vectors.npy") == Kind::kFile && kind_of(base + "vocab.tsv") == Kind::kFile) {
    return load_npy(base + "vectors.npy", base + "vocab.tsv");
  }
  for (const char* name : {"embeddings.h5", "vectors.bin", "vectors.txt"}) {
    if (kind_of(base + name) == Kind::kFile) return load_file(base + name);
  }
  throw Error("'" + dir +
              "' holds no embeddings (expected vectors.npy with vocab.tsv, embeddings.h5, "
              "vectors.bin or vectors.txt)");
}

}  // namespace

LoadedEmbeddings load_embeddings(const std::string& path) {
  int err = 0;
  const Kind kind = kind_of(path, &err);
  if (kind == Kind::kMissing) throw Error("cannot read '" + path + "': " + std::strerror(err));
  LoadedEmbeddings e = kind == Kind::kDirectory ? load_directory(path) : load_file(path);
  if (e.words.size() != e.rows || e.vectors.size() != e.rows * e.dim ||
      (!e.counts.empty() && e.counts.size() != e.rows)) {
    throw Error("'" + path + "': the words and the matrix disagree in rows");
  }
  return e;
}

}  // namespace pagedw2v
