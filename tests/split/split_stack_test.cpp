// SPDX-License-Identifier: Apache-2.0
// The lazy and fair_use stack policies on split-stack segments: deep recursion
// over thousands of segments, lazy children on their parent's tail, merging,
// fair_use's pool, exceptions and libc calls across segments, no leaked blocks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ito/ito.h"
#include "ito/sync.hpp"
#include "ito/thread.hpp"
#include "split_support.hpp"
#include "split/segment_pool.hpp"

namespace {

using ito::stack_policy;
using split_test::limit_word;
using split_test::policy;
using split_test::segments_used;
using stats = ito::sched::split::split_stats;

// 512 bytes of frame per level, each filled and checked on the way back.
[[gnu::noinline]] long deep_sum(int depth, int salt) {
  volatile int frame[128];
  for (int i = 0; i < 128; ++i) frame[i] = depth * 131 + i + salt;
  long below = depth > 0 ? deep_sum(depth - 1, salt) : 0;
  long sum = 0;
  for (int i = 0; i < 128; ++i) sum += frame[i] == depth * 131 + i + salt ? 1 : -1000000;
  return below + sum;
}

struct scenario {
  stack_policy stacks;
  unsigned workers;
  std::size_t block;
};

class split_deep : public ::testing::TestWithParam<scenario> {};

TEST_P(split_deep, recursion_over_thousands_of_segments_in_many_ults) {
  const scenario s = GetParam();
  ito::runtime rt(policy(s.stacks, s.workers, s.block));
  constexpr int ults = 48, depth = 2000;
  std::vector<ito::future<long>> all;
  for (int u = 0; u < ults; ++u) all.push_back(ito::create_thread(ito::own_ult, deep_sum, depth, u));
  for (auto& f : all) EXPECT_EQ(ito::join(f), long{depth + 1} * 128);
  // 1 MB of frames per ULT on blocks of 8-64 KiB: hundreds to thousands of segments.
  const std::uint64_t at_least = ults * (std::size_t{depth} * 512 / s.block) / 2;
  EXPECT_GE(segments_used(), at_least);
  if (s.block <= (16 << 10)) {
    EXPECT_GE(segments_used(), 2000u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    policies, split_deep,
    ::testing::Values(scenario{stack_policy::lazy, 2, 8 << 10}, scenario{stack_policy::fair_use, 2, 8 << 10},
                      scenario{stack_policy::lazy, 4, 16 << 10},
                      scenario{stack_policy::fair_use, 4, 64 << 10},
                      scenario{stack_policy::lazy, 8, 64 << 10},
                      scenario{stack_policy::fair_use, 8, 16 << 10}),
    [](const auto& info) {
      return std::string(info.param.stacks == stack_policy::lazy ? "lazy" : "fair_use") + "_" +
             std::to_string(info.param.workers) + "workers_" +
             std::to_string(info.param.block >> 10) + "K";
    });

// A child that fills 40 frames, blocks at the bottom until `go`, then checks
// every frame on the way back: its stack must survive whatever its parent does.
[[gnu::noinline]] int hold_frames(int depth, std::atomic<bool>* go, std::atomic<bool>* waiting) {
  volatile int frame[64];
  for (int i = 0; i < 64; ++i) frame[i] = depth * 1000 + i;
  int bad = 0;
  if (depth > 0) {
    bad = hold_frames(depth - 1, go, waiting);
  } else {
    waiting->store(true);
    while (!go->load()) ito::yield();
  }
  for (int i = 0; i < 64; ++i) bad += frame[i] != depth * 1000 + i;
  return bad;
}

class split_lazy_child : public ::testing::TestWithParam<stack_policy> {};

TEST_P(split_lazy_child, blocked_child_on_parent_tail_survives_parent_growing_elsewhere) {
  for (int round = 0; round < 20; ++round) {
    // A fresh runtime each round: the parent starts on a fresh 256 KiB block
    // (under fair_use it could otherwise get a small pooled region, with no
    // tail to spare for a child).
    ito::runtime rt(policy(GetParam(), 2));
    auto parent = ito::create_thread(ito::own_ult, [] {
      std::atomic<bool> go{false}, waiting{false};
      std::uint64_t tails_before = split_test::total(&stats::lazy_spawns);
      auto child = ito::create_thread(ito::own_ult, hold_frames, 40, &go, &waiting);
      EXPECT_GT(split_test::total(&stats::lazy_spawns), tails_before);  // it ran on our tail
      while (!waiting.load()) ito::yield();
      // The child is blocked below us; we resume (maybe on the other worker) and grow.
      long grown = deep_sum(600, 7);  // 300 KB: new segments, wherever we now run
      go.store(true);
      return std::pair<int, long>{ito::join(child), grown};
    });
    auto [bad, grown] = ito::join(parent);
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(grown, 601L * 128);
  }
}

TEST_P(split_lazy_child, ended_child_region_is_merged_back_when_the_parent_needs_room) {
  ito::runtime rt(policy(GetParam(), 2));
  auto parent = ito::create_thread(ito::own_ult, [] {
    char* before = limit_word();
    std::atomic<bool> go{false}, waiting{false};
    auto child = ito::create_thread(ito::own_ult, hold_frames, 3, &go, &waiting);
    while (!waiting.load()) ito::yield();
    char* raised = limit_word();
    EXPECT_GT(raised, before);  // the child's region lies below our limit now
    std::uint64_t merged = split_test::total(&stats::segments_merged);
    go.store(true);
    EXPECT_EQ(ito::join(child), 0);
    // The room is given back: merged at once (the child ended into us), or in
    // __morestack on the next deep call (lazy), or pooled for anyone (fair_use,
    // when the child ended on the other worker).
    deep_sum(40, 1);
    bool merged_now = split_test::total(&stats::segments_merged) > merged;
    bool pooled = split_test::pooled_regions() > 0;
    EXPECT_TRUE(merged_now || (GetParam() == stack_policy::fair_use && pooled));
    return limit_word() == before;
  });
  bool limit_restored = ito::join(parent);
  if (GetParam() == stack_policy::lazy) {
    EXPECT_TRUE(limit_restored);
  }
}

// The fib fast path: a child that ends while its parent waits, unseen, at the
// bottom of the deque gives its region back in the parent's saved context
// before the switch. The parent resumes with its old limit, its next frames
// reuse the child's memory at once, and every child's result is intact.
TEST_P(split_lazy_child, a_child_ending_into_its_parent_gives_the_region_back_before_it_resumes) {
  ito::runtime rt(policy(GetParam(), 1));
  auto parent = ito::create_thread(ito::own_ult, [] {
    char* before = limit_word();
    int bad = 0;
    for (int i = 0; i < 200; ++i) {
      std::uint64_t merged = split_test::total(&stats::segments_merged);
      std::uint64_t allocated = split_test::total(&stats::segments_allocated);
      auto child = ito::create_thread(ito::own_ult, deep_sum, 8, i);  // 4.5 KB of frames on our tail
      // Child-first on one worker: it ran to its end and resumed us.
      bad += limit_word() != before;
      bad += split_test::total(&stats::segments_merged) != merged + 1;
      bad += deep_sum(16, -i) != 17L * 128;  // over the child's old frames
      bad += ito::join(child) != 9L * 128;
      bad += split_test::total(&stats::segments_allocated) != allocated;
    }
    return bad;
  });
  EXPECT_EQ(ito::join(parent), 0);
}

INSTANTIATE_TEST_SUITE_P(policies, split_lazy_child,
                         ::testing::Values(stack_policy::lazy, stack_policy::fair_use),
                         [](const auto& info) {
                           return std::string(info.param == stack_policy::lazy ? "lazy" : "fair_use");
                         });

// The child ends on another worker while its parent, busy and not yielding,
// cannot take its region back at once: lazy leaves it for the parent, whose
// next __morestack merges it and runs the frame in place (no new segment).
TEST(split_merge, lazy_parent_merges_a_region_freed_while_it_was_busy) {
  ito::runtime rt(policy(stack_policy::lazy, 2));
  auto parent = ito::create_thread(ito::own_ult, [] {
    char* before = limit_word();
    std::atomic<bool> go{false}, waiting{false};
    auto child = ito::create_thread(ito::own_ult, hold_frames, 3, &go, &waiting);
    while (!waiting.load()) ito::yield();
    go.store(true);
    while (!child.ready()) {
    }  // it ends on the other worker (or on ours when we yielded above)
    std::uint64_t allocated = split_test::total(&stats::segments_allocated);
    long sum = deep_sum(30, 2);  // 15 KB: more than the room left above the raised limit
    EXPECT_EQ(sum, 31L * 128);
    EXPECT_EQ(limit_word(), before);
    EXPECT_EQ(split_test::total(&stats::segments_allocated), allocated);
    return ito::join(child);
  });
  EXPECT_EQ(ito::join(parent), 0);
}

// fair_use: the region of a child that ended while its parent was elsewhere
// goes to the pool, and an unrelated ULT takes it as a segment. The region
// lies in its worker's part of the pool until that worker parks, and then in
// the shared pool, where a ULT on any worker finds it.
TEST(split_pool, region_freed_by_one_ult_is_reused_by_an_unrelated_one) {
  ito::runtime rt(policy(stack_policy::fair_use, 2, 256 << 10));
  std::atomic<bool> go{false}, waiting{false};
  auto parent = ito::create_thread(ito::own_ult, [&] {
    auto child = ito::create_thread(ito::own_ult, hold_frames, 3, &go, &waiting);
    while (!waiting.load()) ito::yield();
    go.store(true);
    while (!child.ready()) {
    }
    return ito::join(child);
  });
  EXPECT_EQ(ito::join(parent), 0);
  EXPECT_GE(split_test::pooled_regions(), 1u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (split_test::segments().pooled_regions() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(split_test::segments().pooled_regions(), 1u);  // both workers parked: shared
  std::uint64_t reused = split_test::total(&stats::segments_pool_reused);
  auto stranger = ito::create_thread(ito::own_ult, deep_sum, 3000, 3);
  EXPECT_EQ(ito::join(stranger), 3001L * 128);
  EXPECT_GT(split_test::total(&stats::segments_pool_reused), reused);
}

// Seed 000's listing 4.2 in small: every frame holds 8 KiB; it spawns a child
// that waits on its flag, lets the previous child go, joins it, and recurses.
void chain_child(ito::counting_semaphore* flag) { flag->acquire(); }

[[gnu::noinline]] void chain_parent(int count, ito::future<void>* prev, ito::counting_semaphore* prev_flag) {
  volatile char array[8192];
  std::memset(const_cast<char*>(array), 0, sizeof array);
  ito::counting_semaphore flag(0);
  ito::future<void> child;
  if (count > 0) child = ito::create_thread(ito::own_ult, chain_child, &flag);
  prev_flag->release();
  ito::join(*prev);
  if (count > 0) chain_parent(count - 1, &child, &flag);
  EXPECT_EQ(array[count % 8192], 0);
}

std::size_t chain_peak_bytes(stack_policy p, std::size_t block, int depth) {
  ito::runtime rt(policy(p, 2, block));
  ito::join(ito::create_thread(ito::own_ult, [depth] {
    ito::counting_semaphore flag(0);
    ito::future<void> first = ito::create_thread(ito::own_ult, chain_child, &flag);
    chain_parent(depth, &first, &flag);
  }));
  return split_test::segments().peak_bytes();
}

// The thesis' claim for fair_use: peak memory stays flat as blocks grow,
// where lazy's grows with the block size (table 4.9).
TEST(split_pool, fair_use_peak_stays_flat_as_blocks_grow_and_lazy_does_not) {
  constexpr int depth = 2000;
  const std::size_t small = chain_peak_bytes(stack_policy::fair_use, 8 << 10, depth);
  const std::size_t big = chain_peak_bytes(stack_policy::fair_use, 1 << 20, depth);
  EXPECT_LE(big, small * 105 / 100) << "8K blocks: " << small << " bytes, 1M blocks: " << big;
  EXPECT_GT(chain_peak_bytes(stack_policy::lazy, 1 << 20, depth), 4 * big);
}

// fib whose every leaf yields: parents are stolen while children run, so
// children end away from their owners and fair_use pools their regions.
[[gnu::noinline]] int yielding_fib(int n) {
  volatile char frame[256];
  frame[n % 256] = 1;
  if (n < 2) {
    ito::yield();
    return n + frame[n % 256] - 1;
  }
  auto child = ito::create_thread(ito::own_ult, yielding_fib, n - 1);
  int rest = yielding_fib(n - 2);
  return ito::join(child) + rest;
}

// fair_use on several workers: each worker puts and takes freed regions in its
// own part of the pool (no lock per spawn; a full part spills half to the
// shared pool), and a worker that parks gives its part to the shared pool for
// the others. Nothing is lost on the way: every block is freed at stop.
TEST(split_pool, worker_parts_of_the_pool_go_to_the_shared_pool_when_workers_park) {
  using ito::sched::split::split_worker;
  const std::size_t baseline = ito::stack::split_block_bytes_live();
  {
    ito::runtime rt(policy(stack_policy::fair_use, 4, 64 << 10));
    for (int round = 0; round < 3; ++round) EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, yielding_fib, 16)), 987);
    auto parts = [] {
      std::size_t n = 0;
      for (auto& w : ito::sched::g_runtime.load()->workers) {
        unsigned c = ito::sched::split::state(w.get()).pooled_count.load();
        EXPECT_LE(c, split_worker::max_pooled);
        n += c;
      }
      return n;
    };
    // Idle now: every worker parks within a park's spin, and gives its part
    // away; worker 0 too, once this (main) ULT sleeps through ito.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (parts() != 0 && std::chrono::steady_clock::now() < deadline) ito::sleep_for(std::chrono::nanoseconds(1'000'000));
    EXPECT_EQ(parts(), 0u);
    EXPECT_EQ(split_test::pooled_regions(), split_test::segments().pooled_regions());
    // What the shared pool holds is used again, by whichever worker runs next.
    const bool shared = split_test::segments().pooled_regions() > 0;
    std::uint64_t reused = split_test::total(&stats::segments_pool_reused);
    EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, yielding_fib, 16)), 987);
    if (shared) {
      EXPECT_GT(split_test::total(&stats::segments_pool_reused), reused);
    }
  }
  EXPECT_EQ(ito::stack::split_block_bytes_live(), baseline);
}

