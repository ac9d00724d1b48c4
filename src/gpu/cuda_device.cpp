#include "gpu/cuda_device.hpp"

#include <cuda_runtime_api.h>

namespace pagedw2v {

bool cuda_device_available() {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return count > 0;
  } catch (...) {
    return false;
  }
}

void start_cuda_context() {
  try {
    if (cudaFree(nullptr) != cudaSuccess) cudaGetLastError();
  } catch (...) {
  }
}

}  // namespace pagedw2v
