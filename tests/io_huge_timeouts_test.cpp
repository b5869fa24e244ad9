// SPDX-License-Identifier: Apache-2.0
// Waits "forever" stay asleep. A sleep or timed wait of hours::max(),
// LLONG_MAX nanoseconds or a deadline centuries away must saturate to "never",
// not overflow now + timeout into the past and return at once. Each case runs
// in a child process (a gtest death test): its ULT is still asleep 50 ms
// later, and the child then exits with the sleeper still waiting. Durations
// and deadlines in the past (hours::min(), time_point::min()) return at once.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "ito/ito.h"
#include "ito/io.hpp"
#include "ito/sync.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using sys = std::chrono::system_clock;

class huge_timeouts : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style); }
};

// The deprecated sleeps (ito::sleep_for_ns, ito::io::sleep_*) are tested
// here beside ito::sleep_for / sleep_until, which replace them.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// In a child: runs wait() in a ULT, and exits 0 if it is still waiting 50 ms
// later, 1 (with a message) if it returned.
template <class Wait>
void expect_still_waiting(const char* what, Wait wait) {
  EXPECT_EXIT(
      {
        ito::start_main_thread_with_worker_size(2, [&] {
          std::atomic<bool> returned{false};
          auto sleeper = ito::create_thread([&] {
            wait();
            returned = true;
          });
          ito::sleep_for(std::chrono::milliseconds(50));
          if (returned.load()) {
            std::fprintf(stderr, "returned at once\n");
            std::_Exit(1);
          }
          std::_Exit(0);
        });
      },
      ::testing::ExitedWithCode(0), "")
      << what;
}

TEST_F(huge_timeouts, ult_sleeps_of_the_largest_durations_keep_sleeping) {
  expect_still_waiting("ito::sleep_for(hours::max())",
                       [] { ito::sleep_for(std::chrono::hours::max()); });
  expect_still_waiting("ito::sleep_for(nanoseconds::max())",
                       [] { ito::sleep_for(std::chrono::nanoseconds::max()); });
  expect_still_waiting("ito::sleep_for(1e300 s as double)",
                       [] { ito::sleep_for(std::chrono::duration<double>(1e300)); });
  expect_still_waiting("ito::sleep_for_ns(LLONG_MAX)", [] { ito::sleep_for_ns(LLONG_MAX); });
  expect_still_waiting("ito_sleep_ns(LLONG_MAX)", [] { (void)ito_sleep_ns(LLONG_MAX); });
  expect_still_waiting("io::sleep_for_ns(LLONG_MAX)", [] { ito::io::sleep_for_ns(LLONG_MAX); });
  expect_still_waiting("io::sleep_for(hours::max())",
                       [] { ito::io::sleep_for(std::chrono::hours::max()); });
  expect_still_waiting("io::sleep_for(nanoseconds::max())",
                       [] { ito::io::sleep_for(std::chrono::nanoseconds::max()); });
  expect_still_waiting("io::sleep_for(1e300 s as double)",
                       [] { ito::io::sleep_for(std::chrono::duration<double>(1e300)); });
  expect_still_waiting("io::nanosleep(time_t max)", [] {
    const timespec forever{std::numeric_limits<time_t>::max(), 999'999'999};
    ito::io::nanosleep(&forever, nullptr);
  });
}

TEST_F(huge_timeouts, ult_sleeps_until_the_farthest_deadlines_keep_sleeping) {
  expect_still_waiting("ito::sleep_until(steady time_point::max())",
                       [] { ito::sleep_until(steady::time_point::max()); });
  expect_still_waiting("ito::sleep_until(steady hours::max())", [] {
    ito::sleep_until(std::chrono::time_point<steady, std::chrono::hours>::max());
  });
  expect_still_waiting("io::sleep_until(steady time_point::max())",
                       [] { ito::io::sleep_until(steady::time_point::max()); });
  expect_still_waiting("io::sleep_until(steady hours::max())", [] {
    ito::io::sleep_until(std::chrono::time_point<steady, std::chrono::hours>::max());
  });
  expect_still_waiting("io::sleep_until_ns(LLONG_MAX)",
                       [] { ito::io::sleep_until_ns(LLONG_MAX); });
}

TEST_F(huge_timeouts, timed_waits_with_the_largest_timeouts_keep_waiting) {
  expect_still_waiting("condition_variable::wait_for(hours::max())", [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    cv.wait_for(lock, std::chrono::hours::max());
  });
  expect_still_waiting("condition_variable::wait_for(nanoseconds::max())", [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    cv.wait_for(lock, std::chrono::nanoseconds::max());
  });
  expect_still_waiting("condition_variable::wait_until(system_clock max)", [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    cv.wait_until(lock, sys::time_point::max());
  });
  expect_still_waiting("condition_variable::wait_until(system_clock hours::max())", [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    cv.wait_until(lock, std::chrono::time_point<sys, std::chrono::hours>::max());
  });
  expect_still_waiting("ito_cond_timedwait(time_t max)", [] {
    ito_mutex_t m = ITO_MUTEX_INITIALIZER;
    ito_cond_t c = ITO_COND_INITIALIZER;
    ito_mutex_lock(&m);
    const timespec forever{std::numeric_limits<time_t>::max(), 999'999'999};
    ito_cond_timedwait(&c, &m, &forever);
  });
  expect_still_waiting("io::poll(socket, INT_MAX)", [] {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
    pollfd p{sv[0], POLLIN, 0};
    ito::io::poll(p, INT_MAX);
  });
}

// The other end: the most negative durations and earliest deadlines are
// already past, and return at once (saturated, not wrapped into the future).
TEST(huge_timeouts_past, the_most_negative_waits_return_at_once) {
  ito::start_main_thread_with_worker_size(1, [] {
    const auto t0 = steady::now();
    ito::sleep_for_ns(LLONG_MIN);
    ito::sleep_for(std::chrono::hours::min());
    ito::sleep_for(std::chrono::duration<double>(-1e300));
    ito::sleep_until(steady::time_point::min());
    ito::sleep_until(std::chrono::time_point<steady, std::chrono::hours>::min());
    EXPECT_EQ(ito::io::sleep_for_ns(LLONG_MIN), 0);
    EXPECT_EQ(ito::io::sleep_for(std::chrono::hours::min()), 0);
    EXPECT_EQ(ito::io::sleep_for(std::chrono::duration<double>(-1e300)), 0);
    EXPECT_EQ(ito::io::sleep_until(steady::time_point::min()), 0);
    EXPECT_EQ(ito::io::sleep_until(std::chrono::time_point<steady, std::chrono::hours>::min()), 0);
    EXPECT_EQ(ito::io::sleep_until_ns(LLONG_MIN), 0);
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    EXPECT_EQ(cv.wait_for(lock, std::chrono::hours::min()), std::cv_status::timeout);
    EXPECT_EQ(cv.wait_until(lock, sys::time_point::min()), std::cv_status::timeout);
    EXPECT_EQ(cv.wait_until(lock, std::chrono::time_point<sys, std::chrono::hours>::min()),
              std::cv_status::timeout);
    EXPECT_LT(steady::now() - t0, 5s);
  });
}

}  // namespace
