#pragma once
// Seeds of random tests: fresh on every run, printed when a test fails, replayed from the
// environment.
//
// Each run of a test draws its seeds from one base seed: the program's (drawn afresh from
// std::random_device, or PAGEDW2V_TEST_SEED when that is set) on its first run, one of its own on
// a repeat (--gtest_repeat). A test that drew a seed and failed prints its base:
//
//   [   SEED   ] Suite.Test drew 2 seeds from base 1234567; PAGEDW2V_TEST_SEED=1234567 replays them
//
// and `PAGEDW2V_TEST_SEED=1234567 test_x --gtest_filter=Suite.Test` reruns it on the same inputs
// (ctest runs every test in a process of its own, so each draws from a fresh base).

#include <cstdint>

namespace pagedw2v::testing_util {

/// The next seed of the running test (of the program outside any test).
uint64_t fresh_seed();

/// The base seed of this test program: PAGEDW2V_TEST_SEED when it is set, else a fresh one.
uint64_t base_seed();

}  // namespace pagedw2v::testing_util
