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
/// the file. Readers verify it, so an accidentally damaged file of ours is one clear error; being
/// a hash that anyone can recompute, it proves nothing about a file made to pass it, and every
/// file is read as hdf5_read.hpp says (libhdf5 parses it in a child process only). Readers
/// refuse storage outside the file (external raw data, virtual datasets, soft and external
/// links), filters other than deflate, shuffle and fletcher32, and sizes that the file's bytes
/// cannot hold.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/embeddings.hpp"
#include "io/hdf5_read.hpp"
#include "model/host_table.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// A further 2-D float dataset written beside the vectors, e.g. "optimizer/input_0" (its groups
/// are created).
struct NamedTable {
  std::string name;
  const HostTable* table = nullptr;
};

/// Writes the integrity record of `path`, an HDF5 file created with a user block of at least 512
/// bytes that libhdf5 has closed. write_embeddings_h5 does this itself; tools that edit such a
/// file in place call it again afterwards. Throws Error on failure.
void seal_h5_file(const std::string& path);

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

}  // namespace pagedw2v
