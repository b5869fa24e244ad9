// SPDX-License-Identifier: Apache-2.0
// Seed 003's low-level API: allocate(size) gives room at the top of a new
// ULT's stack; construct anything there, fork(th, fn) runs fn(ptr), join(id)
// waits and frees. detach(id) ULTs free themselves; yield(); exit().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "sched/worker.hpp"  // stacks_mapped(): detached ULTs give their stacks back
#include "test_support.hpp"

namespace {

// Runs the callable constructed at p, then destroys it (also when exit() unwinds).
template <class F>
void run_callable(void* p) {
  F* f = std::launder(static_cast<F*>(p));
  struct destroy {
    F* f;
    ~destroy() { f->~F(); }
  } d{f};
  (*f)();
}

// The low-level spawn: allocate, placement-new the callable at ptr, fork.
template <class F>
ito::ult_id spawn(F&& fn) {
  using callable = std::decay_t<F>;
  ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(callable));
  ::new (th.ptr) callable(std::forward<F>(fn));
  ito::lowlevel::fork(th, &run_callable<callable>);
  return th.id;
}

std::size_t stacks_mapped() {
  return ito::sched::g_runtime.load()->stacks.stacks_mapped();
}

TEST(lowlevel, allocate_gives_aligned_writable_bytes_at_the_stack_top) {
  ito::start_main_thread_with_worker_size(1, [] {
    for (std::size_t size : {std::size_t{1}, std::size_t{16}, std::size_t{100}, std::size_t{4000}}) {
      ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(size);
      ASSERT_NE(th.ptr, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(th.ptr) % 16, 0u) << size;
      std::memset(th.ptr, 0xAB, size);  // all of it is ours
      auto* bytes = static_cast<unsigned char*>(th.ptr);
      bool ok = true;
      for (std::size_t i = 0; i < size; ++i) ok = ok && bytes[i] == 0xAB;
      EXPECT_TRUE(ok);
      ito::lowlevel::fork(th, [](void* p) { static_cast<unsigned char*>(p)[0] = 0x11; });
      ito::lowlevel::join(th.id);
    }
  });
}

TEST(lowlevel, fork_runs_the_callable_and_join_waits_for_it) {
  ito::start_main_thread_with_worker_size(2, [] {
    int result = 0;
    std::vector<int> big(1000, 1);  // captured by value: the frame is large
    ito::ult_id id = spawn([&result, big] {
      int s = 0;
      for (int v : big) s += v;
      result = s;
    });
    ito::lowlevel::join(id);
    EXPECT_EQ(result, 1000);

    // A frame holding a non-trivial object: its destructor runs in the ULT.
    std::atomic<int> destroyed{0};
    struct tracked {
      std::atomic<int>* d;
      ~tracked() { d->fetch_add(1); }
    };
    ito::lowlevel::join(spawn([t = std::shared_ptr<tracked>(new tracked{&destroyed})] { (void)t; }));
    EXPECT_EQ(destroyed.load(), 1);
  });
}

// fib with the low-level API only. The frame dies with its ULT at join, so
// the child writes its result into the parent's memory.
struct fib_frame {
  int n;
  long* out;
};
void fib_body(void* p) {
  auto* f = static_cast<fib_frame*>(p);
  if (f->n < 2) {
    *f->out = f->n;
    return;
  }
  long a = 0, b = 0;
  ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(fib_frame));
  ::new (th.ptr) fib_frame{f->n - 1, &a};
  ito::lowlevel::fork(th, fib_body);
  fib_frame mine{f->n - 2, &b};
  fib_body(&mine);
  ito::lowlevel::join(th.id);
  *f->out = a + b;
}

TEST(lowlevel, fib_through_frames_at_several_worker_counts) {
  const int n = ito::test::tsan ? 14 : 22;
  const long expect = ito::test::tsan ? 377 : 17711;
  for (unsigned workers : {1u, 2u, 4u}) {
    long r = ito::start_main_thread_with_worker_size(workers, [n] {
      long out = -1;
      ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(sizeof(fib_frame));
      ::new (th.ptr) fib_frame{n, &out};
      ito::lowlevel::fork(th, fib_body);
      ito::lowlevel::join(th.id);
      return out;
    });
    EXPECT_EQ(r, expect) << workers;
  }
}

