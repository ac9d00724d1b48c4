// libFuzzer target: the corpus reader (Vocab::count, encode_corpus, make_blocks) on any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pagedw2v::fuzz::corpus_input(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
