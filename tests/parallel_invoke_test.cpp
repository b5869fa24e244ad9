// SPDX-License-Identifier: Apache-2.0
// parallel_invoke (ito/parallel.hpp): every branch runs exactly once; a
// branch nobody steals runs as a call of its caller (no ULT); a stolen one
// runs as a ULT of its own while the caller waits; exceptions and exit()
// reach the caller once every branch is done; a caller that moved to
// another worker still finds its branches; many workers with random yields
// and forks inside branches count every node.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <exception>
#include <functional>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ito/error.hpp"
#include "ito/parallel.hpp"
#include "ito/thread.hpp"
#include "sched/runtime_control.hpp"
#include "test_support.hpp"

namespace {

using ito::test::scaled;

std::uint64_t branches_made_ults() {
  std::uint64_t n = 0;
  for (auto& w : ito::sched::g_runtime.load()->workers) n += w->stats.branches_made_ults.load();
  return n;
}

long fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  ito::parallel_invoke([&] { a = fib(n - 1); }, [&] { b = fib(n - 2); });
  return a + b;
}

class parallel_invoke_at : public ::testing::TestWithParam<unsigned> {};

TEST_P(parallel_invoke_at, fib_matches_the_sequential_value) {
  const int n = ito::test::tsan ? 16 : 25;
  long expected = 0;
  for (long next = 1, i = 0; i < n; ++i) next = std::exchange(expected, next) + next;
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    EXPECT_EQ(fib(n), expected);
    EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, fib, n)), expected);  // from an unbound ULT too
  });
}

TEST_P(parallel_invoke_at, every_branch_of_a_wide_call_runs_once) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    for (int round = 0; round < 200; ++round) {
      std::atomic<int> ran[5] = {};
      ito::parallel_invoke([&] { ++ran[0]; }, [&] { ++ran[1]; }, [&] { ++ran[2]; },
                           [&] { ++ran[3]; }, [&] { ++ran[4]; });
      for (auto& r : ran) ASSERT_EQ(r.load(), 1) << "round " << round;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(workers, parallel_invoke_at, ::testing::Values(1u, 2u, 4u));

// On one worker nothing is stolen: the first branch runs, then the others
// newest first, all on the caller's stack as the caller, and no ULT is made.
TEST(parallel_invoke, one_worker_runs_branches_as_calls_of_the_caller_in_deque_order) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread(ito::own_ult, [] {
      const auto caller = ito::this_ult_id();
      const auto caller_frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
      std::string order;
      std::vector<unsigned long long> ids;
      std::vector<std::uintptr_t> frames;
      auto branch = [&](char c) {
        return [&, c] {
          order += c;
          ids.push_back(ito::this_ult_id());
          frames.push_back(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)));
        };
      };
      ito::parallel_invoke(branch('0'), branch('1'), branch('2'), branch('3'));
      EXPECT_EQ(order, "0321");
      for (auto id : ids) EXPECT_EQ(id, caller);
      for (auto f : frames) {
        EXPECT_LT(f, caller_frame);
        EXPECT_LT(caller_frame - f, 4096u) << "a branch ran on another stack";
      }
      EXPECT_EQ(branches_made_ults(), 0u);
    }));
  });
}

// Waits (yielding) until `flag` is set or 20 s passed; true if it was set.
bool wait_for_flag(const std::atomic<bool>& flag) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    ito::yield();
  }
  return true;
}

// The first branch keeps its worker until the second has run: only another
// worker can run that one, as a ULT of its own; the caller then waits for it
// (or finds it done) and sees what it wrote and what it threw.
TEST(parallel_invoke, a_stolen_branch_runs_as_its_own_ult_and_its_caller_sees_its_effects) {
  ito::start_main_thread_with_worker_size(2, [] {
    for (int round = 0; round < 20; ++round) {
      const auto caller = ito::this_ult_id();
      std::atomic<bool> second_ran{false};
      unsigned long long second_id = 0;
      int written = 0;
      bool first_saw_it = false;
      ito::parallel_invoke([&] { first_saw_it = wait_for_flag(second_ran); },
                           [&] {
                             second_id = ito::this_ult_id();
                             written = 42;
                             second_ran.store(true);
                           });
      ASSERT_TRUE(first_saw_it) << "no worker took the queued branch";
      EXPECT_NE(second_id, caller);
      EXPECT_EQ(written, 42);
      // The same when the stolen branch throws.
      std::atomic<bool> thrown{false};
      try {
        ito::parallel_invoke([&] { wait_for_flag(thrown); },
                             [&] {
                               thrown.store(true);
                               throw std::runtime_error("from the stolen branch");
                             });
        ADD_FAILURE() << "nothing rethrown";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "from the stolen branch");
      }
    }
    EXPECT_GE(branches_made_ults(), 40u);
  });
}

// All branches run even when some throw; the first in argument order wins.
TEST(parallel_invoke, the_first_exception_in_argument_order_is_rethrown_after_every_branch) {
  for (unsigned workers : {1u, 2u}) {
    ito::start_main_thread_with_worker_size(workers, [] {
      std::atomic<int> ran{0};
      try {
        ito::parallel_invoke([&] { ++ran; },
                             [&] {
                               ++ran;
                               throw std::runtime_error("second");
                             },
                             [&] {
                               ++ran;
                               throw std::logic_error("third");
                             });
        ADD_FAILURE() << "nothing rethrown";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "second");
      }
      EXPECT_EQ(ran.load(), 3);
      try {
        ito::parallel_invoke([&] { throw 7; }, [&] { throw std::runtime_error("second"); });
        ADD_FAILURE() << "nothing rethrown";
      } catch (int v) {
        EXPECT_EQ(v, 7);
      }
      // The exceptions are gone with the call: a handler that ran does not
      // leave one behind for the next.
      EXPECT_EQ(std::uncaught_exceptions(), 0);
      EXPECT_FALSE(std::current_exception());
    });
  }
}

