// SPDX-License-Identifier: Apache-2.0
// ito::os_pool: seed 002's retire rule stepped by hand, then the real pool
// growing, queueing and shrinking exactly as the rule says, futures (ready,
// get from a thread and from a ULT, exceptions), destruction with queued jobs,
// and option/environment checking.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "io/os_thread.hpp"
#include "io/pool_retire_rule.hpp"
#include "ito/os_pool.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using ito::detail::retire_rule;

// Polls pred until it holds or `limit` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Jobs that block until the gate opens.
struct gate {
  std::atomic<bool> open{false};
  void wait() const {
    while (!open.load(std::memory_order_acquire)) std::this_thread::sleep_for(100us);
  }
};

// ---------------------------------------------------------------------------
// The rule alone.

TEST(retire_rule, paper_condition_and_consecutive_count) {
  // max 8, bias 1. At total 8 the paper's count max-total is 0: one satisfying
  // sleep retires. slack = total/8 + bias.
  retire_rule r(0, 8, 1);
  EXPECT_FALSE(r.should_retire(8, 1));  // slack 2 < 1? no
  EXPECT_FALSE(r.should_retire(8, 2));  // 2 < 2? no
  EXPECT_TRUE(r.should_retire(8, 3));   // 2 < 3, needs 1
  EXPECT_EQ(r.streak(), 0u);
  // total 7: slack 1; needs 8-7 = 1 consecutive.
  EXPECT_TRUE(r.should_retire(7, 3));
  // total 6: slack 1; needs 2 consecutive.
  EXPECT_FALSE(r.should_retire(6, 3));
  EXPECT_EQ(r.streak(), 1u);
  EXPECT_TRUE(r.should_retire(6, 4));
  // total 5: needs 3; a sleep that fails the condition breaks the run.
  EXPECT_FALSE(r.should_retire(5, 2));  // 1 < 2: streak 1
  EXPECT_FALSE(r.should_retire(5, 2));  // streak 2
  EXPECT_FALSE(r.should_retire(5, 1));  // 1 < 1 fails: streak 0
  EXPECT_EQ(r.streak(), 0u);
  EXPECT_FALSE(r.should_retire(5, 2));
  EXPECT_FALSE(r.should_retire(5, 2));
  EXPECT_TRUE(r.should_retire(5, 2));
}

TEST(retire_rule, reclaims_fast_near_max_and_slowly_near_the_slack) {
  // With max 64 and every thread idle, count the sleeps each retirement needs.
  retire_rule r(0, 64, 2);
  unsigned total = 64, sleeps_at_64 = 0, sleeps_at_8 = 0;
  for (unsigned sleeps = 1; total > 1 && sleeps < 100000; ++sleeps) {
    const unsigned before = total;
    if (r.should_retire(total, total)) --total;
    if (before == 64 && total == 63) sleeps_at_64 = sleeps;
    if (before == 8 && total == 7) sleeps_at_8 = sleeps;
  }
  EXPECT_EQ(sleeps_at_64, 1u);   // max - total = 0: the first sleep
  EXPECT_GT(sleeps_at_8, 1000u);  // 56 consecutive sleeps for each of many steps before
  EXPECT_EQ(total, 2u);  // stops where slack (total/8 + 2) >= sleeping
}

TEST(retire_rule, never_below_the_minimum) {
  retire_rule r(4, 8, 1);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(r.should_retire(4, 4));
  EXPECT_TRUE(r.should_retire(5, 5) || r.should_retire(5, 5) || r.should_retire(5, 5));
}

// ---------------------------------------------------------------------------
// The pool, driven to the same counts.

// What the pool must look like after `n` threads, all busy, go to sleep one
// by one with nothing queued.
unsigned total_after_all_sleep(retire_rule& rule, unsigned total) {
  unsigned sleeping = 0;
  const unsigned threads = total;
  for (unsigned i = 0; i < threads; ++i) {
    if (rule.should_retire(total, sleeping + 1)) --total;
    else ++sleeping;
  }
  return total;
}

