// The first end-to-end checks: fib's results at several worker counts.
#include <gtest/gtest.h>

#include "ito/thread.hpp"

namespace {

long fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(std::move(child)) + b;
}

long fib_sequential(int n) { return n < 2 ? n : fib_sequential(n - 1) + fib_sequential(n - 2); }

class fib_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(fib_at_workers, matches_sequential_for_every_n_up_to_30) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    for (int n = 0; n <= 30; n += (n < 20 ? 1 : 5)) EXPECT_EQ(fib(n), fib_sequential(n)) << n;
  });
}

INSTANTIATE_TEST_SUITE_P(workers, fib_at_workers, ::testing::Values(1u, 2u, 4u, 8u));

}  // namespace
