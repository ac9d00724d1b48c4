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

uint64_t hash_name(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// The seeds drawn so far, by the name of the test (or suite) that drew them.
struct Draws {
  std::mutex mutex;
  std::map<std::string, uint64_t> count;
};

Draws& draws() {
  static Draws d;
  return d;
}

/// "Suite.Test" of the running test, "Suite" in a suite's set-up, "" outside both.
std::string current_name() {
  const ::testing::UnitTest* unit = ::testing::UnitTest::GetInstance();
  if (const ::testing::TestInfo* t = unit->current_test_info()) {
    return std::string(t->test_suite_name()) + "." + t->name();
  }
  if (const ::testing::TestSuite* s = unit->current_test_suite()) return s->name();
  return "";
}

uint64_t drawn_by(const std::string& name) {
  Draws& d = draws();
  const std::lock_guard<std::mutex> lock(d.mutex);
  const auto it = d.count.find(name);
  return it == d.count.end() ? 0 : it->second;
}

/// Prints the base seed when a test that drew seeds (or whose suite did) fails.
class SeedPrinter : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    const std::string suite = info.test_suite_name();
    const uint64_t n = drawn_by(suite + "." + info.name()) + drawn_by(suite) + drawn_by("");
    if (n == 0) return;
    std::printf("[   SEED   ] %s.%s drew %llu seed%s from base %llu; %s=%llu replays them\n",
                suite.c_str(), info.name(), static_cast<unsigned long long>(n), n == 1 ? "" : "s",
                static_cast<unsigned long long>(base_seed()), kVariable,
                static_cast<unsigned long long>(base_seed()));
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
  const std::string name = current_name();
  uint64_t k = 0;
  {
    Draws& d = draws();
    const std::lock_guard<std::mutex> lock(d.mutex);
    k = d.count[name]++;
  }
  // Seeds stay below 2^32: some tests seed 32-bit engines or print them as such.
  return splitmix64(splitmix64(base_seed() ^ hash_name(name)) + k) & 0xffffffffu;
}

}  // namespace pagedw2v::testing_util
