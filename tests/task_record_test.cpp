// SPDX-License-Identifier: Apache-2.0
// create_thread's records (ito/detail/task_record.hpp): a child nobody else
// takes runs as a call of its future's get(), with no ULT; one that a thief
// or the worker's scheduler takes first runs as a ULT and get() waits for
// it; results, exceptions and exit() reach get() either way; a dropped
// future's child still runs (before the runtime ends) and is freed by
// whoever runs it; futures move while their child is queued; a creator that
// yields while it waits lets its child run on one worker; many workers,
// random join orders, drops and yields count every child once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"
#include "test_support.hpp"

namespace {

using ito::test::scaled;

std::uint64_t records_made_ults() {
  std::uint64_t n = 0;
  for (auto& w : ito::sched::g_runtime.load()->workers) n += w->stats.records_made_ults.load();
  return n;
}

long fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(fib, n - 1);
  long b = fib(n - 2);
  return ito::join(child) + b;
}

long fib_value(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) a = std::exchange(b, a + b);
  return a;
}

class task_record_at : public ::testing::TestWithParam<unsigned> {};

TEST_P(task_record_at, fib_matches_the_sequential_value) {
  const int n = ito::test::tsan ? 15 : 24;
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    EXPECT_EQ(fib(n), fib_value(n));                                  // from the main ULT
    EXPECT_EQ(ito::join(ito::create_thread(fib, n)), fib_value(n));  // and from another
  });
}

// Every child runs exactly once, whatever takes it: joins in random order
// (so most are not the newest item when joined), dropped futures, yields in
// the children, nested children.
TEST_P(task_record_at, random_joins_drops_and_yields_run_every_child_once) {
  std::atomic<long> ran{0};
  long created = 0, wrong_values = 0;
  const int rounds = static_cast<int>(scaled(60)), width = 40;
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    std::mt19937 rng(12345);
    for (int round = 0; round < rounds; ++round) {
      std::vector<std::pair<long, ito::future<long>>> children;
      for (long i = 0; i < width; ++i) {
        const bool yields = rng() % 4 == 0, nests = rng() % 8 == 0;
        created += 1 + nests;
        children.emplace_back(i, ito::create_thread([&ran, i, yields, nests] {
                                if (yields) ito::yield();
                                long extra = 0;
                                if (nests)
                                  extra = ito::join(ito::create_thread([&ran] {
                                    ran.fetch_add(1);
                                    return 0L;
                                  }));
                                ran.fetch_add(1);
                                return i + extra;
                              }));
      }
      std::shuffle(children.begin(), children.end(), rng);
      for (auto& [i, c] : children) {
        if (rng() % 5 == 0) {
          c = ito::future<long>{};  // dropped: it still runs
          continue;
        }
        wrong_values += ito::join(c) != i;
      }
    }
  });
  // The runtime ended only once every child had run, dropped ones included.
  EXPECT_EQ(ran.load(), created);
  EXPECT_EQ(wrong_values, 0);
}

INSTANTIATE_TEST_SUITE_P(workers, task_record_at, ::testing::Values(1u, 2u, 4u));

TEST(task_record, a_child_nobody_took_runs_as_a_call_of_get) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread([] {
      const std::uint64_t made_before = records_made_ults();
      const unsigned long long self = ito::this_ult_id();
      unsigned long long seen = 0;
      auto child = ito::create_thread([&] {
        seen = ito::this_ult_id();
        return 7;
      });
      EXPECT_FALSE(child.ready());  // queued, not started
      EXPECT_EQ(seen, 0u);
      EXPECT_EQ(child.get(), 7);
      EXPECT_EQ(seen, self);  // it ran as the caller
      EXPECT_EQ(records_made_ults(), made_before);
    }));
  });
}

// a and then b are queued; joining a (not the newest) waits, so this
// worker's scheduler takes b, then a, as ULTs of their own.
TEST(task_record, a_child_joined_out_of_order_runs_as_a_ult) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread([] {
      const std::uint64_t made_before = records_made_ults();
      const unsigned long long self = ito::this_ult_id();
      unsigned long long in_a = 0, in_b = 0;
      auto a = ito::create_thread([&] { in_a = ito::this_ult_id(); return std::string(100, 'a'); });
      auto b = ito::create_thread([&] { in_b = ito::this_ult_id(); return std::string(100, 'b'); });
      EXPECT_EQ(a.get(), std::string(100, 'a'));
      EXPECT_TRUE(b.ready());  // ran while we waited for a
      EXPECT_EQ(b.get(), std::string(100, 'b'));
      EXPECT_NE(in_a, self);
      EXPECT_NE(in_b, self);
      EXPECT_NE(in_a, in_b);
      EXPECT_EQ(records_made_ults(), made_before + 2);
    }));
  });
}

