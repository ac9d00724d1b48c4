#include "io/hdf5_parse.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/hdf5_detail.hpp"
#include "io/hdf5_heap_strings.hpp"

namespace pagedw2v::detail {
namespace {

// Frees the strings HDF5 allocated while reading variable-length data.
class VlenReclaim {
 public:
  VlenReclaim(hid_t type, hid_t space, void* buffer) : type_(type), space_(space), buf_(buffer) {}
  ~VlenReclaim() {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(type_, space_, H5P_DEFAULT, buf_);
#else
    H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, buf_);
#endif
  }
  VlenReclaim(const VlenReclaim&) = delete;
  VlenReclaim& operator=(const VlenReclaim&) = delete;

 private:
  hid_t type_;
  hid_t space_;
  void* buf_;
};

// A dataset's storage as the file declares it, checked before anything is allocated for it:
// no storage outside the file (external raw data, virtual datasets), no filter but the standard
// ones, and no more values than the bytes that hold them can give.
void check_storage(const Checker& h5, hid_t set, const std::string& label, uint64_t file_size) {
  const std::string what = "cannot read " + label;
  Hid plist = h5.make(H5Dget_create_plist(set), H5Pclose, what);
  const H5D_layout_t layout = H5Pget_layout(plist);
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) {
    h5.fail(label + " keeps its data outside the file, which this program does not read");
  }
  if (h5.check(H5Pget_external_count(plist), what) > 0) {
    h5.fail(label + " keeps its data in external files, which this program does not read");
  }
  const int nfilters = h5.check(H5Pget_nfilters(plist), what);
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    size_t nvalues = 0;
    unsigned config = 0;
    const H5Z_filter_t id = H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &nvalues,
                                           nullptr, 0, nullptr, &config);
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32) {
      h5.fail(label + " is stored through filter " + std::to_string(id) +
              ", which this program does not read (only deflate, shuffle and fletcher32)");
    }
  }
  Hid type = h5.make(H5Dget_type(set), H5Tclose, what);
  Hid space = h5.make(H5Dget_space(set), H5Sclose, what);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points < 0) h5.fail(what);
  const size_t type_size = H5Tget_size(type);
  if (type_size == 0) h5.fail(what);
  const long double declared = static_cast<long double>(points) * type_size;
  const auto stored = static_cast<long double>(H5Dget_storage_size(set));
  if (stored > static_cast<long double>(file_size)) {
    h5.fail(label + " declares more storage than the file holds");
  }
  // deflate packs at most 1032 bytes into one, so compressed data is bounded by its storage too.
  const long double most = nfilters > 0 ? stored * 1032.0L : stored;
  if (declared > most) h5.fail(label + " holds less data than its shape needs");
}

// Whether the dataset `name` ("a/b/c") exists, each step a hard link: soft and external links
// would make the file name another object or another file, so they are refused.
bool has_dataset(const Checker& h5, hid_t location, const std::string& name) {
  size_t end = 0;
  while (end != std::string::npos) {
    end = name.find('/', end + 1);
    const std::string step = name.substr(0, end);
    const std::string what = "cannot look up /" + step;
    if (h5.check(H5Lexists(location, step.c_str(), H5P_DEFAULT), what) <= 0) return false;
#if H5_VERSION_GE(1, 12, 0)
    H5L_info2_t info{};
    h5.check(H5Lget_info2(location, step.c_str(), &info, H5P_DEFAULT), what);
#else
    H5L_info_t info{};
    h5.check(H5Lget_info(location, step.c_str(), &info, H5P_DEFAULT), what);
#endif
    if (info.type != H5L_TYPE_HARD) {
      h5.fail("/" + step + " is a link to another object or file, which this program does not " +
              "follow");
    }
  }
  return true;
}

// The extent of a 1-D or 2-D dataset; fails unless it has `rank` dimensions.
std::vector<hsize_t> extent(const Checker& h5, hid_t set, int rank, const std::string& name) {
  Hid space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + name);
  const int n = h5.check(H5Sget_simple_extent_ndims(space), "cannot read " + name);
  if (n != rank) {
    h5.fail(name + " has " + std::to_string(n) + " dimensions, expected " + std::to_string(rank));
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  h5.check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "cannot read " + name);
  return dims;
}

