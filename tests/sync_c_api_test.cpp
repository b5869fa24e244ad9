// SPDX-License-Identifier: Apache-2.0
// The C synchronisation API (ito/sync.h): return codes instead of exceptions,
// static initialisers, and each primitive used from ULTs.
#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <cerrno>
#include <thread>
#include <vector>

#include "ito/sync.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"

namespace {

timespec monotonic_after_ns(long long ns) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long total = now.tv_nsec + ns;
  now.tv_sec += static_cast<time_t>(total / 1'000'000'000);
  now.tv_nsec = static_cast<long>(total % 1'000'000'000);
  return now;
}

// The C++ objects with static initial states need no constructor at run time.
constinit ito::mutex g_constinit_mutex;
constinit ito::condition_variable g_constinit_cv;
constinit ito::once_flag g_constinit_once;

ito_mutex_t g_static_mutex = ITO_MUTEX_INITIALIZER;
ito_cond_t g_static_cond = ITO_COND_INITIALIZER;

TEST(sync_c_api, mutex_codes) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_mutex_t m;
    ASSERT_EQ(ito_mutex_init(&m), 0);
    EXPECT_EQ(ito_mutex_unlock(&m), EPERM);
    EXPECT_EQ(ito_mutex_lock(&m), 0);
    EXPECT_EQ(ito_mutex_lock(&m), EDEADLK);
    EXPECT_EQ(ito_mutex_trylock(&m), EBUSY);
    EXPECT_EQ(ito_mutex_destroy(&m), EBUSY);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return ito_mutex_unlock(&m); }).get(), EPERM);
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return ito_mutex_trylock(&m); }).get(), EBUSY);
    EXPECT_EQ(ito_mutex_unlock(&m), 0);
    EXPECT_EQ(ito_mutex_trylock(&m), 0);
    EXPECT_EQ(ito_mutex_unlock(&m), 0);
    EXPECT_EQ(ito_mutex_destroy(&m), 0);
    EXPECT_EQ(ito_mutex_init(nullptr), EINVAL);
    EXPECT_EQ(ito_mutex_lock(nullptr), EINVAL);
  });
}

TEST(sync_c_api, statically_initialised_mutex_and_cond_protect_a_counter) {
  const int ults = 50, rounds = 200;
  ito::start_main_thread_with_worker_size(4, [&] {
    long counter = 0;
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&] {
        for (int r = 0; r < rounds; ++r) {
          ASSERT_EQ(ito_mutex_lock(&g_static_mutex), 0);
          ++counter;
          if (counter == long{ults} * rounds) ito_cond_broadcast(&g_static_cond);
          ASSERT_EQ(ito_mutex_unlock(&g_static_mutex), 0);
        }
      }));
    }
    ASSERT_EQ(ito_mutex_lock(&g_static_mutex), 0);
    while (counter != long{ults} * rounds) ASSERT_EQ(ito_cond_wait(&g_static_cond, &g_static_mutex), 0);
    ASSERT_EQ(ito_mutex_unlock(&g_static_mutex), 0);
    for (auto& f : done) f.get();
    EXPECT_EQ(counter, long{ults} * rounds);
  });
}

