#include <algorithm>

#include "philox.hpp"
#include "train/backend.hpp"

namespace pagedw2v {

void init_model(Model& model, uint64_t seed) {
  const uint32_t dim = model.input.dim();
  const float scale = 1.0f / static_cast<float>(dim);
  for (uint64_t r = 0; r < model.input.rows(); ++r) {
    float* row = model.input.row(r);
    for (uint32_t d = 0; d < dim; d += 4) {
      const Philox4 x = draw(seed, r, 0, DrawKind::kInit, d >> 2);
      for (uint32_t k = 0; k < 4 && d + k < dim; ++k) {
        row[d + k] = (to_unit_float(x.v[k]) - 0.5f) * scale;
      }
    }
  }
  std::fill(model.output.data(), model.output.data() + model.output.rows() * model.output.dim(),
            0.0f);
}

}  // namespace pagedw2v
