// SPDX-License-Identifier: Apache-2.0
// Spawning and joining through the C++ API: ten million spawns counted, trees
// at several worker counts, results of every kind (references, move-only),
// future semantics, detaching by dropping a future, futures handed between ULTs.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "death_support.hpp"
#include "ito/thread.hpp"
#include "os/membarrier.hpp"
#include "sched/worker.hpp"  // stacks_mapped(), runtime_state
#include "test_support.hpp"

namespace {

using ito::test::scaled;

// A binary tree of ULTs with `leaves` leaves; returns how many leaves ran.
std::size_t tree(std::size_t leaves) {
  if (leaves == 1) return 1;
  auto left = ito::create_thread(tree, leaves / 2);
  std::size_t right = tree(leaves - leaves / 2);
  return ito::join(left) + right;
}

// Ten million spawns in all (two tests, so ctest can run them side by side):
// five million create/join pairs in a loop, and a tree of five million + 1
// leaves (a tree of n leaves spawns n - 1 ULTs).
constexpr std::size_t total_spawns = 10'000'000;

TEST(spawn, five_million_create_join_pairs_all_counted) {
  const std::size_t pairs = scaled(total_spawns / 2);
  std::atomic<std::size_t> ran{0};
  std::size_t right = 0;
  ito::start_main_thread_with_worker_size(1, [&] {
    // From a ULT that is not the main one: each child a queued record, taken back.
    ito::join(ito::create_thread([&] {
      for (std::size_t i = 0; i < pairs; ++i) {
        auto f = ito::create_thread([&ran, i] {
          ran.fetch_add(1, std::memory_order_relaxed);
          return i;
        });
        right += ito::join(f) == i;
      }
    }));
  });
  EXPECT_EQ(ran.load(), pairs);
  EXPECT_EQ(right, pairs);
}

// One worker hands the same descriptor back to each new ULT. Under TSan each
// ULT's start used to leave its entry function on that descriptor's fiber's
// shadow stack (it leaves by switching), and TSan stopped the program at
// 65,536 frames: so more children than that, unscaled (~0.2 s under TSan).
TEST(spawn, one_descriptor_runs_more_ults_than_tsans_shadow_stack_has_frames) {
  constexpr long children = 70'000;
  long ran = 0;
  ito::start_main_thread_with_worker_size(1, [&] {
    ito::join(ito::create_thread(ito::own_ult, [&] {
      for (long i = 0; i < children; ++i) ito::join(ito::create_thread(ito::own_ult, [&ran] { ++ran; }));
    }));
  });
  EXPECT_EQ(ran, children);
}

TEST(spawn, five_million_spawns_in_a_tree_all_counted) {
  const std::size_t spawns = scaled(total_spawns / 2);
  std::size_t leaves = 0;
  ito::start_main_thread_with_worker_size(2, [&] {
    leaves = ito::join(ito::create_thread(tree, spawns + 1));
  });
  EXPECT_EQ(leaves, spawns + 1);
}

// Each node spawns `fanout` children, which sum their subtrees.
long nested(int depth, int fanout) {
  if (depth == 0) return 1;
  std::vector<ito::future<long>> kids;
  for (int i = 0; i < fanout; ++i) kids.push_back(ito::create_thread(nested, depth - 1, fanout));
  long sum = 1;
  for (auto& k : kids) sum += ito::join(k);
  return sum;
}

class spawn_at_workers : public ::testing::TestWithParam<unsigned> {};

TEST_P(spawn_at_workers, nested_trees_count_every_node) {
  ito::start_main_thread_with_worker_size(GetParam(), [] {
    EXPECT_EQ(ito::join(ito::create_thread(nested, 0, 3)), 1);
    const int depth = ito::test::tsan ? 5 : 8;  // 3^8 = 6561 leaves, 9841 nodes
    long expect = 0;
    for (int d = 0, level = 1; d <= depth; ++d, level *= 3) expect += level;
    EXPECT_EQ(ito::join(ito::create_thread(nested, depth, 3)), expect);
    EXPECT_EQ(ito::join(ito::create_thread(tree, scaled(100'000))), scaled(100'000));
    EXPECT_EQ(nested(4, 5), 1 + 5 + 25 + 125 + 625);  // from the main ULT itself
  });
}

TEST_P(spawn_at_workers, ults_spread_over_workers_when_there_are_several) {
  const unsigned workers = GetParam();
  const int wanted = workers > 1 ? 2 : 1;
  std::atomic<unsigned> seen{0};  // bit i: worker i ran one of them
  ito::start_main_thread_with_worker_size(workers, [&] {
    // Each ULT keeps its worker busy, without yielding, until ULTs have run on
    // two workers: that only ends if another worker (woken by the first push,
    // or by its park timeout) steals queued ULTs. The deadline keeps a broken
    // scheduler from hanging the test; it then fails below.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<ito::future<void>> fs;
    for (int i = 0; i < 20; ++i) {
      fs.push_back(ito::create_thread([&] {
        seen.fetch_or(1u << ito::current_worker_index());
        while (std::popcount(seen.load()) < wanted && std::chrono::steady_clock::now() < deadline) {
        }
      }));
    }
    for (auto& f : fs) ito::join(f);
  });
  EXPECT_GE(std::popcount(seen.load()), wanted);
}

INSTANTIATE_TEST_SUITE_P(workers, spawn_at_workers, ::testing::Values(1u, 2u, 4u, 8u));

// ITO_DEQUE_FENCE: `asymmetric` (the default where cheap to set up; never
// under TSan) leaves the owner's pop without a fence and makes each steal
// pay; `full` fences every pop. The same trees, with steals
// at every level, come to the same counts either way.
TEST(spawn, both_deque_fences_count_every_node_across_workers) {
  for (const std::string how : {"full", "asymmetric"}) {
    setenv("ITO_DEQUE_FENCE", how.c_str(), 1);
    ito::start_main_thread_with_worker_size(4, [&] {
      // Asked for by name, it is set up whatever it costs.
      const bool expected = how == "asymmetric" && !ito::test::tsan &&
                            ito::os::asymmetric_fence_ready(/*whatever_it_costs=*/true);
      EXPECT_EQ(ito::sched::g_runtime.load()->asymmetric_deques, expected) << how;
      const int depth = ito::test::tsan ? 5 : 8;
      long nodes = 0;
      for (int d = 0, level = 1; d <= depth; ++d, level *= 3) nodes += level;
      EXPECT_EQ(ito::join(ito::create_thread(nested, depth, 3)), nodes) << how;
      EXPECT_EQ(ito::join(ito::create_thread(tree, scaled(200'000))), scaled(200'000)) << how;
    });
    unsetenv("ITO_DEQUE_FENCE");
  }
}

TEST(spawn, a_bad_deque_fence_stops_the_start) {
  ito::test::expect_env_exit("ITO_DEQUE_FENCE", "sometimes",
                             "ito: ITO_DEQUE_FENCE=sometimes is invalid: expected asymmetric or full");
}

// On one worker each child-first fork pushes its parent: a chain of forks
// deeper than the deque's first buffer (1024) makes it grow on the way down
// (fork's common case refuses to grow it, the rest of fork does).
TEST(spawn, a_chain_deeper_than_the_first_deque_buffer_on_one_worker) {
  struct link {
    static long run(long depth) {
      if (depth == 0) return 0;
      return ito::join(ito::create_thread(ito::own_ult, run, depth - 1)) + depth;
    }
  };
  if (ito::test::tsan) GTEST_SKIP() << "1,500 live ULTs: a TSan fiber each (~1 MB)";
  const long depth = 1500;
  EXPECT_EQ(ito::start_main_thread_with_worker_size(1, [depth] {
              return ito::join(ito::create_thread(ito::own_ult, link::run, depth));
            }),
            depth * (depth + 1) / 2);
}

TEST(spawn, join_preserves_references) {
  ito::start_main_thread_with_worker_size(2, [] {
    int x = 1;
    int& r = ito::join(ito::create_thread([&]() -> int& { return x; }));
    EXPECT_EQ(&r, &x);
    r = 7;
    EXPECT_EQ(x, 7);
    const std::string s = "kept";
    const std::string& cr = ito::join(ito::create_thread([&]() -> const std::string& { return s; }));
    EXPECT_EQ(&cr, &s);
    // A reference into a ULT-owned container survives join too.
    std::vector<int> v{1, 2, 3};
    int& last = ito::join(ito::create_thread([&]() -> int& { return v.back(); }));
    EXPECT_EQ(&last, &v[2]);
  });
}

TEST(spawn, move_only_arguments_and_results) {
  ito::start_main_thread_with_worker_size(2, [] {
    auto p = std::make_unique<int>(41);
    int* raw = p.get();
    auto f = ito::create_thread(
        [](std::unique_ptr<int> q) {
          ++*q;
          return q;
        },
        std::move(p));
    EXPECT_EQ(p, nullptr);  // moved into the ULT
    std::unique_ptr<int> back = ito::join(f);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back.get(), raw);  // the same object, never copied
    EXPECT_EQ(*back, 42);

    // A move-only callable, and a result built from several move-only pieces.
    auto g = ito::create_thread(
        [a = std::make_unique<int>(1)](std::unique_ptr<int> b) mutable {
          std::vector<std::unique_ptr<int>> out;
          out.push_back(std::move(a));
          out.push_back(std::move(b));
          return out;
        },
        std::make_unique<int>(2));
    auto v = ito::join(std::move(g));
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(*v[0] + *v[1], 3);
  });
}

TEST(spawn, arguments_are_decay_copied_like_std_thread) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::string s = "original";
    // An lvalue argument is copied: the ULT sees another object.
    auto f = ito::create_thread([](const std::string& c) { return &c; }, s);
    EXPECT_NE(ito::join(f), &s);
    auto g = ito::create_thread([](std::string copy) { return copy + "!"; }, s);
    EXPECT_EQ(ito::join(g), "original!");
    // std::ref passes a reference, as with std::thread.
    auto h = ito::create_thread([](std::string& r) { r += "?"; }, std::ref(s));
    ito::join(h);
    EXPECT_EQ(s, "original?");
  });
}

TEST(spawn, future_ready_wait_get) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<bool> go{false};
    auto f = ito::create_thread([&] {
      while (!go.load()) ito::yield();
      return 5;
    });
    EXPECT_TRUE(f.valid());
    for (int i = 0; i < 10; ++i) {
      EXPECT_FALSE(f.ready());  // ready() never waits
      ito::yield();
    }
    go = true;
    f.wait();
    EXPECT_TRUE(f.ready());
    f.wait();  // waiting again is fine
    EXPECT_TRUE(f.valid());
    EXPECT_EQ(f.get(), 5);
    EXPECT_FALSE(f.valid());
    EXPECT_THROW(f.get(), ito::usage_error);
    EXPECT_THROW(f.wait(), ito::usage_error);
    EXPECT_THROW((void)f.ready(), ito::usage_error);

