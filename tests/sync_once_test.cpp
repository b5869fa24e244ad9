// SPDX-License-Identifier: Apache-2.0
// ito::call_once: exactly once under contention, callers parked until it is
// done, and retried after an exception, as std::call_once; neighbouring flags
// (whose callers share a wait table) do not disturb each other.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ito/runtime.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::live_ults;

class once_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(once_at_workers, runs_exactly_once_and_everyone_sees_its_effect) {
  const int ults = static_cast<int>(live_ults(200));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::once_flag flag;
    std::atomic<int> calls{0};
    int value = 0;  // plain: call_once's return must publish it
    std::atomic<int> wrong{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread([&] {
        ito::call_once(flag, [&](int v) {
          calls.fetch_add(1);
          for (int k = 0; k < 10; ++k) ito::sleep_for(std::chrono::nanoseconds(100'000));  // others arrive and park
          value = v;
        }, 42);
        if (value != 42) wrong.fetch_add(1);
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(wrong.load(), 0);
  });
}

TEST_P(once_at_workers, an_exception_lets_the_next_caller_run_it_again) {
  const int ults = static_cast<int>(live_ults(50));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::once_flag flag;
    std::atomic<int> attempts{0}, threw{0}, returned{0};
    std::vector<ito::future<void>> done;
    for (int i = 0; i < ults; ++i) {
      done.push_back(ito::create_thread([&] {
        try {
          ito::call_once(flag, [&] {
            ito::sleep_for(std::chrono::nanoseconds(200'000));
            // The first two attempts fail; parked callers must retry.
            if (attempts.fetch_add(1) < 2) throw std::runtime_error("not yet");
          });
          returned.fetch_add(1);
        } catch (const std::runtime_error&) {
          threw.fetch_add(1);
        }
      }));
    }
    for (auto& f : done) f.get();
    EXPECT_EQ(attempts.load(), 3);
    EXPECT_EQ(threw.load(), 2);
    EXPECT_EQ(returned.load(), ults - 2);
  });
}

// Flags side by side share the table that parked callers wait in: each
// flag's end must wake its own callers and nobody else's. Every flag's first
// run throws, so every flag is also run a second time by a parked caller.
TEST_P(once_at_workers, neighbouring_flags_under_contention_wake_only_their_callers) {
  constexpr int flags = 8;
  const int callers = static_cast<int>(live_ults(160));
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    ito::once_flag flag[flags];
    std::atomic<int> runs[flags] = {}, finished[flags] = {};
    std::atomic<int> wrong{0};
    auto call = [&](int f) {
      for (;;) {
        try {
          ito::call_once(flag[f], [&] {
            const int run = runs[f].fetch_add(1);
            // Callers of every flag arrive and park meanwhile.
            if (ito::in_ult()) ito::sleep_for(std::chrono::nanoseconds(200'000));
            else std::this_thread::sleep_for(std::chrono::microseconds(200));
            if (run == 0) throw std::runtime_error("first run fails");
            finished[f].store(1);
          });
          break;
        } catch (const std::runtime_error&) {
        }
      }
      if (finished[f].load() != 1) wrong.fetch_add(1);
    };
    std::vector<ito::future<void>> done;
    for (int i = 0; i < callers; ++i)
      done.push_back(ito::create_thread([&, i] { call(i % flags); }));
    std::thread outside([&] {
      for (int f = 0; f < flags; ++f) call(f);
    });
    for (auto& d : done) d.get();
    outside.join();
    for (int f = 0; f < flags; ++f) EXPECT_EQ(runs[f].load(), 2) << "flag " << f;
    EXPECT_EQ(wrong.load(), 0);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, once_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(call_once, plain_os_threads_and_ults_share_a_flag) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::once_flag flag;
    std::atomic<int> calls{0};
    auto call = [&] {
      ito::call_once(flag, [&] {
        calls.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      });
    };
    std::thread t1(call), t2(call);
    auto u1 = ito::create_thread(call), u2 = ito::create_thread(call);
    u1.get();
    u2.get();
    t1.join();
    t2.join();
    EXPECT_EQ(calls.load(), 1);
  });
}

}  // namespace
