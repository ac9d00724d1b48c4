#include "base/version.hpp"

namespace pagedw2v {

const char* version() { return PAGEDW2V_VERSION; }

}  // namespace pagedw2v
