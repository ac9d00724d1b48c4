// The fused optimizer kernel (kernels/optimizer_step.hpp) against the CPU reference
// (apply_sparse_step) for every optimizer and several dimensions, over three steps on random
// tables, state and gradients. Device rows are padded (stride > dim) and gradient rows too, with
// NaN in the padding: a kernel that read or wrote outside [0, dim) of a row would show it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "kernels/optimizer_step.hpp"
#include "model/optimizer.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::upload;

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

using Shape = std::tuple<OptimizerKind, uint32_t /*dim*/, uint32_t /*seed*/>;

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return to_string(std::get<0>(info.param)) + "_d" + std::to_string(std::get<1>(info.param)) +
         "_s" + std::to_string(std::get<2>(info.param));
}

/// `dense` (rows × dim) laid out with `stride` floats per row, the padding poisoned.
std::vector<float> padded(const std::vector<float>& dense, uint64_t rows, uint32_t dim,
                          uint32_t stride) {
  std::vector<float> out(rows * stride, kPoison);
  for (uint64_t r = 0; r < rows; ++r) {
    std::copy(dense.begin() + r * dim, dense.begin() + (r + 1) * dim, out.begin() + r * stride);
  }
  return out;
}

/// Compares a device table (padded) with the CPU one (dense): values within a relative tolerance,
/// every value finite, padding still poison.
void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, uint64_t rows,
                  uint32_t dim, uint32_t stride, const std::string& what) {
  int reported = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint32_t d = 0; d < stride; ++d) {
      const float g = gpu[r * stride + d];
      if (d >= dim) {
        ASSERT_TRUE(std::isnan(g)) << what << ": padding of row " << r << " was written";
        continue;
      }
      const float c = cpu[r * dim + d];
      ASSERT_TRUE(std::isfinite(g)) << what << " row " << r << " element " << d << ": " << g;
      const float tol = 2e-5f * std::max(1.0f, std::abs(c));
      if (std::abs(g - c) > tol && reported++ < 5) {
        ADD_FAILURE() << what << " row " << r << " element " << d << ": gpu " << g << " cpu " << c;
      }
    }
  }
}

class CudaOptimizer : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaOptimizer, MatchesTheCpuReference) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [kind, dim, seed] = GetParam();
  const uint64_t rows = 257;
  const uint32_t stride = ((dim + 3) / 4) * 4 + 4;  // always some padding
  const uint32_t grad_stride = dim + 1;
  const uint32_t nstate = state_tables(kind);
  OptimizerParams params = default_optimizer_params(kind);
  if (kind != OptimizerKind::kSgd && kind != OptimizerKind::kAdamW) params.weight_decay = 0.01f;

  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> table(rows * dim);
  for (float& x : table) x = u(rng);
  std::vector<std::vector<float>> state(nstate, std::vector<float>(rows * dim));
  for (uint32_t k = 0; k < nstate; ++k) {
    const bool signed_state =
        k == 0 && (kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW ||
                   kind == OptimizerKind::kAdamax);
    for (float& x : state[k]) x = signed_state ? 0.1f * u(rng) : 0.01f * std::abs(u(rng));
  }

  DeviceBuffer<float> d_table = upload(padded(table, rows, dim, stride), "table");
  std::vector<DeviceBuffer<float>> d_state;
  for (uint32_t k = 0; k < nstate; ++k) {
    d_state.push_back(upload(padded(state[k], rows, dim, stride), "state"));
  }
  Stream stream;

  std::vector<uint32_t> all(rows);
  std::iota(all.begin(), all.end(), 0u);
  for (uint64_t step = 1; step <= 3; ++step) {
    // A fresh random subset of rows, in random order, with gradients of mixed magnitudes.
    std::shuffle(all.begin(), all.end(), rng);
    const size_t count = 1 + rng() % (rows - 1);
    const std::vector<uint32_t> ids(all.begin(), all.begin() + count);
    std::vector<float> grads(count * dim);
    const float scale = step == 2 ? 50.0f : (step == 3 ? 1e-3f : 1.0f);
    for (float& g : grads) g = scale * u(rng);
    const float lr = params.lr * (1.0f - 0.1f * static_cast<float>(step));

    float* ptrs[2] = {nullptr, nullptr};
    for (uint32_t k = 0; k < nstate; ++k) ptrs[k] = state[k].data();
    apply_sparse_step(params, step, lr, ids.data(), count, grads.data(), dim, table.data(), ptrs);

    DeviceBuffer<uint32_t> d_ids = upload(ids, "ids");
    DeviceBuffer<float> d_grads = upload(padded(grads, count, dim, grad_stride), "grads");
    OptimizerStepArgs args;
    args.table = d_table.data();
    for (uint32_t k = 0; k < nstate; ++k) args.state[k] = d_state[k].data();
    args.stride = stride;
    args.dim = dim;
    args.rows = d_ids.data();
    args.grads = d_grads.data();
    args.grad_stride = grad_stride;
    args.count = count;
    launch_optimizer_step(params, step, lr, args, stream.get());
    stream.synchronize();

    const std::string at = to_string(kind) + " step " + std::to_string(step);
    expect_close(download(d_table), table, rows, dim, stride, at + " table");
    for (uint32_t k = 0; k < nstate; ++k) {
      expect_close(download(d_state[k]), state[k], rows, dim, stride,
                   at + " state " + std::to_string(k));
    }
    if (HasFatalFailure()) return;
  }
}

