#pragma once
/// @file needed_rows.hpp
/// The rows a range of work blocks reads and writes, found before training them: the input
/// rows (the tokens subsampling keeps: the context rows) and the output rows (those tokens as
/// centres, and every negative drawn for them, or the whole negative pool of the blocks'
/// super-batches). It walks the span with the CPU backend's example walk
/// (backend/cpu/cpu_examples.hpp: its subsampling, windows and negative draws, Philox keyed by
/// position and epoch), so the sets hold exactly the rows training touches; each id appears
/// once, in first-touch order.

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace pagedw2v::dist {

class NeededRows {
 public:
  /// For a vocabulary of `rows` words.
  explicit NeededRows(uint64_t rows);

  /// Collects the rows of blocks [first, last) of `epoch` (clearing the previous sets).
  void collect(const TrainData& data, uint32_t epoch, uint64_t first, uint64_t last);

  const std::vector<uint32_t>& input() const { return input_; }
  const std::vector<uint32_t>& output() const { return output_; }

 private:
  void add_input(uint32_t id);
  void add_output(uint32_t id);

  std::vector<uint8_t> marks_;  ///< bit 0: in input_, bit 1: in output_
  std::vector<uint32_t> input_;
  std::vector<uint32_t> output_;
};

}  // namespace pagedw2v::dist
