// SPDX-License-Identifier: Apache-2.0
// ito::yield: many ULTs yielding at random (to the tail or to the head) all
// finish with the right results; on one worker the order is exact: two
// yielding ULTs alternate, and yield(true) lets every queued ULT run first.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::scaled;

// Sums 0..n-1, yielding at random points (to the head or the tail at random).
std::uint64_t yielding_sum(unsigned seed, int n) {
  std::minstd_rand rng(seed);
  std::uint64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += static_cast<std::uint64_t>(i);
    switch (rng() % 4) {
      case 0: ito::yield(false); break;
      case 1: ito::yield(true); break;
      default: break;
    }
  }
  return sum;
}

class yield_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(yield_at_workers, random_yields_in_many_ults_all_finish_correctly) {
  const int ults = static_cast<int>(scaled(2000));
  const int steps = 200;
  const std::uint64_t expect = static_cast<std::uint64_t>(steps) * (steps - 1) / 2;
  std::atomic<int> finished{0};
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    std::vector<ito::future<std::uint64_t>> fs;
    for (int i = 0; i < ults; ++i) {
      fs.push_back(ito::create_thread(ito::own_ult, [&finished, i] {
        std::uint64_t s = yielding_sum(static_cast<unsigned>(i) + 1, steps);
        finished.fetch_add(1);
        return s;
      }));
      if (i % 7 == 0) ito::yield(i % 2 == 0);  // the main ULT yields too
    }
    for (auto& f : fs) EXPECT_EQ(ito::join(f), expect);
  });
  EXPECT_EQ(finished.load(), ults);
}

TEST_P(yield_at_workers, yielding_ults_nested_under_yielding_parents) {
  struct node {
    static int run(int depth, unsigned seed) {
      if (depth == 0) return static_cast<int>(yielding_sum(seed, 20) % 7);
      auto a = ito::create_thread(ito::own_ult, run, depth - 1, seed * 2);
      ito::yield(seed % 2 == 0);
      auto b = ito::create_thread(ito::own_ult, run, depth - 1, seed * 2 + 1);
      ito::yield(seed % 3 == 0);
      return ito::join(a) + ito::join(b);
    }
  };
  const int depth = ito::test::tsan ? 5 : 9;
  const int leaf = static_cast<int>((20 * 19 / 2) % 7);  // every leaf sums 0..19
  EXPECT_EQ(ito::start_main_thread_with_worker_size(GetParam(), node::run, depth, 1u),
            leaf << depth);
}

INSTANTIATE_TEST_SUITE_P(workers, yield_at_workers, ::testing::Values(1u, 2u, 4u));

TEST(yield, a_lone_ult_yielding_keeps_running) {
  ito::start_main_thread_with_worker_size(1, [] {
    for (int i = 0; i < 1000; ++i) {
      ito::yield(false);
      ito::yield(true);
    }
    auto f = ito::create_thread(ito::own_ult, [] {
      for (int i = 0; i < 1000; ++i) ito::yield(i % 2 == 0);
      return 1;
    });
    EXPECT_EQ(ito::join(f), 1);
  });
}

// On one worker, with nothing else runnable, two ULTs that yield alternate
// strictly, whichever way they yield (past the scheduler's periodic pass too).
void alternate(bool push_to_head) {
  ito::start_main_thread_with_worker_size(1, [push_to_head] {
    std::string log;
    const int rounds = 300;  // well past the 64 yields after which a yield passes the scheduler
    auto body = [&log, push_to_head](char name) {
      for (int i = 0; i < rounds; ++i) {
        log += name;
        ito::yield(push_to_head);
      }
    };
    auto a = ito::create_thread(ito::own_ult, body, 'a');
    auto b = ito::create_thread(ito::own_ult, body, 'b');
    ito::join(a);
    ito::join(b);
    ASSERT_EQ(log.size(), 2u * rounds);
    for (std::size_t i = 1; i < log.size(); ++i)
      ASSERT_NE(log[i], log[i - 1]) << "no alternation at " << i << ": " << log;
  });
}

