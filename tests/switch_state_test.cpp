// SPDX-License-Identifier: Apache-2.0
// The floating-point control a switch carries (MXCSR and the x87 control word
// on x86-64, FPCR on aarch64; docs/ARCHITECTURE.md, "The control words"): a
// ULT that changes its rounding mode keeps it across yields, its children's
// ends and moves to other workers, never leaks it to other ULTs, and a child
// starts with its creator's. Checked by mode and by arithmetic (double goes
// through SSE, long double through the x87 unit on x86-64), since a switch
// that skips a load when the words look unchanged must still load them when
// they differ.
#include <gtest/gtest.h>

#include <atomic>
#include <cfenv>

#include "ito/thread.hpp"

namespace {

// 1/3 in double and long double, rounded as the current mode says.
struct thirds {
  double d;
  long double ld;
  bool operator==(const thirds&) const = default;
};

thirds compute_thirds() {
  volatile double one = 1.0, three = 3.0;
  volatile long double one_l = 1.0L, three_l = 3.0L;
  return {one / three, one_l / three_l};
}

// Sets `mode`, then yields, spawns a child that changes its own mode, and
// checks after each that its mode and arithmetic are still its own.
void keep_mode(int mode, int rounds, std::atomic<int>& wrong) {
  std::fesetround(mode);
  const thirds mine = compute_thirds();
  for (int i = 0; i < rounds; ++i) {
    ito::yield(i % 2 == 0);
    wrong += std::fegetround() != mode || !(compute_thirds() == mine);
    bool child_ok = ito::join(ito::create_thread([mode, &mine] {
      const bool inherited = std::fegetround() == mode && compute_thirds() == mine;
      std::fesetround(mode == FE_TOWARDZERO ? FE_UPWARD : FE_TOWARDZERO);
      ito::yield();
      return inherited;
    }));
    wrong += !child_ok;
    wrong += std::fegetround() != mode || !(compute_thirds() == mine);
  }
}

void run_four_modes(unsigned workers) {
  ito::start_main_thread_with_worker_size(workers, [] {
    ASSERT_EQ(std::fegetround(), FE_TONEAREST);
    const thirds nearest = compute_thirds();
    std::atomic<int> wrong{0};
    auto up = ito::create_thread(keep_mode, FE_UPWARD, 200, std::ref(wrong));
    auto down = ito::create_thread(keep_mode, FE_DOWNWARD, 200, std::ref(wrong));
    auto zero = ito::create_thread(keep_mode, FE_TOWARDZERO, 200, std::ref(wrong));
    auto near = ito::create_thread(keep_mode, FE_TONEAREST, 200, std::ref(wrong));
    up.get(), down.get(), zero.get(), near.get();
    EXPECT_EQ(wrong.load(), 0);
    // The main ULT's own, untouched by all of the above.
    EXPECT_EQ(std::fegetround(), FE_TONEAREST);
    EXPECT_TRUE(compute_thirds() == nearest);
  });
}

TEST(switch_state, the_rounding_mode_is_each_ults_own_on_one_worker) {
  // The modes really differ here, or the test proves nothing.
  std::fesetround(FE_UPWARD);
  const thirds up = compute_thirds();
  std::fesetround(FE_DOWNWARD);
  const thirds down = compute_thirds();
  std::fesetround(FE_TONEAREST);
  ASSERT_NE(up.d, down.d);
  ASSERT_NE(up.ld, down.ld);
  run_four_modes(1);
}

TEST(switch_state, the_rounding_mode_moves_with_a_ult_to_other_workers) { run_four_modes(2); }

// The main ULT forks help-first: its child starts with the default modes
// (a fresh context), also when the main ULT joins it before it started and
// runs it inline on its own stack, without a switch (sched/scheduler.cpp).
TEST(switch_state, a_child_the_main_ult_runs_inline_starts_with_the_defaults_and_keeps_its_own) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::fesetround(FE_UPWARD);
    const thirds up = compute_thirds();
    const bool started_with_defaults = ito::join(ito::create_thread([] {
      const bool defaults = std::fegetround() == FE_TONEAREST;
      std::fesetround(FE_DOWNWARD);
      return defaults;
    }));
    EXPECT_TRUE(started_with_defaults);
    EXPECT_EQ(std::fegetround(), FE_UPWARD);
    EXPECT_TRUE(compute_thirds() == up);
    std::fesetround(FE_TONEAREST);
  });
}

}  // namespace
