#include "kernels/optimizer_step.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_limits.hpp"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

/// Threads map to (touched row, element) pairs flattened row-major: consecutive threads take
/// consecutive elements of one row, so the loads and stores of the table, its state and the
/// gradient are coalesced whatever the dimension (a thread per row would stride by the row
/// length; a warp per row would idle most lanes at small dimensions). Rows are unique and each
/// element's update reads only its own weight and state, so no two threads touch the same
/// address: no atomics. A grid-stride loop covers any count with a bounded grid.
__global__ void optimizer_step_kernel(OptimizerStepScalars s, float* __restrict__ table,
                                      float* __restrict__ state0, float* __restrict__ state1,
                                      uint32_t stride, uint32_t dim,
                                      const uint32_t* __restrict__ rows, float* __restrict__ grads,
                                      uint32_t grad_stride, uint64_t elements,
                                      const uint32_t* __restrict__ d_count, bool by_row,
                                      bool zero) {
  if (d_count != nullptr) elements = min(elements, static_cast<uint64_t>(*d_count) * dim);
  for (uint64_t e = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; e < elements;
       e += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t i = e / dim;
    const uint32_t d = static_cast<uint32_t>(e - i * dim);
    const size_t at = static_cast<size_t>(rows[i]) * stride + d;
    float dummy = 0.0f;
    float* a = state0 != nullptr ? state0 + at : &dummy;
    float* b = state1 != nullptr ? state1 + at : &dummy;
    const size_t g = (by_row ? static_cast<size_t>(rows[i]) : i) * grad_stride + d;
    optimizer_update(s, grads[g], table + at, a, b);
    if (zero) grads[g] = 0.0f;
  }
}

}  // namespace

void launch_optimizer_step(const OptimizerParams& params, uint64_t step, float lr,
                           const OptimizerStepArgs& args, cudaStream_t stream) {
  const uint32_t nstate = state_tables(params.kind);
  for (uint32_t k = 0; k < nstate; ++k) {
    if (args.state[k] == nullptr) {
      throw Error("optimizer " + to_string(params.kind) + " needs " + std::to_string(nstate) +
                  " state tables on the device");
    }
  }
  if (args.dim == 0 || args.stride < args.dim || args.grad_stride < args.dim) {
    throw Error("optimizer step: bad row shape (dim " + std::to_string(args.dim) + ", stride " +
                std::to_string(args.stride) + ", gradient stride " +
                std::to_string(args.grad_stride) + ")");
  }
  const uint64_t elements = args.count * args.dim;
  if (elements == 0) return;
  const int sms = detail::device_limits().sms;
  const uint64_t wanted = (elements + kThreads - 1) / kThreads;
  const unsigned blocks =
      static_cast<unsigned>(std::min<uint64_t>(wanted, static_cast<uint64_t>(sms) * 32));
  optimizer_step_kernel<<<blocks, kThreads, 0, stream>>>(
      step_scalars(params, step, lr), args.table, nstate > 0 ? args.state[0] : nullptr,
      nstate > 1 ? args.state[1] : nullptr, args.stride, args.dim, args.rows, args.grads,
      args.grad_stride, elements, args.d_count, args.grads_by_row, args.zero_grads);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