TEST(task_record, wait_then_get_runs_the_child_once) {
  ito::start_main_thread_with_worker_size(1, [] {
    int runs = 0;
    auto child = ito::create_thread([&] { return ++runs; });
    child.wait();
    EXPECT_TRUE(child.ready());
    child.wait();
    EXPECT_EQ(child.get(), 1);
    EXPECT_EQ(runs, 1);
    EXPECT_FALSE(child.valid());
    EXPECT_EQ(ito::test::usage_error_code([&] { child.get(); }), EINVAL);
  });
}

TEST(task_record, exceptions_and_exit_reach_get_on_both_paths) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread([] {
      // Taken back and run as a call.
      auto thrower = ito::create_thread([]() -> int { throw std::runtime_error("inline"); });
      try {
        thrower.get();
        ADD_FAILURE() << "no exception";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "inline");
      }
      // Run as a ULT (joined out of order).
      auto first = ito::create_thread([]() -> int { throw std::runtime_error("as a ULT"); });
      auto second = ito::create_thread([] { return 2; });
      EXPECT_THROW(first.get(), std::runtime_error);
      EXPECT_EQ(second.get(), 2);
      // ito::exit() ends the child only: no result.
      bool after_exit = false;
      auto exits = ito::create_thread([&]() -> int {
        ito::exit();
        after_exit = true;
        return 1;
      });
      EXPECT_EQ(ito::test::usage_error_code([&] { exits.get(); }), EINVAL);
      EXPECT_FALSE(after_exit);
      auto exits_void = ito::create_thread([] { ito::exit(); });
      exits_void.get();  // void: nothing to miss
    }));
  });
}

TEST(task_record, futures_move_while_their_children_are_queued) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::vector<ito::future<int>> children;
    for (int i = 0; i < 1000; ++i) {
      auto f = ito::create_thread([i] { return i * 3; });
      children.push_back(std::move(f));  // the vector reallocates meanwhile
    }
    long sum = 0;
    while (!children.empty()) {
      ito::future<int> last = std::move(children.back());
      children.pop_back();
      sum += last.get();
    }
    EXPECT_EQ(sum, 3L * 999 * 1000 / 2);
  });
}

TEST(task_record, a_dropped_future_s_child_runs_before_the_runtime_ends) {
  std::atomic<int> ran{0};
  auto counted = std::make_shared<int>(0);
  ito::start_main_thread_with_worker_size(1, [&] {
    for (int i = 0; i < 100; ++i)
      ito::create_thread([&ran, counted] {  // dropped at once, never started
        ran.fetch_add(1);
        return std::string("a result nobody reads, freed by whoever ran it");
      });
  });
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(counted.use_count(), 1);  // every record's copy of it destroyed
}

TEST(task_record, an_exception_of_a_dropped_future_s_child_is_reported) {
  testing::internal::CaptureStderr();
  ito::start_main_thread_with_worker_size(1, [] {
    ito::create_thread([]() -> int { throw std::logic_error("nobody joins me"); });
  });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("an exception escaped a ULT, whose future was dropped: std::logic_error: nobody joins me"),
            std::string::npos)
      << err;
}

// A creator that yields while it waits for its child: the child runs, on one
// worker too, though nothing joins it.
TEST(task_record, a_creator_that_yields_lets_its_child_run) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread([] {
      std::atomic<bool> flag{false};
      auto child = ito::create_thread([&] { flag.store(true); });
      while (!flag.load()) ito::yield();
      child.get();
    }));
  });
}

// A child that would not have room on its joiner's stack gets one of its
// own: deep in a ULT's stack, joins still work, and the children run. The
// recursion goes on until 60% of the ULT's stack is used, whatever a frame
// takes (sanitizers make them larger).
[[gnu::noinline]] long deep(const char* floor) {
  volatile char pad[512];
  pad[0] = 1;
  if (static_cast<const char*>(__builtin_frame_address(0)) < floor) {
    long sum = 0;
    for (int i = 0; i < 20; ++i) sum += ito::join(ito::create_thread([i] {
      volatile char frame[8 * 1024];  // needs a stack of its own here
      frame[0] = static_cast<char>(i);
      return static_cast<long>(i) + frame[0] - frame[0];
    }));
    return sum + pad[0] - 1;
  }
  return deep(floor) + pad[0] - 1;
}

