#pragma once
/// @file hdf5_read.hpp
/// Reading HDF5 files (the layout of hdf5_io.hpp, or another program's) without trusting them.
///
/// A file is opened once (H5Source); every part read afterwards comes from that open file, so a
/// file replaced at its path while it is read (a run's `latest.h5` moving on) is never mixed
/// with its successor. libhdf5 decodes a file's structure (its groups, attributes, the
/// vocabulary's heap objects) only in a child process with limits on processor time, wall time
/// and memory (isolated_call.hpp): a damaged or crafted file that crashes it, makes it loop or
/// read out of bounds ends that child, and the reader throws one Error. That holds for our own
/// files too: the integrity record in their user block (a hash anyone can recompute) tells
/// accidental damage apart, not a file made to pass it. What the child finds comes back as bytes
/// that are checked here; the tables' values are then read by this process straight from the
/// open file where they lie as float32 row after row (they are numbers, which no library has to
/// decode), or, stored otherwise (chunked, compressed, another float type), converted by a child
/// into a scratch memory file first. The words of /vocab/words are taken from the file's global
/// heap by this program's own reader, which checks each heap object against its collection
/// (hdf5_heap_strings.hpp); string attributes are decoded by libhdf5, in the child.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "io/embeddings.hpp"
#include "model/host_table.hpp"

namespace pagedw2v {

/// A scalar attribute stored on the root group of an HDF5 file.
struct Attribute {
  std::string name;
  std::variant<int64_t, double, std::string> value;
};

/// Whether a file carries our integrity record.
enum class H5Integrity { kNone, kVerified };

/// kVerified when `path` carries an integrity record that matches it, kNone when it carries none;
/// throws Error("cannot read 'PATH': the file is damaged (…)") when the record does not match, or
/// when the file cannot be read.
H5Integrity h5_integrity(const std::string& path);

/// The rows `first`, `first + step`, `first + 2·step`, … of a table (all of them by default):
/// the rows one rank of a distributed run owns (dist/owned_rows.hpp).
struct RowSelection {
  uint64_t first = 0;
  uint64_t step = 1;
  /// How many rows of a `rows`-row table it selects.
  uint64_t count(uint64_t rows) const {
    return first < rows ? (rows - first + step - 1) / step : 0;
  }
};

/// What a parse of a file is asked for. Datasets asked for and missing come back absent.
struct H5Request {
  bool all_attributes = false;          ///< every scalar number and string attribute of the root
  std::vector<std::string> attributes;  ///< else those named (missing ones are left out)
  std::vector<std::string> tables;      ///< 2-D float datasets ("vectors", "optimizer/input_0")
  bool vocabulary = false;              ///< /vocab/words and /vocab/counts
};

/// A 2-D float dataset as a parse found it.
struct H5Table {
  /// Where a table's values do not lie in the file as float32 of this host, row after row.
  static constexpr uint64_t kConverted = ~uint64_t{0};

  std::string name;
  bool present = false;
  uint64_t rows = 0;
  uint32_t dim = 0;
  uint64_t offset = kConverted;  ///< of its values in the file, or kConverted
};

/// What a parse found, in the order of its request.
struct H5Contents {
  std::vector<Attribute> attributes;  ///< in name order when all were asked for
  std::vector<H5Table> tables;        ///< one per table asked for
  bool has_words = false;
  std::vector<std::string> words;
  bool has_counts = false;
  std::vector<uint64_t> counts;

  /// The table asked for as `name` (null when it was not asked for).
  const H5Table* table(const std::string& name) const;
};

/// An HDF5 file open for reading. Throws Error("cannot read 'PATH': …") on any failure.
class H5Source {
 public:
  /// Opens `path` and checks its integrity record when it carries one (h5_integrity()).
  explicit H5Source(const std::string& path);
  ~H5Source();
  H5Source(H5Source&& other) noexcept;
  H5Source& operator=(H5Source&&) = delete;
  H5Source(const H5Source&) = delete;
  H5Source& operator=(const H5Source&) = delete;

  const std::string& path() const { return path_; }
  /// The file's size when it was opened.
  uint64_t size() const { return size_; }

  /// What `request` asks for, parsed in a child process. Throws DamagedFile (isolated_call.hpp)
  /// when the parse crashed, ran out of time or memory.
  H5Contents parse(const H5Request& request) const;
  /// Reads the rows `rows` selects of `table` (found by parse(); present) into `out`, which must
  /// have as many rows as are selected and the table's dim; 16-bit tables get each value rounded
  /// to the nearest stored one.
  void read_table(const H5Table& table, HostTable& out, RowSelection rows = {}) const;
  /// Reads the whole of `table` into `out`, rows × dim floats.
  void read_table(const H5Table& table, float* out) const;

 private:
  /// The file (or a converted copy) that holds the values of `table` row after row, and where.
  template <class Read>
  void with_rows(const H5Table& table, Read&& read) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads `/vectors`, `/vocab/words` and (when present) `/vocab/counts`. `/vectors` may be any
/// floating-point type; words may be variable- or fixed-length strings. Throws
/// Error("cannot read 'PATH': …") when the file is not such a file. Without `with_vectors`, the
/// values of `/vectors` are not read (rows and dim are; `vectors` stays empty).
LoadedEmbeddings read_embeddings_h5(const std::string& path, bool with_vectors = true);

/// Reads the rows `rows` selects of the 2-D float dataset `name` into table `out`, row k of `out`
/// from row first + k·step; `out` must have as many rows as are selected and the dataset's dim.
/// Throws Error("cannot read 'PATH': …") when the dataset is missing or has another shape.
void read_matrix_h5(const std::string& path, const std::string& name, HostTable& out,
                    RowSelection rows = {});

/// Reads the scalar integer, floating-point and string attributes of the root group, in name
/// order (or only those named in `only`, when it is not empty; missing ones are left out); other
/// attributes are skipped. Throws Error("cannot read 'PATH': …") on failure.
std::vector<Attribute> read_attributes_h5(const std::string& path,
                                          const std::vector<std::string>& only = {});

/// The table `name` of `contents`; throws Error("cannot read 'PATH': no /NAME dataset") when it
/// was not asked for or is missing.
const H5Table& require_table(const H5Contents& contents, const std::string& name,
                             const std::string& path);

}  // namespace pagedw2v