TEST(lowlevel, detached_ults_free_themselves) {
  const int n = static_cast<int>(ito::test::scaled(100'000));
  const int per_wave = 200;
  std::atomic<int> ran{0};
  std::size_t mapped = 0;
  ito::start_main_thread_with_worker_size(2, [&] {
    // Waves of detached ULTs, each wave over before the next: at most a wave's
    // worth of stacks is in use at once, so a leak shows as stacks mapped.
    for (int started = 0; started < n; started += per_wave) {
      std::atomic<int> done{0};
      for (int i = 0; i < per_wave; ++i) {
        ito::lowlevel::detach(spawn([&] {
          if (ran.fetch_add(1) % 2) ito::yield();
          done.fetch_add(1);
        }));
      }
      while (done.load() < per_wave) ito::yield();
    }
    mapped = stacks_mapped();
  });
  EXPECT_GE(ran.load(), n);
  // One wave, plus what worker caches and refill batches hold (a leak: n).
  EXPECT_LE(mapped, static_cast<std::size_t>(per_wave) + 512)
      << "detached ULTs do not give their stacks back (" << n << " ULTs ran)";
}

TEST(lowlevel, detach_after_the_ult_finished_frees_it_at_once) {
  ito::start_main_thread_with_worker_size(1, [] {
    bool ran = false;
    // From a non-main ULT the child runs first (child-first), so it is done
    // before detach is called.
    ito::lowlevel::join(spawn([&] {
      ito::ult_id id = spawn([&] { ran = true; });
      EXPECT_TRUE(ran);
      ito::lowlevel::detach(id);
      // Its handle is dead now: joining is an error, not a hang.
      try {
        ito::lowlevel::join(id);
        ADD_FAILURE() << "joined a detached, finished ULT";
      } catch (const ito::usage_error& e) {
        EXPECT_EQ(e.code(), ESRCH);
      }
    }));
  });
}

TEST(lowlevel, yield_interleaves_ults) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::vector<int> order;
    auto a = spawn([&] {
      for (int i = 0; i < 3; ++i) {
        order.push_back(1);
        ito::yield();
      }
    });
    auto b = spawn([&] {
      for (int i = 0; i < 3; ++i) {
        order.push_back(2);
        ito::yield();
      }
    });
    ito::lowlevel::join(a);
    ito::lowlevel::join(b);
    ASSERT_EQ(order.size(), 6u);
    for (std::size_t i = 1; i < order.size(); ++i) EXPECT_NE(order[i], order[i - 1]);
  });
}

TEST(lowlevel, exit_unwinds_to_the_entry_and_join_returns) {
  std::atomic<int> destroyed{0};
  bool after = false;
  struct counter {
    std::atomic<int>* d;
    ~counter() { d->fetch_add(1); }
  };
  ito::start_main_thread_with_worker_size(2, [&] {
    // The callable at ptr is destroyed by run_callable's guard during the unwind.
    ito::lowlevel::join(spawn([&, c = std::shared_ptr<counter>(new counter{&destroyed})] {
      counter local{&destroyed};
      struct deep {
        static void go(int n, std::atomic<int>* d) {
          counter g{d};
          if (n < 0) return;  // never: only there so that go() can return
          if (n == 0) ito::exit();
          go(n - 1, d);
        }
      };
      deep::go(4, &destroyed);
      after = true;
    }));
    // exit() in a detached ULT: it is still freed.
    std::atomic<bool> done{false};
    ito::lowlevel::detach(spawn([&] {
      struct flag {
        std::atomic<bool>* f;
        ~flag() { f->store(true); }
      } set_on_exit{&done};
      ito::exit();
    }));
    while (!done.load()) ito::yield();
  });
  EXPECT_FALSE(after);
  EXPECT_EQ(destroyed.load(), 1 + 5 + 1);  // local, 5 deep frames, the captured counter
}

TEST(lowlevel, ids_are_distinct_and_outside_a_ult_is_all_ones) {
  EXPECT_EQ(ito::this_ult_id(), ~0ull);
  ito::start_main_thread_with_worker_size(2, [] {
    EXPECT_EQ(ito::this_ult_id(), 0u);  // the main ULT
    std::vector<unsigned long long> ids(50);
    std::vector<ito::ult_id> hs;
    for (std::size_t i = 0; i < ids.size(); ++i)
      hs.push_back(spawn([&ids, i] { ids[i] = ito::this_ult_id(); }));
    for (auto h : hs) ito::lowlevel::join(h);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
    EXPECT_NE(ids.front(), 0u);
  });
}

TEST(lowlevel, sleep_for_ns_waits_at_least_that_long) {
  ito::start_main_thread_with_worker_size(2, [] {
    auto t0 = std::chrono::steady_clock::now();
    ito::lowlevel::join(spawn([] { ito::sleep_for(std::chrono::nanoseconds(3'000'000)); }));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(3));
  });
}

}  // namespace
