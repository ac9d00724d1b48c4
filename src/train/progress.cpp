#include "train/progress.hpp"

#include <unistd.h>

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

Progress::Progress(std::FILE* out, uint64_t total_words, uint64_t done_words)
    : out_(out),
      tty_(out != nullptr && ::isatty(fileno(out))),
      total_(total_words),
      start_words_(done_words),
      done_(done_words),
      smoothed_loss_(std::nan("")),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(uint64_t done_words, double span_loss, uint64_t span_terms, float lr,
                      uint32_t epoch) {
  done_ = done_words;
  if (span_terms > 0) {
    const double mean = span_loss / static_cast<double>(span_terms);
    smoothed_loss_ = std::isnan(smoothed_loss_) ? mean : 0.9 * smoothed_loss_ + 0.1 * mean;
  }
  if (out_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (tty_ ? 0.1 : 5.0) && done_ < total_) return;
  last_print_ = now;
  const double secs = elapsed();
  const double rate = secs > 0 ? static_cast<double>(done_ - start_words_) / secs : 0.0;
  const double pct = total_ > 0 ? 100.0 * static_cast<double>(done_) / total_ : 100.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
  std::fprintf(out_, "%sepoch %u  %5.1f%%  %8.0f words/s  loss %.4f  lr %.6f  eta %s%s",
               tty_ ? "\r" : "", epoch + 1, pct, rate, smoothed_loss_, lr,
               format_eta(eta).c_str(), tty_ ? "\033[K" : "\n");
  std::fflush(out_);
  line_open_ = tty_;
}

void Progress::finish() {
  if (out_ != nullptr && line_open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  line_open_ = false;
}

}  // namespace pagedw2v
