// SPDX-License-Identifier: Apache-2.0
// ito::delegate: many delegated sleeps overlap while the workers keep running
// other ULTs; each call wakes exactly its own ULT; seed 001's two modes; values,
// references and exceptions come back; outside a ULT the call runs inline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ito/delegate.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Room for many sleeps at once; set before any test uses the pool (each test
// may also run alone, in its own process).
class delegation_pool_setup : public ::testing::Environment {
 public:
  void SetUp() override {
    ito::os_pool_options o;
    o.max_threads = 1024;
    ito::configure_delegation_pool(o);
  }
};
[[maybe_unused]] const auto* const g_setup =
    ::testing::AddGlobalTestEnvironment(new delegation_pool_setup);

// A ULT that counts its turns until told to stop: proof that its worker runs.
struct ticker {
  std::atomic<bool> stop{false};
  std::atomic<long> ticks{0};
  void run() {
    while (!stop.load(std::memory_order_relaxed)) {
      ticks.fetch_add(1, std::memory_order_relaxed);
      ito::yield();
    }
  }
};

TEST(delegate, ten_thousand_sleeps_overlap_and_workers_keep_running) {
  const std::size_t n = ito::test::scaled(10'000);
  // Under sanitizers fewer, longer sleeps: starting a pool thread costs them
  // milliseconds, which would otherwise swamp the 50 ms being overlapped.
  constexpr bool sanitized = ito::test::tsan || ito::test::asan;
  constexpr auto nap = sanitized ? 500ms : 50ms;
  std::vector<int> results(n, -1);
  long ticks_during = 0;
  std::chrono::nanoseconds elapsed{};
  ito::start_main_thread_with_worker_size(2, [&] {
    ticker t;
    auto tick = ito::create_thread([&] { t.run(); });
    const auto t0 = clock_type::now();
    std::vector<ito::future<void>> calls;
    calls.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      calls.push_back(ito::create_thread([&results, i, nap] {
        // Each ULT must be woken with its own result (direct wake-up).
        results[i] = ito::delegate([i, nap] {
          std::this_thread::sleep_for(nap);
          return static_cast<int>(i);
        });
      }));
    for (auto& c : calls) ito::join(std::move(c));
    elapsed = clock_type::now() - t0;
    ticks_during = t.ticks.load();
    t.stop = true;
    ito::join(std::move(tick));
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(results[i], static_cast<int>(i));
  // One after another they would take n x nap; with up to 1024 pool threads
  // they overlap (10,000 x 50 ms = 500 s serially, ~0.5-3 s here). Under a
  // sanitizer starting 100s of pool threads alone takes seconds on a loaded
  // machine: a quarter of the serial time still proves the overlap.
  const auto bound = sanitized ? nap * n / 4 : nap * n / 10;
  EXPECT_LT(elapsed, bound) << "sleeps did not overlap";
  EXPECT_GT(ticks_during, 100) << "the workers did not run other ULTs meanwhile";
}

TEST(delegate, block_worker_mode_stalls_the_worker_keep_running_does_not) {
  ito::start_main_thread_with_worker_size(1, [] {
    ticker t;
    // The main ULT spawns help-first: the ticker waits in the queue.
    auto tick = ito::create_thread([&] { t.run(); });
    ito::delegate(ito::delegate_mode::block_worker, [] { std::this_thread::sleep_for(100ms); });
    EXPECT_EQ(t.ticks.load(), 0) << "mode 1 must keep the worker blocked";
    ito::delegate(ito::delegate_mode::keep_running, [] { std::this_thread::sleep_for(100ms); });
    EXPECT_GT(t.ticks.load(), 0) << "mode 2 must let the worker run other ULTs";
    t.stop = true;
    ito::join(std::move(tick));
  });
}

TEST(delegate, the_default_mode_can_be_set) {
  const ito::delegate_mode before = ito::default_delegate_mode();
  EXPECT_EQ(before, ito::delegate_mode::keep_running);  // ITO_DELEGATE_MODE unset
  ito::set_default_delegate_mode(ito::delegate_mode::block_worker);
  ito::start_main_thread_with_worker_size(1, [] {
    ticker t;
    auto tick = ito::create_thread([&] { t.run(); });
    ito::delegate([] { std::this_thread::sleep_for(50ms); });
    EXPECT_EQ(t.ticks.load(), 0);
    t.stop = true;
    ito::join(std::move(tick));
  });
  ito::set_default_delegate_mode(before);
}

TEST(delegate, runs_on_a_pool_thread_from_a_ult_and_inline_outside) {
  const auto me = std::this_thread::get_id();
  EXPECT_EQ(ito::delegate([] { return std::this_thread::get_id(); }), me);
  ito::start_main_thread_with_worker_size(1, [me] {
    EXPECT_NE(ito::delegate([] { return std::this_thread::get_id(); }), me);
  });
}

TEST(delegate, values_references_and_exceptions_come_back) {
  ito::start_main_thread_with_worker_size(2, [] {
    EXPECT_EQ(ito::delegate([] { return std::string("from the pool"); }), "from the pool");
    int x = 1;
    int& r = ito::delegate([&x]() -> int& { return x; });
    EXPECT_EQ(&r, &x);
    ito::delegate([&x] { x = 42; });
    EXPECT_EQ(x, 42);
    EXPECT_THROW(ito::delegate([]() -> int { throw std::runtime_error("in the pool"); }),
                 std::runtime_error);
    // Move-only results.
    auto p = ito::delegate([] { return std::make_unique<int>(7); });
    EXPECT_EQ(*p, 7);
  });
}

TEST(delegate, configuring_a_running_pool_is_refused) {
  ito::delegation_pool();  // started
  try {
    ito::configure_delegation_pool({});
    FAIL() << "no usage_error";
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), EBUSY);
  }
}

}  // namespace