std::atomic<int> g_destroyed{0};
struct counted {
  ~counted() { g_destroyed.fetch_add(1); }
};

[[gnu::noinline]] int throw_from(int depth) {
  counted guard;
  volatile char pad[300];
  pad[depth % 300] = 1;
  if (depth == 0) throw std::runtime_error("bottom");
  return throw_from(depth - 1) + pad[3];
}

class split_exceptions : public ::testing::TestWithParam<stack_policy> {};

TEST_P(split_exceptions, cross_segments_running_every_destructor) {
  ito::runtime rt(policy(GetParam(), 2, 8 << 10));
  const int start = g_destroyed.load();
  std::vector<ito::future<int>> all;
  for (int u = 0; u < 16; ++u) {
    all.push_back(ito::create_thread(ito::own_ult, [] {
      int before = g_destroyed.load();
      std::uint64_t segments = segments_used();
      try {
        throw_from(1500);
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "bottom");
      }
      EXPECT_GT(segments_used(), segments);
      // The stack is usable again afterwards, segment by segment.
      EXPECT_EQ(deep_sum(1000, 4), 1001L * 128);
      return g_destroyed.load() - before;
    }));
  }
  for (auto& f : all) EXPECT_GE(ito::join(f), 1501);  // others' guards may land in between
  EXPECT_EQ(g_destroyed.load() - start, 16 * 1501);
  // An exception leaving the ULT reaches the joiner across segments too.
  auto thrower = ito::create_thread(ito::own_ult, [] { return throw_from(800); });
  EXPECT_THROW(ito::join(thrower), std::runtime_error);
}

