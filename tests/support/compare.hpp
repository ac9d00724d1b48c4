#pragma once
// Comparisons of tables shared by the tests that hold a GPU's results against the CPU
// reference or against another run: by value within a tolerance, bit for bit, and as a share of
// how far training moved a table.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "model/host_table.hpp"

namespace pagedw2v::testing_util {

/// Element-wise comparison with an absolute and a relative tolerance; NaN or Inf never passes.
inline void expect_values_near(const float* got, const float* want, size_t n, const char* what,
                               double atol = 2e-5, double rtol = 1e-4) {
  size_t bad = 0;
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    const float g = got[i], w = want[i];
    ASSERT_TRUE(std::isfinite(g)) << what << " element " << i << " is " << g;
    const double err = std::fabs(static_cast<double>(g) - w);
    max_err = std::max(max_err, err);
    if (err > atol + rtol * std::fabs(w)) {
      if (bad++ < 5) ADD_FAILURE() << what << " element " << i << ": gpu " << g << " cpu " << w;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": max abs error " << max_err;
}

/// How many floats of `a` and `b` differ in any bit (the longer size when the sizes differ).
inline size_t bits_differ(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], 4) != 0;
  return differ;
}

/// How far `got` is from `want` as a share of how far `want` moved from `start`, over the whole
/// table: ‖got − want‖ / ‖want − start‖.
inline double share_off(const std::vector<float>& got, const std::vector<float>& want,
                        const std::vector<float>& start) {
  double off = 0, moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    off += double(got[i] - want[i]) * (got[i] - want[i]);
    moved += double(want[i] - start[i]) * (want[i] - start[i]);
  }
  return std::sqrt(off) / std::max(std::sqrt(moved), 1e-30);
}

/// Whether `n` floats at `a` and `b` have the same bits.
inline bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

/// Whether two tables have the same shape and the same bits.
inline bool same_bits(const HostTable& a, const HostTable& b) {
  return a.rows() == b.rows() && a.dim() == b.dim() &&
         same_bits(a.data(), b.data(), a.rows() * a.dim());
}

}  // namespace pagedw2v::testing_util
