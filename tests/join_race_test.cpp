// SPDX-License-Identifier: Apache-2.0
// Two calls racing on one ULT: join vs join, join vs detach, detach vs detach,
// through the C API and the low-level C++ API. Exactly one may win; the other
// gets EINVAL (detached / being joined) or ESRCH (already gone), and nobody
// may return before the ULT has ended.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>

#include "ito/error.hpp"
#include "ito/ito.h"
#include "ito/thread.hpp"
#include "ito/ult.hpp"
#include "test_support.hpp"

namespace {

using ito::test::scaled;

struct race_child {
  std::atomic<bool> ended{false};
};

void* slow_child(void* p) {
  ito_sleep_ns(200'000);  // long enough for both racers to reach the handle
  static_cast<race_child*>(p)->ended.store(true);
  return p;
}

bool is_loser_code(int e) { return e == EINVAL || e == ESRCH; }

class c_join_race : public ::testing::TestWithParam<unsigned> {};

TEST_P(c_join_race, two_joins_exactly_one_wins_and_only_after_the_end) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = GetParam();
  ASSERT_EQ(ito_init(&o), 0);
  const int rounds = static_cast<int>(scaled(300));
  for (int r = 0; r < rounds; ++r) {
    race_child child;
    ito_ult_t h;
    ASSERT_EQ(ito_create(&h, slow_child, &child), 0);
    struct racer {
      ito_ult_t h;
      race_child* child;
      int rc = -1;
      bool saw_end = false;
      void* value = nullptr;
    } a{h, &child}, b{h, &child};
    auto join_it = [](void* p) -> void* {
      auto* r = static_cast<racer*>(p);
      r->rc = ito_join(r->h, &r->value);
      r->saw_end = r->child->ended.load();
      return nullptr;
    };
    ito_ult_t ja, jb;
    ASSERT_EQ(ito_create(&ja, join_it, &a), 0);
    ASSERT_EQ(ito_create(&jb, join_it, &b), 0);
    ASSERT_EQ(ito_join(ja, nullptr), 0);
    ASSERT_EQ(ito_join(jb, nullptr), 0);
    ASSERT_TRUE((a.rc == 0) != (b.rc == 0)) << "round " << r << ": " << a.rc << " " << b.rc;
    racer& winner = a.rc == 0 ? a : b;
    racer& loser = a.rc == 0 ? b : a;
    EXPECT_TRUE(winner.saw_end) << "a join returned before the ULT ended";
    EXPECT_EQ(winner.value, &child);
    EXPECT_TRUE(is_loser_code(loser.rc)) << loser.rc;
  }
  ASSERT_EQ(ito_finalize(), 0);
}

TEST_P(c_join_race, join_against_detach_exactly_one_wins) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = GetParam();
  ASSERT_EQ(ito_init(&o), 0);
  const int rounds = static_cast<int>(scaled(300));
  int joins_won = 0, detaches_won = 0;
  for (int r = 0; r < rounds; ++r) {
    race_child child;
    ito_ult_t h;
    ASSERT_EQ(ito_create(&h, slow_child, &child), 0);
    struct racer {
      ito_ult_t h;
      race_child* child;
      int rc = -1;
      bool saw_end = false;
    } j{h, &child}, d{h, &child};
    ito_ult_t tj, td;
    ASSERT_EQ(ito_create(&tj, [](void* p) -> void* {
      auto* r = static_cast<racer*>(p);
      r->rc = ito_join(r->h, nullptr);
      r->saw_end = r->child->ended.load();
      return nullptr;
    }, &j), 0);
    ASSERT_EQ(ito_create(&td, [](void* p) -> void* {
      auto* r = static_cast<racer*>(p);
      r->rc = ito_detach(r->h);
      return nullptr;
    }, &d), 0);
    ASSERT_EQ(ito_join(tj, nullptr), 0);
    ASSERT_EQ(ito_join(td, nullptr), 0);
    ASSERT_TRUE((j.rc == 0) != (d.rc == 0)) << "round " << r << ": join " << j.rc << " detach " << d.rc;
    if (j.rc == 0) {
      ++joins_won;
      EXPECT_TRUE(j.saw_end);
      EXPECT_TRUE(is_loser_code(d.rc)) << d.rc;
    } else {
      ++detaches_won;
      EXPECT_TRUE(is_loser_code(j.rc)) << j.rc;
      // The detached child frees itself; wait for it before its frame dies.
      while (!child.ended.load()) ito_yield();
      ito_sleep_ns(100'000);
    }
  }
  ASSERT_EQ(ito_finalize(), 0);
  EXPECT_EQ(joins_won + detaches_won, rounds);
}

TEST_P(c_join_race, detach_twice_after_the_end_frees_once) {
  ito_options_t o = ITO_OPTIONS_INIT;
  o.workers = GetParam();
  ASSERT_EQ(ito_init(&o), 0);
  const int rounds = static_cast<int>(scaled(300));
  for (int r = 0; r < rounds; ++r) {
    ito_ult_t h;
    ASSERT_EQ(ito_create(&h, [](void*) -> void* { return nullptr; }, nullptr), 0);
    struct racer {
      ito_ult_t h;
      int rc = -1;
    } a{h}, b{h};
    auto detach_it = [](void* p) -> void* {
      auto* r = static_cast<racer*>(p);
      r->rc = ito_detach(r->h);
      return nullptr;
    };
    ito_ult_t ta, tb;
    ASSERT_EQ(ito_create(&ta, detach_it, &a), 0);
    ASSERT_EQ(ito_create(&tb, detach_it, &b), 0);
    ASSERT_EQ(ito_join(ta, nullptr), 0);
    ASSERT_EQ(ito_join(tb, nullptr), 0);
    ASSERT_TRUE((a.rc == 0) != (b.rc == 0)) << a.rc << " " << b.rc;
    EXPECT_TRUE(is_loser_code(a.rc == 0 ? b.rc : a.rc));
  }
  ASSERT_EQ(ito_finalize(), 0);
}

INSTANTIATE_TEST_SUITE_P(workers, c_join_race, ::testing::Values(1u, 2u, 4u));

// The low-level C++ API: ito::join(id) from two ULTs.
TEST(lowlevel_join_race, two_joins_of_one_id_one_wins_the_other_throws) {
  ito::start_main_thread_with_worker_size(4, [] {
    const int rounds = static_cast<int>(scaled(300));
    for (int r = 0; r < rounds; ++r) {
      static std::atomic<bool> ended;
      ended = false;
      ito::lowlevel::allocated_ult th = ito::lowlevel::allocate(16);
      ito::lowlevel::fork(th, [](void*) {
        ito::sleep_for(std::chrono::nanoseconds(200'000));
        ended = true;
      });
      auto join_it = [id = th.id] {
        try {
          ito::lowlevel::join(id);
          return ended.load() ? 0 : -2;
        } catch (const ito::usage_error& e) {
          return e.code();
        }
      };
      auto a = ito::create_thread(ito::own_ult, join_it);
      auto b = ito::create_thread(ito::own_ult, join_it);
      int ra = ito::join(a), rb = ito::join(b);
      ASSERT_TRUE((ra == 0) != (rb == 0)) << "round " << r << ": " << ra << " " << rb;
      EXPECT_TRUE(is_loser_code(ra == 0 ? rb : ra)) << ra << " " << rb;
    }
  });
}

// A ULT made by create_thread is owned by its future: a C handle to it (from
// ito_self) names it, but cannot join or detach it behind the future's back.
TEST(future_ownership, a_handle_from_ito_self_cannot_join_or_detach_a_future_s_ult) {
  ito::start_main_thread_with_worker_size(2, [] {
    std::atomic<ito_ult_t> self{ITO_ULT_NULL};
    std::atomic<bool> go{false};
    auto f = ito::create_thread(ito::own_ult, [&] {
      self = ito_self();
      while (!go.load()) ito::yield();
      return 7;
    });
    while (self.load() == ITO_ULT_NULL) ito::yield();
    EXPECT_EQ(ito_detach(self.load()), EINVAL);
    EXPECT_EQ(ito_join(self.load(), nullptr), EINVAL);
    go = true;
    EXPECT_EQ(ito::join(f), 7);
    EXPECT_EQ(ito_join(self.load(), nullptr), ESRCH);
  });
}

}  // namespace