TEST(parallel_invoke, exit_in_a_branch_ends_the_caller_once_every_branch_ran) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<int> ran{0};
    bool after = false;
    auto f = ito::create_thread(ito::own_ult, [&] {
      ito::parallel_invoke([&] { ++ran; },
                           [&] {
                             ++ran;
                             ito::exit();
                           },
                           [&] { ++ran; });
      after = true;
    });
    f.get();
    EXPECT_EQ(ran.load(), 3);
    EXPECT_FALSE(after);
  });
}

TEST(parallel_invoke, outside_a_ult_it_is_a_usage_error_and_runs_nothing) {
  bool ran = false;
  EXPECT_EQ(ito::test::usage_error_code(
                [&] { ito::parallel_invoke([&] { ran = true; }, [&] { ran = true; }); }),
            EPERM);
  EXPECT_FALSE(ran);
}

// A caller that moves to another worker inside its first branch: it forks
// a child that keeps worker A busy (child first: the caller waits in A's
// deque) until worker B has stolen the caller. The caller's queued branch
// stays in A's branch deque, where A's scheduler (once the child ends) or B
// (stealing) makes it a ULT; the caller, on B, waits for it instead of
// popping B's deque.
TEST(parallel_invoke, a_caller_that_moved_to_another_worker_still_gets_its_branch_run) {
  ito::start_main_thread_with_worker_size(2, [] {
    ito::join(ito::create_thread(ito::own_ult, [] {
      for (int round = 0; round < 5; ++round) {
        const auto caller = ito::this_ult_id();
        int start = -1, resumed_on = -1;
        unsigned long long second_id = 0;
        std::atomic<bool> moved{false};
        ito::future<void> busy;  // joined after the call: a join in the branch
                                 // would resume the caller on A directly
        ito::parallel_invoke(
            [&] {
              start = ito::current_worker_index();
              busy = ito::create_thread(ito::own_ult, [&] {
                const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                while (!moved.load() && std::chrono::steady_clock::now() < give_up) {
                }
              });
              resumed_on = ito::current_worker_index();  // the thief's, unless it gave up
              moved.store(true);
            },
            [&] { second_id = ito::this_ult_id(); });
        busy.get();
        ASSERT_NE(resumed_on, start) << "round " << round << ": no worker stole the caller";
        // Made a ULT by worker A's scheduler, or by B stealing it while the
        // caller waited for the busy child: never taken from B's deque.
        EXPECT_NE(second_id, caller) << "round " << round;
      }
    }));
  });
}

// Each level keeps one record queued while its first branch recurses: a
// chain deeper than the branch deque's first buffer (1024) makes it grow on
// the way down (push_branch's common case refuses to grow it). On the main
// ULT, whose stack (its OS thread's) holds 3,000 levels of frames.
long chain(int depth) {
  if (depth == 0) return 0;
  long below = 0, here = 0;
  ito::parallel_invoke([&] { below = chain(depth - 1); }, [&] { here = 1; });
  return below + here;
}

TEST(parallel_invoke, a_chain_deeper_than_the_first_deque_buffer) {
  for (unsigned workers : {1u, 2u}) {
    ito::start_main_thread_with_worker_size(workers, [] { EXPECT_EQ(chain(3000), 3000); });
  }
}

// Many workers, nested calls, random yields, and ULTs forked child-first
// inside branches (whose parents are stolen and moved): every node counted.
long busy_tree(int depth, std::uint64_t seed, std::atomic<long>& forks) {
  if (depth == 0) {
    if (seed % 7 == 0) ito::yield(seed % 2 == 0);
    return 1;
  }
  long a = 0, b = 0, c = 0;
  ito::parallel_invoke(
      [&] { a = busy_tree(depth - 1, seed * 6364136223846793005ull + 1, forks); },
      [&] { b = busy_tree(depth - 1, seed * 2862933555777941757ull + 3, forks); },
      [&] {
        if (seed % 5 == 0) {
          ++forks;
          c = ito::join(ito::create_thread(ito::own_ult, busy_tree, depth - 1, seed + 11, std::ref(forks)));
        } else {
          c = busy_tree(depth - 1, seed + 11, forks);
        }
      });
  return a + b + c + 1;
}

TEST(parallel_invoke, nested_calls_with_yields_and_forks_count_every_node_on_four_workers) {
  const int depth = ito::test::tsan ? 6 : (ito::test::asan || ito::test::emulated) ? 8 : 11;
  long nodes = 0;
  for (long d = 0, level = 1; d <= depth; ++d, level *= 3) nodes += level;
  for (int round = 0; round < 3; ++round) {
    ito::start_main_thread_with_worker_size(4, [&] {
      std::atomic<long> forks{0};
      EXPECT_EQ(busy_tree(depth, 12345 + round, forks), nodes);
      auto in_a_ult = ito::create_thread(ito::own_ult, busy_tree, depth, 777 + round, std::ref(forks));
      EXPECT_EQ(ito::join(in_a_ult), nodes);
      EXPECT_GT(forks.load(), 0);
    });
  }
}

}  // namespace
