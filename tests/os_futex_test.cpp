// SPDX-License-Identifier: Apache-2.0
// The one futex wrapper (src/os/futex.*): what a wait returns for a changed
// value, a timeout (relative, monotonic and realtime deadlines) and a wake-up,
// and that it leaves errno alone.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "os/futex.hpp"

namespace {

using ito::os::futex_status;

std::int64_t now_ns(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

TEST(os_futex, a_value_that_no_longer_matches_returns_at_once_as_woken) {
  ito::os::futex_word word{1};
  errno = 1234;
  EXPECT_EQ(ito::os::futex_wait(&word, 0), futex_status::woken);
  EXPECT_EQ(errno, 1234) << "EAGAIN must not leak into the caller's errno";
}

TEST(os_futex, a_relative_timeout_runs_out) {
  ito::os::futex_word word{0};
  errno = 0;
  EXPECT_EQ(ito::os::futex_wait_for(&word, 0, 1'000'000), futex_status::timed_out);
  EXPECT_EQ(ito::os::futex_wait_for(&word, 0, 0), futex_status::timed_out);
  EXPECT_EQ(errno, 0);
}

TEST(os_futex, absolute_deadlines_on_either_clock_run_out) {
  ito::os::futex_word word{0};
  EXPECT_EQ(ito::os::futex_wait_until(&word, 0, now_ns(CLOCK_MONOTONIC) + 1'000'000),
            futex_status::timed_out);
  EXPECT_EQ(ito::os::futex_wait_until(&word, 0, now_ns(CLOCK_REALTIME) + 1'000'000, CLOCK_REALTIME),
            futex_status::timed_out);
  EXPECT_EQ(ito::os::futex_wait_until(&word, 0, -1), futex_status::timed_out);
}

TEST(os_futex, a_sleeper_is_woken_by_a_store_and_a_wake) {
  ito::os::futex_word word{0};
  std::atomic<bool> done{false};
  std::thread sleeper([&] {
    while (word.load() == 0) ito::os::futex_wait(&word, 0);
    done.store(true);
  });
  word.store(1);
  ito::os::futex_wake(&word, 1);
  sleeper.join();
  EXPECT_TRUE(done.load());
}

}  // namespace
