// SPDX-License-Identifier: Apache-2.0
// A million ULTs alive at once, all blocked on one barrier, then all
// released: every one must run to completion, in bounded memory (each blocked
// ULT holds one 64 KiB stack, of which it touches a page or two). The same
// with a condition variable (whose wake-up makes every ULT re-lock one mutex)
// runs a tenth as many: the first-touch page faults of a million stacks, not
// the runtime, dominate these tests' time.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::scaled;

// Under TSan each live ULT holds a TSan fiber (about a megabyte and
// milliseconds to set up, and TSan allows ~8000 of them): a few hundred there.
const std::size_t barrier_ults = ito::test::tsan ? 200 : scaled(1'000'000);
const std::size_t cv_ults = ito::test::tsan ? 100 : scaled(100'000);
constexpr long rss_limit_kib = 6L << 20;  // 6 GiB

// Creates n ULTs (own_ult) running body, each from an unbound ULT so that it runs at
// once (child first) and blocks before the next is created.
template <class Body>
std::vector<ito::future<void>> spawn_blocked(std::size_t n, Body body) {
  return ito::create_thread(ito::own_ult, [n, body] {
           std::vector<ito::future<void>> ults;
           ults.reserve(n);
           for (std::size_t i = 0; i < n; ++i) ults.push_back(ito::create_thread(ito::own_ult, body));
           return ults;
         })
      .get();
}

void report_rss(const char* what, std::size_t blocked_ults) {
  long kib = ito::test::peak_rss_kib();
  std::printf("%s: %zu ULTs blocked at once; peak RSS of the process so far %ld MiB\n", what,
              blocked_ults, kib / 1024);
  ::testing::Test::RecordProperty("peak_rss_kib", std::to_string(kib));
  EXPECT_LT(kib, rss_limit_kib);
}

class blocked_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(blocked_at_workers, all_wait_on_one_barrier_then_all_finish) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    // The main ULT is the last participant: nobody is released until every
    // ULT has arrived, so all of them are alive and blocked together.
    ito::barrier b(static_cast<std::uint32_t>(barrier_ults + 1));
    std::atomic<std::size_t> finished{0}, serials{0};
    auto ults = spawn_blocked(barrier_ults, [&] {
      if (b.arrive_and_wait()) serials.fetch_add(1, std::memory_order_relaxed);
      finished.fetch_add(1, std::memory_order_relaxed);
    });
    if (b.arrive_and_wait()) serials.fetch_add(1, std::memory_order_relaxed);
    for (auto& f : ults) f.get();
    EXPECT_EQ(finished.load(), barrier_ults);
    EXPECT_EQ(serials.load(), 1u);
    report_rss("barrier", barrier_ults);
  });
}

TEST_P(blocked_at_workers, all_wait_on_one_condition_variable_then_all_finish) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    ito::mutex m;
    ito::condition_variable released_cv, all_waiting_cv;
    std::size_t waiting = 0;
    bool released = false;
    std::atomic<std::size_t> finished{0};
    auto ults = spawn_blocked(cv_ults, [&] {
      std::unique_lock lock(m);
      if (++waiting == cv_ults) all_waiting_cv.notify_one();
      released_cv.wait(lock, [&] { return released; });
      lock.unlock();
      finished.fetch_add(1, std::memory_order_relaxed);
    });
    {
      std::unique_lock lock(m);
      all_waiting_cv.wait(lock, [&] { return waiting == cv_ults; });
      EXPECT_EQ(finished.load(), 0u);  // nobody has got through yet
      released = true;
    }
    released_cv.notify_all();
    for (auto& f : ults) f.get();
    EXPECT_EQ(finished.load(), cv_ults);
    report_rss("condition variable", cv_ults);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, blocked_at_workers, ::testing::Values(2u));

}  // namespace