TEST(os_pool, grows_to_max_then_queues_then_shrinks_by_the_rule) {
  ito::os_pool_options o;
  o.min_threads = 0;
  o.max_threads = 8;
  o.bias = 1;
  ito::os_pool pool(o);
  gate g;
  std::vector<ito::os_future<int>> fs;
  for (int i = 0; i < 11; ++i)
    fs.push_back(pool.submit([&g](int v) { return g.wait(), v; }, i));
  // A new thread for each job while none sleeps, up to max; then the queue.
  auto s = pool.stats();
  EXPECT_EQ(s.total, 8u);
  EXPECT_EQ(s.started, 8u);
  EXPECT_EQ(s.queued, 3u);
  g.open = true;
  for (int i = 0; i < 11; ++i) EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), i);
  ASSERT_TRUE(eventually([&] {
    auto t = pool.stats();
    return t.jobs_run == 11 && t.sleeping == t.total;
  }));
  // 3 queued jobs were taken by threads that had finished one, without
  // sleeping; then all 8 went to sleep one by one.
  retire_rule model(0, 8, 1);
  const unsigned expected = total_after_all_sleep(model, 8);
  EXPECT_EQ(expected, 5u);
  s = pool.stats();
  EXPECT_EQ(s.total, expected);
  EXPECT_EQ(s.retired, 8u - expected);

  // Now one job at a time: each wakes a sleeper, which sleeps again after it;
  // the rule retires one thread per (max - total) such sleeps.
  unsigned total = expected;
  for (int job = 0; job < 30; ++job) {
    EXPECT_EQ(pool.submit([] { return 1; }).get(), 1);
    const unsigned sleeping_before = total - 1;  // the woken one is running
    if (model.should_retire(total, sleeping_before + 1)) --total;
    ASSERT_TRUE(eventually([&] {
      auto t = pool.stats();
      return t.jobs_run == 12u + static_cast<unsigned>(job) && t.sleeping == t.total;
    })) << job;
    EXPECT_EQ(pool.stats().total, total) << "after sequential job " << job;
  }
  // 5 -> 4 once the run of satisfying sleeps (two carried over) reaches 3,
  // -> 3 after 4 more, -> 2 after 5, -> 1 after 6; at 1 the slack (0 + 1) is
  // not below one sleeper.
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(pool.stats().started, 8u);  // reuse: no thread was started again
}

TEST(os_pool, minimum_threads_start_at_once_and_stay) {
  ito::os_pool_options o;
  o.min_threads = 3;
  o.max_threads = 4;
  ito::os_pool pool(o);
  EXPECT_EQ(pool.stats().total, 3u);
  ASSERT_TRUE(eventually([&] { return pool.stats().sleeping == 3; }));
  for (int i = 0; i < 50; ++i) pool.submit([] {}).get();
  ASSERT_TRUE(eventually([&] { return pool.stats().sleeping == pool.stats().total; }));
  EXPECT_EQ(pool.stats().total, 3u);
  EXPECT_EQ(pool.stats().retired, 0u);
}

TEST(os_pool, ready_never_waits_and_get_returns_the_plain_value) {
  ito::os_pool pool;
  gate g;
  auto f = pool.submit([&g] {
    g.wait();
    return std::string("done");
  });
  EXPECT_TRUE(f.valid());
  EXPECT_FALSE(f.ready());
  g.open = true;
  f.wait();
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), "done");
  EXPECT_FALSE(f.valid());
  EXPECT_THROW(f.get(), ito::usage_error);
  // References are kept, as decltype(fn()) says.
  int x = 0;
  int& r = pool.submit([&x]() -> int& { return x; }).get();
  EXPECT_EQ(&r, &x);
}

TEST(os_pool, an_exception_is_rethrown_by_get) {
  ito::os_pool pool;
  auto f = pool.submit([]() -> int { throw std::runtime_error("job failed"); });
  f.wait();
  EXPECT_TRUE(f.ready());
  try {
    f.get();
    FAIL() << "get() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "job failed");
  }
}

TEST(os_pool, destruction_runs_every_queued_job) {
  std::atomic<int> ran{0};
  gate g;
  std::thread opener;
  {
    ito::os_pool_options o;
    o.max_threads = 1;
    ito::os_pool pool(o);
    pool.submit([&g] { g.wait(); });  // future dropped: the job still runs
    for (int i = 0; i < 20; ++i) pool.submit([&ran] { ran.fetch_add(1); });
    EXPECT_EQ(pool.stats().queued, 20u);
    opener = std::thread([&g] {
      std::this_thread::sleep_for(50ms);
      g.open = true;
    });
  }  // waits for the blocked job, then runs the 20 queued ones
  EXPECT_EQ(ran.load(), 20);
  opener.join();
}

// A job whose new thread cannot start (RLIMIT_NPROC, memory) while the only
// thread goes to sleep must still run: the sleeper takes it, without another
// submit to wake it. The start hook fails creation at exactly that moment:
// it lets the first job end and waits until its thread is asleep.
struct start_failure {
  static inline ito::os_pool* pool = nullptr;
  static inline gate* first_job = nullptr;
  static int fail_once_the_only_thread_sleeps() {
    first_job->open = true;
    eventually([] { return pool->stats().sleeping == 1; });
    return EAGAIN;
  }
};

