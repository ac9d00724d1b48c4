#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/philox.hpp"
#include "base/worker_threads.hpp"
#include "model/model.hpp"

namespace pagedw2v {

void init_model(Model& model, uint64_t seed, uint32_t threads, uint64_t first_word,
                uint64_t word_step) {
  const uint32_t dim = model.input.dim();
  const float scale = 1.0f / static_cast<float>(dim);
  const uint64_t rows = model.input.rows();
  // Every value is keyed by (seed, row, column), so the rows can be cut among threads freely;
  // each thread writes both tables' rows of its range, which touches every page once and from
  // the thread that fills it.
  const uint32_t n =
      static_cast<uint32_t>(std::clamp<uint64_t>(rows / 4096, 1, std::max<uint32_t>(threads, 1)));
  const bool fp32 = model.input.storage() == Storage::kFp32;
  const std::vector<float> zeros(model.output.dim(), 0.0f);
  run_workers(n, [&](uint32_t t) {
    std::vector<float> buffer(fp32 ? 0 : dim);
    for (uint64_t r = rows * t / n; r < rows * (t + 1) / n; ++r) {
      float* row = fp32 ? model.input.row(r) : buffer.data();
      for (uint32_t d = 0; d < dim; d += 4) {
        const Philox4 x = draw(seed, first_word + r * word_step, 0, DrawKind::kInit, d >> 2);
        for (uint32_t k = 0; k < 4 && d + k < dim; ++k) {
          row[d + k] = (to_unit_float(x.v[k]) - 0.5f) * scale;
        }
      }
      if (!fp32) model.input.write_row(r, row);
      if (r < model.output.rows()) model.output.write_row(r, zeros.data());
      if (r < model.nodes.rows()) model.nodes.write_row(r, zeros.data());
    }
  });
  for (uint64_t r = rows; r < model.output.rows(); ++r) model.output.write_row(r, zeros.data());
  for (uint64_t r = rows; r < model.nodes.rows(); ++r) model.nodes.write_row(r, zeros.data());
}

Model allocate_model(uint64_t rows, uint32_t dim, OptimizerKind kind, bool interleaved,
                     const std::string& hint, Storage storage, bool node_table) {
  Model model;
  if (!interleaved) {
    model.input = HostTable(rows, dim, "input vectors", hint, default_host_allocator(), storage);
    model.output = HostTable(rows, dim, "output vectors", hint, default_host_allocator(), storage);
    if (node_table) {
      model.nodes = HostTable(rows, dim, "inner-node vectors (hierarchical softmax)", hint,
                              default_host_allocator(), storage);
    }
    init_optimizer_state(model, kind);
    return model;
  }
  const uint32_t n = state_tables(kind);
  const std::string vectors =
      node_table ? "input, output and inner-node vectors" : "input and output vectors";
  std::vector<HostTable> tables =
      HostTable::interleaved(rows, dim, (2 + 2 * n) + (node_table ? 1 + n : 0),
                             n > 0 ? vectors + " and " + to_string(kind) + " state" : vectors, hint,
                             default_host_allocator(), storage);
  model.input = std::move(tables[0]);
  model.output = std::move(tables[1]);
  for (uint32_t k = 0; k < n; ++k) {
    model.input_state.push_back(std::move(tables[2 + k]));
    model.output_state.push_back(std::move(tables[2 + n + k]));
  }
  if (node_table) {
    model.nodes = std::move(tables[2 + 2 * n]);
    for (uint32_t k = 0; k < n; ++k) model.nodes_state.push_back(std::move(tables[3 + 2 * n + k]));
  }
  return model;
}

void init_optimizer_state(Model& model, OptimizerKind kind) {
  const uint32_t n = state_tables(kind);
  const std::string hint = "lower --dim or --max-vocab, or use an optimizer with less state";
  model.input_state.clear();
  model.output_state.clear();
  model.nodes_state.clear();
  for (uint32_t k = 0; k < n; ++k) {
    const std::string what = to_string(kind) + " state " + std::to_string(k) + " of the ";
    model.input_state.emplace_back(model.input.rows(), model.input.dim(), what + "input vectors",
                                   hint, default_host_allocator(), model.input.storage());
    model.output_state.emplace_back(model.output.rows(), model.output.dim(),
                                    what + "output vectors", hint, default_host_allocator(),
                                    model.input.storage());
    if (model.nodes.rows() > 0) {
      model.nodes_state.emplace_back(model.nodes.rows(), model.nodes.dim(),
                                     what + "inner-node vectors", hint, default_host_allocator(),
                                     model.input.storage());
    }
  }
}

}  // namespace pagedw2v
