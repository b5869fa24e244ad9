// SPDX-License-Identifier: Apache-2.0
// The first end-to-end checks: fib's results at several worker counts.
#include <gtest/gtest.h>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::fib_ults;

long fib_sequential(int n) { return n < 2 ? n : fib_sequential(n - 1) + fib_sequential(n - 2); }

class fib_at_workers : public ::testing::TestWithParam<unsigned> {};

// n up to 30 (1.3 million ULTs) in plain builds; sanitizers stop at 20.
TEST_P(fib_at_workers, matches_sequential_for_every_n_up_to_30) {
  const int max_n = ito::test::tsan || ito::test::asan ? 20 : 30;
  ito::start_main_thread_with_worker_size(GetParam(), [max_n] {
    for (int n = 0; n <= max_n; n += (n < 20 ? 1 : 5)) EXPECT_EQ(fib_ults(n), fib_sequential(n)) << n;
  });
}

INSTANTIATE_TEST_SUITE_P(workers, fib_at_workers, ::testing::Values(1u, 2u, 4u, 8u));

}  // namespace