// The main ULT is bound to its worker, so its yield readies it through the
// worker's own queue of bound ULTs, not the deque: it must still alternate
// with a child, whichever way either yields.
void main_ult_alternates_with_a_child(bool push_to_head) {
  ito::start_main_thread_with_worker_size(1, [push_to_head] {
    std::string log;
    const int rounds = 300;
    auto child = ito::create_thread(ito::own_ult, [&] {  // queued: the main ULT forks help-first
      for (int i = 0; i < rounds; ++i) {
        log += 'c';
        ito::yield(push_to_head);
      }
    });
    for (int i = 0; i < rounds; ++i) {
      log += 'm';
      ito::yield(!push_to_head);
    }
    ito::join(child);
    ASSERT_EQ(log.size(), 2u * rounds);
    for (std::size_t i = 1; i < log.size(); ++i)
      ASSERT_NE(log[i], log[i - 1]) << "no alternation at " << i << ": " << log;
  });
}

TEST(yield, two_ults_alternate_on_one_worker) { alternate(false); }
TEST(yield, the_main_ult_and_a_child_alternate_on_one_worker) {
  main_ult_alternates_with_a_child(false);
  main_ult_alternates_with_a_child(true);
}
TEST(yield, two_ults_alternate_on_one_worker_yielding_to_head) { alternate(true); }

// On one worker the main ULT spawns A, B, C, then X (help-first: the main ULT
// is bound to worker 0, so all four are queued) and joins X. X runs first (it
// was pushed last), logs, and yields. Returns the log.
std::string queued_then_yield(bool push_to_head) {
  return ito::start_main_thread_with_worker_size(1, [push_to_head] {
    std::string log;
    auto a = ito::create_thread(ito::own_ult, [&] { log += 'A'; });
    auto b = ito::create_thread(ito::own_ult, [&] { log += 'B'; });
    auto c = ito::create_thread(ito::own_ult, [&] { log += 'C'; });
    auto x = ito::create_thread(ito::own_ult, [&] {
      log += "x1 ";
      ito::yield(push_to_head);
      log += " x2";
    });
    ito::join(x);
    ito::join(a);
    ito::join(b);
    ito::join(c);
    return log;
  });
}

TEST(yield, yield_to_head_runs_every_queued_ult_first) {
  // yield(true): the yielder goes behind everything queued on its worker.
  EXPECT_EQ(queued_then_yield(true), "x1 CBA x2");
}

TEST(yield, plain_yield_lets_the_next_one_run_then_resumes) {
  // yield(false): the yielder is queued where the next ULT came from, so it
  // resumes right after that one, ahead of the older ones.
  std::string log = queued_then_yield(false);
  EXPECT_EQ(log.substr(0, 6), "x1 C x") << log;
  EXPECT_EQ(log.size(), std::string("x1 CBA x2").size()) << log;
}

// The main ULT's yield on one worker: like any ULT's, yield(false) resumes it
// right after the ULT it made way for (it takes that one's deque slot; with
// nobody to steal it, it stays on its worker), and yield(true) behind every
// queued ULT.
std::string main_ult_yields_among_queued(bool push_to_head) {
  return ito::start_main_thread_with_worker_size(1, [push_to_head] {
    std::string log;
    auto a = ito::create_thread(ito::own_ult, [&] { log += 'A'; });
    auto b = ito::create_thread(ito::own_ult, [&] { log += 'B'; });
    auto c = ito::create_thread(ito::own_ult, [&] { log += 'C'; });
    ito::yield(push_to_head);
    log += 'm';
    ito::join(a);
    ito::join(b);
    ito::join(c);
    return log;
  });
}

TEST(yield, the_main_ult_resumes_after_the_next_ult_or_behind_all_queued) {
  EXPECT_EQ(main_ult_yields_among_queued(false).substr(0, 2), "Cm");
  EXPECT_EQ(main_ult_yields_among_queued(true), "CBAm");
}

TEST(yield, outside_a_ult_is_a_usage_error) {
  try {
    ito::yield();
    FAIL() << "yield outside a ULT did not throw";
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), EPERM);
  }
}

}  // namespace
