// SPDX-License-Identifier: Apache-2.0
// sem_t's timed waits and pthread_once under contention, through the POSIX
// layer (which keeps both in glibc's storage on ito's sync cores). The
// runtime starts lazily on the first call.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

timespec in_us(clockid_t clock, long us) {
  timespec t{};
  clock_gettime(clock, &t);
  t.tv_sec += us / 1'000'000;
  t.tv_nsec += (us % 1'000'000) * 1000L;
  if (t.tv_nsec >= 1'000'000'000L) t.tv_sec++, t.tv_nsec -= 1'000'000'000L;
  return t;
}

std::int64_t mono_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1'000'000;
}

TEST(PosixSem, TimedWaitsTimeOutOnBothClocks) {
  sem_t s;
  ASSERT_EQ(ito_posix_sem_init(&s, 0, 0), 0);
  std::int64_t t0 = mono_ms();
  timespec d = in_us(CLOCK_REALTIME, 20'000);
  errno = 0;
  EXPECT_EQ(ito_posix_sem_timedwait(&s, &d), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_GE(mono_ms() - t0, 19);  // CLOCK_REALTIME and the ms rounding may differ by one
  t0 = mono_ms();
  d = in_us(CLOCK_MONOTONIC, 20'000);
  errno = 0;
  EXPECT_EQ(ito_posix_sem_clockwait(&s, CLOCK_MONOTONIC, &d), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_GE(mono_ms() - t0, 20);
  int v = -1;
  EXPECT_EQ(ito_posix_sem_getvalue(&s, &v), 0);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(ito_posix_sem_destroy(&s), 0);
}

struct race {
  sem_t sem;
  std::atomic<bool> stop{false};
  std::atomic<long> taken{0}, timed_out{0};
};

// Alternates sem_timedwait and sem_clockwait with deadlines 0-100 µs away.
void* take_until_stopped(void* arg) {
  auto* r = static_cast<race*>(arg);
  std::uint64_t x = reinterpret_cast<std::uintptr_t>(&arg) | 1;
  for (unsigned i = 0; !r->stop.load(std::memory_order_relaxed); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const long us = static_cast<long>(x % 100);
    timespec d = in_us(i % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME, us);
    const int rc = i % 2 ? ito_posix_sem_clockwait(&r->sem, CLOCK_MONOTONIC, &d)
                         : ito_posix_sem_timedwait(&r->sem, &d);
    if (rc == 0) r->taken.fetch_add(1);
    else if (errno == ETIMEDOUT) r->timed_out.fetch_add(1);
    else ADD_FAILURE() << "errno " << errno;
    if (x % 4 == 0) ito::yield();
  }
  return nullptr;
}

// Posts race the waiters' time-outs; every post is taken once or still counted.
TEST(PosixSem, APostRacingATimeOutIsNeverLost) {
  race r;
  ASSERT_EQ(ito_posix_sem_init(&r.sem, 0, 0), 0);
  const int takers = ito::test::tsan ? 8 : 32;
  const auto scaled_posts = static_cast<long>(ito::test::scaled(20'000));
  const long posts = scaled_posts < 200 ? 200 : scaled_posts;
  std::vector<pthread_t> t(takers);
  for (auto& h : t) ASSERT_EQ(ito_pthread_create(&h, nullptr, take_until_stopped, &r), 0);
  for (long i = 0; i < posts; ++i) {
    ASSERT_EQ(ito_posix_sem_post(&r.sem), 0);
    if (i % 3 == 0) ito::yield();
  }
  r.stop.store(true);
  for (auto& h : t) ASSERT_EQ(ito_pthread_join(h, nullptr), 0);
  int left = -1;
  ASSERT_EQ(ito_posix_sem_getvalue(&r.sem, &left), 0);
  EXPECT_EQ(r.taken.load() + left, posts);
  EXPECT_GT(r.timed_out.load(), 0);
  EXPECT_EQ(ito_posix_sem_destroy(&r.sem), 0);
}

pthread_once_t g_once = PTHREAD_ONCE_INIT;
std::atomic<int> g_once_runs{0};
int g_once_value = 0;  // plain: pthread_once's return must publish it

void slow_init() {
  g_once_runs.fetch_add(1);
  for (int k = 0; k < 10; ++k) ito::sleep_for(std::chrono::nanoseconds(100'000));  // the others arrive and park
  g_once_value = 42;
}

void* call_once_and_read(void*) {
  EXPECT_EQ(ito_pthread_once(&g_once, slow_init), 0);
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(g_once_value));
}

TEST(PosixOnce, RunsOnceUnderContentionAndPublishesItsEffect) {
  g_once = PTHREAD_ONCE_INIT;  // fresh under --gtest_repeat
  g_once_runs = 0;
  g_once_value = 0;
  const int threads = ito::test::tsan ? 16 : 100;
  std::vector<pthread_t> t(threads);
  for (auto& h : t) ASSERT_EQ(ito_pthread_create(&h, nullptr, call_once_and_read, nullptr), 0);
  for (auto& h : t) {
    void* seen = nullptr;
    ASSERT_EQ(ito_pthread_join(h, &seen), 0);
    EXPECT_EQ(reinterpret_cast<std::intptr_t>(seen), 42);
  }
  EXPECT_EQ(g_once_runs.load(), 1);
}

// pthread_exit inside the routine counts as cancellation: the flag goes back
// to "not run" and a caller parked meanwhile runs the routine itself.
pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;
std::atomic<int> g_exit_runs{0};
void init_that_exits_the_first_time() {
  if (g_exit_runs.fetch_add(1) == 0) {
    ito::sleep_for(std::chrono::nanoseconds(2'000'000));  // the second caller arrives and parks
    ito_pthread_exit(reinterpret_cast<void*>(7));
  }
}
void* call_exit_once(void*) {
  ito_pthread_once(&g_exit_once, init_that_exits_the_first_time);
  return nullptr;
}

TEST(PosixOnce, PthreadExitInTheRoutineLetsAnotherCallerRunIt) {
  g_exit_once = PTHREAD_ONCE_INIT;
  g_exit_runs = 0;
  pthread_t first, second;
  ASSERT_EQ(ito_pthread_create(&first, nullptr, call_exit_once, nullptr), 0);
  while (g_exit_runs.load() == 0) ito::yield();
  ASSERT_EQ(ito_pthread_create(&second, nullptr, call_exit_once, nullptr), 0);
  void* r = nullptr;
  ASSERT_EQ(ito_pthread_join(first, &r), 0);
  EXPECT_EQ(r, reinterpret_cast<void*>(7));
  ASSERT_EQ(ito_pthread_join(second, &r), 0);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(g_exit_runs.load(), 2);
  EXPECT_EQ(ito_pthread_once(&g_exit_once, init_that_exits_the_first_time), 0);
  EXPECT_EQ(g_exit_runs.load(), 2);
}

}  // namespace
