// SPDX-License-Identifier: Apache-2.0
// A child the main ULT forks (help-first: it is bound) and joins before any
// worker took it runs inline, on the main ULT's stack below the join's frame
// (sched/scheduler.cpp, join_inline). It must stay a ULT of its own for
// everything a program sees: its id, ULT-local values, exception state,
// results and exceptions; and when it blocks and is woken on another worker,
// the main ULT must still continue on its own OS thread.
#define ITO_PTHREAD_NO_RENAME 1
#include "ito/pthread.h"

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ito/error.hpp"
#include "ito/ito.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using ito::test::fib_ults;
using ito::test::scaled;

std::uintptr_t frame_here() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

long os_thread() { return syscall(SYS_gettid); }

TEST(join_inline, the_main_ults_child_runs_on_its_stack_below_the_join) {
  ito::start_main_thread_with_worker_size(1, [] {
    const std::uintptr_t main_frame = frame_here();
    auto f = ito::create_thread(ito::own_ult, [] { return frame_here(); });
    const std::uintptr_t child_frame = ito::join(f);
    EXPECT_LT(child_frame, main_frame);
    EXPECT_LT(main_frame - child_frame, 64u * 1024) << "the child ran on a stack of its own";
  });
}

TEST(join_inline, the_child_keeps_its_own_id_locals_and_exception_state) {
  ito::start_main_thread_with_worker_size(1, [] {
    const ito::key k = ito::key_create();
    int mine = 0;
    ito::set_specific(k, &mine);
    const unsigned long long main_id = ito::this_ult_id();
    try {
      throw std::runtime_error("the main ULT's");
    } catch (const std::exception&) {
      auto f = ito::create_thread(ito::own_ult, [k] {
        int its = 0;
        const bool fresh_local = ito::get_specific(k) == nullptr;
        ito::set_specific(k, &its);
        const bool no_exception = !std::current_exception() && std::uncaught_exceptions() == 0;
        return std::vector<unsigned long long>{ito::this_ult_id(), fresh_local, no_exception};
      });
      const std::vector<unsigned long long> seen = ito::join(f);
      EXPECT_NE(seen[0], main_id);
      EXPECT_EQ(seen[1], 1u) << "the child saw the main ULT's ULT-local value";
      EXPECT_EQ(seen[2], 1u) << "the child saw the main ULT's caught exception";
      // The main ULT's own state, as it left it.
      EXPECT_TRUE(std::current_exception());
      EXPECT_EQ(ito::get_specific(k), &mine);
      EXPECT_EQ(ito::this_ult_id(), main_id);
    }
    ito::key_delete(k);
  });
}

void* frame_of_a_c_thread(void*) { return reinterpret_cast<void*>(frame_here()); }

// ito_join and pthread_join (a handle, which others could join or detach)
// run a queued child inline too, after the join's CAS made them its joiner.
TEST(join_inline, c_and_posix_threads_the_main_ult_joins_run_inline) {
  ito::start_main_thread_with_worker_size(1, [] {
    const std::uintptr_t main_frame = frame_here();
    ito_ult_t c = 0;
    ASSERT_EQ(ito_create(&c, frame_of_a_c_thread, nullptr), 0);
    void* c_frame = nullptr;
    ASSERT_EQ(ito_join(c, &c_frame), 0);
    pthread_t p{};
    ASSERT_EQ(ito_pthread_create(&p, nullptr, frame_of_a_c_thread, nullptr), 0);
    void* p_frame = nullptr;
    ASSERT_EQ(ito_pthread_join(p, &p_frame), 0);
    for (void* f : {c_frame, p_frame}) {
      const auto child_frame = reinterpret_cast<std::uintptr_t>(f);
      EXPECT_LT(child_frame, main_frame);
      EXPECT_LT(main_frame - child_frame, 64u * 1024) << "the child ran on a stack of its own";
    }
    // Joined again: the handle is gone, as after any join.
    EXPECT_EQ(ito_pthread_join(p, nullptr), ESRCH);
    // Its own stack (pthread_attr_setstack): never run inline, on the caller's memory.
    static char own_stack[256 * 1024] alignas(64);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    ASSERT_EQ(pthread_attr_setstack(&attr, own_stack, sizeof own_stack), 0);
    ASSERT_EQ(ito_pthread_create(&p, &attr, frame_of_a_c_thread, nullptr), 0);
    pthread_attr_destroy(&attr);
    ASSERT_EQ(ito_pthread_join(p, &p_frame), 0);
    const auto in_own = reinterpret_cast<std::uintptr_t>(p_frame);
    EXPECT_GE(in_own, reinterpret_cast<std::uintptr_t>(own_stack));
    EXPECT_LT(in_own, reinterpret_cast<std::uintptr_t>(own_stack) + sizeof own_stack);
  });
}