// Rows the step does not list keep their bits on the device too, and an empty step is a no-op.
TEST_P(CudaOptimizer, UntouchedRowsKeepTheirBits) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [kind, dim, seed] = GetParam();
  const uint64_t rows = 64;
  const uint32_t nstate = state_tables(kind);
  std::mt19937 rng(seed + 100);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> table(rows * dim);
  for (float& x : table) x = u(rng);
  DeviceBuffer<float> d_table = upload(table, "table");
  std::vector<DeviceBuffer<float>> d_state;
  const std::vector<float> zero_state(rows * dim, 0.0f);
  for (uint32_t k = 0; k < nstate; ++k) d_state.push_back(upload(zero_state, "state"));
  const std::vector<uint32_t> ids = {63, 0, 31};
  std::vector<float> grads(ids.size() * dim);
  for (float& g : grads) g = u(rng);
  DeviceBuffer<uint32_t> d_ids = upload(ids, "ids");
  DeviceBuffer<float> d_grads = upload(grads, "grads");
  Stream stream;
  OptimizerStepArgs args;
  args.table = d_table.data();
  for (uint32_t k = 0; k < nstate; ++k) args.state[k] = d_state[k].data();
  args.stride = dim;
  args.dim = dim;
  args.rows = d_ids.data();
  args.grads = d_grads.data();
  args.grad_stride = dim;
  args.count = 0;
  const OptimizerParams params = default_optimizer_params(kind);
  launch_optimizer_step(params, 1, params.lr, args, stream.get());
  args.count = ids.size();
  launch_optimizer_step(params, 1, params.lr, args, stream.get());
  stream.synchronize();
  const std::vector<float> after = download(d_table);
  std::vector<std::vector<float>> states;
  for (const DeviceBuffer<float>& d : d_state) states.push_back(download(d));
  for (uint64_t r = 0; r < rows; ++r) {
    if (std::find(ids.begin(), ids.end(), r) != ids.end()) continue;
    for (uint32_t d = 0; d < dim; ++d) {
      EXPECT_EQ(after[r * dim + d], table[r * dim + d]) << "row " << r;
      for (const std::vector<float>& s : states) EXPECT_EQ(s[r * dim + d], 0.0f) << "row " << r;
    }
  }
}

TEST(CudaOptimizerLaunch, MissingStateIsAnError) {
  PAGEDW2V_REQUIRE_GPU();
  OptimizerStepArgs args;
  args.dim = args.stride = args.grad_stride = 4;
  args.count = 1;
  EXPECT_THROW(
      launch_optimizer_step(default_optimizer_params(OptimizerKind::kAdam), 1, 0.1f, args, nullptr),
      Error);
}

INSTANTIATE_TEST_SUITE_P(
    All, CudaOptimizer,
    ::testing::Combine(::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                         OptimizerKind::kAdam, OptimizerKind::kAdamW,
                                         OptimizerKind::kAdamax, OptimizerKind::kRmsprop,
                                         OptimizerKind::kAdadelta),
                       ::testing::Values(1u, 7u, 100u, 128u, 300u), ::testing::Values(1u, 2u)),
    shape_name);

}  // namespace
}  // namespace pagedw2v