TEST(os_pool, a_job_whose_thread_cannot_start_runs_on_a_thread_that_went_to_sleep) {
  ito::os_pool_options o;
  o.min_threads = 0;
  o.max_threads = 4;
  ito::os_pool pool(o);
  gate g;
  auto first = pool.submit([&g] { g.wait(); });
  ASSERT_TRUE(eventually([&] { return pool.stats().total == 1; }));
  start_failure::pool = &pool;
  start_failure::first_job = &g;
  ito::detail::g_helper_start_hook = &start_failure::fail_once_the_only_thread_sleeps;
  auto second = pool.submit([] { return 42; });  // its thread fails to start
  ito::detail::g_helper_start_hook = nullptr;
  first.get();
  const bool ran = eventually([&] { return second.ready(); }, 5s);
  EXPECT_TRUE(ran) << "the job waits in the queue while the pool's only thread sleeps";
  if (!ran) pool.submit([] { return 0; }).get();  // unstick it, so the test ends
  EXPECT_EQ(second.get(), 42);
  EXPECT_EQ(pool.stats().started, 1u);
}

TEST(os_pool, get_from_a_ult_suspends_it_and_its_worker_runs_others) {
  ito::os_pool pool;
  std::atomic<bool> released{false};
  std::atomic<bool> other_ran{false};
  ito::start_main_thread_with_worker_size(1, [&] {
    // The job waits for a ULT on the only worker; had get() blocked the worker,
    // it would give up after 5 s and say so.
    auto f = pool.submit([&] {
      const auto end = std::chrono::steady_clock::now() + 5s;
      while (!released.load() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(100us);
      return released.load() ? std::string("released by the other ULT") : std::string("timeout");
    });
    auto other = ito::create_thread([&] {
      other_ran = true;
      released = true;
    });
    EXPECT_EQ(f.get(), "released by the other ULT");
    EXPECT_TRUE(other_ran.load());
    ito::join(std::move(other));
  });
}

TEST(os_pool, many_threads_submitting_and_getting_at_once) {
  ito::os_pool_options o;
  o.max_threads = 4;
  ito::os_pool pool(o);
  const int per_thread = static_cast<int>(ito::test::scaled(2000));
  std::vector<std::thread> users;
  std::atomic<long> sum{0};
  for (int t = 0; t < 4; ++t)
    users.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) sum += pool.submit([](int a, int b) { return a + b; }, t, i).get();
    });
  for (auto& u : users) u.join();
  long expected = 0;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < per_thread; ++i) expected += t + i;
  EXPECT_EQ(sum.load(), expected);
  EXPECT_LE(pool.stats().started, 4u + pool.stats().retired);
}

// ---------------------------------------------------------------------------
// Options and ITO_POOL_*.

struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~scoped_env() { unsetenv(name); }
};

std::string config_message(const ito::os_pool_options& o) {
  try {
    ito::os_pool pool(o);
  } catch (const ito::config_error& e) {
    return e.what();
  }
  return "";
}

TEST(os_pool_options, bad_values_name_the_variable_and_the_range) {
  {
    scoped_env e("ITO_POOL_MAX", "0");
    const std::string m = config_message({});
    EXPECT_NE(m.find("ITO_POOL_MAX=0"), std::string::npos) << m;
    EXPECT_NE(m.find("[1, 65536]"), std::string::npos) << m;
  }
  {
    scoped_env e("ITO_POOL_BIAS", "two");
    const std::string m = config_message({});
    EXPECT_NE(m.find("ITO_POOL_BIAS=two"), std::string::npos) << m;
  }
  {
    scoped_env e1("ITO_POOL_MAX", "4");
    scoped_env e2("ITO_POOL_MIN", "5");
    const std::string m = config_message({});
    EXPECT_NE(m.find("ITO_POOL_MIN=5"), std::string::npos) << m;
    EXPECT_NE(m.find("[0, 4]"), std::string::npos) << m;
  }
  ito::os_pool_options o;
  o.max_threads = 2;
  o.min_threads = 3;
  const std::string m = config_message(o);
  EXPECT_NE(m.find("os_pool_options.min_threads=3"), std::string::npos) << m;
}

TEST(os_pool_options, environment_fills_what_the_program_leaves_unset) {
  scoped_env e1("ITO_POOL_MAX", "7");
  scoped_env e2("ITO_POOL_MIN", "1");
  ito::os_pool_options o;
  o.bias = 3;
  ito::os_pool pool(o);
  EXPECT_EQ(*pool.settings().max_threads, 7u);
  EXPECT_EQ(*pool.settings().min_threads, 1u);
  EXPECT_EQ(*pool.settings().bias, 3u);
  EXPECT_EQ(pool.stats().total, 1u);
}

}  // namespace