// A child that forks, joined inline: in the forked process it is the only
// thread, with no worker to return to, and its return ends that process
// with status 0 (as a ULT's return there does, docs/POSIX.md).
TEST(join_inline, a_child_that_forks_ends_the_forked_process_by_returning) {
  ito::start_main_thread_with_worker_size(1, [] {
    const std::uintptr_t main_frame = frame_here();
    auto f = ito::create_thread(ito::own_ult, [main_frame] {
      const bool inline_run = frame_here() < main_frame && main_frame - frame_here() < 64 * 1024;
      return std::pair{fork(), inline_run};
    });
    const auto [pid, inline_run] = ito::join(f);  // only in this process
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(inline_run) << "the child did not run inline: this test proves nothing";
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
  });
}

// What pthread_getattr_np says of a child running inline must hold its
// frames (a conservative collector scans that range for roots).
TEST(join_inline, the_stack_the_child_is_told_it_has_holds_its_frames) {
  ito::start_main_thread_with_worker_size(1, [] {
    const std::uintptr_t main_frame = frame_here();
    auto f = ito::create_thread(ito::own_ult, [main_frame] {
      pthread_attr_t a;
      void* lo = nullptr;
      std::size_t size = 0;
      if (ito_pthread_getattr_np(ito_pthread_self(), &a) != 0) return std::pair{false, false};
      pthread_attr_getstack(&a, &lo, &size);
      pthread_attr_destroy(&a);
      const auto low = reinterpret_cast<std::uintptr_t>(lo);
      const std::uintptr_t here = frame_here();
      return std::pair{here > low && here < low + size, here < main_frame && main_frame - here < 64 * 1024};
    });
    const auto [inside, inline_run] = ito::join(f);
    EXPECT_TRUE(inline_run) << "the child did not run inline: this test proves nothing";
    EXPECT_TRUE(inside);
  });
}

TEST(join_inline, results_exceptions_and_exit_reach_the_joiner) {
  ito::start_main_thread_with_worker_size(1, [] {
    auto thrown = ito::create_thread(ito::own_ult, []() -> int { throw std::logic_error("from the child"); });
    EXPECT_THROW(ito::join(thrown), std::logic_error);
    auto exited = ito::create_thread(ito::own_ult, [] { ito::exit(); });
    EXPECT_NO_THROW(ito::join(exited));
    auto counted = ito::create_thread(ito::own_ult, [] { return fib_ults(15); });
    EXPECT_EQ(ito::join(counted), 610);
    // Joined out of order: the second child is at the bottom of the deque.
    auto first = ito::create_thread(ito::own_ult, [] { return 1; });
    auto second = ito::create_thread(ito::own_ult, [] { return 2; });
    EXPECT_EQ(ito::join(first), 1);
    EXPECT_EQ(ito::join(second), 2);
    // A future waited for, then read.
    auto waited = ito::create_thread(ito::own_ult, [] { return 3; });
    waited.wait();
    EXPECT_EQ(waited.get(), 3);
  });
}

