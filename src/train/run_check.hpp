#pragma once
/// @file run_check.hpp
/// What a finished training run must have done before its vectors are exported as a success.

#include <cstdint>
#include <string>

#include "model/model.hpp"

namespace pagedw2v {

/// Rows of `table` that hold a NaN or an infinity.
uint64_t nonfinite_rows(const HostTable& table);

/// Rows of `n` rows of `dim` float32 values that hold a NaN or an infinity.
uint64_t nonfinite_rows(const float* rows, uint64_t n, uint32_t dim);

/// The warning line (without "pagedw2v: ") of a run that trained no (centre, context) example in
/// `examples` — subsampling (`--sample`) or the window left nothing to train — whose vectors
/// are then written as they started, as gensim and word2vec.c write them; "" when it trained.
std::string untrained_warning(uint64_t examples);

/// Throws Error (one line saying what and what to change) when the input vectors hold a NaN or
/// an infinity; not scanned when nothing was trained (`examples` 0).
void check_run_outcome(uint64_t examples, const Model& model);
/// The same, for a run whose input vectors (`rows` of them) were scanned elsewhere and held
/// `nonfinite` rows with a NaN or an infinity (a distributed run, as rank 0 gathers them).
void check_finite_rows(uint64_t nonfinite, uint64_t rows);

}  // namespace pagedw2v
