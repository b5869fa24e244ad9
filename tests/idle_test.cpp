// SPDX-License-Identifier: Apache-2.0
// An idle runtime parks its workers: they use (almost) no CPU, and they wake
// promptly when work or a timer needs them.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(idle, parked_workers_use_almost_no_cpu) {
  if (ito::test::tsan || ito::test::asan)
    GTEST_SKIP() << "sanitizer runtimes run background threads of their own";
  ito::start_main_thread_with_worker_size(4, [] {
    ito::sleep_for(std::chrono::nanoseconds(50'000'000));  // let the workers finish spinning and park
    const double cpu0 = cpu_seconds(), wall0 = wall_seconds();
    ito::sleep_for(std::chrono::nanoseconds(500'000'000));
    const double cpu = cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
    EXPECT_GE(wall, 0.5);
    // Four workers spinning would burn ~2 s of CPU here (two cores).
    EXPECT_LT(cpu, 0.05 * wall) << "cpu " << cpu << " s over " << wall << " s";
  });
}

TEST(idle, sleeping_ult_wakes_on_time_and_others_run_meanwhile) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<long> work{0};
    const double t0 = wall_seconds();
    auto sleeper = ito::create_thread([] { ito::sleep_for(std::chrono::nanoseconds(100'000'000)); return wall_seconds(); });
    auto busy = ito::create_thread([&] {
      for (int i = 0; i < 1000; ++i) {
        work.fetch_add(1);
        ito::yield();
      }
    });
    const double woke = ito::join(std::move(sleeper));
    ito::join(std::move(busy));
    EXPECT_EQ(work.load(), 1000);
    EXPECT_GE(woke - t0, 0.1);
    EXPECT_LT(woke - t0, ito::test::tsan ? 2.0 : 0.5);
  });
}

TEST(idle, work_pushed_while_all_workers_park_is_picked_up) {
  // Repeatedly let every worker park, then create work from the main ULT:
  // a lost wake-up would leave the child waiting for the park timeout.
  ito::start_main_thread_with_worker_size(2, [] {
    for (int round = 0; round < 20; ++round) {
      ito::sleep_for(std::chrono::nanoseconds(2'000'000));
      std::atomic<bool> done{false};
      auto child = ito::create_thread([&] { done = true; });
      ito::join(std::move(child));
      EXPECT_TRUE(done.load());
    }
  });
}

}  // namespace

namespace {

// Workers other than worker 0 (the user's thread) are named for top -H, gdb, perf.
// Several ULTs sleep and wake at once until both helper workers have run one;
// the bound is a deadline, not a number of tries: on a loaded machine one
// worker can take every wake-up of a single ULT for thousands of rounds.
TEST(worker_names, workers_are_named_ito_worker_n) {
  ito::start_main_thread_with_worker_size(3, [] {
    std::mutex lock;
    std::vector<std::string> names;
    std::atomic<bool> both_seen{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::vector<decltype(ito::create_thread([] {}))> sleepers;
    for (int i = 0; i < 6; ++i)
      sleepers.push_back(ito::create_thread([&] {
        while (!both_seen.load() && std::chrono::steady_clock::now() < deadline) {
          ito::sleep_for(std::chrono::nanoseconds(10'000));  // resumes on whichever worker takes it
          char name[16] = {};
          pthread_getname_np(pthread_self(), name, sizeof name);
          std::lock_guard<std::mutex> guard(lock);
          if (std::string_view(name).starts_with("ito-worker-") &&
              std::find(names.begin(), names.end(), name) == names.end())
            names.emplace_back(name);
          if (names.size() >= 2) both_seen = true;
        }
      }));
    for (auto& s : sleepers) ito::join(s);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"ito-worker-1", "ito-worker-2"}));
  });
}

}  // namespace
