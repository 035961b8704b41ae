#pragma once
// The tests' one check for bad input: the call must throw one larmor::Error (not Cancelled) whose text is a
// single line containing `needle`; returns the text.
#include <gtest/gtest.h>

#include <string>

#include "larmor/util/error.hpp"

namespace larmor::test {

template <class F>
std::string expectError(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const Cancelled&) {
    ADD_FAILURE() << "unexpected Cancelled";
    return {};
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what << "\nexpected to contain: " << needle;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message spans lines: " << what;
    return what;
  }
  ADD_FAILURE() << "no Error thrown (expected one containing '" << needle << "')";
  return {};
}

}  // namespace larmor::test
