// SPDX-License-Identifier: Apache-2.0
// A program built without -fsplit-stack (this one) that selects the lazy or
// fair_use stack policy stops at start-up with a clear message, never runs
// split-stack policies on code that cannot grow its stack. The new ITO_STACK_*
// variables are range-checked like the others.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ito/options.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "death_support.hpp"
#include "test_support.hpp"

namespace {

using ito::test::expect_env_exit;

class split_policy_misuse : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style); }
};

TEST_F(split_policy_misuse, this_program_is_not_linked_with_the_split_stack_runtime) {
  EXPECT_FALSE(ito::split_stack_runtime_linked());
}

TEST_F(split_policy_misuse, ito_stack_lazy_or_fair_use_exits_with_status_2) {
#if defined(__x86_64__)
  const std::string why = "needs a program built with -fsplit-stack and linked with ito's "
                          "split-stack runtime";
#else
  const std::string why = "needs split stacks \\(gcc -fsplit-stack\\), which exist on x86-64 only";
#endif
  expect_env_exit("ITO_STACK", "lazy", "ito: ITO_STACK / options.stacks: the lazy stack policy " + why);
  expect_env_exit("ITO_STACK", "fair_use", "the fair_use stack policy " + why);
}

TEST_F(split_policy_misuse, options_stacks_lazy_throws_config_error) {
  ito::options o;
  o.stacks = ito::stack_policy::lazy;
  EXPECT_THROW(ito::resolve_options(o), ito::config_error);
  try {
    ito::resolve_options(o);
  } catch (const ito::config_error& e) {
    EXPECT_FALSE(e.from_environment());
#if defined(__x86_64__)
    EXPECT_NE(std::string(e.what()).find("ito::split_stack"), std::string::npos) << e.what();
#else
    EXPECT_NE(std::string(e.what()).find("x86-64 only"), std::string::npos) << e.what();
#endif
  }
}

TEST_F(split_policy_misuse, bad_block_size_and_allocator_exit_with_status_2) {
  const std::string range = "expected a size in \\[8K, 64M\\] bytes";
  expect_env_exit("ITO_STACK_BLOCK_SIZE", "4K", "ito: ITO_STACK_BLOCK_SIZE=4K is invalid: " + range);
  expect_env_exit("ITO_STACK_BLOCK_SIZE", "128M", "ITO_STACK_BLOCK_SIZE=128M is invalid: " + range);
  expect_env_exit("ITO_STACK_BLOCK_SIZE", "lots", "ITO_STACK_BLOCK_SIZE=lots is invalid");
  expect_env_exit("ITO_STACK_ALLOC", "sbrk", "ito: ITO_STACK_ALLOC=sbrk is invalid: expected mmap or malloc");
}

TEST_F(split_policy_misuse, good_block_size_and_allocator_are_accepted) {
  setenv("ITO_STACK_BLOCK_SIZE", "64M", 1);
  setenv("ITO_STACK_ALLOC", "malloc", 1);
  ito::options o = ito::resolve_options({});
  EXPECT_EQ(o.stack_block_size, std::size_t{64} << 20);
  EXPECT_EQ(o.stack_allocator, ito::stack_alloc::malloc);
  setenv("ITO_STACK_BLOCK_SIZE", "8K", 1);
  EXPECT_EQ(ito::resolve_options({}).stack_block_size, std::size_t{8} << 10);
  unsetenv("ITO_STACK_BLOCK_SIZE");
  unsetenv("ITO_STACK_ALLOC");
  EXPECT_EQ(ito::resolve_options({}).stack_allocator, ito::stack_alloc::mmap);
}

}  // namespace