template <class T>
void resize_or_fail(const Checker& h5, std::vector<T>& v, uint64_t n, const std::string& name) {
  if (n > std::numeric_limits<size_t>::max() / sizeof(T)) h5.fail(name + " is too large");
  try {
    v.resize(static_cast<size_t>(n));
  } catch (const std::exception&) {  // std::bad_alloc or std::length_error
    h5.fail("not enough memory for " + name + " (" + std::to_string(n * sizeof(T)) + " bytes)");
  }
}

/// The heap IDs of a variable-length string dataset of `n` elements, where its values lie in
/// the file as they are stored (contiguous, unfiltered, 8-byte addresses and lengths: what
/// libhdf5 and h5py write by default): their offset, or nothing.
std::optional<uint64_t> heap_ids_at(hid_t file, hid_t set, uint64_t n, uint64_t file_size) {
  Hid fcpl(H5Fget_create_plist(file), H5Pclose);
  Hid dcpl(H5Dget_create_plist(set), H5Pclose);
  if (fcpl < 0 || dcpl < 0) return std::nullopt;
  size_t address_bytes = 0, length_bytes = 0;
  if (H5Pget_sizes(fcpl, &address_bytes, &length_bytes) < 0 || address_bytes != 8 ||
      length_bytes != 8) {
    return std::nullopt;
  }
  if (H5Pget_layout(dcpl) != H5D_CONTIGUOUS || H5Pget_nfilters(dcpl) != 0 ||
      H5Pget_external_count(dcpl) != 0 || H5Dget_storage_size(set) != n * 16) {
    return std::nullopt;
  }
  const haddr_t at = H5Dget_offset(set);
  if (at == HADDR_UNDEF || at > file_size) return std::nullopt;
  return static_cast<uint64_t>(at);
}

/// The file's base address, from which heap addresses count: the size of its user block.
uint64_t base_address(const Checker& h5, hid_t file) {
  Hid fcpl = h5.make(H5Fget_create_plist(file), H5Pclose, "cannot read the file's layout");
  hsize_t user_block = 0;
  h5.check(H5Pget_userblock(fcpl, &user_block), "cannot read the file's layout");
  return user_block;
}

std::vector<std::string> read_strings(const Checker& h5, hid_t file, hid_t set, uint64_t n,
                                      const std::string& name, int fd, uint64_t file_size) {
  Hid file_type = h5.make(H5Dget_type(set), H5Tclose, "cannot read " + name);
  if (H5Tget_class(file_type) != H5T_STRING) h5.fail(name + " does not hold strings");
  const htri_t variable = h5.check(H5Tis_variable_str(file_type), "cannot read " + name);
  if (variable > 0 && n > 0) {
    // Read from the file's bytes, each heap object checked against its collection: libhdf5
    // copies an object as long as the file says, past its collection.
    if (const std::optional<uint64_t> ids = heap_ids_at(file, set, n, file_size)) {
      const HeapStringSource source{fd, file_size, base_address(h5, file)};
      return read_heap_strings(source, *ids, n, h5.prefix(), name);
    }
  }
  std::vector<std::string> out;
  resize_or_fail(h5, out, n, name);
  if (n == 0) return out;
  if (variable > 0) {
    const H5T_cset_t cset = H5Tget_cset(file_type);
    Hid mem_type = vlen_string_type(h5, cset == H5T_CSET_ERROR ? H5T_CSET_UTF8 : cset);
    Hid space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + name);
    std::vector<char*> ptrs;
    resize_or_fail(h5, ptrs, n, name);
    const VlenReclaim reclaim(mem_type, space, ptrs.data());
    h5.check(H5Dread(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()),
             "cannot read " + name);
    for (size_t i = 0; i < n; ++i) {
      if (ptrs[i] != nullptr) out[i] = ptrs[i];
    }
  } else {
    const size_t size = H5Tget_size(file_type);
    if (size == 0) h5.fail("cannot read " + name);
    if (n > std::numeric_limits<size_t>::max() / size) h5.fail(name + " is too large");
    Hid mem_type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, "cannot read " + name);
    h5.check(H5Tset_size(mem_type, size), "cannot read " + name);
    h5.check(H5Tset_strpad(mem_type, H5T_STR_NULLPAD), "cannot read " + name);
    std::vector<char> buffer;
    resize_or_fail(h5, buffer, n * size, name);
    h5.check(H5Dread(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
             "cannot read " + name);
    for (size_t i = 0; i < n; ++i) {
      const char* s = buffer.data() + i * size;
      out[i].assign(s, strnlen(s, size));
    }
  }
  return out;
}

