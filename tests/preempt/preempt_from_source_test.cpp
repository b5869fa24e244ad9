// SPDX-License-Identifier: Apache-2.0
// Preemption from source, built twice: with ito in libito.so, and with
// libito.a linked with ito-text.ld (ito::ito does; without the script a slice
// is refused: preempt_config_test). At one worker a ULT that never calls into ito
// holds the worker unless ito preempts it: each test below hangs without it
// (ctest's timeout) and passes with options.preempt_us set.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "ito/ito.hpp"

namespace {

ito::options one_worker_preempting() {
  ito::options o;
  o.workers = 1;
  o.preempt_us = 2'000;
  return o;
}

TEST(preempt_from_source, a_ult_spinning_on_a_flag_its_parent_sets_finishes) {
  ito::runtime rt(one_worker_preempting());  // this thread is the main ULT now
  std::atomic<bool> go{false};
  auto child = ito::create_thread([&] {
    while (!go.load(std::memory_order_relaxed)) {
    }
    return 1;
  });
  // The child spins on the only worker while the main ULT sleeps: the main
  // ULT wakes only when the child is preempted.
  ito::sleep_for(std::chrono::nanoseconds(20'000'000));
  go.store(true, std::memory_order_relaxed);
  EXPECT_EQ(ito::join(std::move(child)), 1);
}

// errno's address asked afresh (__errno_location is const: the compiler may
// keep the one from before the loop, another worker's after a migration).
int* (*volatile errno_at)() = __errno_location;

// A Kahan sum in registers across preemptions, and errno.
double harmonic(long n) {
  double s = 0, c = 0;
  for (long k = 1; k <= n; ++k) {
    const double y = 1.0 / static_cast<double>(k) - c;
    const double t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return s;
}

TEST(preempt_from_source, computing_ults_keep_their_registers_and_errno) {
  ito::runtime rt(one_worker_preempting());
  constexpr long terms = 20'000'000;
  const double expected = harmonic(terms);
  std::vector<ito::future<bool>> sums;
  for (int i = 0; i < 3; ++i)
    sums.push_back(ito::create_thread([&, i] {
      errno = 100 + i;
      const double got = harmonic(terms);
      return got == expected && *errno_at() == 100 + i;
    }));
  for (auto& f : sums) EXPECT_TRUE(ito::join(std::move(f)));
}

}  // namespace
