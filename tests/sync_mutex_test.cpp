// SPDX-License-Identifier: Apache-2.0
// ito::mutex: mutual exclusion under contention at several worker counts,
// FIFO hand-off, try_lock, misuse errors, and use from plain OS threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::live_ults;
using ito::test::usage_error_code;

using ito::test::scaled;

class mutex_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(mutex_at_workers, counter_incremented_by_many_ults_is_exact) {
  const std::size_t ults = live_ults(1000);
  const std::size_t increments = scaled(10'000);
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::mutex m;
    std::uint64_t counter = 0;  // plain: the mutex alone must protect it
    std::vector<ito::future<void>> done;
    done.reserve(ults);
    for (std::size_t i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&] {
        for (std::size_t k = 0; k < increments; ++k) {
          std::lock_guard lock(m);
          ++counter;
          // Now and then yield while holding it, so that even one worker sees
          // parked lockers and hand-offs.
          if (k % 1000 == 999) ito::yield();
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(counter, ults * increments);
  });
}

TEST_P(mutex_at_workers, try_lock_fails_while_anyone_holds_it) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    ASSERT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());  // held by the caller itself
    EXPECT_FALSE(ito::create_thread(ito::own_ult, [&] { return m.try_lock(); }).get());
    m.unlock();
    EXPECT_TRUE(ito::create_thread(ito::own_ult, [&] {
                  bool got = m.try_lock();
                  if (got) m.unlock();
                  return got;
                }).get());
    ASSERT_TRUE(m.try_lock());
    m.unlock();
  });
}

TEST_P(mutex_at_workers, unlock_by_a_non_holder_throws_eperm) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    EXPECT_EQ(usage_error_code([&] { m.unlock(); }), EPERM);  // not locked at all
    m.lock();
    EXPECT_EQ(ito::create_thread(ito::own_ult, [&] { return usage_error_code([&] { m.unlock(); }); }).get(),
              EPERM);
    m.unlock();  // still ours: the failed unlock changed nothing
    EXPECT_TRUE(m.try_lock());
    m.unlock();
  });
}

TEST_P(mutex_at_workers, locking_it_twice_throws_edeadlk) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    m.lock();
    EXPECT_EQ(usage_error_code([&] { m.lock(); }), EDEADLK);
    m.unlock();
  });
}

TEST_P(mutex_at_workers, excludes_while_waiters_are_woken_handed_it_and_barged_past) {
  // Holding it across yields forces every path: parking, waking, barging, and
  // (once a waiter has waited over a millisecond) hand-off.
  const std::size_t ults = live_ults(64), rounds = scaled(2000);
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::mutex m;
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    std::vector<ito::future<void>> done;
    for (std::size_t i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread(ito::own_ult, [&] {
        for (std::size_t k = 0; k < rounds; ++k) {
          m.lock();
          if (inside.fetch_add(1) != 0) overlap = true;
          if (k % 7 == 0) ito::yield();
          inside.fetch_sub(1);
          m.unlock();
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_FALSE(overlap.load());
  });
}

TEST(mutex, a_waiter_is_not_starved_by_a_ult_relocking_in_a_loop) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::mutex m;
    std::atomic<bool> stop{false};
    auto hog = ito::create_thread(ito::own_ult, [&] {
      std::uint64_t rounds = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::lock_guard lock(m);
        // Yield rarely, so that ULTs queued behind the hog on its worker
        // (the bound main ULT among them) still run.
        if (++rounds % 100'000 == 0) ito::yield();
      }
      return rounds;
    });
    auto victim = ito::create_thread(ito::own_ult, [&] {
      // Barging alone gives no bound; past a millisecond of waiting the
      // mutex is handed over directly.
      std::int64_t worst_ns = 0;
      for (int i = 0; i < 20; ++i) {
        auto start = std::chrono::steady_clock::now();
        m.lock();
        auto waited = std::chrono::steady_clock::now() - start;
        m.unlock();
        worst_ns = std::max<std::int64_t>(worst_ns, std::chrono::nanoseconds(waited).count());
        ito::sleep_for(std::chrono::nanoseconds(100'000));
      }
      return worst_ns;
    });
    std::int64_t worst_ns = victim.get();
    stop = true;
    EXPECT_GT(hog.get(), 0u);
    EXPECT_LT(worst_ns, 500'000'000) << "a waiter waited " << worst_ns << " ns";
  });
}

TEST_P(mutex_at_workers, the_last_user_may_free_it_right_after_unlocking) {
  // POSIX's reference-count example: whoever drops the last reference frees
  // the object, mutex included, while the others may still be inside
  // unlock(). ASan reports any access to it after that.
  struct shared_object {
    ito::mutex m;
    int references = 3;
  };
  const std::size_t objects = scaled(3000);
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    std::vector<ito::future<void>> done;
    for (std::size_t i = 0; i < objects; ++i) {
      auto* o = new shared_object;
      for (int r = 0; r < 3; ++r) {
        done.push_back(ito::create_thread(ito::own_ult, [o] {
          o->m.lock();
          bool last = --o->references == 0;
          o->m.unlock();
          if (last) delete o;
        }));
      }
      if (done.size() > 300) {  // bound the number of live ULTs
        for (auto& f : done) f.get();
        done.clear();
      }
    }
    for (auto& f : done) f.get();
  });
}

INSTANTIATE_TEST_SUITE_P(workers, mutex_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(mutex, parked_lockers_get_it_in_arrival_order) {
  ito::start_main_thread_with_worker_size(1, [] {
    // From an unbound ULT each child runs at once and parks in lock() before
    // create_thread returns, so the queue order is the creation order.
    ito::create_thread(ito::own_ult, [] {
      ito::mutex m;
      std::vector<int> order;
      std::vector<ito::future<void>> done;
      m.lock();
      for (int i = 0; i < 50; ++i) {
        done.push_back(ito::create_thread(ito::own_ult, [&, i] {
          std::lock_guard lock(m);
          order.push_back(i);
        }));
      }
      m.unlock();
      for (auto& f : done) f.get();
      ASSERT_EQ(order.size(), 50u);
      for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
    }).get();
  });
}

TEST(mutex, plain_os_threads_and_ults_share_it) {
  const std::size_t per_thread = scaled(20'000);
  ito::start_main_thread_with_worker_size(2, [&] {
    ito::mutex m;
    std::uint64_t counter = 0;
    auto work = [&] {
      for (std::size_t k = 0; k < per_thread; ++k) {
        std::lock_guard lock(m);
        ++counter;
      }
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) threads.emplace_back(work);
    std::vector<ito::future<void>> ults;
    for (int i = 0; i < 4; ++i) ults.push_back(ito::create_thread(ito::own_ult, work));
    for (auto& f : ults) f.get();
    for (auto& t : threads) t.join();
    EXPECT_EQ(counter, 6 * per_thread);
  });
}

TEST(mutex, works_between_plain_threads_without_a_runtime) {
  const std::size_t per_thread = scaled(50'000);
  ito::mutex m;
  std::uint64_t counter = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      for (std::size_t k = 0; k < per_thread; ++k) {
        std::lock_guard lock(m);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 3 * per_thread);
  // The owner check tells OS threads apart too.
  m.lock();
  int code = 0;
  std::thread([&] { code = usage_error_code([&] { m.unlock(); }); }).join();
  EXPECT_EQ(code, EPERM);
  m.unlock();
}

}  // namespace
