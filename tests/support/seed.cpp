#include "seed.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>

namespace pagedw2v::testing_util {
namespace {

constexpr const char* kVariable = "PAGEDW2V_TEST_SEED";

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The seeds of the running test: its base, and how many it has drawn. Outside any test (a
/// suite's set-up, static initialisation) the program's base serves.
struct SeedState {
  std::mutex mutex;
  bool in_test = false;
  uint64_t base = 0;
  uint64_t drawn = 0;
  uint64_t drawn_outside = 0;
  std::map<std::string, uint64_t> runs;  ///< times each test has started (--gtest_repeat)
};

SeedState& state() {
  static SeedState s;
  return s;
}

/// Gives every test run its base, and prints it when a test that drew seeds fails.
class SeedPrinter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    SeedState& s = state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    const uint64_t run = s.runs[std::string(info.test_suite_name()) + "." + info.name()]++;
    // The first run of a test draws from the program's base; a repeat (--gtest_repeat) from
    // one of its own, which it prints, so that PAGEDW2V_TEST_SEED replays that run alone.
    s.base = run == 0 ? base_seed() : splitmix64(base_seed() ^ splitmix64(run));
    s.drawn = 0;
    s.in_test = true;
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    SeedState& s = state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    s.in_test = false;
    if (!info.result()->Failed() || s.drawn + s.drawn_outside == 0) return;
    const auto n = static_cast<unsigned long long>(s.drawn);
    const auto base = static_cast<unsigned long long>(s.base);
    std::printf("[   SEED   ] %s.%s drew %llu seed%s from base %llu; %s=%llu replays them\n",
                info.test_suite_name(), info.name(), n, n == 1 ? "" : "s", base, kVariable, base);
    if (s.drawn_outside > 0 && s.base != base_seed()) {
      std::printf("[   SEED   ] (and %llu outside the test from base %llu)\n",
                  static_cast<unsigned long long>(s.drawn_outside),
                  static_cast<unsigned long long>(base_seed()));
    }
    std::fflush(stdout);
  }
};

const bool kPrinterInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedPrinter);
  return true;
}();

}  // namespace

uint64_t base_seed() {
  static const uint64_t base = [] {
    const char* v = std::getenv(kVariable);
    if (v != nullptr && *v != '\0') {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end != nullptr && *end == '\0') return static_cast<uint64_t>(n);
      std::fprintf(stderr, "%s=%s is not a number; drawing a fresh seed\n", kVariable, v);
    }
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return base;
}

uint64_t fresh_seed() {
  (void)kPrinterInstalled;
  SeedState& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  const uint64_t base = s.in_test ? s.base : base_seed();
  const uint64_t k = s.in_test ? s.drawn++ : s.drawn_outside++;
  // Seeds stay below 2^32, as std::random_device's were: some tests seed 32-bit engines.
  return splitmix64(splitmix64(base) + k) & 0xffffffffu;
}

}  // namespace pagedw2v::testing_util