// Cleanup pads call _Unwind_Resume through ito's split-stack wrapper, which
// checks for the room the unwinder needs instead of the caller's prologue; a
// pad near a segment's bottom gets a fresh segment for it.
std::uint64_t g_segments_at_first_cleanup = 0;
struct first_cleanup {
  ~first_cleanup() { g_segments_at_first_cleanup = segments_used(); }
};

[[gnu::noinline]] int throw_through_small_frames(int depth) {
  counted guard;
  volatile char pad[48];
  pad[depth % 48] = 1;
  if (depth == 0) {
    first_cleanup mark;
    throw std::runtime_error("bottom");
  }
  return throw_through_small_frames(depth - 1) + pad[3];
}

TEST_P(split_exceptions, cleanup_pads_near_a_segment_bottom_get_room_to_unwind) {
  ito::runtime rt(policy(GetParam(), 1, 8 << 10));
  auto u = ito::create_thread(ito::own_ult, [] {
    int before = g_destroyed.load();
    std::uint64_t segments_before = segments_used();
    try {
      throw_through_small_frames(3000);
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "bottom");
    }
    EXPECT_GT(g_segments_at_first_cleanup, segments_before + 10);  // 3000 frames over 8K blocks
    EXPECT_GT(segments_used(), g_segments_at_first_cleanup);  // the wrapper's new segments
    return g_destroyed.load() - before;
  });
  EXPECT_EQ(ito::join(u), 3001);
}

