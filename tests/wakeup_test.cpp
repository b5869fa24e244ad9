// SPDX-License-Identifier: Apache-2.0
// Work pushed while workers sleep wakes as many of them as it can use: a run
// of children spawned by the main ULT (help-first, one deque) must reach every
// parked worker through wake-ups, not through their park timeouts.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "ito/thread.hpp"
#include "sched/worker.hpp"
#include "test_support.hpp"

namespace {

std::uint64_t late_wakeups() {
  std::uint64_t n = 0;
  for (auto& w : ito::sched::g_runtime.load()->workers) n += w->stats.late_wakeups.load();
  return n;
}

TEST(wakeups, children_pushed_in_a_row_by_the_main_ult_wake_every_parked_worker) {
  static constexpr unsigned workers = 4;
  const int phases = ito::test::tsan ? 3 : 10;
  ito::start_main_thread_with_worker_size(workers, [&] {
    std::uint64_t before = late_wakeups();
    for (int phase = 0; phase < phases; ++phase) {
      ito::sleep_for(std::chrono::nanoseconds(30'000'000));  // every other worker stops spinning and parks
      std::atomic<unsigned> started{0};
      std::vector<ito::future<bool>> children;
      for (unsigned i = 0; i < workers; ++i) {
        children.push_back(ito::create_thread([&started] {
          started.fetch_add(1);
          // Hold this worker until all children run at once (or give up).
          auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (started.load() < workers && std::chrono::steady_clock::now() < give_up)
            sched_yield();
          return started.load() == workers;
        }));
      }
      for (auto& c : children) EXPECT_TRUE(ito::join(c)) << "phase " << phase;
    }
    // Without the wake-up chain every phase would end (workers - 1) parks
    // by timeout: 3 x phases. A loaded 2-core machine can still deschedule a
    // woken worker past the 10 ms park timeout now and then, so a few late
    // wake-ups are tolerated, never one per phase.
    EXPECT_LT(late_wakeups() - before, static_cast<std::uint64_t>(phases) / 2 + 1)
        << "parked workers found pushed work only when their park timed out";
  });
}

}  // namespace
