// SPDX-License-Identifier: Apache-2.0
// ito::condition_variable: a bounded buffer with no lost wake-ups, notify_all,
// timeouts, the race between a notify and a timeout, and plain OS threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cerrno>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::live_ults;

using namespace std::chrono_literals;
using ito::test::scaled;
using steady = std::chrono::steady_clock;

class cv_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(cv_at_workers, bounded_buffer_consumes_every_item_exactly_once) {
  const int producers = 8, consumers = 8;
  const int per_producer = static_cast<int>(scaled(5'000));
  const std::size_t capacity = 4;  // small, so both sides wait often
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::mutex m;
    ito::condition_variable not_full, not_empty;
    std::deque<int> buffer;
    std::vector<int> seen(static_cast<std::size_t>(producers * per_producer), 0);
    int producers_left = producers;

    std::vector<ito::future<void>> done;
    for (int p = 0; p < producers; ++p) {
      done.push_back(ito::create_thread([&, p] {
        for (int i = 0; i < per_producer; ++i) {
          std::unique_lock lock(m);
          not_full.wait(lock, [&] { return buffer.size() < capacity; });
          buffer.push_back(p * per_producer + i);
          not_empty.notify_one();
        }
        std::lock_guard lock(m);
        if (--producers_left == 0) not_empty.notify_all();  // consumers may stop
      }));
    }
    for (int c = 0; c < consumers; ++c) {
      done.push_back(ito::create_thread([&] {
        for (;;) {
          std::unique_lock lock(m);
          not_empty.wait(lock, [&] { return !buffer.empty() || producers_left == 0; });
          if (buffer.empty()) return;
          ++seen[static_cast<std::size_t>(buffer.front())];
          buffer.pop_front();
          not_full.notify_one();
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_TRUE(buffer.empty());
    int wrong = 0;
    for (int n : seen) wrong += n != 1;
    EXPECT_EQ(wrong, 0);
  });
}

TEST_P(cv_at_workers, notify_all_wakes_every_waiter) {
  const int waiters = static_cast<int>(live_ults(200));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::mutex m;
    ito::condition_variable cv, all_waiting;
    int waiting = 0;
    bool go = false;
    std::atomic<int> woke{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < waiters; ++i) {
      done.push_back(ito::create_thread([&] {
        std::unique_lock lock(m);
        if (++waiting == waiters) all_waiting.notify_one();
        // No predicate: one notify_all must be enough for everyone.
        while (!go) cv.wait(lock);
        woke.fetch_add(1);
      }));
    }
    {
      std::unique_lock lock(m);
      all_waiting.wait(lock, [&] { return waiting == waiters; });
      go = true;
    }
    cv.notify_all();
    for (auto& f : done) f.get();
    EXPECT_EQ(woke.load(), waiters);
  });
}

TEST_P(cv_at_workers, wait_for_times_out_after_the_requested_time) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m);
    auto start = steady::now();
    EXPECT_EQ(cv.wait_for(lock, 20ms), std::cv_status::timeout);
    EXPECT_GE(steady::now() - start, 20ms);
    EXPECT_TRUE(lock.owns_lock());
    // The predicate forms return the predicate's value at the timeout.
    start = steady::now();
    EXPECT_FALSE(cv.wait_for(lock, 5ms, [] { return false; }));
    EXPECT_GE(steady::now() - start, 5ms);
    EXPECT_FALSE(cv.wait_until(lock, steady::now() + 2ms, [] { return false; }));
    EXPECT_TRUE(cv.wait_for(lock, 1h, [] { return true; }));
    // A deadline already past, or on another clock.
    EXPECT_EQ(cv.wait_until(lock, steady::now() - 1s), std::cv_status::timeout);
    EXPECT_EQ(cv.wait_until(lock, std::chrono::system_clock::now() + 1ms),
              std::cv_status::timeout);
    // The mutex stays usable by others after timed waits.
    EXPECT_TRUE(ito::create_thread([&] { return m.try_lock(); }).get() == false);
  });
}

