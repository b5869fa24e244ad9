// SPDX-License-Identifier: Apache-2.0
// Preemption's settings: ITO_PREEMPT and options.preempt_us are range-checked
// like every setting, and a nonzero slice where preemption cannot run (this
// program links libito.a: ito's code lies inside the program's) stops the
// start with a message saying why, never a runtime that silently does not
// preempt. Preemption itself: tests/posix/progs/preempt.c and
// tests/preempt/preempt_shared_test.cpp (libito.so).
#include <gtest/gtest.h>

#include <string>

#include "arch/sanitizer.hpp"
#include "death_support.hpp"
#include "ito/options.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::expect_env_exit;

class preempt_config : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style); }
};

#if ITO_TSAN
const char* const why_unavailable = "ThreadSanitizer";
#else
const char* const why_unavailable = "libito.so";
#endif

TEST_F(preempt_config, a_slice_with_libito_a_is_refused_at_start) {
  ito::options o;
  o.workers = 1;
  o.preempt_us = 10'000;
  try {
    ito::runtime rt(o);
    ADD_FAILURE() << "a runtime started with preemption that cannot work here";
  } catch (const ito::config_error& e) {
    EXPECT_FALSE(e.from_environment());
    EXPECT_NE(std::string(e.what()).find("preemption is unavailable here"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(why_unavailable), std::string::npos) << e.what();
  }
  // Nothing was left running: a runtime starts afterwards.
  EXPECT_EQ(ito::start_main_thread_with_worker_size(1, [] { return 7; }), 7);
}

TEST_F(preempt_config, the_variable_is_refused_too_and_zero_means_off) {
  expect_env_exit("ITO_PREEMPT", "5000", "ITO_PREEMPT / options.preempt_us: preemption is unavailable");
  expect_env_exit("ITO_PREEMPT", "banana",
                  "ito: ITO_PREEMPT=banana is invalid: expected an integer in \\[0, 1000000\\]");
  expect_env_exit("ITO_PREEMPT", "1000001", "ITO_PREEMPT=1000001 is invalid");
  ito::options o;
  o.preempt_us = 0;
  ito::runtime rt(o);  // off: starts
}

TEST_F(preempt_config, an_option_out_of_range_throws) {
  ito::options o;
  o.preempt_us = 2'000'000;
  try {
    (void)ito::resolve_options(o);
    ADD_FAILURE() << "accepted";
  } catch (const ito::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("options.preempt_us=2000000 is invalid"), std::string::npos)
        << e.what();
  }
}

}  // namespace
