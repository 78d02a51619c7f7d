// Helpers shared by the tensor tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace aclgrad::testing {

/// Runs f, expects it to throw exactly E (or a subclass), and returns what(); records a test
/// failure when nothing or something else is thrown.
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

}  // namespace aclgrad::testing
