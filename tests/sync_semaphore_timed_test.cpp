// SPDX-License-Identifier: Apache-2.0
// ito::counting_semaphore's timed acquires: the deadline is honoured, a
// release wakes a timed waiter before it, and a release that races a
// time-out is never lost (the permit stays in the count or the waiter takes it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "ito/runtime.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using ito::test::scaled;
using steady = std::chrono::steady_clock;

// This file's stresses keep more waiters alive under TSan than the default.
constexpr std::size_t live_ults(std::size_t n) { return ito::test::live_ults(n, 8); }

// A small per-caller generator: the stress needs variety, not quality.
struct xorshift {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// What every caller checks, from a ULT or a plain OS thread.
void expect_deadlines_honoured() {
  ito::counting_semaphore sem(0);
  auto t0 = steady::now();
  EXPECT_FALSE(sem.try_acquire_for(20ms));
  EXPECT_GE(steady::now() - t0, 20ms);
  t0 = steady::now();
  EXPECT_FALSE(sem.try_acquire_until(steady::now() + 10ms));
  EXPECT_GE(steady::now() - t0, 10ms);
  t0 = steady::now();
  EXPECT_FALSE(sem.try_acquire_until(std::chrono::system_clock::now() + 10ms));
  EXPECT_GE(steady::now() - t0, 10ms);
  // Past deadlines: no wait, but a permit that is there is taken.
  EXPECT_FALSE(sem.try_acquire_for(0ms));
  EXPECT_FALSE(sem.try_acquire_for(-1s));
  EXPECT_FALSE(sem.try_acquire_until(steady::time_point::min()));
  sem.release(2);
  EXPECT_TRUE(sem.try_acquire_for(0ms));
  EXPECT_TRUE(sem.try_acquire_until(steady::now() - 1s));
  // The time-outs left nothing behind: the count is exactly what was released.
  EXPECT_FALSE(sem.try_acquire());
  sem.release();
  EXPECT_TRUE(sem.try_acquire());
}

class timed_semaphore_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(timed_semaphore_at_workers, a_timed_acquire_gives_up_at_its_deadline) {
  ito::start_main_thread_with_worker_size(GetParam(), [] { expect_deadlines_honoured(); });
}

TEST_P(timed_semaphore_at_workers, a_release_wakes_a_timed_waiter_before_its_deadline) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::counting_semaphore sem(0), arrived(0);
    auto near = ito::create_thread([&] {
      arrived.release();
      return sem.try_acquire_for(1h);
    });
    // Huge timeouts saturate to "no deadline", never to an expired one.
    auto forever = ito::create_thread([&] {
      arrived.release();
      return sem.try_acquire_for(std::chrono::hours::max());
    });
    arrived.acquire();
    arrived.acquire();
    ito::sleep_for(std::chrono::nanoseconds(2'000'000));  // let both park (not required: a permit waits for them)
    sem.release(2);
    EXPECT_TRUE(near.get());
    EXPECT_TRUE(forever.get());
    EXPECT_FALSE(sem.try_acquire());
  });
}

// ULT takers (and two plain OS threads) take with deadlines of 0 to ~100 µs
// while a few posters release one permit at a time, napping or yielding at
// random: time-outs keep racing releases. Every permit must end up taken by
// exactly one caller or still be in the count. With few takers a release
// often makes the count 0 just as the last waiter times out (the waiter then
// keeps the permit); with many, time-outs give their registration back.
void race_releases_with_time_outs(unsigned workers, int takers) {
  constexpr int posters = 4;
  const long posts_each = static_cast<long>(scaled(4000) < 50 ? 50 : scaled(4000));
  ito::start_main_thread_with_worker_size(workers, [&] {
    ito::counting_semaphore sem(0);
    std::atomic<long> taken{0}, timed_out{0};
    std::atomic<bool> stop{false};
    auto take = [&](std::uint64_t seed) {
      xorshift rng{seed * 0x9e3779b97f4a7c15ull + 1};
      while (!stop.load(std::memory_order_relaxed)) {
        const auto wait = std::chrono::nanoseconds(rng.next() % 100'000);
        if (sem.try_acquire_for(wait)) taken.fetch_add(1);
        else timed_out.fetch_add(1);
        if (rng.next() % 4 != 0) continue;
        if (ito::in_ult()) ito::yield();
        else std::this_thread::yield();
      }
    };
    std::vector<ito::future<void>> ults;
    for (int i = 0; i < takers; ++i) ults.push_back(ito::create_thread([&, i] { take(i); }));
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) threads.emplace_back([&, i] { take(1000 + i); });
    std::vector<ito::future<void>> posting;
    for (int p = 0; p < posters; ++p) {
      posting.push_back(ito::create_thread([&, p] {
        xorshift rng{static_cast<std::uint64_t>(p) + 77};
        for (long i = 0; i < posts_each; ++i) {
          sem.release();
          const std::uint64_t r = rng.next();
          if (r % 2 == 0) ito::sleep_for(std::chrono::nanoseconds(static_cast<long long>(r % 50'000)));
          else if (r % 3 == 0) ito::yield();
        }
      }));
    }
    for (auto& f : posting) f.get();
    stop.store(true);
    for (auto& f : ults) f.get();
    for (auto& t : threads) t.join();
    long left = 0;
    while (sem.try_acquire()) ++left;
    EXPECT_EQ(taken.load() + left, posters * posts_each);
    EXPECT_GT(timed_out.load(), 0);  // the race was there to lose
    // Nobody is still counted as waiting: a release goes to the count.
    sem.release();
    EXPECT_TRUE(sem.try_acquire());
    EXPECT_FALSE(sem.try_acquire());
  });
}

TEST_P(timed_semaphore_at_workers, a_release_racing_a_time_out_is_never_lost_few_waiters) {
  race_releases_with_time_outs(GetParam(), 2);
}

TEST_P(timed_semaphore_at_workers, a_release_racing_a_time_out_is_never_lost_many_waiters) {
  race_releases_with_time_outs(GetParam(), static_cast<int>(live_ults(64)));
}

// A timed-out waiter ahead in the queue must not swallow the permit of the
// one behind it.
TEST_P(timed_semaphore_at_workers, a_timed_out_waiter_leaves_the_queue) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::counting_semaphore sem(0);
    std::atomic<bool> first_gave_up{false};
    auto first = ito::create_thread([&] {
      const bool got = sem.try_acquire_for(5ms);
      first_gave_up.store(!got);
      return got;
    });
    auto second = ito::create_thread([&] { sem.acquire(); });
    EXPECT_FALSE(first.get());
    EXPECT_TRUE(first_gave_up.load());
    sem.release();
    second.get();
    EXPECT_FALSE(sem.try_acquire());
  });
}

INSTANTIATE_TEST_SUITE_P(workers, timed_semaphore_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(counting_semaphore, plain_os_threads_wait_with_deadlines) {
  std::thread t(expect_deadlines_honoured);  // no runtime: the futex path
  t.join();
  ito::start_main_thread_with_worker_size(2, [] {
    ito::counting_semaphore sem(0);
    std::thread waiter([&] { EXPECT_TRUE(sem.try_acquire_for(1h)); });
    ito::sleep_for(std::chrono::nanoseconds(2'000'000));
    sem.release();
    waiter.join();
    EXPECT_FALSE(sem.try_acquire());
  });
}

}  // namespace