// Called by H5Aiterate2 from C: must not throw, so it only collects the names.
herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  try {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  } catch (...) {
    return -1;
  }
}

// Appends the attribute `name` of `object` to `out` when it is a scalar number or string.
void read_attribute(const Checker& h5, hid_t object, const std::string& name, uint64_t file_size,
                    std::vector<Attribute>& out) {
  const std::string what = "cannot read attribute '" + name + "'";
  Hid attr = h5.make(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, what);
  Hid space = h5.make(H5Aget_space(attr), H5Sclose, what);
  if (H5Sget_simple_extent_type(space) != H5S_SCALAR) return;
  Hid type = h5.make(H5Aget_type(attr), H5Tclose, what);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      int64_t v = 0;
      h5.check(H5Aread(attr, H5T_NATIVE_INT64, &v), what);
      out.push_back({name, v});
      break;
    }
    case H5T_FLOAT: {
      double v = 0;
      h5.check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), what);
      out.push_back({name, v});
      break;
    }
    case H5T_STRING: {
      if (h5.check(H5Tis_variable_str(type), what) > 0) {
        Hid mem_type = vlen_string_type(h5, H5Tget_cset(type));
        char* s = nullptr;
        const VlenReclaim reclaim(mem_type, space, &s);
        h5.check(H5Aread(attr, mem_type, &s), what);
        out.push_back({name, std::string(s != nullptr ? s : "")});
      } else {
        const size_t size = H5Tget_size(type);
        if (size == 0 || size > file_size) h5.fail(what + " (its size is damaged)");
        std::string s(size, '\0');
        Hid mem_type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, what);
        h5.check(H5Tset_size(mem_type, size), what);
        h5.check(H5Tset_strpad(mem_type, H5T_STR_NULLPAD), what);
        h5.check(H5Aread(attr, mem_type, s.data()), what);
        s.resize(strnlen(s.data(), size));
        out.push_back({name, std::move(s)});
      }
      break;
    }
    default:
      break;
  }
}

// A read-only image of the file for libhdf5's core driver, used where it lies (the callbacks
// hand the same memory out instead of copying it).
void* image_malloc(size_t size, H5FD_file_image_op_t, void* udata) {
  const auto* image = static_cast<const std::pair<void*, size_t>*>(udata);
  return size == image->second ? image->first : nullptr;
}
void* image_memcpy(void* dest, const void* src, size_t size, H5FD_file_image_op_t, void*) {
  return dest == src ? dest : std::memcpy(dest, src, size);
}
void* image_realloc(void*, size_t, H5FD_file_image_op_t, void*) { return nullptr; }
herr_t image_free(void*, H5FD_file_image_op_t, void*) { return 0; }
void* udata_copy(void* udata) { return udata; }
herr_t udata_free(void*) { return 0; }

/// The file `fd` mapped into memory, read-only.
class MappedImage {
 public:
  MappedImage(const Checker& h5, int fd, uint64_t size) : size_(static_cast<size_t>(size)) {
    if (size == 0) h5.fail("not an HDF5 file");
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) h5.fail(std::string("cannot map the file: ") + std::strerror(errno));
    image_ = {map_, size_};
  }
  ~MappedImage() { ::munmap(map_, size_); }
  MappedImage(const MappedImage&) = delete;
  MappedImage& operator=(const MappedImage&) = delete;

  /// Whether the HDF5 signature begins the file or one of the places a user block moves it to.
  bool has_signature() const {
    static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    for (size_t at = 0; at + sizeof kSignature <= size_; at = at == 0 ? 512 : 2 * at) {
      if (std::memcmp(static_cast<const char*>(map_) + at, kSignature, sizeof kSignature) == 0) {
        return true;
      }
    }
    return false;
  }
  /// The callbacks' user data: where the image lies and its size.
  std::pair<void*, size_t>* image() { return &image_; }

 private:
  size_t size_;
  void* map_ = MAP_FAILED;
  std::pair<void*, size_t> image_{nullptr, 0};
};

