#pragma once
/// @file hdf5_io.hpp
/// Embeddings in one HDF5 file, readable with h5py:
///
///     /vectors           [V, D] float32   input vectors, row i belongs to word i
///     /context_vectors   [V, D] float32   output vectors (only when asked for)
///     /vocab/words       [V] variable-length UTF-8 strings
///     /vocab/counts      [V] int64        corpus counts
///
/// plus scalar attributes on the root group (training settings, version, …).
///
/// Files written here carry an integrity record in their 512-byte HDF5 user block (which libhdf5
/// and h5py skip): the XXH64 of every later byte and the file's size, written after libhdf5 closed
/// the file. Readers verify it before libhdf5 parses the file, so a damaged file of ours is one
/// clear error. A file without it (written elsewhere) is parsed first in a child process
/// (isolated_call.hpp): when libhdf5 crashes or hangs on it, the reader throws an Error. Readers
/// refuse storage outside the file (external raw data, virtual datasets, soft and external
/// links), filters other than deflate, shuffle and fletcher32, and sizes that the file's bytes
/// cannot hold.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "host_table.hpp"
#include "io/embeddings.hpp"
#include "vocab.hpp"

namespace pagedw2v {

/// A scalar attribute stored on the root group of an HDF5 file.
struct Attribute {
  std::string name;
  std::variant<int64_t, double, std::string> value;
};

/// A further 2-D float dataset written beside the vectors, e.g. "optimizer/input_0" (its groups
/// are created).
struct NamedTable {
  std::string name;
  const HostTable* table = nullptr;
};

/// Whether a reader vets the file before libhdf5 parses it (vet_h5_file), or the caller has.
enum class H5Check { kVet, kAlreadyVetted };

/// Whether a file carries our integrity record.
enum class H5Integrity { kNone, kVerified };

/// kVerified when `path` carries an integrity record that matches it, kNone when it carries none;
/// throws Error("cannot read 'PATH': the file is damaged (…)") when the record does not match, or
/// when the file cannot be read.
H5Integrity h5_integrity(const std::string& path);

/// Writes the integrity record of `path`, an HDF5 file created with a user block of at least 512
/// bytes that libhdf5 has closed. write_embeddings_h5 does this itself; tools that edit such a
/// file in place call it again afterwards. Throws Error on failure.
void seal_h5_file(const std::string& path);

/// Makes sure that libhdf5 may parse `path` in this process: returns when the file's integrity
/// record matches; throws when it does not; for a file without one, runs `trial` (a parse of
/// the file) in a child process and returns when it returned there, else throws its Error, or
/// one line saying that libhdf5 crashed, ran out of memory or did not finish in time.
void vet_h5_file(const std::string& path, const std::function<void()>& trial);

/// The root attribute that records the pagedw2v version that wrote a file.
inline constexpr const char* kVersionAttribute = "pagedw2v_version";

/// Writes the layout above to `path` (through a temporary file renamed into place, so a failed
/// write leaves nothing behind), and the datasets of `extra`. The root group also gets
/// `pagedw2v_version` unless `attributes` holds it. `context` may be null. Throws
/// Error("cannot write 'PATH': …") on any failure, including a vocabulary and tables that
/// disagree in shape.
void write_embeddings_h5(const std::string& path, const Vocab& vocab, const HostTable& vectors,
                         const HostTable* context, const std::vector<Attribute>& attributes,
                         const std::vector<NamedTable>& extra = {});

/// The name and shape of a 2-D float dataset of an embeddings file.
struct TableShape {
  std::string name;
  uint64_t rows = 0;
  uint32_t dim = 0;
};

/// An embeddings file whose vocabulary, attributes and tables' storage are written before the
/// tables' values: a temporary file beside its path, removed when the object goes unless
/// finish_embeddings_h5() has committed it. A run makes its last checkpoint so while it trains:
/// its end then writes only the values (libhdf5 takes a while over a large vocabulary's strings).
class PreparedH5 {
 public:
  PreparedH5() = default;
  PreparedH5(PreparedH5&& other) noexcept { *this = std::move(other); }
  PreparedH5& operator=(PreparedH5&& other) noexcept;
  ~PreparedH5();
  PreparedH5(const PreparedH5&) = delete;
  PreparedH5& operator=(const PreparedH5&) = delete;

