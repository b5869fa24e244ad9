// SPDX-License-Identifier: Apache-2.0
// A parked worker woken by a thread on CPU c is kept off c for the wake-up
// (its waker is busy there) and gets its own affinity back before it looks
// for work (sched/wake_placement.hpp). Where the kernel then runs it is the
// kernel's business (the benchmark `ito-bench phases` shows the effect);
// these tests pin down what ito changes and that it changes nothing else.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "sched/worker.hpp"
#include "test_support.hpp"

namespace {

std::vector<int> cpu_list(const cpu_set_t& s) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &s)) cpus.push_back(cpu);
  return cpus;
}

// The CPUs of thread `tid` (0: the caller).
std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(sched_getaffinity(tid, sizeof s, &s), 0);
  return cpu_list(s);
}

std::uint64_t wakes_kept_off() {
  ito::sched::runtime_state* rt = ito::sched::g_runtime.load();
  std::lock_guard lock(rt->idle_mutex);
  return rt->wakes_kept_off_waker;
}

// Phases after idling: the main ULT sleeps until the other workers park,
// then forks `n` children that each wait (bounded) until all have started,
// so each runs on its own worker, woken for it. Each child records the CPUs
// its thread may use as it runs.
void phases_after_idle(unsigned n, int phases, std::vector<std::vector<int>>* seen) {
  std::mutex m;
  for (int phase = 0; phase < phases; ++phase) {
    ito::sleep_for(std::chrono::nanoseconds(30'000'000));
    std::atomic<unsigned> started{0};
    std::vector<ito::future<void>> children;
    for (unsigned i = 0; i < n; ++i) {
      children.push_back(ito::create_thread([&] {
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (started.load() < n && std::chrono::steady_clock::now() < give_up) sched_yield();
        std::lock_guard lock(m);
        seen->push_back(cpus_of(0));
      }));
    }
    for (auto& c : children) ito::join(c);
  }
}

TEST(wake_placement, a_woken_worker_runs_with_its_own_cpus_again) {
  const std::vector<int> allowed = cpus_of(0);
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs: with one, no wake-up can move";
  const unsigned n = 2;
  const int phases = ito::test::tsan ? 3 : 6;
  ito::options o;
  o.workers = n;
  ito::runtime rt(o);
  std::vector<std::vector<int>> seen;
  std::vector<std::vector<int>> parked_masks;
  ito::join(ito::create_thread([&] { phases_after_idle(n, phases, &seen); }));
  // Every other worker, once seen asleep on the idle list with no wake-up
  // under way (read under the idle mutex, which a waker holds while it
  // narrows), has its own CPUs. Watched from an OS thread while this one
  // (the main ULT, worker 0) blocks in the join, so that nothing in the
  // runtime wakes a worker meanwhile.
  std::thread watcher([&] {
    ito::sched::runtime_state* state = ito::sched::g_runtime.load();
    for (std::size_t i = 1; i < state->workers.size(); ++i) {
      ito::sched::worker* w = state->workers[i].get();
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (std::chrono::steady_clock::now() < give_up) {
        {
          std::lock_guard lock(state->idle_mutex);
          if (w->on_idle_list && w->asleep.load() && !w->narrowed) {
            parked_masks.push_back(cpus_of(w->tid.load()));
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  watcher.join();
  // Each phase's main thread woke a parked worker at least once (the
  // children's wake-ups; a worker still spinning needs none).
  EXPECT_GT(wakes_kept_off(), 0u);
  // Every child ran, and every worker parked again, with the CPUs it had:
  // the narrowed set never outlives the wake-up.
  ASSERT_EQ(seen.size(), n * static_cast<std::size_t>(phases));
  for (const auto& cpus : seen) EXPECT_EQ(cpus, allowed);
  ASSERT_EQ(parked_masks.size(), n - 1) << "a worker never parked in 30 s";
  for (const auto& cpus : parked_masks) EXPECT_EQ(cpus, allowed);
}

TEST(wake_placement, bound_workers_are_left_on_their_cpus) {
  const std::vector<int> allowed = cpus_of(0);
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to bind two workers apart";
  ito::options o;
  o.workers = 2;
  o.bind = true;
  ito::runtime rt(o);
  std::vector<std::vector<int>> seen;
  ito::join(ito::create_thread([&] { phases_after_idle(2, 3, &seen); }));
  EXPECT_EQ(wakes_kept_off(), 0u);
  for (const auto& cpus : seen) EXPECT_EQ(cpus.size(), 1u);
}

// A worker's OS thread starts on another CPU than the thread that started it
// (which goes on with the work that made it start the others), then runs
// with the CPUs it would have inherited.
TEST(wake_placement, a_new_worker_starts_off_its_creators_cpu_and_keeps_its_cpus) {
  const std::vector<int> allowed = cpus_of(0);
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs: with one, a new thread has one place";
  const unsigned n = 2;
  for (int round = 0; round < 5; ++round) {
    ito::options o;
    o.workers = n;
    ito::runtime rt(o);
    // Some work first (children that yield until both started), so that
    // the other worker has looked for work, and may have parked and been
    // woken, before its mask is read.
    std::atomic<int> started{0};
    std::vector<ito::future<void>> children;
    for (unsigned i = 0; i < n; ++i)
      children.push_back(ito::create_thread(ito::own_ult, [&] {
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (started.load() < static_cast<int>(n) && std::chrono::steady_clock::now() < give_up)
          ito::yield();
      }));
    for (auto& c : children) ito::join(c);
    ito::sched::runtime_state* state = ito::sched::g_runtime.load();
    for (std::size_t i = 1; i < state->workers.size(); ++i) {
      ito::sched::worker* w = state->workers[i].get();
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (w->first_cpu.load() < 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_GE(w->creator_cpu, 0) << "worker " << i;
      ASSERT_GE(w->first_cpu.load(), 0) << "worker " << i << " never started";
      EXPECT_NE(w->first_cpu.load(), w->creator_cpu) << "worker " << i;
      // Its mask once no wake-up narrows it: read again while a wake-up may
      // be under way (a woken worker widens its mask just after it leaves
      // the idle list), until it is the full one or 30 s have passed.
      std::vector<int> mask;
      while (mask != allowed && std::chrono::steady_clock::now() < give_up) {
        {
          std::lock_guard lock(state->idle_mutex);
          if (!w->narrowed) mask = cpus_of(w->tid.load());
        }
        if (mask != allowed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_EQ(mask, allowed) << "worker " << i;
    }
  }
}

// The main thread is worker 0 and the program's own: a mask the program
// gives it while the runtime runs is the one it keeps through parks and
// wake-ups (a one-CPU mask is never narrowed; a wider one comes back as
// the program left it, not as the runtime found it).
TEST(wake_placement, the_main_threads_own_mask_is_kept_through_parks) {
  const std::vector<int> allowed = cpus_of(0);
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to narrow the main thread's mask";
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  std::vector<int> chosen = allowed.size() >= 3 ? std::vector<int>{allowed[0], allowed[1]}
                                                : std::vector<int>{allowed[1]};
  std::vector<int> after_phases;
  {
    ito::options o;
    o.workers = 2;
    ito::runtime rt(o);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    for (int cpu : chosen) CPU_SET(cpu, &mine);
    ASSERT_EQ(sched_setaffinity(0, sizeof mine, &mine), 0);
    std::vector<std::vector<int>> seen;
    phases_after_idle(2, 3, &seen);
    after_phases = cpus_of(0);
  }
  EXPECT_EQ(after_phases, chosen);
  sched_setaffinity(0, sizeof before, &before);
}

}  // namespace