/// The file `fd` opened by libhdf5 from its image in memory: the file this process holds open,
/// whatever its path names now (libhdf5 opens files by name, and resolves names it is given).
Hid open_by_descriptor(const Checker& h5, MappedImage& image) {
  if (!image.has_signature()) h5.fail("not an HDF5 file");
  const std::string what = "cannot open the file";
  Hid access = h5.make(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, what);
  h5.check(H5Pset_fapl_core(access, size_t{1} << 20, 0), what);
  H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy, image_realloc, image_free,
                                           udata_copy,   udata_free,   image.image()};
  h5.check(H5Pset_file_image_callbacks(access, &callbacks), what);
  h5.check(H5Pset_file_image(access, image.image()->first, image.image()->second), what);
  return h5.make(H5Fopen("file-image", H5F_ACC_RDONLY, access), H5Fclose, what);
}

/// The 2-D float dataset `name`, checked: its storage, its type and its shape.
H5Table parse_table(const Checker& h5, hid_t file, const std::string& name, uint64_t file_size) {
  H5Table t;
  t.name = name;
  const std::string label = "/" + name;
  if (!has_dataset(h5, file, name)) return t;
  t.present = true;
  Hid set = h5.make(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + label);
  check_storage(h5, set, label, file_size);
  Hid type = h5.make(H5Dget_type(set), H5Tclose, "cannot read " + label);
  if (H5Tget_class(type) != H5T_FLOAT) h5.fail(label + " is not floating point");
  const std::vector<hsize_t> dims = extent(h5, set, 2, label);
  if (dims[1] > std::numeric_limits<uint32_t>::max()) h5.fail(label + " is too wide");
  if (dims[1] != 0 && dims[0] > std::numeric_limits<size_t>::max() / sizeof(float) / dims[1]) {
    h5.fail(label + " is too large");
  }
  t.rows = dims[0];
  t.dim = static_cast<uint32_t>(dims[1]);
  const uint64_t bytes = t.rows * t.dim * sizeof(float);
  if (bytes == 0) return t;
  // Values that lie in the file as this host's floats, row after row, are read from it by the
  // caller: no library decodes them, and a damaged file gives wrong numbers at worst.
  Hid plist = h5.make(H5Dget_create_plist(set), H5Pclose, "cannot read " + label);
  const bool le_host = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if (le_host && H5Pget_layout(plist) == H5D_CONTIGUOUS && H5Pget_nfilters(plist) == 0 &&
      H5Tequal(type, H5T_IEEE_F32LE) > 0 && H5Dget_storage_size(set) == bytes) {
    const haddr_t at = H5Dget_offset(set);
    if (at != HADDR_UNDEF && at <= file_size && bytes <= file_size - at) t.offset = at;
  }
  return t;
}

