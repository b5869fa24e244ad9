// SPDX-License-Identifier: Apache-2.0
// ito::counting_semaphore: it bounds concurrency, hands permits to waiters,
// and try_acquire never blocks.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::live_ults;

using ito::test::scaled;

class semaphore_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(semaphore_at_workers, never_admits_more_holders_than_permits) {
  const int permits = 3, ults = static_cast<int>(live_ults(100));
  const int rounds = static_cast<int>(scaled(200) < 10 ? 10 : scaled(200));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::counting_semaphore sem(permits);
    std::atomic<int> inside{0}, most{0};
    std::atomic<long> entries{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread([&] {
        for (int r = 0; r < rounds; ++r) {
          sem.acquire();
          int now = inside.fetch_add(1) + 1;
          for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
          }
          ito::yield();  // let others pile up on the semaphore
          inside.fetch_sub(1);
          entries.fetch_add(1);
          sem.release();
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_LE(most.load(), permits);
    EXPECT_EQ(entries.load(), long{ults} * rounds);
    // Every permit came back.
    for (int i = 0; i < permits; ++i) EXPECT_TRUE(sem.try_acquire());
    EXPECT_FALSE(sem.try_acquire());
  });
}

TEST_P(semaphore_at_workers, release_of_n_wakes_n_waiters) {
  const int waiters = static_cast<int>(live_ults(50));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::counting_semaphore sem(0), arrived(0);
    std::atomic<int> through{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < waiters; ++i) {
      done.push_back(ito::create_thread([&] {
        arrived.release();
        sem.acquire();
        through.fetch_add(1);
      }));
    }
    for (int i = 0; i < waiters; ++i) arrived.acquire();
    sem.release(waiters / 2);
    sem.release(waiters - waiters / 2 + 5);  // 5 left over
    for (auto& f : done) f.get();
    EXPECT_EQ(through.load(), waiters);
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(sem.try_acquire());
    EXPECT_FALSE(sem.try_acquire());
  });
}

INSTANTIATE_TEST_SUITE_P(workers, semaphore_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(counting_semaphore, try_acquire_takes_only_what_is_there) {
  ito::counting_semaphore sem(2);
  EXPECT_TRUE(sem.try_acquire());
  EXPECT_TRUE(sem.try_acquire());
  EXPECT_FALSE(sem.try_acquire());
  sem.release();
  EXPECT_TRUE(sem.try_acquire());
  sem.release(0);
  EXPECT_FALSE(sem.try_acquire());
}

TEST(counting_semaphore, bad_counts_throw_einval) {
  auto code = [](auto&& fn) {
    try {
      fn();
    } catch (const ito::usage_error& e) {
      return e.code();
    }
    return 0;
  };
  EXPECT_EQ(code([] { ito::counting_semaphore s(-1); }), EINVAL);
  ito::counting_semaphore sem(0);
  EXPECT_EQ(code([&] { sem.release(-1); }), EINVAL);
}

// Releasing past max() is a precondition violation (as for
// std::counting_semaphore); ito reports it as usage_error(EOVERFLOW) and
// leaves the count as it was, never wrapping it into "waiters".
TEST(counting_semaphore, release_past_max_throws_eoverflow_and_keeps_the_count) {
  auto code = [](auto&& fn) {
    try {
      fn();
    } catch (const ito::usage_error& e) {
      return e.code();
    }
    return 0;
  };
  ito::counting_semaphore sem(ito::counting_semaphore::max() - 1);
  EXPECT_EQ(code([&] { sem.release(); }), 0);  // exactly max(): allowed
  EXPECT_EQ(code([&] { sem.release(); }), EOVERFLOW);
  EXPECT_EQ(code([&] { sem.release(ito::counting_semaphore::max()); }), EOVERFLOW);
  // Still max() permits: they can be taken, and a wrapped (negative) count
  // would have refused them.
  EXPECT_TRUE(sem.try_acquire());
  EXPECT_TRUE(sem.try_acquire());
  EXPECT_EQ(code([&] { sem.release(2); }), 0);
  EXPECT_EQ(code([&] { sem.release(1); }), EOVERFLOW);
  // With waiters, a release may owe them permits: it must still not wrap.
  ito::start_main_thread_with_worker_size(1, [&] {
    ito::counting_semaphore empty(0);
    auto waiter = ito::create_thread([&] { empty.acquire(); });
    EXPECT_EQ(code([&] { empty.release(ito::counting_semaphore::max()); }), 0);
    waiter.get();  // took one: max() - 1 left
    EXPECT_EQ(code([&] { empty.release(1); }), 0);
    EXPECT_EQ(code([&] { empty.release(1); }), EOVERFLOW);
    EXPECT_TRUE(empty.try_acquire());
  });
}

TEST(counting_semaphore, plain_os_threads_wait_for_ults) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::counting_semaphore sem(0);
    std::atomic<int> through{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) threads.emplace_back([&] {
      sem.acquire();
      through.fetch_add(1);
    });
    ito::create_thread([&] { sem.release(3); }).get();
    for (auto& t : threads) t.join();
    EXPECT_EQ(through.load(), 3);
  });
}

}  // namespace
