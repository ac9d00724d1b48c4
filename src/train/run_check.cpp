#include "train/run_check.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/worker_threads.hpp"

namespace pagedw2v {

uint64_t nonfinite_rows(const HostTable& table) {
  // A float is NaN or infinite when its exponent bits are all set: tested on the bits, the loop
  // vectorises, and large tables are cut among threads (this scan sits between training and
  // the export).
  const uint64_t rows = table.rows();
  const uint32_t dim = table.dim();
  const uint32_t n = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::min<uint64_t>(std::thread::hardware_concurrency(), 16), 1,
                           rows * dim / (uint64_t{1} << 22) + 1));
  std::vector<uint64_t> bad(n, 0);
  run_workers(n, [&](uint32_t t) {
    uint64_t count = 0;
    for (uint64_t r = rows * t / n; r < rows * (t + 1) / n; ++r) {
      uint32_t all_ones = 0;
      if (table.storage() == Storage::kFp32) {
        const float* v = table.row(r);
        for (uint32_t k = 0; k < dim; ++k) {
          uint32_t bits;
          std::memcpy(&bits, v + k, sizeof bits);
          all_ones |= (bits & 0x7f800000u) == 0x7f800000u;
        }
      } else {
        const auto* v = static_cast<const uint16_t*>(table.raw_row(r));
        const uint16_t exponent = table.storage() == Storage::kBf16 ? 0x7F80u : 0x7C00u;
        for (uint32_t k = 0; k < dim; ++k) all_ones |= (v[k] & exponent) == exponent;
      }
      count += all_ones;
    }
    bad[t] = count;
  });
  uint64_t total = 0;
  for (uint64_t b : bad) total += b;
  return total;
}

uint64_t nonfinite_rows(const float* rows, uint64_t n, uint32_t dim) {
  uint64_t count = 0;
  for (uint64_t r = 0; r < n; ++r) {
    uint32_t all_ones = 0;
    for (uint32_t k = 0; k < dim; ++k) {
      uint32_t bits;
      std::memcpy(&bits, rows + r * dim + k, sizeof bits);
      all_ones |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    count += all_ones;
  }
  return count;
}

std::string untrained_warning(uint64_t examples) {
  if (examples > 0) return "";
  return "warning: no (word, context) example was left to train after subsampling, so the "
         "vectors are written as they started (random); raise --sample (or use a corpus with "
         "sentences of two or more words) to train them";
}

void check_finite_rows(uint64_t nonfinite, uint64_t rows) {
  if (nonfinite > 0) {
    throw Error("training diverged: " + std::to_string(nonfinite) + " of " + std::to_string(rows) +
                " vectors hold NaN or infinite values; lower the learning rate");
  }
}

void check_run_outcome(uint64_t examples, const Model& model) {
  // The scan runs only once something was trained, as before.
  check_finite_rows(examples == 0 ? 0 : nonfinite_rows(model.input), model.input.rows());
}

}  // namespace pagedw2v