TEST(task_record, a_join_deep_in_a_stack_gives_the_child_its_own) {
  ito::start_main_thread_with_worker_size(1, [] {
    const std::uint64_t made_before = records_made_ults();
    // Joined out of order, `deeply` runs as a ULT on a pool stack (the main
    // ULT would run it on its own, far larger one).
    auto deeply = ito::create_thread([] {
      const ito::sched::ult* self = ito::sched::current_ult();
      return deep(self->stack.lo + self->stack.size() * 4 / 10);
    });
    auto newer = ito::create_thread([] { return 0L; });
    EXPECT_EQ(deeply.get(), 190);
    EXPECT_EQ(newer.get(), 0);
    EXPECT_EQ(records_made_ults(), made_before + 2 + 20);
  });
}

// The main ULT runs on its OS thread's stack: its joins follow that stack's
// bounds as a pool ULT's do (runtime_state::main_record_floor).
TEST(task_record, a_join_deep_in_the_main_ult_s_stack_gives_the_child_its_own) {
  ito::start_main_thread_with_worker_size(1, [] {
    const ito::stack::stack_block& s = ito::sched::g_runtime.load()->main_stack;
    if (!s || s.size() > (std::size_t{64} << 20))
      GTEST_SKIP() << "the main thread's stack bounds are unknown or unbounded";
    const std::uint64_t made_before = records_made_ults();
    EXPECT_EQ(deep(s.lo + s.size() * 4 / 10), 190);
    EXPECT_EQ(records_made_ults(), made_before + 20);
    // Near its top, the same joins run as calls.
    EXPECT_EQ(deep(s.lo + s.size()), 190);
    EXPECT_EQ(records_made_ults(), made_before + 20);
  });
}

// A child run by get() runs as the joining ULT, so it holds what its joiner
// holds: locking a mutex the joiner holds is the owner's relock, refused with
// EDEADLK (reaching get() as the child's exception) instead of a hang.
TEST(task_record, a_child_run_by_get_relocking_its_joiner_s_mutex_gets_EDEADLK) {
  ito::start_main_thread_with_worker_size(1, [] {
    ito::join(ito::create_thread(ito::own_ult, [] {
      ito::mutex m;
      m.lock();
      bool after_lock = false;
      auto child = ito::create_thread([&] {
        m.lock();
        after_lock = true;
        m.unlock();
      });
      EXPECT_EQ(ito::test::usage_error_code([&] { child.get(); }), EDEADLK);
      EXPECT_FALSE(after_lock);
      m.unlock();
      // Unlocked, the same child runs through.
      auto again = ito::create_thread([&] {
        std::lock_guard<ito::mutex> hold(m);
        after_lock = true;
      });
      again.get();
      EXPECT_TRUE(after_lock);
    }));
  });
}

// ito::exit() in a child that the main ULT runs as a call ends the child.
TEST(task_record, exit_in_a_child_the_main_ult_runs_ends_the_child) {
  ito::start_main_thread_with_worker_size(1, [] {
    auto exits = ito::create_thread([]() -> int { ito::exit(); });
    EXPECT_EQ(ito::test::usage_error_code([&] { exits.get(); }), EINVAL);
    EXPECT_EQ(ito::test::usage_error_code([] { ito::exit(); }), EPERM);  // the main ULT itself
  });
}

// The main ULT's ito::exit() is told apart by the frames of the join that
// runs the record (no counter on the join path): every way a join runs one
// as a call, nested records, and the main ULT itself once they have ended.
TEST(task_record, main_ult_exit_ends_only_the_innermost_record_on_every_join_path) {
  struct three_words {
    long v[3];
  };
  ito::start_main_thread_with_worker_size(1, [] {
    // A word result (join_task_record_word) and a larger one (wait_task_record).
    auto word = ito::create_thread([]() -> long { ito::exit(); });
    EXPECT_EQ(ito::test::usage_error_code([&] { word.get(); }), EINVAL);
    auto big = ito::create_thread([]() -> three_words { ito::exit(); });
    EXPECT_EQ(ito::test::usage_error_code([&] { big.get(); }), EINVAL);
    auto waited = ito::create_thread([]() -> std::string { ito::exit(); });
    waited.wait();  // wait() runs it; get() then reports it
    EXPECT_EQ(ito::test::usage_error_code([&] { waited.get(); }), EINVAL);
    // Nested: the inner exit ends the inner record; the outer goes on.
    auto outer = ito::create_thread([]() -> int {
      auto inner = ito::create_thread([]() -> int { ito::exit(); });
      const int code = ito::test::usage_error_code([&] { inner.get(); });
      auto deeper = ito::create_thread([] { return 7; });
      return code * 100 + deeper.get();
    });
    EXPECT_EQ(outer.get(), EINVAL * 100 + 7);
    // A void record: exit() is its end, get() returns.
    auto ends = ito::create_thread([] { ito::exit(); });
    ends.get();
    EXPECT_EQ(ito::test::usage_error_code([] { ito::exit(); }), EPERM);
  });
}

