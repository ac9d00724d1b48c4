#include "io/embeddings.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "base/path_parts.hpp"
#include "io/hdf5_io.hpp"
#include "io/npy.hpp"
#include "io/output_set.hpp"
#include "io/word2vec_format.hpp"
#include "text/text_source.hpp"
#include "text/tokenizer.hpp"
#include "vocab/vocab.hpp"

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

/// The files a load read, each as it was identified before it was read (check_set_files()).
using ReadFiles = std::vector<FileIdentity>;

LoadedEmbeddings load_npy(const std::string& npy_path, const std::string& vocab_path,
                          ReadFiles* read) {
  if (kind_of(vocab_path) != Kind::kFile) {
    throw Error("cannot read '" + npy_path + "': its vocabulary '" + vocab_path + "' is missing");
  }
  read->push_back(identify_file(npy_path));
  read->push_back(identify_file(vocab_path));
  check_set_files({read->end() - 2, read->end()});
  NpyMatrix m = read_npy(npy_path);
  Vocab vocab = Vocab::load_tsv(vocab_path);
  if (vocab.size() != m.rows) {
    throw Error("'" + vocab_path + "' has " + std::to_string(vocab.size()) + " words but '" +
                npy_path + "' " + std::to_string(m.rows) + " rows");
  }
  LoadedEmbeddings e;
  e.words = vocab.words().to_strings();
  e.counts = vocab.counts().to_vector();
  e.vectors = std::move(m.data);
  e.rows = m.rows;
  e.dim = m.cols;
  e.format = "npy with vocab.tsv";
  return e;
}

constexpr std::string_view kNpyMagic("\x93NUMPY", 6);
constexpr std::string_view kHdf5Magic("\x89HDF\r\n\x1a\n", 8);
constexpr std::string_view kGzipMagic("\x1f\x8b", 2);

bool starts_with(std::string_view bytes, std::string_view prefix) {
  return bytes.substr(0, prefix.size()) == prefix;
}

/// HDF5's signature lies at offset 0, or after a user block at 512, 1024, 2048, ... bytes.
bool is_hdf5(std::string_view bytes) {
  if (starts_with(bytes, kHdf5Magic)) return true;
  for (size_t at = 512; at + kHdf5Magic.size() <= bytes.size() && at <= (size_t{1} << 30);
       at *= 2) {
    if (bytes.substr(at, kHdf5Magic.size()) == kHdf5Magic) return true;
  }
  return false;
}

Word2vecLayout layout_of(VectorsFormat format) {
  switch (format) {
    case VectorsFormat::kBin:
      return Word2vecLayout::kBinary;
    case VectorsFormat::kTxt:
      return Word2vecLayout::kText;
    case VectorsFormat::kGlove:
      return Word2vecLayout::kHeaderlessText;
    default:
      return Word2vecLayout::kUnknown;
  }
}

std::string layout_name(Word2vecLayout layout) {
  switch (layout) {
    case Word2vecLayout::kBinary:
      return "word2vec binary";
    case Word2vecLayout::kText:
      return "word2vec text";
    case Word2vecLayout::kHeaderlessText:
      return "GloVe text";
    default:
      return "unknown";
  }
}

const char* const kWhatWeRead =
    "a .npy (with vocab.tsv), HDF5, word2vec binary or text, fastText .vec or GloVe text file, "
    "or one of the last four gzip-compressed";

LoadedEmbeddings load_words_and_vectors(std::string_view bytes, const std::string& path,
                                        VectorsFormat format, bool gzip) {
  Word2vecLayout layout = layout_of(format);
  if (format == VectorsFormat::kAuto) {
    if (gzip && (starts_with(bytes, kNpyMagic) || starts_with(bytes, kHdf5Magic))) {
      throw Error("cannot read '" + path +
                  "': a compressed .npy or HDF5 file; decompress it first (gunzip)");
    }
    layout = sniff_word2vec(bytes);
    if (layout == Word2vecLayout::kUnknown) {
      throw Error("cannot tell the format of '" + path + "': expected " + kWhatWeRead +
                  " (--vectors-format names one)");
    }
  }
  LoadedEmbeddings e = parse_word2vec(bytes, path, layout);
  e.format = layout_name(layout) + (gzip ? " (gzip)" : "");
  return e;
}

