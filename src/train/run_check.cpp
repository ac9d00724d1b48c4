#include "train/run_check.hpp"

#include <cmath>
#include <string>

#include "error.hpp"

namespace pagedw2v {

uint64_t nonfinite_rows(const HostTable& table) {
  uint64_t bad = 0;
  for (uint64_t r = 0; r < table.rows(); ++r) {
    const float* v = table.row(r);
    bool finite = true;
    for (uint32_t k = 0; k < table.dim(); ++k) finite = finite && std::isfinite(v[k]);
    bad += finite ? 0 : 1;
  }
  return bad;
}

void check_run_outcome(uint64_t examples, const Model& model) {
  if (examples == 0) {
    throw Error(
        "training trained nothing: no (word, context) example was left after subsampling; raise "
        "--sample (or use a corpus with sentences of two or more words)");
  }
  if (const uint64_t bad = nonfinite_rows(model.input); bad > 0) {
    throw Error("training diverged: " + std::to_string(bad) + " of " +
                std::to_string(model.input.rows()) +
                " vectors hold NaN or infinite values; lower the learning rate");
  }
}

}  // namespace pagedw2v
