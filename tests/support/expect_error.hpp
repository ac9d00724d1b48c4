#pragma once
// Expecting an exception whose message names something.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.hpp"

namespace pagedw2v::testing_util {

/// Expects `f` to throw an `E` (pagedw2v::Error unless named) whose message contains `fragment`
/// and is one line.
template <class E = Error>
void expect_error_naming(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "nothing thrown (expected: " << fragment << ")";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "more than one line: " << what;
  }
}

}  // namespace pagedw2v::testing_util
