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

#include <cstdint>
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

/// Reads `/vectors`, `/vocab/words` and (when present) `/vocab/counts`. `/vectors` may be any
/// floating-point type; words may be variable- or fixed-length strings. Throws
/// Error("cannot read 'PATH': …") when the file is not such a file.
LoadedEmbeddings read_embeddings_h5(const std::string& path);

/// Reads the 2-D float dataset `name` into table `out`, which must have its shape. Throws
/// Error("cannot read 'PATH': …") when the dataset is missing or has another shape.
void read_matrix_h5(const std::string& path, const std::string& name, HostTable& out);

/// Reads the scalar integer, floating-point and string attributes of the root group, in name
/// order (or only those named in `only`, when it is not empty; missing ones are left out); other
/// attributes are skipped. Throws Error("cannot read 'PATH': …") on failure.
std::vector<Attribute> read_attributes_h5(const std::string& path,
                                          const std::vector<std::string>& only = {});

}  // namespace pagedw2v
