// SPDX-License-Identifier: Apache-2.0
// pthread_mutex_t and pthread_cond_t are src/sync's cores (ito::mutex,
// ito::condition_variable): the kinds and codes over the core, the
// starvation-mode hand-off, and timed locks racing hand-overs.
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <random>
#include <vector>

#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

timespec realtime_after_ns(long long ns) {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  long long total = t.tv_nsec + ns;
  t.tv_sec += static_cast<time_t>(total / 1'000'000'000);
  t.tv_nsec = static_cast<long>(total % 1'000'000'000);
  return t;
}

pthread_mutex_t g_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
pthread_mutex_t g_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

TEST(posix_mutex_core, static_kinds_keep_their_codes) {
  ito::start_main_thread_with_worker_size(2, [] {
    ASSERT_EQ(ito_pthread_mutex_lock(&g_recursive), 0);
    ASSERT_EQ(ito_pthread_mutex_lock(&g_recursive), 0);
    ASSERT_EQ(ito_pthread_mutex_trylock(&g_recursive), 0);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [] { return ito_pthread_mutex_trylock(&g_recursive); }).get(),
              EBUSY);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [] { return ito_pthread_mutex_unlock(&g_recursive); }).get(),
              EPERM);
    EXPECT_EQ(ito_pthread_mutex_destroy(&g_recursive), EBUSY);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(ito_pthread_mutex_unlock(&g_recursive), 0);
    EXPECT_EQ(ito_pthread_mutex_unlock(&g_recursive), EPERM);

    ASSERT_EQ(ito_pthread_mutex_lock(&g_errorcheck), 0);
    EXPECT_EQ(ito_pthread_mutex_lock(&g_errorcheck), EDEADLK);
    EXPECT_EQ(ito_pthread_mutex_trylock(&g_errorcheck), EBUSY);
    timespec soon = realtime_after_ns(1'000'000);
    EXPECT_EQ(ito_pthread_mutex_timedlock(&g_errorcheck, &soon), EDEADLK);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [] {
                timespec t = realtime_after_ns(2'000'000);
                return ito_pthread_mutex_timedlock(&g_errorcheck, &t);
              }).get(),
              ETIMEDOUT);
    ASSERT_EQ(ito_pthread_mutex_unlock(&g_errorcheck), 0);
    EXPECT_EQ(ito_pthread_mutex_destroy(&g_errorcheck), 0);
  });
}

// The starvation mode the POSIX mutex now shares with ito::mutex: a waiter
// gets in while another ULT relocks in a tight loop (no timing is asserted:
// without hand-off this could go on for ever).
TEST(posix_mutex_core, a_waiter_gets_in_while_a_ult_relocks_in_a_loop) {
  ito::start_main_thread_with_worker_size(2, [] {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    std::atomic<bool> stop{false};
    std::atomic<bool> hog_started{false};
    auto hog = ito::create_thread(ito::own_ult, [&] {
      std::uint64_t rounds = 0;
      hog_started = true;
      while (!stop.load(std::memory_order_relaxed)) {
        ito_pthread_mutex_lock(&m);
        if (++rounds % 100'000 == 0) ito::yield();
        ito_pthread_mutex_unlock(&m);
      }
      return rounds;
    });
    auto victim = ito::create_thread(ito::own_ult, [&] {
      // A thief may take the hog and then lose its CPU for longer than the
      // victim's whole loop (seen under emulation on a loaded machine): wait
      // until the hog runs, so that the two really compete.
      while (!hog_started) ito::sleep_for(std::chrono::nanoseconds(100'000));
      int got = 0;
      for (int i = 0; i < 20; ++i) {
        if (ito_pthread_mutex_lock(&m) == 0) ++got;
        ito_pthread_mutex_unlock(&m);
        ito::sleep_for(std::chrono::nanoseconds(100'000));
      }
      return got;
    });
    EXPECT_EQ(victim.get(), 20);
    stop = true;
    EXPECT_GT(hog.get(), 0u);
  });
}

// Time-outs racing hand-overs, in both modes: a lost wake-up hangs, a wrong
// count or hand-over breaks exclusion or leaves the mutex busy.
TEST(posix_mutex_core, timed_locks_racing_hand_overs_keep_exclusion) {
  const int rounds = static_cast<int>(ito::test::scaled(1500));
  ito::start_main_thread_with_worker_size(4, [&] {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    std::atomic<int> inside{0};
    std::atomic<int> violations{0};
    std::uint64_t counter = 0;  // plain: the mutex alone protects it
    std::atomic<std::uint64_t> taken{0};
    std::atomic<int> timeouts{0};
    std::vector<ito::future<void>> done;
    for (unsigned u = 0; u < 16; ++u) {
      done.push_back(ito::create_thread(ito::own_ult, [&, u] {
        std::minstd_rand rng(u + 1);
        for (int r = 0; r < rounds; ++r) {
          int rc;
          if (rng() % 2) {
            timespec t = realtime_after_ns(static_cast<long long>(rng() % 100'000));
            rc = ito_pthread_mutex_timedlock(&m, &t);
          } else {
            rc = ito_pthread_mutex_lock(&m);
          }
          if (rc == ETIMEDOUT) {
            ++timeouts;
            continue;
          }
          if (rc != 0) {
            ++violations;
            continue;
          }
          if (inside.fetch_add(1) != 0) ++violations;
          ++counter;
          ++taken;
          if (rng() % 4 == 0) ito::yield();
          inside.fetch_sub(1);
          if (ito_pthread_mutex_unlock(&m) != 0) ++violations;
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(violations.load(), 0);
    EXPECT_EQ(counter, taken.load());
    RecordProperty("timeouts", timeouts.load());
    EXPECT_EQ(ito_pthread_mutex_trylock(&m), 0);  // free again, nobody counted as waiting
    EXPECT_EQ(ito_pthread_mutex_unlock(&m), 0);
    EXPECT_EQ(ito_pthread_mutex_destroy(&m), 0);
  });
}

TEST(posix_mutex_core, cond_wait_keeps_a_recursive_mutex_depth) {
  ito::start_main_thread_with_worker_size(2, [] {
    pthread_mutex_t m = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    bool ready = false;
    ASSERT_EQ(ito_pthread_mutex_lock(&m), 0);
    ASSERT_EQ(ito_pthread_mutex_lock(&m), 0);
    auto signaller = ito::create_thread(ito::own_ult, [&] {
      ito_pthread_mutex_lock(&m);  // gets in only if the wait released both levels
      ready = true;
      ito_pthread_cond_signal(&c);
      ito_pthread_mutex_unlock(&m);
    });
    while (!ready) ASSERT_EQ(ito_pthread_cond_wait(&c, &m), 0);
    signaller.get();
    timespec past{1, 0};  // long gone
    EXPECT_EQ(ito_pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    ASSERT_EQ(ito_pthread_mutex_unlock(&m), 0);
    ASSERT_EQ(ito_pthread_mutex_unlock(&m), 0);  // both levels were restored
    EXPECT_EQ(ito_pthread_mutex_unlock(&m), EPERM);
    EXPECT_EQ(ito_pthread_cond_destroy(&c), 0);
  });
}

}  // namespace