LoadedEmbeddings load_file(const std::string& path, VectorsFormat format, ReadFiles* read) {
  if (format == VectorsFormat::kNpy) return load_npy(path, dir_of(path) + "/vocab.tsv", read);
  // Identified before it is opened, so that what is read is the file that was checked.
  const FileIdentity id = identify_file(path);
  auto checked = [&] {
    read->push_back(id);
    check_set_files({id});
  };
  if (format == VectorsFormat::kH5) {
    checked();
    LoadedEmbeddings e = read_embeddings_h5(path);
    e.format = "HDF5";
    return e;
  }
  // Every read of the map is guarded: a file truncated meanwhile is an error, not SIGBUS.
  const MappedFile file(path);
  const std::string head =
      file.read([](std::string_view bytes) { return std::string(bytes.substr(0, 8)); });
  if (!starts_with(head, kGzipMagic)) {
    if (format == VectorsFormat::kAuto && starts_with(head, kNpyMagic)) {
      return load_npy(path, dir_of(path) + "/vocab.tsv", read);
    }
    if (format == VectorsFormat::kAuto &&
        file.read([](std::string_view bytes) { return is_hdf5(bytes); })) {
      return load_file(path, VectorsFormat::kH5, read);
    }
    checked();
    return file.read(
        [&](std::string_view bytes) { return load_words_and_vectors(bytes, path, format, false); });
  }
  checked();
  // Members one after another, and nothing after the last (trailing bytes are an error).
  const std::string bytes =
      file.read([&](std::string_view gz) { return decompress_gzip(gz, path); });
  return load_words_and_vectors(bytes, path, format, true);
}

LoadedEmbeddings load_directory(const std::string& dir, VectorsFormat format, ReadFiles* read) {
  const std::string base = ends_with(dir, "/") ? dir : dir + "/";
  if ((format == VectorsFormat::kAuto || format == VectorsFormat::kNpy) &&
      kind_of(base + "vectors.npy") == Kind::kFile && kind_of(base + "vocab.tsv") == Kind::kFile) {
    return load_npy(base + "vectors.npy", base + "vocab.tsv", read);
  }
  const std::pair<const char*, VectorsFormat> files[] = {{"embeddings.h5", VectorsFormat::kH5},
                                                         {"vectors.bin", VectorsFormat::kBin},
                                                         {"vectors.txt", VectorsFormat::kTxt},
                                                         {"vectors.vec", VectorsFormat::kTxt}};
  for (const auto& [name, kind] : files) {
    if ((format == VectorsFormat::kAuto || format == kind) && kind_of(base + name) == Kind::kFile) {
      return load_file(base + name, format, read);
    }
  }
  throw Error("'" + dir +
              "' holds no embeddings (expected vectors.npy with vocab.tsv, embeddings.h5, "
              "vectors.bin, vectors.txt or vectors.vec)");
}

}  // namespace

VectorsFormat parse_vectors_format(const std::string& name) {
  if (name == "auto") return VectorsFormat::kAuto;
  if (name == "npy") return VectorsFormat::kNpy;
  if (name == "h5" || name == "hdf5") return VectorsFormat::kH5;
  if (name == "bin") return VectorsFormat::kBin;
  if (name == "txt" || name == "vec" || name == "word2vec") return VectorsFormat::kTxt;
  if (name == "glove") return VectorsFormat::kGlove;
  throw UsageError(
      "--vectors-format: expected auto, npy, h5, bin, txt (word2vec or fastText "
      ".vec) or glove, got '" +
      name + "'");
}

LoadedEmbeddings load_embeddings(const std::string& path, VectorsFormat format) {
  int err = 0;
  const Kind kind = kind_of(path, &err);
  if (kind == Kind::kMissing) throw Error("cannot read '" + path + "': " + std::strerror(err));
  ReadFiles read;
  LoadedEmbeddings e = kind == Kind::kDirectory ? load_directory(path, format, &read)
                                                : load_file(path, format, &read);
  // Files of a run directory were checked against its manifest before they were read (never the
  // vectors of one export beside the vocabulary of another); none may have been replaced since.
  check_unchanged(read);
  if (e.words.size() != e.rows || e.vectors.size() != e.rows * e.dim ||
      (!e.counts.empty() && e.counts.size() != e.rows)) {
    throw Error("'" + path + "': the words and the matrix disagree in rows");
  }
  // Words that vocab.tsv, the word2vec formats and HDF5 cannot hold as one word (a line break,
  // a NUL, a space: foreign files may have them) are refused here, before anything uses them.
  for (size_t i = 0; i < e.words.size(); ++i) {
    if (const char* why = unstorable_word(e.words[i])) {
      throw Error("'" + path + "': word " + std::to_string(i) + " " + why +
                  ", which no vocabulary file can store as one word");
    }
  }
  return e;
}

}  // namespace pagedw2v