// Two waiters: `early` times out at about the moment a notify_one comes;
// `late` would wait for 30 s. Whatever the interleaving, that notify must wake
// one of them: `early` (no_timeout), or `late` if early's timeout won. A lost
// notify leaves `late` asleep; a double wake-up crashes the runtime. With
// early_on_os_thread, `early` is a plain thread (the futex path of the race).
void race_notify_against_timeouts(int rounds, bool early_on_os_thread) {
  ito::mutex m;
  ito::condition_variable cv, state_changed;
  int outcomes[2] = {0, 0};  // early: timed out, notified
  for (int round = 0; round < rounds; ++round) {
    int waiting = 0;
    bool early_done = false, late_done = false;
    std::cv_status early_status{}, late_status{};
    const auto delay = std::chrono::microseconds(50 + (round % 7) * 25);

    auto late = ito::create_thread([&] {
      std::unique_lock lock(m);
      ++waiting;
      state_changed.notify_all();
      late_status = cv.wait_for(lock, 30s);
      late_done = true;
      state_changed.notify_all();
    });
    auto early_body = [&] {
      std::unique_lock lock(m);
      ++waiting;
      state_changed.notify_all();
      early_status = cv.wait_for(lock, delay);
      early_done = true;
      state_changed.notify_all();
    };
    std::thread early_thread;
    ito::future<void> early_ult;
    if (early_on_os_thread) early_thread = std::thread(early_body);
    else early_ult = ito::create_thread(early_body);

    std::unique_lock lock(m);
    state_changed.wait(lock, [&] { return waiting == 2; });
    lock.unlock();
    ito::sleep_for(std::chrono::nanoseconds(std::chrono::nanoseconds(delay).count() - 20'000 + (round % 5) * 10'000));
    cv.notify_one();
    lock.lock();
    state_changed.wait(lock, [&] { return early_done; });
    if (early_status == std::cv_status::timeout) {
      // The notify cannot have ended early's wait: it must have woken `late`.
      ASSERT_TRUE(state_changed.wait_for(lock, 10s, [&] { return late_done; }))
          << "round " << round << ": the notify was lost";
    } else {
      EXPECT_FALSE(late_done);
      cv.notify_one();  // `late` still sleeps; this one is for it
      state_changed.wait(lock, [&] { return late_done; });
    }
    EXPECT_EQ(late_status, std::cv_status::no_timeout);
    ++outcomes[early_status == std::cv_status::timeout ? 0 : 1];
    lock.unlock();
    if (early_thread.joinable()) early_thread.join();
    if (early_ult.valid()) early_ult.get();
    late.get();
  }
  std::printf("notify/timeout race: %d timed out, %d notified\n", outcomes[0], outcomes[1]);
}

TEST_P(cv_at_workers, notify_racing_a_timeout_wakes_exactly_one_waiter) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    race_notify_against_timeouts(static_cast<int>(std::max<std::size_t>(scaled(300), 30)), false);
  });
}

TEST(condition_variable, notify_racing_a_plain_threads_timeout_wakes_exactly_one_waiter) {
  ito::start_main_thread_with_worker_size(2, [] {
    race_notify_against_timeouts(static_cast<int>(std::max<std::size_t>(scaled(100), 20)), true);
  });
}

TEST_P(cv_at_workers, waiting_without_holding_the_mutex_throws_eperm) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::unique_lock lock(m, std::defer_lock);
    try {
      cv.wait(lock);
      ADD_FAILURE() << "no exception";
    } catch (const ito::usage_error& e) {
      EXPECT_EQ(e.code(), EPERM);
    }
    try {
      cv.wait_for(lock, 1ms);
      ADD_FAILURE() << "no exception";
    } catch (const ito::usage_error& e) {
      EXPECT_EQ(e.code(), EPERM);
    }
  });
}

// A consumer that polls with timed waits whose deadline has already passed
// must still let the producer, who needs the mutex, in: such a wait releases
// and re-acquires the mutex and lets others run (as std::condition_variable
// and glibc's pthread_cond_timedwait do) before it reports the timeout. The
// loop gives up after a few seconds, so a wait that keeps the mutex fails the
// test instead of hanging it.
template <class ExpiredWait>
void consumer_polls_until_producer_runs(ExpiredWait expired_wait) {
  ito::mutex m;
  ito::condition_variable cv;
  bool ready = false;
  std::unique_lock lock(m);
  // Started while we hold the mutex: it can only set `ready` once a wait lets go.
  auto producer = ito::create_thread([&] {
    std::lock_guard guard(m);
    ready = true;
  });
  const auto give_up = steady::now() + 5s;
  long polls = 0;
  while (!ready && steady::now() < give_up) {
    EXPECT_TRUE(expired_wait(cv, lock)) << "an expired wait must report a timeout";
    EXPECT_TRUE(lock.owns_lock());
    ++polls;
  }
  EXPECT_TRUE(ready) << "the producer never got the mutex in " << polls << " expired waits";
  lock.unlock();
  producer.get();
}