TEST(sync_c_api, cond_timedwait_times_out_on_a_monotonic_deadline) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_mutex_t m = ITO_MUTEX_INITIALIZER;
    ito_cond_t c;
    ASSERT_EQ(ito_cond_init(&c), 0);
    ASSERT_EQ(ito_mutex_lock(&m), 0);
    timespec deadline = monotonic_after_ns(5'000'000);
    EXPECT_EQ(ito_cond_timedwait(&c, &m, &deadline), ETIMEDOUT);
    timespec after;
    clock_gettime(CLOCK_MONOTONIC, &after);
    EXPECT_TRUE(after.tv_sec > deadline.tv_sec ||
                (after.tv_sec == deadline.tv_sec && after.tv_nsec >= deadline.tv_nsec));
    EXPECT_EQ(ito_mutex_trylock(&m), EBUSY);  // held again after the timeout
    timespec bad = deadline;
    bad.tv_nsec = 1'000'000'000;
    EXPECT_EQ(ito_cond_timedwait(&c, &m, &bad), EINVAL);
    timespec past{0, 0};
    EXPECT_EQ(ito_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    // Signalled before the deadline: 0.
    bool flag = false;
    auto signaller = ito::create_thread(ito::own_ult, [&] {
      ito_mutex_lock(&m);
      flag = true;
      ito_cond_signal(&c);
      ito_mutex_unlock(&m);
    });
    deadline = monotonic_after_ns(10'000'000'000);
    int rc = 0;
    while (!flag && rc == 0) rc = ito_cond_timedwait(&c, &m, &deadline);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(ito_mutex_unlock(&m), 0);
    signaller.get();
    // Waiting without the mutex.
    EXPECT_EQ(ito_cond_wait(&c, &m), EPERM);
    EXPECT_EQ(ito_cond_timedwait(&c, &m, &deadline), EPERM);
    EXPECT_EQ(ito_cond_destroy(&c), 0);
  });
}

// ito_cond_timedwait with a deadline already past still releases the mutex
// (and lets others run) before it says ETIMEDOUT, as pthread_cond_timedwait
// does: a loop polling with it lets the producer in, at one worker too.
TEST(sync_c_api, cond_timedwait_past_the_deadline_lets_the_producer_in) {
  for (unsigned workers : {1u, 2u}) {
    ito::start_main_thread_with_worker_size(workers, [workers] {
      ito_mutex_t m = ITO_MUTEX_INITIALIZER;
      ito_cond_t c = ITO_COND_INITIALIZER;
      bool ready = false;
      ASSERT_EQ(ito_mutex_lock(&m), 0);
      auto producer = ito::create_thread(ito::own_ult, [&] {
        ito_mutex_lock(&m);
        ready = true;
        ito_mutex_unlock(&m);
      });
      const timespec past{0, 0};
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      int rc = ETIMEDOUT;
      while (!ready && rc == ETIMEDOUT && std::chrono::steady_clock::now() < give_up)
        rc = ito_cond_timedwait(&c, &m, &past);
      EXPECT_EQ(rc, ETIMEDOUT);
      EXPECT_TRUE(ready) << "the producer never got the mutex (" << workers << " workers)";
      EXPECT_EQ(ito_mutex_unlock(&m), 0);
      producer.get();
    });
  }
}

// A deadline centuries away is a long wait, not one already past: it ends
// only by a signal.
TEST(sync_c_api, cond_timedwait_with_a_far_deadline_waits_for_the_signal) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_mutex_t m = ITO_MUTEX_INITIALIZER;
    ito_cond_t c = ITO_COND_INITIALIZER;
    std::atomic<int> rc{-1};
    bool go = false;
    auto waiter = ito::create_thread(ito::own_ult, [&] {
      ito_mutex_lock(&m);
      const timespec far{std::numeric_limits<time_t>::max(), 999'999'999};
      int r = 0;
      while (!go && r == 0) r = ito_cond_timedwait(&c, &m, &far);
      rc = r;
      ito_mutex_unlock(&m);
    });
    ito::sleep_for(std::chrono::nanoseconds(50'000'000));
    EXPECT_EQ(rc.load(), -1) << "the far deadline was taken as one already past";
    ito_mutex_lock(&m);
    go = true;
    ito_cond_signal(&c);
    ito_mutex_unlock(&m);
    waiter.get();
    EXPECT_EQ(rc.load(), 0);
  });
}