// The child blocks on a semaphore that a second child releases; on several
// workers the releaser often runs elsewhere and wakes the inline child there.
// Its end must then hand the main ULT back to its own worker.
TEST(join_inline, a_child_woken_on_another_worker_returns_the_main_ult_to_its_thread) {
  ito::start_main_thread_with_worker_size(4, [] {
    const long main_thread = os_thread();
    const int rounds = static_cast<int>(scaled(400));
    int ended_elsewhere = 0;
    for (int i = 0; i < rounds; ++i) {
      ito::counting_semaphore ready(0);
      auto releaser = ito::create_thread(ito::own_ult, [&ready] { ready.release(); });
      auto waiter = ito::create_thread(ito::own_ult, [&ready] {
        ready.acquire();
        // Children of its own, child-first: thieves may take it over meanwhile.
        const long r = fib_ults(12);
        return std::pair<long, long>{r, os_thread()};
      });
      const auto [result, ended_on] = ito::join(waiter);
      ito::join(releaser);
      ASSERT_EQ(result, 144);
      ASSERT_EQ(os_thread(), main_thread) << "round " << i;
      ended_elsewhere += ended_on != main_thread;
    }
    RecordProperty("children_ended_on_another_thread", ended_elsewhere);
  });
}

// Many main-ULT joins in a row never switch: timers must still fire (every
// 64th join goes through the scheduler's poll).
TEST(join_inline, a_long_run_of_inline_joins_lets_a_sleeper_wake) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::atomic<bool> woke{false};
    auto sleeper = ito::create_thread(ito::own_ult, [&woke] {
      ito::sleep_for(std::chrono::nanoseconds(1'000'000));
      woke.store(true);
    });
    ito::yield();  // let it start and sleep
    long joins = 0;
    while (!woke.load() && joins < 100'000'000) {
      ito::join(ito::create_thread(ito::own_ult, [] {}));
      ++joins;
    }
    EXPECT_TRUE(woke.load()) << joins << " joins";
    ito::join(sleeper);
  });
}

// A POSIX joiner may withdraw from a wait (a signal's handler or a
// cancellation must run in it: ult::may_withdraw_joins), so the end of a
// child it waits for takes the join word by CAS. A child it runs inline ends
// with a plain store instead (join_word::end_hosted): the host is running the
// child, not waiting, and has nothing to withdraw. Signals aimed at the main
// thread while it joins, most of its children run inline and some taken by
// the other worker: every join returns its own child's value, and the
// handler runs.
std::atomic<int> handled{0};
void count_handled(int) { handled.fetch_add(1, std::memory_order_relaxed); }

void* echo_after_a_yield(void* arg) {
  ito_yield();
  return arg;
}

struct first_signal {
  std::atomic<bool> started{false};
  std::atomic<int>* sent;
};

// Started before its joiner joins it, so that join is a wait (one that may
// withdraw); it ends once the first signal has gone to the main thread.
void* wait_for_the_first_signal(void* arg) {
  auto* f = static_cast<first_signal*>(arg);
  f->started.store(true);
  while (f->sent->load() == 0) ito_yield();
  return nullptr;
}

TEST(join_inline, a_posix_joiner_signalled_meanwhile_gets_each_inline_childs_value) {
  struct sigaction sa {}, old {};
  sa.sa_handler = count_handled;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  handled.store(0);
  long wrong = 0, failed = 0;
  ito::start_main_thread_with_worker_size(2, [&] {
    const pthread_t main_thread = ito_pthread_self();
    std::atomic<bool> done{false};
    std::atomic<int> sent{0};
    auto sender = ito::create_thread(ito::own_ult, [&] {
      while (!done.load(std::memory_order_relaxed)) {
        if (ito_pthread_kill(main_thread, SIGUSR1) == 0) sent.fetch_add(1);
        ito::sleep_for(std::chrono::microseconds(50));
      }
    });
    first_signal f;
    f.sent = &sent;
    pthread_t first{};
    if (ito_pthread_create(&first, nullptr, wait_for_the_first_signal, &f) != 0) std::abort();
    while (!f.started.load()) ito_yield();
    failed += ito_pthread_join(first, nullptr) != 0;
    const long rounds = static_cast<long>(scaled(20'000));
    for (long i = 1; i <= rounds; ++i) {
      pthread_t t{};
      void* got = nullptr;
      if (ito_pthread_create(&t, nullptr, echo_after_a_yield, reinterpret_cast<void*>(i)) != 0 ||
          ito_pthread_join(t, &got) != 0) {
        ++failed;
        continue;
      }
      wrong += reinterpret_cast<long>(got) != i;
    }
    done.store(true);
    ito::join(sender);
  });
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(handled.load(), 0);
  sigaction(SIGUSR1, &old, nullptr);
}

}  // namespace
