// SPDX-License-Identifier: Apache-2.0
// What a detached ULT leaves behind: its result's destructor runs where ULT
// calls are legal (it may lock an ito::mutex), and an exception nobody will
// join is reported on stderr, never silently dropped.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

std::atomic<int> g_destroyed{0};

struct locks_when_destroyed {
  ito::mutex* m = nullptr;
  explicit locks_when_destroyed(ito::mutex* mu) : m(mu) {}
  locks_when_destroyed(locks_when_destroyed&& o) noexcept : m(std::exchange(o.m, nullptr)) {}
  ~locks_when_destroyed() {
    if (!m) return;
    std::lock_guard<ito::mutex> hold(*m);  // "must be called from a ULT" outside one
    g_destroyed.fetch_add(1);
  }
};

class detached_results : public ::testing::TestWithParam<unsigned> {};

TEST_P(detached_results, destructor_of_a_dropped_future_s_result_may_lock_an_ito_mutex) {
  g_destroyed = 0;
  const int n = static_cast<int>(ito::test::scaled(2000));
  ito::mutex m;
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    // Held by another ULT while the ULTs end, so their destructors must
    // really wait (block), wherever they run.
    std::atomic<bool> held{false};
    auto holder = ito::create_thread(ito::own_ult, [&] {
      std::lock_guard<ito::mutex> hold(m);
      held = true;
      ito::sleep_for(std::chrono::nanoseconds(3'000'000));
    });
    while (!held) ito::yield();
    for (int i = 0; i < n; ++i) {
      // Dropped at once: detached while it runs (it sleeps first), or after.
      (void)ito::create_thread(ito::own_ult, [&m, i] {
        if (i % 2) ito::sleep_for(std::chrono::nanoseconds(10'000));
        return locks_when_destroyed{&m};
      });
    }
    ito::join(holder);
  });
  EXPECT_EQ(g_destroyed.load(), n);
}

INSTANTIATE_TEST_SUITE_P(workers, detached_results, ::testing::Values(1u, 2u, 4u));

TEST(detached_exceptions, an_exception_escaping_a_detached_ult_is_reported_with_its_what) {
  EXPECT_EXIT(
      {
        ito::start_main_thread_with_worker_size(2, [] {
          (void)ito::create_thread(ito::own_ult, [] {
            ito::sleep_for(std::chrono::nanoseconds(100'000));
            throw std::runtime_error("lost-in-the-dark");
          });
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "ito: an exception escaped ULT [0-9]+, whose future was dropped: "
      "std::runtime_error: lost-in-the-dark");
}

TEST(detached_exceptions, dropping_the_future_of_a_ult_that_already_threw_reports_it) {
  EXPECT_EXIT(
      {
        ito::start_main_thread_with_worker_size(1, [] {
          auto f = ito::create_thread(ito::own_ult, []() -> int { throw std::logic_error("seen-late"); });
          while (!f.ready()) ito::yield();
        });  // f dropped here, after the ULT ended
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "escaped ULT [0-9]+, whose future was dropped: std::logic_error: seen-late");
}

TEST(detached_exceptions, many_are_counted_after_the_first_few) {
  EXPECT_EXIT(
      {
        ito::start_main_thread_with_worker_size(2, [] {
          for (int i = 0; i < 100; ++i) (void)ito::create_thread(ito::own_ult, [] { throw 5; });
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "100 exceptions escaped detached ULTs");
}

}  // namespace
