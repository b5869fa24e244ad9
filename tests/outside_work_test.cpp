// SPDX-License-Identifier: Apache-2.0
// Work that arrives from outside a worker's deque — expired timers, ULTs made
// ready by other OS threads — must run even while the worker's own ULTs never
// run out (so it never reaches its scheduler loop).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/scheduler.hpp"
#include "test_support.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

// Spawns and joins trivial ULTs until `done` is set or `limit` passes; true if
// `done` ended it. On one worker the deque is never empty meanwhile.
bool busy_until(const std::atomic<bool>& done, std::chrono::seconds limit) {
  const auto give_up = clock_type::now() + limit;
  while (!done.load(std::memory_order_acquire)) {
    if (clock_type::now() > give_up) return false;
    ito::join(ito::create_thread(ito::own_ult, [] { return 1; }));
  }
  return true;
}

TEST(outside_work, a_sleeper_wakes_while_another_ult_keeps_spawning) {
  for (bool busy_on_main : {true, false}) {  // help-first (bound main) and child-first paths
    ito::start_main_thread_with_worker_size(1, [busy_on_main] {
      std::atomic<bool> asleep{false}, woke{false};
      auto sleeper = ito::create_thread(ito::own_ult, [&] {
        asleep.store(true, std::memory_order_release);
        ito::sleep_for(std::chrono::nanoseconds(2'000'000));
        woke.store(true, std::memory_order_release);
      });
      // The main ULT forks help-first: let the sleeper start (and sleep) first.
      while (!asleep.load(std::memory_order_acquire)) ito::yield();
      bool ended_by_wakeup = busy_on_main
                                 ? busy_until(woke, std::chrono::seconds(20))
                                 : ito::join(ito::create_thread(ito::own_ult, 
                                       [&] { return busy_until(woke, std::chrono::seconds(20)); }));
      EXPECT_TRUE(ended_by_wakeup) << (busy_on_main ? "main ULT" : "child ULT") << " kept spawning";
      ito::join(sleeper);
    });
  }
}

TEST(outside_work, a_ult_made_ready_by_an_os_thread_runs_while_the_worker_stays_busy) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::atomic<bool> resumed{false};
    std::atomic<ito::sched::ult*> parked{nullptr};
    auto waiter = ito::create_thread(ito::own_ult, [&] {
      ito::sched::suspend([](ito::sched::ult* self, void* slot) {
        static_cast<std::atomic<ito::sched::ult*>*>(slot)->store(self, std::memory_order_release);
      }, &parked);
      resumed.store(true, std::memory_order_release);
    });
    while (!parked.load(std::memory_order_acquire)) ito::yield();  // let it park first
    // Another OS thread, not a worker, wakes it: it goes to the injector.
    std::thread waker([&] {
      ito::sched::ult* u;
      while (!(u = parked.load(std::memory_order_acquire))) std::this_thread::yield();
      ito::sched::make_ready(u);
    });
    EXPECT_TRUE(ito::join(ito::create_thread(ito::own_ult, 
        [&] { return busy_until(resumed, std::chrono::seconds(20)); })));
    waker.join();
    ito::join(waiter);
  });
}

// The OS thread that wakes the last ULT may still be inside make_ready when
// that ULT ends and the runtime stops: stop must wait for it (ASan reports a
// use after free of the runtime otherwise, when the waker is preempted there).
TEST(outside_work, waking_the_last_ult_races_safely_with_shutdown) {
  for (std::size_t round = 0; round < ito::test::scaled(300); ++round) {
    std::atomic<ito::sched::ult*> parked{nullptr};
    std::thread waker;
    {
      ito::options o;
      o.workers = 2;
      ito::runtime rt(o);
      auto t = ito::create_thread(ito::own_ult, [&] {
        ito::sched::suspend([](ito::sched::ult* self, void* slot) {
          static_cast<std::atomic<ito::sched::ult*>*>(slot)->store(self, std::memory_order_release);
        }, &parked);
      });
      waker = std::thread([&] {
        ito::sched::ult* u;
        while (!(u = parked.load(std::memory_order_acquire))) std::this_thread::yield();
        ito::sched::make_ready(u);
      });
      ito::join(t);
    }  // the runtime stops here, perhaps while the waker is still in make_ready
    waker.join();
  }
}

}  // namespace
