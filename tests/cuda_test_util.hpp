#pragma once
// Helpers shared by the CUDA tests: the GPU requirement and copies between vectors and device
// buffers.
//
// A GPU test skips itself where no CUDA device can be used, so that CI machines without a GPU
// stay green. With PAGEDW2V_REQUIRE_GPU set (to anything but "0"), as scripts/gpu-check.sh sets
// it, the same test fails instead: on the GPU machine a broken driver must not pass by skipping.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/gpu_plan.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v::testing_util {

/// A paged budget that leaves `planned` bytes beside the margin the plan keeps back from it
/// (paged_margin), the margin estimated a little high.
inline uint64_t with_paged_margin(uint64_t planned) {
  const uint64_t margin = paged_margin(planned + paged_margin(planned));
  return planned + margin + margin / 16;
}

/// Whether PAGEDW2V_REQUIRE_GPU asks for a GPU (set, not empty, not "0").
inline bool gpu_required() {
  const char* v = std::getenv("PAGEDW2V_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

/// Why no CUDA device can be used, in the runtime's words.
inline std::string why_no_gpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  }
  return count == 0 ? "no CUDA device" : "CUDA device unusable";
}

/// `count` elements of `v` in a new device buffer (at least one element, so that empty inputs
/// still have a valid pointer). Synchronises: a copy from pageable memory may still be in flight
/// when cudaMemcpy returns, and the kernels run on non-blocking streams that do not wait for it.
template <typename T, typename Allocator>
DeviceBuffer<T> upload(const std::vector<T, Allocator>& v, const std::string& what = "test input") {
  DeviceBuffer<T> d(std::max<size_t>(v.size(), 1), what);
  if (!v.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  }
  return d;
}

/// The first `n` elements of `d`.
template <typename T>
std::vector<T> download(const DeviceBuffer<T>& d, size_t n) {
  std::vector<T> v(n);
  if (n > 0) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(v.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return v;
}

/// Every element of `d`.
template <typename T>
std::vector<T> download(const DeviceBuffer<T>& d) {
  return download(d, d.size());
}

}  // namespace pagedw2v::testing_util

/// Skips the test without a usable CUDA device, or fails it when PAGEDW2V_REQUIRE_GPU is set.
/// Works in a test body and in a fixture's SetUp (a failure there skips the body).
#define PAGEDW2V_REQUIRE_GPU()                                                         \
  do {                                                                                 \
    if (!::pagedw2v::query_device().usable) {                                          \
      if (::pagedw2v::testing_util::gpu_required()) {                                  \
        GTEST_FAIL() << "PAGEDW2V_REQUIRE_GPU is set but no CUDA device can be used (" \
                     << ::pagedw2v::testing_util::why_no_gpu() << ")";                 \
      }                                                                                \
      GTEST_SKIP() << ::pagedw2v::testing_util::why_no_gpu();                          \
    }                                                                                  \
  } while (0)
