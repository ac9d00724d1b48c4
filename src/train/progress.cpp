#include "train/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace pagedw2v {
namespace {

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

}  // namespace

Progress::Progress(std::FILE* out, uint64_t total_words, uint64_t done_words, uint32_t epochs)
    : out_(out),
      tty_(out != nullptr && ::isatty(fileno(out))),
      total_(total_words),
      start_words_(done_words),
      done_(done_words),
      epochs_(epochs),
      smoothed_loss_(std::nan("")),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(uint64_t done_words, double span_loss, uint64_t span_terms, float lr,
                      uint32_t epoch) {
  const uint64_t span_words = done_words > done_ ? done_words - done_ : 0;
  done_ = done_words;
  if (span_terms > 0) {
    // A span weighs by its words against a horizon of a twentieth of the run, so that the
    // line shows the loss of about the last 5 % of the run's words whatever the spans' size
    // (one process trains spans of a million words, ranks of tens of thousands).
    const double mean = span_loss / static_cast<double>(span_terms);
    const double horizon = std::max(1.0, static_cast<double>(total_) / kLossHorizonShare);
    const double w = 1.0 - std::exp(-static_cast<double>(span_words) / horizon);
    smoothed_loss_ = std::isnan(smoothed_loss_) ? mean : (1.0 - w) * smoothed_loss_ + w * mean;
  }
  if (out_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (tty_ ? 0.1 : 5.0) && done_ < total_) return;
  print(epoch, lr);
}

void Progress::end_epoch(uint32_t epoch, float lr) {
  if (out_ == nullptr) return;
  if (!tty_ && printed_done_ == done_) return;
  print(epoch, lr);
  if (tty_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    line_open_ = false;
  }
}

void Progress::print(uint32_t epoch, float lr) {
  last_print_ = std::chrono::steady_clock::now();
  printed_done_ = done_;
  const double secs = elapsed();
  const double rate = secs > 0 ? static_cast<double>(done_ - start_words_) / secs : 0.0;
  const double pct = total_ > 0 ? 100.0 * static_cast<double>(done_) / total_ : 100.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
  double epoch_pct = NAN;
  if (epochs_ > 0 && total_ > 0) {
    const double per_epoch = static_cast<double>(total_) / epochs_;
    epoch_pct = 100.0 * (static_cast<double>(done_) - per_epoch * epoch) / per_epoch;
    epoch_pct = std::min(100.0, std::max(0.0, epoch_pct));
  }
  std::fprintf(out_, "%s%s%s", tty_ ? "\r" : "",
               line(epoch + 1, epochs_, epoch_pct, pct, rate, smoothed_loss_, lr, eta).c_str(),
               tty_ ? "\033[K" : "\n");
  std::fflush(out_);
  line_open_ = tty_;
}

std::string Progress::line(uint32_t epoch, uint32_t epochs, double epoch_pct, double run_pct,
                           double words_per_second, double loss, float lr, double eta_seconds) {
  char buf[256];
  std::string out;
  if (epochs > 0) {
    std::snprintf(buf, sizeof buf, "epoch %u/%u  %5.1f%% of epoch  %5.1f%% of run", epoch, epochs,
                  epoch_pct, run_pct);
  } else {
    std::snprintf(buf, sizeof buf, "epoch %u  %5.1f%% of run", epoch, run_pct);
  }
  out = buf;
  std::snprintf(buf, sizeof buf, "  %8.0f words/s  loss %.4f  lr %.6f  eta %s", words_per_second,
                loss, lr, format_eta(eta_seconds).c_str());
  return out + buf;
}

void Progress::finish() {
  if (out_ != nullptr && line_open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  line_open_ = false;
}

}  // namespace pagedw2v