// malloc and operator new reach ito's split-stack shims, which check for the
// callee's room when called: recursing to within 6 KiB of the limit (small
// frames pass their prologue checks), the call itself gets a new segment.
// Without the shim the caller's prologue would have taken it, before `before`.
template <class Allocate>
[[gnu::noinline]] void* allocate_near_the_bottom(std::uint64_t* taken, Allocate allocate) {
  volatile char pad[64];
  pad[0] = 1;
  auto* sp = static_cast<char*>(__builtin_frame_address(0));
  if (sp - limit_word() > 6 * 1024 + pad[0]) {
    void* p = allocate_near_the_bottom(taken, allocate);
    pad[1] = 1;  // after the call: no tail call, which GCC turns into a loop on one frame
    return p;
  }
  std::uint64_t before = segments_used();
  void* p = allocate();
  *taken = segments_used() - before;
  return p;
}

TEST_P(split_exceptions, malloc_and_new_near_a_segment_bottom_get_room_when_called) {
  ito::runtime rt(policy(GetParam(), 1, 64 << 10));
  auto u = ito::create_thread(ito::own_ult, [] {
    std::uint64_t taken = 0;
    void* m = allocate_near_the_bottom(&taken, [] { return std::malloc(100); });
    EXPECT_EQ(taken, 1u);
    std::memset(m, 1, 100);
    std::free(m);
    char* n = static_cast<char*>(allocate_near_the_bottom(&taken, [] { return static_cast<void*>(new char[100]); }));
    EXPECT_EQ(taken, 1u);
    n[99] = 1;
    delete[] n;
    return 0;
  });
  EXPECT_EQ(ito::join(u), 0);
}

