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
#include <cstdlib>

#include "arch/context.hpp"
#include "ito/runtime.hpp"
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

// options::fp_modes = per_worker (ITO_FP_MODES=worker): the switch carries
// nothing, so a mode one ULT sets is what the next ULT on its worker runs
// with (the documented trade). A runtime started after it carries them again.
TEST(switch_state, with_the_modes_per_worker_a_ult_runs_with_its_workers) {
  ito::options o;
  o.workers = 1;
  o.fp_modes = ito::fp_mode_scope::per_worker;
  {
    ito::runtime rt(o);
    const int seen = ito::join(ito::create_thread(ito::own_ult, [] {
      std::atomic<bool> set{false};
      auto setter = ito::create_thread(ito::own_ult, [&] {
        std::fesetround(FE_UPWARD);
        set = true;
        ito::yield();
        return 0;
      });
      while (!set) ito::yield();
      const int mode = std::fegetround();  // the setter's, left on the worker
      setter.get();
      std::fesetround(FE_TONEAREST);
      return mode;
    }));
    EXPECT_EQ(seen, FE_UPWARD);
  }
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
  run_four_modes(1);  // carried again
}

TEST(switch_state, ito_fp_modes_is_read_and_checked) {
  ::setenv("ITO_FP_MODES", "worker", 1);
  EXPECT_EQ(ito::resolve_options({}).fp_modes, ito::fp_mode_scope::per_worker);
  ::setenv("ITO_FP_MODES", "ult", 1);
  EXPECT_EQ(ito::resolve_options({}).fp_modes, ito::fp_mode_scope::per_ult);
  ito::options in_code;
  in_code.fp_modes = ito::fp_mode_scope::per_worker;  // the program's choice wins
  EXPECT_EQ(ito::resolve_options(in_code).fp_modes, ito::fp_mode_scope::per_worker);
  ::setenv("ITO_FP_MODES", "shared", 1);
  try {
    (void)ito::resolve_options({});
    ADD_FAILURE() << "ITO_FP_MODES=shared accepted";
  } catch (const ito::config_error& e) {
    EXPECT_TRUE(e.from_environment());
    EXPECT_NE(std::string(e.what()).find("ITO_FP_MODES"), std::string::npos) << e.what();
  }
  ::unsetenv("ITO_FP_MODES");
  EXPECT_EQ(ito::resolve_options({}).fp_modes, ito::fp_mode_scope::per_ult);
}

// Raw contexts without the sanitizers' fiber annotations: not in their builds.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// A frame saved with the modes per worker holds no modes (it is marked), and
// resuming it with the modes carried must load none: both ways a context is
// resumed (a switch, and the exit of a context that ended). Loading the mark
// as MXCSR would fault (#GP: reserved bits).
alignas(64) unsigned char other_stack[2][64 * 1024];
void* main_sp;
void* other_sp[2];
ito_exit_switch sets_upward_and_ends(void*) {
  std::fesetround(FE_UPWARD);
  ito::arch::carry_fp_modes(true);
  return {main_sp, nullptr};
}
ito_exit_switch sets_downward_and_switches_back(void*) {
  std::fesetround(FE_DOWNWARD);
  ito::arch::carry_fp_modes(true);
  ito_context_switch(&other_sp[1], main_sp, nullptr, nullptr);
  std::abort();  // never resumed
}
TEST(switch_state, a_frame_saved_with_the_modes_per_worker_loads_none_when_carried_again) {
  other_sp[0] = ito::arch::make_context(other_stack[0] + sizeof other_stack[0],
                                        sets_upward_and_ends, nullptr);
  ito::arch::carry_fp_modes(false);
  ito_context_switch(&main_sp, other_sp[0], nullptr, nullptr);
  EXPECT_TRUE(ito::arch::fp_modes_carried());
  EXPECT_EQ(std::fegetround(), FE_UPWARD);  // the ended context's, not a mark

  other_sp[1] = ito::arch::make_context(other_stack[1] + sizeof other_stack[1],
                                        sets_downward_and_switches_back, nullptr);
  ito::arch::carry_fp_modes(false);
  ito_context_switch(&main_sp, other_sp[1], nullptr, nullptr);
  EXPECT_TRUE(ito::arch::fp_modes_carried());
  EXPECT_EQ(std::fegetround(), FE_DOWNWARD);
  std::fesetround(FE_TONEAREST);
}
#endif  // no sanitizer
#endif

}  // namespace
