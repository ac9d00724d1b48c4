// The training progress line (train/progress.hpp): the smoothed loss, the line written to a file
// (one at the end; none before a few seconds have passed), and the line redrawn in place on a
// terminal.
#include "train/progress.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace pagedw2v {
namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

/// What was written to `f` so far (from its start).
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(Progress, LossIsSmoothedOverTheLastTwentiethOfTheRunsWords) {
  Progress p(nullptr, 1000);  // a horizon of 50 words
  EXPECT_TRUE(std::isnan(p.smoothed_loss()));
  p.update(100, 30.0, 10, 0.02f, 0);  // mean 3
  EXPECT_DOUBLE_EQ(p.smoothed_loss(), 3.0);
  p.update(200, 10.0, 10, 0.02f, 0);  // mean 1 over 100 words: weight 1 - e^-2
  EXPECT_DOUBLE_EQ(p.smoothed_loss(), std::exp(-2.0) * 3.0 + (1.0 - std::exp(-2.0)) * 1.0);
  const double before = p.smoothed_loss();
  p.update(300, 0.0, 0, 0.02f, 0);  // a span without examples leaves it as it was
  EXPECT_DOUBLE_EQ(p.smoothed_loss(), before);
}

// The spans' size does not matter: a span of 100 words at a loss of 1 moves the line as much
// as four of 25 words at that loss (ranks train spans of tens of thousands of words, one
// process of a million), and a span of a tenth of the run leaves little of what came before.
TEST(Progress, SmoothedLossDoesNotDependOnTheSpansSize) {
  Progress whole(nullptr, 1000), split(nullptr, 1000);
  whole.update(100, 30.0, 10, 0.02f, 0);
  split.update(100, 30.0, 10, 0.02f, 0);
  whole.update(200, 10.0, 10, 0.02f, 0);
  for (uint64_t w = 125; w <= 200; w += 25) split.update(w, 5.0, 5, 0.02f, 0);
  EXPECT_NEAR(whole.smoothed_loss(), split.smoothed_loss(), 1e-12);
  EXPECT_LT(whole.smoothed_loss(), 1.3);
}

// To a file: nothing while spans come faster than every few seconds, then one whole line at the
// end of the run with the epoch, the share done, the loss, the rate and no time left.
TEST(Progress, FileGetsALineAtTheEnd) {
  File f(std::tmpfile(), &std::fclose);
  ASSERT_NE(f, nullptr);
  Progress p(f.get(), 4000, 1000);  // resumed at word 1000
  p.update(2000, 20.0, 10, 0.0125f, 1);
  EXPECT_EQ(contents(f.get()), "");
  p.update(4000, 10.0, 10, 0.00125f, 2);
  const std::string line = contents(f.get());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_EQ(line.rfind("epoch 3  100.0%", 0), 0u) << line;
  EXPECT_NE(line.find("loss 1.0000"), std::string::npos) << line;  // 2000 words: e^-10 of 2 left
  EXPECT_NE(line.find("lr 0.001250"), std::string::npos) << line;
  EXPECT_NE(line.find("eta 00:00"), std::string::npos) << line;
  EXPECT_NE(line.find(" words/s"), std::string::npos) << line;
  p.finish();  // a file's line is already ended
  EXPECT_EQ(contents(f.get()), line);
}

// To a file: a line at every epoch's end, however soon after the last one, and not twice.
TEST(Progress, FileGetsALineAtEveryEpochsEnd) {
  File f(std::tmpfile(), &std::fclose);
  ASSERT_NE(f, nullptr);
  Progress p(f.get(), 3000, 0, 3);
  p.update(500, 5.0, 5, 0.02f, 0);
  EXPECT_EQ(contents(f.get()), "");
  p.update(1000, 5.0, 5, 0.02f, 0);
  p.end_epoch(0, 0.02f);
  const std::string first = contents(f.get());
  EXPECT_EQ(first.rfind("epoch 1/3  100.0% of epoch   33.3% of run", 0), 0u) << first;
  p.end_epoch(0, 0.02f);
  EXPECT_EQ(contents(f.get()), first);
  p.update(2000, 5.0, 5, 0.01f, 1);
  p.end_epoch(1, 0.01f);
  EXPECT_NE(contents(f.get()).find("\nepoch 2/3  100.0% of epoch   66.7% of run"),
            std::string::npos)
      << contents(f.get());
}

// On a terminal the line is redrawn in place (carriage return, erase to the end of the line)
// and finish() ends it.
TEST(Progress, TerminalLineIsRedrawnInPlace) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const char* name = ::ptsname(master);
  ASSERT_NE(name, nullptr);
  File tty(std::fopen(name, "w"), &std::fclose);
  ASSERT_NE(tty, nullptr);
  ASSERT_TRUE(::isatty(fileno(tty.get())));
  {
    Progress p(tty.get(), 100);
    p.update(100, 5.0, 5, 0.025f, 0);
    p.finish();
  }
  tty.reset();
  std::string got;
  char buf[512];
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(master);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], '\r') << got;
  EXPECT_NE(got.find("epoch 1  100.0%"), std::string::npos) << got;
  EXPECT_NE(got.find("\033[K"), std::string::npos) << got;
  // The terminal turns the final '\n' into "\r\n".
  EXPECT_EQ(got.substr(got.size() - 2), "\r\n") << got;
}

}  // namespace
}  // namespace pagedw2v