INSTANTIATE_TEST_SUITE_P(policies, split_exceptions,
                         ::testing::Values(stack_policy::lazy, stack_policy::fair_use),
                         [](const auto& info) {
                           return std::string(info.param == stack_policy::lazy ? "lazy" : "fair_use");
                         });

int compare_ints(const void* a, const void* b) {
  volatile char scratch[200];  // a split-stack frame called back from non-split qsort
  scratch[0] = 0;
  int x = *static_cast<const int*>(a), y = *static_cast<const int*>(b);
  return (x > y) - (x < y) + scratch[0];
}

[[gnu::noinline]] bool libc_at_depth(int depth) {
  volatile char pad[160];
  pad[0] = 1;
  if (depth > 0) return libc_at_depth(depth - 1) && pad[0] == 1;
  char text[128];
  std::snprintf(text, sizeof text, "%d %.3f %s %e", 42, 3.14159, "deep", 1.5e10);
  if (std::strcmp(text, "42 3.142 deep 1.500000e+10") != 0) return false;
  int values[300];
  for (int i = 0; i < 300; ++i) values[i] = (i * 7919) % 300;
  std::qsort(values, 300, sizeof(int), compare_ints);
  for (int i = 0; i < 300; ++i)
    if (values[i] != i) return false;
  return true;
}