  /// Whether a file is prepared (and not yet finished).
  bool ready() const { return !temp_.empty(); }
  /// The path it will be committed to.
  const std::string& path() const { return path_; }
  /// The tables it was made for, in order.
  const std::vector<TableShape>& tables() const { return shapes_; }

 private:
  friend PreparedH5 prepare_embeddings_h5(const std::string&, const Vocab&,
                                          const std::vector<TableShape>&,
                                          const std::vector<Attribute>&);
  friend void finish_embeddings_h5(PreparedH5&, const std::vector<NamedTable>&,
                                   const std::vector<Attribute>&);
  friend class H5RowWriter;
  void discard();

  std::string path_;
  std::string temp_;
  std::vector<TableShape> shapes_;
  std::vector<uint64_t> offsets_;  ///< where each table's values go (max: libhdf5 writes them)
};

/// Prepares the layout above for `path`: the datasets `tables` (the first is /vectors, of as many
/// rows as `vocab` has words; names may hold groups, which are created), the vocabulary, and the
/// root attributes (plus `pagedw2v_version` unless given). Throws as write_embeddings_h5.
PreparedH5 prepare_embeddings_h5(const std::string& path, const Vocab& vocab,
                                 const std::vector<TableShape>& tables,
                                 const std::vector<Attribute>& attributes);

/// Writes the values of the prepared file's tables (`tables` names each, in the order and shapes
/// it was prepared for), adds `attributes` to the root group, writes the integrity record and
/// commits the file to its path. Throws Error("cannot write 'PATH': …") on failure (the file is
/// then removed).
void finish_embeddings_h5(PreparedH5& file, const std::vector<NamedTable>& tables,
                          const std::vector<Attribute>& attributes = {});

/// The file write_embeddings_h5() writes, its tables' values handed in row blocks (a distributed
/// run's rank 0 writes the rows it gathers from their owners, a block at a time, and never holds
/// a whole table). The constructor prepares the file (prepare_embeddings_h5); write_rows() puts
/// values in place with pwrite; commit() checks that every row came, writes the integrity record
/// and renames the file into place. Destroyed before commit(), it removes the temporary file.
/// Tables are numbered 0 (/vectors), 1
/// (/context_vectors, when `context`), then `extra`'s names in order; each is vocab.size() × dim
/// float32. Throws Error("cannot write 'PATH': …") on failure.
class H5RowWriter {
 public:
  H5RowWriter(const std::string& path, const Vocab& vocab, uint32_t dim, bool context,
              const std::vector<Attribute>& attributes, const std::vector<std::string>& extra = {});
  ~H5RowWriter();
  H5RowWriter(const H5RowWriter&) = delete;
  H5RowWriter& operator=(const H5RowWriter&) = delete;

  /// Rows first … first + n − 1 of table `table`, `n × dim` row-major floats.
  void write_rows(size_t table, uint64_t first, uint64_t n, const float* rows);
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads `/vectors`, `/vocab/words` and (when present) `/vocab/counts`. `/vectors` may be any
/// floating-point type; words may be variable- or fixed-length strings. Throws
/// Error("cannot read 'PATH': …") when the file is not such a file. Without `with_vectors`, the
/// values of `/vectors` are not read (rows and dim are; `vectors` stays empty).
LoadedEmbeddings read_embeddings_h5(const std::string& path, H5Check check = H5Check::kVet,
                                    bool with_vectors = true);

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

/// Reads the rows `rows` selects of the 2-D float dataset `name` into table `out`, row k of `out`
/// from row first + k·step; `out` must have as many rows as are selected and the dataset's dim.
/// Throws Error("cannot read 'PATH': …") when the dataset is missing or has another shape.
void read_matrix_h5(const std::string& path, const std::string& name, HostTable& out,
                    H5Check check = H5Check::kVet, RowSelection rows = {});

/// Reads the scalar integer, floating-point and string attributes of the root group, in name
/// order (or only those named in `only`, when it is not empty; missing ones are left out); other
/// attributes are skipped. Throws Error("cannot read 'PATH': …") on failure.
std::vector<Attribute> read_attributes_h5(const std::string& path,
                                          const std::vector<std::string>& only = {},
                                          H5Check check = H5Check::kVet);

}  // namespace pagedw2v