TEST(sync_c_api, cond_destroy_is_busy_while_waited_on) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_mutex_t m = ITO_MUTEX_INITIALIZER;
    ito_cond_t c = ITO_COND_INITIALIZER;
    bool waiting = false, go = false;
    auto waiter = ito::create_thread(ito::own_ult, [&] {
      ito_mutex_lock(&m);
      waiting = true;
      while (!go) ito_cond_wait(&c, &m);
      ito_mutex_unlock(&m);
    });
    for (;;) {
      ito_mutex_lock(&m);
      bool ready = waiting;
      ito_mutex_unlock(&m);
      if (ready) break;
      ito::yield();
    }
    EXPECT_EQ(ito_cond_destroy(&c), EBUSY);
    ito_mutex_lock(&m);
    go = true;
    ito_cond_broadcast(&c);
    ito_mutex_unlock(&m);
    waiter.get();
    EXPECT_EQ(ito_cond_destroy(&c), 0);
  });
}

TEST(sync_c_api, barrier_has_one_serial_caller_per_phase) {
  const int ults = 8, phases = 50;
  ito::start_main_thread_with_worker_size(2, [&] {
    ito_barrier_t b;
    EXPECT_EQ(ito_barrier_init(&b, 0), EINVAL);
    ASSERT_EQ(ito_barrier_init(&b, ults), 0);
    std::atomic<int> serials{0}, others{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&] {
        for (int p = 0; p < phases; ++p) {
          int rc = ito_barrier_wait(&b);
          if (rc == ITO_BARRIER_SERIAL_THREAD) serials.fetch_add(1);
          else if (rc == 0) others.fetch_add(1);
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(serials.load(), phases);
    EXPECT_EQ(others.load(), (ults - 1) * phases);
    EXPECT_EQ(ito_barrier_destroy(&b), 0);
  });
}

TEST(sync_c_api, semaphore_codes_and_hand_over) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_sem_t s;
    ASSERT_EQ(ito_sem_init(&s, 1), 0);
    EXPECT_EQ(ito_sem_trywait(&s), 0);
    EXPECT_EQ(ito_sem_trywait(&s), EAGAIN);
    std::atomic<bool> through{false};
    auto waiter = ito::create_thread(ito::own_ult, [&] {
      EXPECT_EQ(ito_sem_wait(&s), 0);
      through = true;
    });
    while (ito_sem_destroy(&s) != EBUSY) ito::yield();  // the waiter is queued now
    EXPECT_FALSE(through.load());
    EXPECT_EQ(ito_sem_post(&s), 0);
    waiter.get();
    EXPECT_TRUE(through.load());
    EXPECT_EQ(ito_sem_destroy(&s), 0);
  });
}

// Posting past ITO_SEM_VALUE_MAX fails with EOVERFLOW and leaves the value
// alone (POSIX sem_post); a value above it is refused at init (EINVAL).
TEST(sync_c_api, sem_post_past_the_maximum_is_eoverflow) {
  ito_sem_t s;
  EXPECT_EQ(ito_sem_init(&s, static_cast<unsigned>(ITO_SEM_VALUE_MAX) + 1u), EINVAL);
  ASSERT_EQ(ito_sem_init(&s, ITO_SEM_VALUE_MAX), 0);
  EXPECT_EQ(ito_sem_post(&s), EOVERFLOW);
  EXPECT_EQ(ito_sem_post(&s), EOVERFLOW);
  // The value did not wrap: permits are still there, and one taken can be given back.
  EXPECT_EQ(ito_sem_trywait(&s), 0);
  EXPECT_EQ(ito_sem_trywait(&s), 0);
  EXPECT_EQ(ito_sem_post(&s), 0);
  EXPECT_EQ(ito_sem_post(&s), 0);
  EXPECT_EQ(ito_sem_post(&s), EOVERFLOW);
  EXPECT_EQ(ito_sem_destroy(&s), 0);
  ito_sem_t big;
  ASSERT_EQ(ito_sem_init(&big, std::numeric_limits<unsigned>::max()), EINVAL);
}