TEST_P(cv_at_workers, expired_timed_waits_release_the_mutex_and_let_others_run) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    using lock_t = std::unique_lock<ito::mutex>;
    auto timeout = [](std::cv_status s) { return s == std::cv_status::timeout; };
    consumer_polls_until_producer_runs(
        [&](ito::condition_variable& cv, lock_t& l) { return timeout(cv.wait_for(l, 0ms)); });
    consumer_polls_until_producer_runs(
        [&](ito::condition_variable& cv, lock_t& l) { return timeout(cv.wait_for(l, -1s)); });
    consumer_polls_until_producer_runs([&](ito::condition_variable& cv, lock_t& l) {
      return timeout(cv.wait_until(l, steady::now() - 1ms));
    });
    consumer_polls_until_producer_runs([&](ito::condition_variable& cv, lock_t& l) {
      return timeout(cv.wait_until(l, steady::time_point::min()));
    });
    consumer_polls_until_producer_runs([&](ito::condition_variable& cv, lock_t& l) {
      return timeout(cv.wait_until(l, std::chrono::system_clock::now() - 1s));
    });
    // The predicate forms return the predicate's value after the wait.
    consumer_polls_until_producer_runs([&](ito::condition_variable& cv, lock_t& l) {
      return !cv.wait_for(l, 0ms, [] { return false; });
    });
    // Run from a ULT that is not the main one too (it may be stolen).
    ito::create_thread([] {
      consumer_polls_until_producer_runs(
          [](ito::condition_variable& cv, std::unique_lock<ito::mutex>& l) {
            return cv.wait_for(l, 0ms) == std::cv_status::timeout;
          });
    }).get();
  });
}

TEST(condition_variable, a_plain_threads_expired_waits_let_a_ult_producer_in) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::mutex m;
    ito::condition_variable cv;
    std::atomic<bool> holding{false};
    bool ready = false, timed_out = true, consumer_saw_ready = false;
    std::thread consumer([&] {
      std::unique_lock lock(m);
      holding = true;
      const auto give_up = steady::now() + 5s;
      while (!ready && steady::now() < give_up)
        timed_out = timed_out && cv.wait_for(lock, 0ms) == std::cv_status::timeout;
      consumer_saw_ready = ready;
    });
    while (!holding.load()) ito::sleep_for(std::chrono::nanoseconds(100'000));
    ito::create_thread([&] {
      std::lock_guard guard(m);
      ready = true;
    }).get();
    consumer.join();
    EXPECT_TRUE(consumer_saw_ready) << "the consumer kept the mutex through its expired waits";
    EXPECT_TRUE(timed_out);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, cv_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(condition_variable, plain_threads_wait_for_ults_and_time_out) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::mutex m;
    ito::condition_variable cv;
    bool ready = false;
    std::cv_status first{}, second{};
    std::thread os_thread([&] {
      std::unique_lock lock(m);
      auto start = steady::now();
      first = cv.wait_for(lock, 10ms);  // nobody notifies yet
      EXPECT_GE(steady::now() - start, 10ms);
      second = cv.wait_until(lock, steady::now() + 30s, [&] { return ready; })
                   ? std::cv_status::no_timeout
                   : std::cv_status::timeout;
    });
    // Wait until the thread has timed out once and is waiting again, then
    // notify it from a ULT.
    for (;;) {
      ito::sleep_for(std::chrono::nanoseconds(20'000'000));
      std::lock_guard lock(m);
      if (first == std::cv_status::timeout) break;
    }
    ito::create_thread([&] {
      std::lock_guard lock(m);
      ready = true;
      cv.notify_one();
    }).get();
    os_thread.join();
    EXPECT_EQ(first, std::cv_status::timeout);
    EXPECT_EQ(second, std::cv_status::no_timeout);
  });
}

TEST(condition_variable, works_between_plain_threads_without_a_runtime) {
  ito::mutex m;
  ito::condition_variable cv;
  int turn = 0;
  const int rounds = static_cast<int>(scaled(2'000));
  auto player = [&](int me) {
    for (int i = 0; i < rounds; ++i) {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return turn % 2 == me; });
      ++turn;
      cv.notify_all();
    }
  };
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  EXPECT_EQ(turn, 2 * rounds);
}

}  // namespace
