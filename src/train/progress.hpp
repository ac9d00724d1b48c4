#pragma once
/// @file progress.hpp
/// The training progress line on stderr: the epoch out of how many, how far the epoch and the
/// whole run are, words/s, the loss of the last twentieth of the run, learning rate and the run's
/// ETA:
///
///     epoch 2/5   31.0% of epoch   46.2% of run   405123 words/s  loss 2.3456  lr 0.013  eta 00:07
///
/// On a terminal one line is redrawn in place (at most ten times a second) and left standing at
/// each epoch's end; otherwise a line is printed at each epoch's end and every few seconds.
///
/// The loss is skip-gram's or CBOW's negative-sampling loss of one (centre, context) example,
/// −log σ(context·word) − Σ log σ(−noise·word) over its --negative noise words, taken as the
/// example trains; the line shows its mean smoothed over about the last twentieth of the run
/// (run.json: `final_loss` at the end, and `loss_per_epoch` each epoch's plain mean).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pagedw2v {

class Progress {
 public:
  /// `total_words` is the whole run's words (`epochs` × words per epoch); `done_words` where a
  /// resumed run starts. `out == nullptr` silences it (--quiet). Without `epochs` (0) the line
  /// shows the epoch's number and the run's progress only.
  Progress(std::FILE* out, uint64_t total_words, uint64_t done_words = 0, uint32_t epochs = 0);

  /// The progress line for these figures (without the terminal's redraw codes).
  static std::string line(uint32_t epoch, uint32_t epochs, double epoch_pct, double run_pct,
                          double words_per_second, double loss, float lr, double eta_seconds);

  /// Reports that training reached `done_words`, with the loss over the last span.
  void update(uint64_t done_words, double span_loss, uint64_t span_terms, float lr, uint32_t epoch);
  /// Reports that epoch `epoch` (from 0) ended at the words of the last update(): its line is
  /// printed whatever the time since the last one (a log gets one unless the last line it got
  /// was this one), and a terminal's is left standing.
  void end_epoch(uint32_t epoch, float lr);
  /// Ends the progress line (so the next output starts on its own line).
  void finish();
  /// A run's words over the horizon of the smoothed loss (a twentieth of the run).
  static constexpr double kLossHorizonShare = 20.0;
  /// Mean loss per example, smoothed over about the last twentieth of the run's words (each
  /// span weighs 1 − exp(−its words / that horizon)); NaN before the first span.
  double smoothed_loss() const { return smoothed_loss_; }
  /// Seconds since construction.
  double elapsed() const;

 private:
  std::FILE* out_;
  bool tty_;
  uint64_t total_, start_words_, done_ = 0;
  uint32_t epochs_;
  double smoothed_loss_;
  /// Prints the line for the figures as they are now.
  void print(uint32_t epoch, float lr);

  std::chrono::steady_clock::time_point start_, last_print_;
  bool line_open_ = false;
  uint64_t printed_done_ = UINT64_MAX;  ///< the words of the last line printed
};

}  // namespace pagedw2v
