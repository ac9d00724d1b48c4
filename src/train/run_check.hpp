#pragma once
/// @file run_check.hpp
/// What a finished training run must have done before its vectors are exported as a success.

#include <cstdint>

#include "model.hpp"

namespace pagedw2v {

/// Rows of `table` that hold a NaN or an infinity.
uint64_t nonfinite_rows(const HostTable& table);

/// Throws Error (one line saying what and what to change) when the run trained no (centre,
/// context) example in `examples` — subsampling (`--sample`) or the window left nothing to train
/// — or when the input vectors hold a NaN or an infinity.
void check_run_outcome(uint64_t examples, const Model& model);

}  // namespace pagedw2v