    // A finished ULT stays ready until get().
    auto h = ito::create_thread([] { return std::string("done"); });
    while (!h.ready()) ito::yield();
    EXPECT_TRUE(h.ready());
    EXPECT_EQ(h.get(), "done");

    // Moving a future moves the ULT's ownership.
    auto m = ito::create_thread([] { return 3; });
    ito::future<int> m2 = std::move(m);
    EXPECT_FALSE(m.valid());
    EXPECT_TRUE(m2.valid());
    ito::future<int> m3;
    EXPECT_FALSE(m3.valid());
    m3 = std::move(m2);
    EXPECT_EQ(m3.get(), 3);
  });
}

TEST(spawn, dropped_future_detaches_and_the_ult_still_runs) {
  const std::size_t n = scaled(100'000);
  std::atomic<std::size_t> finished{0};
  std::atomic<int> destroyed{0};
  struct counted {
    std::atomic<int>* d;
    explicit counted(std::atomic<int>* p) : d(p) {}
    counted(counted&& o) noexcept : d(std::exchange(o.d, nullptr)) {}
    ~counted() {
      if (d) d->fetch_add(1);
    }
  };
  ito::start_main_thread_with_worker_size(4, [&] {
    for (std::size_t i = 0; i < n; ++i) {
      // Dropped at once: some run after the drop, some (child first) before.
      (void)ito::create_thread([&finished, i] {
        if (i % 3 == 0) ito::yield();
        finished.fetch_add(1);
        return counted{nullptr};
      });
    }
    {
      auto f = ito::create_thread([&] {
        for (int i = 0; i < 100; ++i) ito::yield();
        finished.fetch_add(1);
        return counted(&destroyed);  // destroyed with the ULT, never returned
      });
    }  // dropped while surely still running
  });    // the runtime waits for every ULT
  EXPECT_EQ(finished.load(), n + 1);
  EXPECT_EQ(destroyed.load(), 1);
}

// The main ULT is bound to worker 0, so its spawns are help-first: it keeps
// running after create_thread and can drop the future (detach) before the ULT
// has even started. The ULT must still be freed when it ends: its result's
// destructor runs, and its stack is reused rather than leaked.
TEST(spawn, future_dropped_by_the_main_ult_before_its_ult_ran_frees_it) {
  std::atomic<int> destroyed{0};
  struct counted {
    std::atomic<int>* d;
    explicit counted(std::atomic<int>* p) : d(p) {}
    counted(counted&& o) noexcept : d(std::exchange(o.d, nullptr)) {}
    ~counted() {
      if (d) d->fetch_add(1);
    }
  };
  const int n = static_cast<int>(scaled(20'000));
  std::size_t stacks = 0;
  ito::start_main_thread_with_worker_size(1, [&] {
    for (int i = 0; i < n; ++i) {
      // Dropped at once; the next statement lets the queued ULT run and end,
      // with the main ULT next in line.
      (void)ito::create_thread([&] { return counted(&destroyed); });
      ito::yield();
    }
    stacks = ito::sched::g_runtime.load()->stacks.stacks_mapped();
  });
  EXPECT_EQ(destroyed.load(), n) << "results of detached ULTs were never destroyed";
  EXPECT_LT(stacks, 512u) << "stacks of detached ULTs were never given back";
}

// A ULT whose frame needs no cleanup (trivial callable and result) gets one
// when it stores an exception: dropping its future must still free it.
TEST(spawn, exception_of_a_ult_whose_future_was_dropped_is_freed) {
  static std::atomic<int> destroyed{0};
  struct boom {
    bool live = true;
    boom() = default;
    boom(boom&& o) noexcept : live(std::exchange(o.live, false)) {}
    ~boom() {
      if (live) destroyed.fetch_add(1);
    }
  };
  destroyed = 0;
  const int n = static_cast<int>(scaled(1'000));
  ito::start_main_thread_with_worker_size(2, [&] {
    for (int i = 0; i < n; ++i) {
      (void)ito::create_thread([i]() -> int {
        if (i >= 0) throw boom{};
        return i;
      });
    }
    // Joined ones rethrow, and the exception dies with the last copy.
    auto kept = ito::create_thread([]() -> int { throw boom{}; });
    EXPECT_THROW(ito::join(kept), boom);
  });
  EXPECT_EQ(destroyed.load(), n + 1);
}

TEST(spawn, futures_cross_ults) {
  ito::start_main_thread_with_worker_size(4, [] {
    // ULT A creates a ULT and hands its future to B, which joins it.
    auto a = ito::create_thread([] { return ito::create_thread([] { return 42; }); });
    ito::future<int> inner = ito::join(a);
    auto b = ito::create_thread([](ito::future<int> f) { return ito::join(f) * 2; }, std::move(inner));
    EXPECT_EQ(ito::join(b), 84);

    // Many ULTs each join a sibling's child.
    const int n = 64;
    std::vector<ito::future<ito::future<int>>> makers;
    for (int i = 0; i < n; ++i)
      makers.push_back(ito::create_thread([i] { return ito::create_thread([i] { return i * i; }); }));
    std::vector<ito::future<int>> joiners;
    for (int i = 0; i < n; ++i)
      joiners.push_back(ito::create_thread(
          [](ito::future<int> f) {
            ito::yield();
            return ito::join(f);
          },
          ito::join(makers[static_cast<std::size_t>((i + 1) % n)])));
    for (int i = 0; i < n; ++i) EXPECT_EQ(ito::join(joiners[static_cast<std::size_t>(i)]), ((i + 1) % n) * ((i + 1) % n));
  });
}

TEST(spawn, main_result_is_returned_by_start_main_thread) {
  EXPECT_EQ(ito::start_main_thread_with_worker_size(2, [](int a, int b) { return a * b; }, 6, 7), 42);
  int x = 0;
  int& r = ito::start_main_thread_with_worker_size(1, [&]() -> int& { return x; });
  EXPECT_EQ(&r, &x);
}

}  // namespace
