#include "io/hdf5_detail.hpp"

#include <string>

namespace pagedw2v::detail {
namespace {

herr_t innermost_error(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

}  // namespace

std::string hdf5_reason() {
  std::string desc;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_error, &desc);
  H5Eclear2(H5E_DEFAULT);
  const std::string key = "error message = '";
  const size_t at = desc.find(key);
  if (at != std::string::npos) {
    const size_t end = desc.find('\'', at + key.size());
    desc = desc.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
  }
  return desc;
}

Hid vlen_string_type(const Checker& h5, H5T_cset_t cset) {
  Hid type = h5.make(H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  h5.check(H5Tset_size(type, H5T_VARIABLE), "cannot create a string type");
  h5.check(H5Tset_cset(type, cset), "cannot create a string type");
  return type;
}

}  // namespace pagedw2v::detail