TEST(split_libc, printf_and_qsort_with_a_callback_from_deep_split_frames) {
  ito::runtime rt(policy(stack_policy::fair_use, 2, 8 << 10));
  std::vector<ito::future<bool>> all;
  // Many depths: the libc calls land at every offset from a segment boundary.
  for (int depth = 0; depth < 400; depth += 3) all.push_back(ito::create_thread(ito::own_ult, libc_at_depth, depth));
  for (auto& f : all) EXPECT_TRUE(ito::join(f));
}

long fib(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(ito::own_ult, fib, n - 1);
  long b = fib(n - 2);
  return ito::join(child) + b;
}

TEST(split_memory, every_block_is_freed_when_the_runtime_stops) {
  const std::size_t baseline = ito::stack::split_block_bytes_live();
  for (stack_policy p : {stack_policy::lazy, stack_policy::fair_use}) {
    {
      ito::runtime rt(policy(p, 4, 8 << 10));
      EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, fib, 20)), 6765);
      std::vector<ito::future<long>> all;
      for (int u = 0; u < 16; ++u) all.push_back(ito::create_thread(ito::own_ult, deep_sum, 500, u));
      for (auto& f : all) EXPECT_EQ(ito::join(f), 501L * 128);
      EXPECT_GT(ito::stack::split_block_bytes_live(), baseline);
    }
    EXPECT_EQ(ito::stack::split_block_bytes_live(), baseline);
  }
}

TEST(split_fixed, a_split_stack_program_still_runs_the_fixed_policy) {
  ito::runtime rt(policy(stack_policy::fixed, 2));
  EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, fib, 15)), 610);
  EXPECT_EQ(ito::join(ito::create_thread(ito::own_ult, deep_sum, 20, 0)), 21L * 128);
}

void* c_deep_sum(void* depth) {
  return reinterpret_cast<void*>(deep_sum(static_cast<int>(reinterpret_cast<std::intptr_t>(depth)), 1));
}

TEST(split_c_api, ito_init_selects_fair_use_with_its_block_size_and_allocator) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = 2;
  o.stacks = ITO_STACKS_FAIR_USE;
  o.stack_block_size = 16 << 10;
  o.stack_alloc = ITO_STACK_ALLOC_MALLOC;
  ASSERT_EQ(ito_init(&o), 0);
  const ito::options& opts = ito::sched::g_runtime.load()->opts;
  EXPECT_EQ(opts.stacks, stack_policy::fair_use);
  EXPECT_EQ(opts.stack_block_size, std::size_t{16} << 10);
  EXPECT_EQ(opts.stack_allocator, ito::stack_alloc::malloc);
  ito_ult_t u;
  ASSERT_EQ(ito_create(&u, c_deep_sum, reinterpret_cast<void*>(std::intptr_t{2000})), 0);
  void* sum = nullptr;
  ASSERT_EQ(ito_join(u, &sum), 0);
  EXPECT_EQ(reinterpret_cast<std::intptr_t>(sum), 2001L * 128);
  EXPECT_GT(split_test::segments_used(), 10u);  // 2000 frames of 128+ bytes in 16K blocks
  EXPECT_EQ(ito_finalize(), 0);
}

TEST(split_fixed, this_program_is_linked_with_the_split_stack_runtime) {
  EXPECT_TRUE(ito::split_stack_runtime_linked());
}

}  // namespace
