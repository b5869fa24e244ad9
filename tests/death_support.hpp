// SPDX-License-Identifier: Apache-2.0
// Shared by the misuse tests: a bad ITO_* variable must stop a C++ program
// with status 2 and a message matching `pattern`.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ito/thread.hpp"

namespace ito::test {

// Runs a program start with NAME=VALUE in a death-test child; it must exit(2).
inline void expect_env_exit(const char* name, const char* value, const std::string& pattern) {
  EXPECT_EXIT(
      {
        setenv(name, value, 1);
        ito::start_main_thread([] {});
      },
      ::testing::ExitedWithCode(2), pattern)
      << name << "=" << value;
}

}  // namespace ito::test
