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
#include <cstdint>

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
    bool child_ok = ito::join(ito::create_thread(ito::own_ult, [mode, &mine] {
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
    auto up = ito::create_thread(ito::own_ult, keep_mode, FE_UPWARD, 200, std::ref(wrong));
    auto down = ito::create_thread(ito::own_ult, keep_mode, FE_DOWNWARD, 200, std::ref(wrong));
    auto zero = ito::create_thread(ito::own_ult, keep_mode, FE_TOWARDZERO, 200, std::ref(wrong));
    auto near = ito::create_thread(ito::own_ult, keep_mode, FE_TONEAREST, 200, std::ref(wrong));
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
    const bool started_with_defaults = ito::join(ito::create_thread(ito::own_ult, [] {
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

#if defined(__x86_64__)
// x86-64 has two control words, and the switch compares each on its own
// before loading it: a ULT that changes only the x87 one (precision) or only
// MXCSR (flush-to-zero) keeps it across yields and its children's ends, and
// nobody else sees it. Its children start with it and may change it back.
// MXCSR's sticky exception flags are the OS thread's, not the ULT's (as the
// x87 status word's are): compared without them, and every ULT raises
// "inexact" here, so flags differ between the ULTs at many switches.
std::uint16_t x87_control() {
  std::uint16_t cw;
  asm volatile("fnstcw %0" : "=m"(cw));
  return cw;
}
void set_x87_control(std::uint16_t cw) { asm volatile("fldcw %0" : : "m"(cw)); }
std::uint32_t sse_control() {
  std::uint32_t csr;
  asm volatile("stmxcsr %0" : "=m"(csr));
  return csr;
}
void set_sse_control(std::uint32_t csr) { asm volatile("ldmxcsr %0" : : "m"(csr)); }

struct control_words {
  std::uint16_t x87;
  std::uint32_t sse;
  bool operator==(const control_words&) const = default;
};
constexpr std::uint32_t sse_flags = 0x3f;
control_words current_words() { return {x87_control(), sse_control() & ~sse_flags}; }
void set_words(const control_words& w) {
  set_x87_control(w.x87);
  set_sse_control(w.sse);
}

// Runs with `mine`, yielding and joining children that restore `before`.
void keep_words(control_words before, control_words mine, std::atomic<int>& wrong) {
  set_words(mine);
  for (int i = 0; i < 100; ++i) {
    if (i % 3 == 0) (void)compute_thirds();  // raises "inexact"
    ito::yield(i % 2 == 0);
    wrong += !(current_words() == mine);
    const bool inherited = ito::join(ito::create_thread(ito::own_ult, [&] {
      const bool same = current_words() == mine;
      set_words(before);
      ito::yield();
      return same;
    }));
    wrong += !inherited;
    wrong += !(current_words() == mine);
  }
  set_words(before);
}

TEST(switch_state, each_x86_control_word_is_carried_on_its_own) {
  ito::start_main_thread_with_worker_size(1, [] {
    std::feclearexcept(FE_ALL_EXCEPT);
    const control_words defaults = current_words();
    control_words x87_only = defaults, sse_only = defaults;
    x87_only.x87 = static_cast<std::uint16_t>(defaults.x87 & ~0x300u);  // single precision
    sse_only.sse = defaults.sse | 0x8040u;                               // flush-to-zero, DAZ
    ASSERT_FALSE(x87_only == defaults);
    ASSERT_FALSE(sse_only == defaults);
    std::atomic<int> wrong{0};
    auto x87 = ito::create_thread(ito::own_ult, keep_words, defaults, x87_only, std::ref(wrong));
    auto sse = ito::create_thread(ito::own_ult, keep_words, defaults, sse_only, std::ref(wrong));
    auto plain = ito::create_thread(ito::own_ult, keep_words, defaults, defaults, std::ref(wrong));
    x87.get(), sse.get(), plain.get();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_TRUE(current_words() == defaults);
  });
}
#endif

}  // namespace