/// Bytes written and read back: numbers as 8 bytes of this host (the reader is this program's
/// parent), texts as their length and bytes.
class Bytes {
 public:
  void put(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(const std::string& s) {
    put(uint64_t{s.size()});
    out_ += s;
  }
  std::string& text() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  uint64_t number() {
    uint64_t v = 0;
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  /// A count of items of at least `item_bytes` bytes each, which the bytes left must be able to
  /// hold: a damaged reply cannot make the reader allocate more than it sent.
  uint64_t count(uint64_t item_bytes) {
    const uint64_t n = number();
    if (n > (bytes_.size() - at_) / item_bytes) damaged();
    return n;
  }
  std::string text() {
    const uint64_t n = count(1);
    std::string s = bytes_.substr(at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }
  [[noreturn]] void damaged() const {
    throw Error("cannot read '" + path_ + "': what the file's parse sent back is damaged");
  }

 private:
  void need(size_t n) const {
    if (bytes_.size() - at_ < n) damaged();
  }
  const std::string& bytes_;
  const std::string& path_;
  size_t at_ = 0;
};

enum AttributeKind : uint64_t { kInteger = 0, kFloat = 1, kText = 2 };

}  // namespace

std::string parse_h5_contents(int fd, uint64_t file_size, const std::string& path,
                              const H5Request& request) {
  const Checker h5("cannot read '" + path + "': ");
  const QuietErrors quiet;
  MappedImage image(h5, fd, file_size);
  Hid file = open_by_descriptor(h5, image);
  Bytes out;

  std::vector<Attribute> attributes;
  if (request.all_attributes || !request.attributes.empty()) {
    Hid root = h5.make(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
    std::vector<std::string> names;
    if (request.all_attributes) {
      hsize_t index = 0;
      h5.check(H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, &index, collect_name, &names),
               "cannot list the attributes");
    } else {
      // Looking names up one by one avoids listing the attribute table, whose parsing in
      // libhdf5 1.10 trusts a damaged file too much.
      for (const std::string& name : request.attributes) {
        if (h5.check(H5Aexists(root, name.c_str()), "cannot look up attribute '" + name + "'") >
            0) {
          names.push_back(name);
        }
      }
    }
    for (const std::string& name : names) read_attribute(h5, root, name, file_size, attributes);
  }
  out.put(uint64_t{attributes.size()});
  for (const Attribute& a : attributes) {
    out.put(a.name);
    if (const auto* i = std::get_if<int64_t>(&a.value)) {
      out.put(uint64_t{kInteger});
      out.put(static_cast<uint64_t>(*i));
    } else if (const auto* d = std::get_if<double>(&a.value)) {
      uint64_t bits = 0;
      std::memcpy(&bits, d, sizeof bits);
      out.put(uint64_t{kFloat});
      out.put(bits);
    } else {
      out.put(uint64_t{kText});
      out.put(std::get<std::string>(a.value));
    }
  }

  out.put(uint64_t{request.tables.size()});
  for (const std::string& name : request.tables) {
    const H5Table t = parse_table(h5, file, name, file_size);
    out.put(uint64_t{t.present});
    out.put(t.rows);
    out.put(uint64_t{t.dim});
    out.put(t.offset);
  }

  const bool words = request.vocabulary && has_dataset(h5, file, "vocab/words");
  out.put(uint64_t{words});
  if (words) {
    Hid set =
        h5.make(H5Dopen2(file, "vocab/words", H5P_DEFAULT), H5Dclose, "cannot open /vocab/words");
    check_storage(h5, set, "/vocab/words", file_size);
    const std::vector<hsize_t> dims = extent(h5, set, 1, "/vocab/words");
    const std::vector<std::string> list =
        read_strings(h5, file, set, dims[0], "/vocab/words", fd, file_size);
    out.put(uint64_t{list.size()});
    for (const std::string& w : list) out.put(w);
  }
  const bool counts = request.vocabulary && has_dataset(h5, file, "vocab/counts");
  out.put(uint64_t{counts});
  if (counts) {
    Hid set =
        h5.make(H5Dopen2(file, "vocab/counts", H5P_DEFAULT), H5Dclose, "cannot open /vocab/counts");
    check_storage(h5, set, "/vocab/counts", file_size);
    Hid type = h5.make(H5Dget_type(set), H5Tclose, "cannot read /vocab/counts");
    if (H5Tget_class(type) != H5T_INTEGER) h5.fail("/vocab/counts does not hold integers");
    const std::vector<hsize_t> dims = extent(h5, set, 1, "/vocab/counts");
    std::vector<int64_t> values;
    resize_or_fail(h5, values, dims[0], "/vocab/counts");
    if (!values.empty()) {
      h5.check(H5Dread(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
               "cannot read /vocab/counts");
    }
    out.put(uint64_t{values.size()});
    for (const int64_t c : values) {
      if (c < 0) h5.fail("/vocab/counts holds a negative count");
      out.put(static_cast<uint64_t>(c));
    }
  }
  h5.check(file.close(), "cannot close the file");
  return std::move(out.text());
}

H5Contents decode_h5_contents(const std::string& bytes, const std::string& path,
                              const H5Request& request) {
  Reader in(bytes, path);
  H5Contents c;
  c.attributes.resize(static_cast<size_t>(in.count(3 * 8)));
  for (Attribute& a : c.attributes) {
    a.name = in.text();
    const uint64_t kind = in.number();
    if (kind == kInteger) {
      a.value = static_cast<int64_t>(in.number());
    } else if (kind == kFloat) {
      const uint64_t bits = in.number();
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      a.value = d;
    } else if (kind == kText) {
      a.value = in.text();
    } else {
      in.damaged();
    }
  }
  if (in.number() != request.tables.size()) in.damaged();
  for (const std::string& name : request.tables) {
    H5Table t;
    t.name = name;
    t.present = in.number() != 0;
    t.rows = in.number();
    const uint64_t dim = in.number();
    t.offset = in.number();
    if (dim > std::numeric_limits<uint32_t>::max()) in.damaged();
    t.dim = static_cast<uint32_t>(dim);
    if (t.dim != 0 && t.rows > std::numeric_limits<uint64_t>::max() / sizeof(float) / t.dim) {
      in.damaged();
    }
    c.tables.push_back(std::move(t));
  }
  c.has_words = in.number() != 0;
  if (c.has_words) {
    c.words.resize(static_cast<size_t>(in.count(8)));
    for (std::string& w : c.words) w = in.text();
  }
  c.has_counts = in.number() != 0;
  if (c.has_counts) {
    c.counts.resize(static_cast<size_t>(in.count(8)));
    for (uint64_t& n : c.counts) n = in.number();
  }
  if (!in.done()) in.damaged();
  return c;
}

void convert_h5_table(int fd, uint64_t file_size, const std::string& path, const H5Table& table,
                      int out_fd) {
  const Checker h5("cannot read '" + path + "': ");
  const QuietErrors quiet;
  MappedImage image(h5, fd, file_size);
  Hid file = open_by_descriptor(h5, image);
  const H5Table again = parse_table(h5, file, table.name, file_size);
  const std::string label = "/" + table.name;
  if (!again.present || again.rows != table.rows || again.dim != table.dim) {
    h5.fail(label + " changed while it was read");
  }
  if (table.rows == 0 || table.dim == 0) return;
  Hid set =
      h5.make(H5Dopen2(file, table.name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + label);
  Hid file_space = h5.make(H5Dget_space(set), H5Sclose, "cannot read " + label);
  const uint64_t row_bytes = uint64_t{table.dim} * sizeof(float);
  const uint64_t step = std::max<uint64_t>(1, (uint64_t{4} << 20) / row_bytes);
  std::vector<float> buffer(static_cast<size_t>(std::min(step, table.rows) * table.dim));
  for (uint64_t r = 0; r < table.rows; r += step) {
    const uint64_t n = std::min(step, table.rows - r);
    const hsize_t start[2] = {r, 0}, count[2] = {n, table.dim};
    h5.check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr),
             "cannot read " + label);
    Hid memory = h5.make(H5Screate_simple(2, count, nullptr), H5Sclose, "cannot read " + label);
    h5.check(H5Dread(set, H5T_NATIVE_FLOAT, memory, file_space, H5P_DEFAULT, buffer.data()),
             "cannot read " + label);
    const char* src = reinterpret_cast<const char*>(buffer.data());
    const uint64_t bytes = n * row_bytes;
    for (uint64_t done = 0; done < bytes;) {
      const ssize_t w =
          ::pwrite(out_fd, src + done, bytes - done, static_cast<off_t>(r * row_bytes + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) h5.fail("cannot convert " + label + ": " + std::strerror(errno));
      done += static_cast<uint64_t>(w);
    }
  }
  h5.check(file.close(), "cannot close the file");
}

}  // namespace pagedw2v::detail