// Every shape of child create_thread queues, on both paths (taken back and
// run as a call; taken by the scheduler and run as a ULT), returning,
// throwing and dropped. Calls of at most two trivially copyable words with a
// word-sized result travel in the record's words (word_call); the others are
// built in the record (task_record_of).
struct small_pair {
  short a;
  char b;
};
struct four_words {
  long v[4];
};

template <class Make, class Check>
void check_both_paths(Make make, Check check) {
  ito::start_main_thread_with_worker_size(1, [&] {
    ito::join(ito::create_thread(ito::own_ult, [&] {
      // Taken back: the newest when joined.
      const std::uint64_t made_before = records_made_ults();
      check(make(1).get(), 1);
      EXPECT_EQ(records_made_ults(), made_before);
      // Joined oldest first: both run as ULTs.
      auto older = make(2);
      auto newer = make(3);
      check(older.get(), 2);
      check(newer.get(), 3);
      EXPECT_EQ(records_made_ults(), made_before + 2);
      // Dropped, queued: run before the runtime ends, by whoever takes it.
      make(4);
    }));
  });
}

template <class Make>
void check_throws_on_both_paths(Make make) {
  ito::start_main_thread_with_worker_size(1, [&] {
    ito::join(ito::create_thread(ito::own_ult, [&] {
      EXPECT_THROW(make().get(), std::out_of_range);
      auto older = make();
      auto newer = make();
      EXPECT_THROW(older.get(), std::out_of_range);
      EXPECT_THROW(newer.get(), std::out_of_range);
    }));
  });
}

int add_three(int a, int b, int c) { return a + b + c; }

TEST(task_record, word_calls_carry_every_small_result) {
  using namespace ito::detail;
  static_assert(word_call<long (&)(int), int>::fits);
  static_assert(!word_call<int (&)(int, int, int), int, int, int>::fits);  // four words
  int x = -7;
  double d = 0.5;
  check_both_paths([&](int i) { return ito::create_thread([&x, i] { return x * i; }); },
                   [](int got, int i) { EXPECT_EQ(got, -7 * i); });
  check_both_paths([&](int i) { return ito::create_thread([&d, i] { return d * i; }); },
                   [](double got, int i) { EXPECT_EQ(got, 0.5 * i); });
  check_both_paths(
      [](int i) { return ito::create_thread([i] { return small_pair{static_cast<short>(-i), 'q'}; }); },
      [](small_pair got, int i) {
        EXPECT_EQ(got.a, -i);
        EXPECT_EQ(got.b, 'q');
      });
  check_both_paths([&](int i) { return ito::create_thread([&x, i] { return i == 1 ? &x : nullptr; }); },
                   [&](int* got, int i) { EXPECT_EQ(got, i == 1 ? &x : nullptr); });
  check_both_paths([](int i) { return ito::create_thread([i] { return i % 2 == 1; }); },
                   [](bool got, int i) { EXPECT_EQ(got, i % 2 == 1); });
  check_throws_on_both_paths([] {
    return ito::create_thread([]() -> int { throw std::out_of_range("word"); });
  });
  check_throws_on_both_paths([] {
    return ito::create_thread([] { throw std::out_of_range("void word"); });
  });
}

TEST(task_record, built_records_carry_every_other_call_and_result) {
  using namespace ito::detail;
  const std::string text(100, 'x');  // not trivially copyable
  auto captures_text = [text] { return 0; };
  static_assert(!word_call<decltype(captures_text)>::fits);
  check_both_paths([&](int i) { return ito::create_thread(add_three, i, i, i); },
                   [](int got, int i) { EXPECT_EQ(got, 3 * i); });
  check_both_paths([&](int i) { return ito::create_thread([text, i] { return text.size() + i; }); },
                   [](std::size_t got, int i) { EXPECT_EQ(got, 100u + i); });
  check_both_paths([&](int i) { return ito::create_thread([i] { return std::string(i, 'y'); }); },
                   [](const std::string& got, int i) { EXPECT_EQ(got, std::string(i, 'y')); });
  check_both_paths([](int i) { return ito::create_thread([i] { return four_words{{i, i, i, i}}; }); },
                   [](four_words got, int i) { EXPECT_EQ(got.v[3], i); });
  static int target = 5;
  check_both_paths([](int) { return ito::create_thread([]() -> int& { return target; }); },
                   [](int& got, int) { EXPECT_EQ(&got, &target); });
  check_throws_on_both_paths([&] {
    return ito::create_thread([text]() -> std::string { throw std::out_of_range(text); });
  });
}

}  // namespace
