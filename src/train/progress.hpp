#pragma once
/// @file progress.hpp
/// The training progress line on stderr: % done, words/s, smoothed loss, learning rate, ETA.
/// On a terminal one line is redrawn in place; otherwise a line is printed every few seconds.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pagedw2v {

class Progress {
 public:
  /// `total_words` is the whole run's words (epochs × words per epoch); `done_words` where a
  /// resumed run starts. `out == nullptr` silences it (--quiet).
  Progress(std::FILE* out, uint64_t total_words, uint64_t done_words = 0);

  /// Reports that training reached `done_words`, with the loss over the last span.
  void update(uint64_t done_words, double span_loss, uint64_t span_terms, float lr,
              uint32_t epoch);
  /// Ends the progress line (so the next output starts on its own line).
  void finish();
  /// Mean loss per example, smoothed over recent spans; NaN before the first span.
  double smoothed_loss() const { return smoothed_loss_; }
  /// Seconds since construction.
  double elapsed() const;

 private:
  std::FILE* out_;
  bool tty_;
  uint64_t total_, start_words_, done_ = 0;
  double smoothed_loss_;
  std::chrono::steady_clock::time_point start_, last_print_;
  bool line_open_ = false;
};

}  // namespace pagedw2v
