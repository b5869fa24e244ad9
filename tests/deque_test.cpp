// SPDX-License-Identifier: Apache-2.0
// The Chase-Lev deque (src/sched/deque.hpp) alone: its sequential contract,
// then the owner pushing and popping while OS-thread thieves steal, with every
// item taken exactly once, growth past the initial capacity included; each
// with a fence in every pop and with the asymmetric fence (none in the pop, a
// membarrier in each steal that finds something).
#include "sched/deque.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "os/membarrier.hpp"
#include "test_support.hpp"

namespace {

using deque = ito::sched::chase_lev_deque<std::uint32_t>;
using steal_result = deque::steal_result;

TEST(deque, owner_pops_lifo_thieves_steal_fifo) {
  deque d(4);
  std::uint32_t out = 0;
  EXPECT_FALSE(d.pop(out));
  EXPECT_EQ(d.steal(out), steal_result::empty);
  EXPECT_TRUE(d.looks_empty());

  EXPECT_TRUE(d.push(1));  // was empty
  EXPECT_FALSE(d.push(2));
  EXPECT_FALSE(d.push(3));
  EXPECT_EQ(d.size_hint(), 3);
  EXPECT_FALSE(d.looks_empty());

  ASSERT_TRUE(d.pop(out));
  EXPECT_EQ(out, 3u);  // bottom: last pushed
  ASSERT_EQ(d.steal(out), steal_result::success);
  EXPECT_EQ(out, 1u);  // top: first pushed
  ASSERT_TRUE(d.pop(out));
  EXPECT_EQ(out, 2u);
  EXPECT_FALSE(d.pop(out));
  EXPECT_EQ(d.steal(out), steal_result::empty);
  EXPECT_EQ(d.size_hint(), 0);
  EXPECT_TRUE(d.push(4));  // empty again
}

// The lone owner's shortcuts (a one-worker runtime: nobody steals).
TEST(deque, swap_bottom_trades_the_newest_item_and_push_if_room_never_grows) {
  deque d(4);
  std::uint32_t out = 0;
  EXPECT_FALSE(d.swap_bottom_unshared(9, out));  // empty: nothing taken, nothing left
  EXPECT_TRUE(d.looks_empty());
  for (std::uint32_t i = 1; i <= 4; ++i) ASSERT_TRUE(d.push_if_room(i));
  EXPECT_FALSE(d.push_if_room(5));  // full: refused, not grown
  EXPECT_EQ(d.size_hint(), 4);
  ASSERT_TRUE(d.swap_bottom_unshared(7, out));
  EXPECT_EQ(out, 4u);  // the newest, as pop would give
  EXPECT_EQ(d.size_hint(), 4);
  ASSERT_TRUE(d.pop_unshared(out));
  EXPECT_EQ(out, 7u);  // in its place, as push would leave it
  ASSERT_EQ(d.steal(out), steal_result::success);
  EXPECT_EQ(out, 1u);  // the top untouched
  // Room again after taking two (the top has moved: wrapping indices).
  EXPECT_TRUE(d.push_if_room(8));
  EXPECT_TRUE(d.push_if_room(9));
  EXPECT_FALSE(d.push_if_room(10));
  for (std::uint32_t want : {9u, 8u, 3u, 2u}) {
    ASSERT_TRUE(d.pop(out));
    EXPECT_EQ(out, want);
  }
  EXPECT_FALSE(d.pop(out));
}

// parallel_invoke's take-back pops only its own record, and only from the
// bottom; a stale copy of it below `top` (taken by a thief) is not there.
TEST(deque, pop_if_bottom_takes_only_the_named_bottom_item) {
  for (bool shared : {true, false}) {
    deque d(4);
    auto pop_if = [&](std::uint32_t v) {
      return shared ? d.pop_if_bottom(v) : d.pop_if_bottom_unshared(v);
    };
    EXPECT_FALSE(pop_if(0));  // empty (slot -1 wraps to an unused slot)
    d.push(1);
    d.push(2);
    EXPECT_FALSE(pop_if(1));  // there, but not at the bottom
    EXPECT_EQ(d.size_hint(), 2);
    EXPECT_TRUE(pop_if(2));
    EXPECT_EQ(d.size_hint(), 1);
    std::uint32_t out = 0;
    ASSERT_EQ(d.steal(out), steal_result::success);  // a thief takes 1
    EXPECT_FALSE(pop_if(1)) << "the slot still holds 1, below top";
    EXPECT_TRUE(d.looks_empty());
    d.push(3);
    EXPECT_TRUE(pop_if(3));
    EXPECT_FALSE(d.pop(out));
  }
}

// The take-back of the last item, which a thief may be taking at the same
// time: each item goes to exactly one side, with a fence in the pop and
// with the asymmetric one (each steal interrupts the owner: fewer rounds).
TEST(deque, pop_if_bottom_races_the_thieves_for_the_last_item) {
  for (bool asymmetric : {false, true}) {
    if (asymmetric && !ito::os::asymmetric_fence_ready(/*whatever_it_costs=*/true)) continue;
    const long rounds = static_cast<long>(ito::test::scaled(asymmetric ? 20'000 : 200'000));
    deque d(8);
    if (asymmetric) d.use_asymmetric_fence();
    std::atomic<bool> stop{false};
    std::atomic<long> stolen{0};
    std::thread thief([&] {
      std::uint32_t out = 0;
      while (!stop.load(std::memory_order_relaxed))
        if (d.steal(out) == steal_result::success) stolen.fetch_add(out, std::memory_order_relaxed);
    });
    long taken_back = 0;
    for (long i = 1; i <= rounds; ++i) {
      d.push(static_cast<std::uint32_t>(i));
      if (d.pop_if_bottom(static_cast<std::uint32_t>(i))) taken_back += i;
    }
    stop.store(true);
    thief.join();
    EXPECT_EQ(taken_back + stolen.load(), rounds * (rounds + 1) / 2)
        << "an item lost or taken twice, asymmetric fence: " << asymmetric;
    EXPECT_TRUE(d.looks_empty());
  }
}

// Only a push behind other items with room takes the fence-free path; the
// first item (idle workers may need a wake-up) and a full buffer do not.
TEST(deque, push_behind_others_refuses_an_empty_or_full_deque) {
  deque d(4);
  EXPECT_FALSE(d.push_behind_others(1));
  EXPECT_TRUE(d.looks_empty());
  d.push(1);
  for (std::uint32_t i = 2; i <= 4; ++i) ASSERT_TRUE(d.push_behind_others(i));
  EXPECT_FALSE(d.push_behind_others(5));
  EXPECT_EQ(d.size_hint(), 4);
  std::uint32_t out = 0;
  for (std::uint32_t want : {4u, 3u, 2u, 1u}) {
    ASSERT_TRUE(d.pop(out));
    EXPECT_EQ(out, want);
  }
}

TEST(deque, grows_past_its_initial_capacity_keeping_order) {
  deque d(2);
  const std::uint32_t n = 10'000;
  for (std::uint32_t i = 0; i < n; ++i) d.push(i);
  EXPECT_EQ(d.size_hint(), n);
  std::uint32_t out = 0;
  // Steal half from the top (oldest first), pop the rest from the bottom.
  for (std::uint32_t i = 0; i < n / 2; ++i) {
    ASSERT_EQ(d.steal(out), steal_result::success);
    ASSERT_EQ(out, i);
  }
  for (std::uint32_t i = n; i-- > n / 2;) {
    ASSERT_TRUE(d.pop(out));
    ASSERT_EQ(out, i);
  }
  EXPECT_FALSE(d.pop(out));
  // Growth with a top that has moved (wrapping indices).
  for (int round = 0; round < 5; ++round) {
    for (std::uint32_t i = 0; i < 100; ++i) d.push(i);
    for (std::uint32_t i = 0; i < 100; ++i) {
      ASSERT_EQ(d.steal(out), steal_result::success);
      ASSERT_EQ(out, i);
    }
  }
}

// The owner pushes `items` values in random bursts (some larger than the
// initial capacity), popping some back, while `thieves` OS threads steal.
// Every value must be taken exactly once, by the owner or by one thief.
enum class fence { full, asymmetric };

void stress(unsigned thieves, std::uint32_t items, std::int64_t initial_capacity, unsigned seed,
            fence how) {
  deque d(initial_capacity);
  if (how == fence::asymmetric) {
    if (!ito::os::asymmetric_fence_ready(/*whatever_it_costs=*/true)) GTEST_SKIP() << "this kernel refuses membarrier";
    d.use_asymmetric_fence();
  }
  std::vector<std::atomic<std::uint8_t>> taken(items);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> stolen{0}, lost_races{0};
  std::atomic<unsigned> started{0};

  std::vector<std::thread> pool;
  for (unsigned t = 0; t < thieves; ++t) {
    pool.emplace_back([&] {
      std::uint64_t mine = 0, lost = 0;
      std::uint32_t v = 0;
      started.fetch_add(1);
      for (;;) {
        steal_result r = d.steal(v);
        if (r == steal_result::success) {
          taken[v].fetch_add(1, std::memory_order_relaxed);
          if (mine++ == 0) stolen.fetch_add(1);  // the owner watches for a first steal
        } else if (r == steal_result::lost_race) {
          ++lost;
        } else if (done.load(std::memory_order_acquire)) {
          // The owner has finished: one more look, then stop when empty.
          if (d.steal(v) == steal_result::success) {
            taken[v].fetch_add(1, std::memory_order_relaxed);
            ++mine;
            continue;
          }
          if (d.looks_empty()) break;
        }
      }
      stolen += mine - (mine > 0);
      lost_races += lost;
    });
  }

  while (started.load() < thieves) std::this_thread::yield();
  std::mt19937 rng(seed);
  std::uint64_t popped = 0;
  std::uint32_t next = 0, v = 0;
  while (next < items) {
    // Bursts of up to 3x the initial capacity force growth now and then.
    std::uint32_t burst = 1 + rng() % static_cast<std::uint32_t>(initial_capacity * 3);
    for (std::uint32_t i = 0; i < burst && next < items; ++i) {
      d.push(next++);
      // On a loaded machine the thieves may not have had a CPU yet: give them one.
      if (next % 4096 == 0 && stolen.load(std::memory_order_relaxed) == 0) std::this_thread::yield();
    }
    std::uint32_t pops = rng() % (burst + 1);
    for (std::uint32_t i = 0; i < pops && d.pop(v); ++i) {
      taken[v].fetch_add(1, std::memory_order_relaxed);
      ++popped;
    }
  }
  // Leave the rest to the thieves for a while if none has stolen yet.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (stolen.load() == 0 && !d.looks_empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  // Drain what is left, racing the thieves for the last items.
  while (!d.looks_empty()) {
    if (d.pop(v)) {
      taken[v].fetch_add(1, std::memory_order_relaxed);
      ++popped;
    }
  }
  done.store(true, std::memory_order_release);
  for (auto& t : pool) t.join();

  std::uint32_t missing = 0, duplicated = 0;
  for (std::uint32_t i = 0; i < items; ++i) {
    auto c = taken[i].load();
    missing += c == 0;
    duplicated += c > 1;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(popped + stolen.load(), items);
  EXPECT_GT(stolen.load(), 0u);  // the thieves did take part
  ::testing::Test::RecordProperty("stolen", static_cast<int>(stolen.load()));
  ::testing::Test::RecordProperty("lost_races", static_cast<int>(lost_races.load()));
}

class deque_stress : public ::testing::TestWithParam<fence> {};

TEST_P(deque_stress, three_thieves_every_item_exactly_once) {
  stress(3, static_cast<std::uint32_t>(ito::test::scaled(2'000'000)), 1024, 1, GetParam());
}

TEST_P(deque_stress, four_thieves_small_initial_capacity_grows_under_contention) {
  stress(4, static_cast<std::uint32_t>(ito::test::scaled(1'000'000)), 4, 2, GetParam());
}

TEST_P(deque_stress, thieves_race_the_owner_for_single_items) {
  // Bursts of one or two: the owner's pop and the thieves' steals collide on
  // the last item all the time (the CAS on top decides), and a pop whose
  // read of top passed its store to bottom would take an item a thief took.
  stress(3, static_cast<std::uint32_t>(ito::test::scaled(1'000'000)), 1, 3, GetParam());
}

INSTANTIATE_TEST_SUITE_P(fences, deque_stress, ::testing::Values(fence::full, fence::asymmetric),
                         [](const ::testing::TestParamInfo<fence>& p) {
                           return p.param == fence::full ? "full" : "asymmetric";
                         });

TEST(deque, the_asymmetric_fence_keeps_the_sequential_contract) {
  if (!ito::os::asymmetric_fence_ready(/*whatever_it_costs=*/true)) GTEST_SKIP() << "this kernel refuses membarrier";
  deque d(2);
  d.use_asymmetric_fence();
  std::uint32_t out = 0;
  EXPECT_FALSE(d.pop(out));
  EXPECT_EQ(d.steal(out), steal_result::empty);
  for (std::uint32_t i = 0; i < 5; ++i) d.push(i);
  ASSERT_EQ(d.steal(out), steal_result::success);
  EXPECT_EQ(out, 0u);
  ASSERT_TRUE(d.pop(out));
  EXPECT_EQ(out, 4u);
  for (std::uint32_t want : {1u, 2u}) {
    ASSERT_EQ(d.steal(out), steal_result::success);
    EXPECT_EQ(out, want);
  }
  ASSERT_TRUE(d.pop(out));
  EXPECT_EQ(out, 3u);
  EXPECT_FALSE(d.pop(out));
  EXPECT_EQ(d.steal(out), steal_result::empty);
}

TEST(deque, pointers_as_items) {
  // The runtime stores ult*; check a pointer-sized item round-trips.
  ito::sched::chase_lev_deque<int*> d(2);
  std::vector<int> storage(100);
  for (auto& x : storage) d.push(&x);
  int* p = nullptr;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    ASSERT_EQ(d.steal(p), ito::sched::chase_lev_deque<int*>::steal_result::success);
    EXPECT_EQ(p, &storage[i]);
  }
}

}  // namespace
