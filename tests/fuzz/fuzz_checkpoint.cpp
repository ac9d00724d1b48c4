// libFuzzer target: load_checkpoint on any bytes, written to a scratch file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string scratch =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/pagedw2v-fuzz-" +
      std::to_string(::getpid()) + ".h5";
  pagedw2v::fuzz::checkpoint_input(std::string_view(reinterpret_cast<const char*>(data), size),
                                   scratch);
  return 0;
}
