#pragma once
// Seeds of random tests: fresh on every run, printed when a test fails, replayed from the
// environment.
//
// fresh_seed() derives each seed from one base seed per test program, the test's name and how
// many seeds the test drew before, so a test draws the same seeds whatever runs before it. The
// base is drawn afresh (std::random_device) unless PAGEDW2V_TEST_SEED gives it. A test that
// drew a seed and failed prints one line with the base:
//
//   [   SEED   ] Suite.Test drew 2 seeds from base 1234567; PAGEDW2V_TEST_SEED=1234567 replays them
//
// so `PAGEDW2V_TEST_SEED=1234567 test_x --gtest_filter=Suite.Test` reruns it on the same inputs.

#include <cstdint>

namespace pagedw2v::testing_util {

/// The next seed of the running test (of the test suite in SetUpTestSuite; of the program
/// outside any test).
uint64_t fresh_seed();

/// The base seed of this test program: PAGEDW2V_TEST_SEED when it is set, else a fresh one.
uint64_t base_seed();

}  // namespace pagedw2v::testing_util
