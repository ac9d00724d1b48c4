#pragma once
/// @file cuda_check.hpp
/// The one way CUDA calls are checked: PAGEDW2V_CUDA_TRY throws pagedw2v::Error with the call's
/// text, file and line; PAGEDW2V_CUDA_TRY_NO_THROW reports to stderr (for destructors);
/// PAGEDW2V_CUDA_CHECK_LAUNCH follows every kernel launch and synchronises in Debug builds so
/// that a fault is reported at the launch that caused it.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "base/error.hpp"

namespace pagedw2v::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  std::string msg = "CUDA error: ";
  msg += cudaGetErrorName(status);
  msg += " (";
  msg += cudaGetErrorString(status);
  msg += ") in ";
  msg += call;
  msg += " at ";
  msg += file;
  msg += ":";
  msg += std::to_string(line);
  throw Error(msg);
}

inline void report_cuda_error(cudaError_t status, const char* call, const char* file,
                              int line) noexcept {
  std::fprintf(stderr, "pagedw2v: CUDA error %s in %s at %s:%d (ignored during cleanup)\n",
               cudaGetErrorName(status), call, file, line);
}

}  // namespace pagedw2v::detail

#define PAGEDW2V_CUDA_TRY(call)                                                          \
  do {                                                                                   \
    const cudaError_t pagedw2v_status_ = (call);                                         \
    if (pagedw2v_status_ != cudaSuccess) {                                               \
      cudaGetLastError();                                                                \
      ::pagedw2v::detail::throw_cuda_error(pagedw2v_status_, #call, __FILE__, __LINE__); \
    }                                                                                    \
  } while (0)

#define PAGEDW2V_CUDA_TRY_NO_THROW(call)                                                  \
  do {                                                                                    \
    const cudaError_t pagedw2v_status_ = (call);                                          \
    if (pagedw2v_status_ != cudaSuccess) {                                                \
      cudaGetLastError();                                                                 \
      ::pagedw2v::detail::report_cuda_error(pagedw2v_status_, #call, __FILE__, __LINE__); \
    }                                                                                     \
  } while (0)

#ifdef NDEBUG
#define PAGEDW2V_CUDA_CHECK_LAUNCH() PAGEDW2V_CUDA_TRY(cudaPeekAtLastError())
#else
#define PAGEDW2V_CUDA_CHECK_LAUNCH()            \
  do {                                          \
    PAGEDW2V_CUDA_TRY(cudaPeekAtLastError());   \
    PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize()); \
  } while (0)
#endif