std::atomic<int> g_once_calls{0};
void count_once() { g_once_calls.fetch_add(1); }

TEST(sync_c_api, once_runs_its_function_once) {
  ito::start_main_thread_with_worker_size(4, [] {
    static ito_once_t once = ITO_ONCE_INIT;
    std::vector<ito::future<int>> done;
    for (int i = 0; i < 100; ++i) done.push_back(ito::create_thread(ito::own_ult, [] { return ito_once(&once, &count_once); }));
    for (auto& f : done) EXPECT_EQ(f.get(), 0);
    EXPECT_EQ(g_once_calls.load(), 1);
    EXPECT_EQ(ito_once(nullptr, &count_once), EINVAL);
  });
}

std::atomic<int> g_destroyed{0};
void count_destroyed(void*) { g_destroyed.fetch_add(1); }

TEST(sync_c_api, keys_codes_and_destructors) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito_key_t key;
    ASSERT_EQ(ito_key_create(&key, &count_destroyed), 0);
    EXPECT_EQ(ito_key_create(nullptr, nullptr), EINVAL);
    int value = 0;
    std::vector<ito::future<void>> done;
    for (int i = 0; i < 10; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&] {
        EXPECT_EQ(ito_key_getspecific(key), nullptr);
        EXPECT_EQ(ito_key_setspecific(key, &value), 0);
        ito::yield();
        EXPECT_EQ(ito_key_getspecific(key), &value);
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(g_destroyed.load(), 10);
    EXPECT_EQ(ito_key_delete(key), 0);
    EXPECT_EQ(ito_key_delete(key), EINVAL);
    EXPECT_EQ(ito_key_setspecific(key, &value), EINVAL);
    EXPECT_EQ(ito_key_getspecific(key), nullptr);
    EXPECT_EQ(ito_key_delete(ITO_KEYS_MAX), EINVAL);
  });
}

// The former names stay, deprecated, for one release: the same calls.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(sync_c_api, deprecated_specific_names_still_work) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito_key_t key;
    ASSERT_EQ(ito_key_create(&key, nullptr), 0);
    int value = 0;
    EXPECT_EQ(ito_getspecific(key), nullptr);
    EXPECT_EQ(ito_setspecific(key, &value), 0);
    EXPECT_EQ(ito_key_getspecific(key), &value);
    EXPECT_EQ(ito_getspecific(key), &value);
    EXPECT_EQ(ito_key_delete(key), 0);
    EXPECT_EQ(ito_setspecific(key, &value), EINVAL);
  });
}
#pragma GCC diagnostic pop

TEST(sync_c_api, constant_initialised_cpp_objects_work) {
  ito::start_main_thread_with_worker_size(2, [] {
    int runs = 0;
    ito::call_once(g_constinit_once, [&] { ++runs; });
    ito::call_once(g_constinit_once, [&] { ++runs; });
    EXPECT_EQ(runs, 1);
    std::unique_lock lock(g_constinit_mutex);
    EXPECT_EQ(g_constinit_cv.wait_for(lock, std::chrono::milliseconds(1)),
              std::cv_status::timeout);
  });
}

TEST(sync_c_api, plain_threads_get_codes_too) {
  // No runtime at all: the primitives still work, and misuse is still a code.
  ito_mutex_t m = ITO_MUTEX_INITIALIZER;
  ito_cond_t c = ITO_COND_INITIALIZER;
  int rc_unlock = 0, rc_wait = 0;
  std::thread([&] {
    rc_unlock = ito_mutex_unlock(&m);
    ito_mutex_lock(&m);
    timespec soon = monotonic_after_ns(1'000'000);
    rc_wait = ito_cond_timedwait(&c, &m, &soon);
    ito_mutex_unlock(&m);
  }).join();
  EXPECT_EQ(rc_unlock, EPERM);
  EXPECT_EQ(rc_wait, ETIMEDOUT);
}

}  // namespace
