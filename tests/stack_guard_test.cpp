// SPDX-License-Identifier: Apache-2.0
// Frames larger than a page must not jump over the guard below a ULT's stack
// into the neighbouring stack: every frame up to the guard's size that runs
// off the stack is reported as an overflow (docs/ARCHITECTURE.md, Stacks).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "ito/thread.hpp"
#include "sched/scheduler.hpp"
#include "stack/guard.hpp"
#include "test_support.hpp"

namespace {

using ito::stack::stack_pool;

constexpr std::size_t kib = 1024;
const char* const overflow_message = "ito: stack overflow in ULT [0-9]+ \\(stack [0-9]+ bytes\\)";

// A frame of `Bytes` whose lowest KiB is written (from its low end), nothing
// else: without a guard as large as the frame, the writes land below it.
template <std::size_t Bytes>
[[gnu::noinline]] int big_frame() {
  volatile char buffer[Bytes];
  for (std::size_t i = 0; i < kib; ++i) buffer[i] = static_cast<char>(i);
  return buffer[Bytes / 2];
}

// The same with GCC's stack-clash protection: the frame is probed a page at a
// time from its top, so the first probe below the stack lands in the guard
// whatever the frame's size.
[[gnu::noinline, gnu::optimize("stack-clash-protection")]] int huge_probed_frame() {
  volatile char buffer[1024 * kib];
  for (std::size_t i = 0; i < kib; ++i) buffer[i] = static_cast<char>(i);
  return buffer[512 * kib];
}

// Recurses until fewer than `left` bytes of the running ULT's stack remain,
// then calls big_frame<Bytes>.
template <std::size_t Bytes>
[[gnu::noinline]] int near_the_bottom(std::size_t left) {
  volatile char pad[256];
  pad[0] = 1;
  auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  auto lo = reinterpret_cast<std::uintptr_t>(ito::sched::current_ult()->stack.lo);
  if (sp - lo < left) return big_frame<Bytes>() + pad[0];
  return near_the_bottom<Bytes>(left) + pad[0];
}

// A neighbour whose stack lies right below the victim's: the victim is
// created first (the worker's cache hands out stacks from high addresses to
// low), the neighbour fills most of its stack with a pattern, the victim
// overflows, and the neighbour checks its pattern. Surviving to the check
// means the overflow went unnoticed: the child then says what it overwrote.
void victim_next_to_a_neighbour(int (*overflow)()) {
  ito::options o;
  o.workers = 1;
  o.stack_size = 64 * kib;
  ito::runtime rt(o);
  static std::atomic<int> stage{0};
  auto victim = ito::create_thread([overflow] {
    while (stage.load() < 1) ito::yield();
    int r = overflow();
    stage.store(2);
    return r;
  });
  auto neighbour = ito::create_thread([] {
    volatile char pattern[48 * kib];
    for (auto& c : pattern) c = 0x5A;
    stage.store(1);
    while (stage.load() < 2) ito::yield();
    std::size_t changed = 0;
    for (auto& c : pattern) changed += c != 0x5A;
    return changed;
  });
  ito::join(victim);
  std::size_t changed = ito::join(neighbour);
  std::fprintf(stderr, "no overflow reported; %zu bytes of the neighbouring stack overwritten\n",
               changed);
  _exit(3);
}

class stack_guard : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, ito::test::threadsafe_death_style); }
};

TEST_F(stack_guard, is_larger_than_a_page) {
  EXPECT_GE(stack_pool::guard_size, 64 * kib);
  EXPECT_EQ(stack_pool::guard_size % 4096, 0u);
}

TEST_F(stack_guard, a_72_KiB_frame_on_a_64_KiB_stack_is_reported_not_written_below_the_guard) {
  EXPECT_EXIT(victim_next_to_a_neighbour(&big_frame<72 * kib>), ::testing::KilledBySignal(SIGABRT),
              overflow_message);
}

TEST_F(stack_guard, a_frame_almost_as_large_as_the_guard_from_the_bottom_of_the_stack_is_reported) {
  // Only 2 KiB of stack left, then a frame of the guard's size less 4 KiB:
  // its low end lies just above the guard's.
  constexpr std::size_t frame = stack_pool::guard_size >= 8 * kib ? stack_pool::guard_size - 4 * kib
                                                                  : 4 * kib;
  EXPECT_EXIT(victim_next_to_a_neighbour([] { return near_the_bottom<frame>(2 * kib); }),
              ::testing::KilledBySignal(SIGABRT), overflow_message);
}

TEST_F(stack_guard, with_stack_clash_protection_a_frame_larger_than_the_guard_is_reported) {
  EXPECT_EXIT(victim_next_to_a_neighbour(&huge_probed_frame), ::testing::KilledBySignal(SIGABRT),
              overflow_message);
}

TEST_F(stack_guard, mprotect_guards_are_as_large) {
  // The fallback for kernels before 6.13 (no MADV_GUARD_INSTALL).
  EXPECT_EXIT(
      {
        ito::stack::force_guard_method(ito::stack::guard_method::mprotect);
        victim_next_to_a_neighbour(&big_frame<72 * kib>);
      },
      ::testing::KilledBySignal(SIGABRT), overflow_message);
}

TEST_F(stack_guard, frames_that_fit_leave_the_neighbour_alone) {
  // The control: a 40 KiB frame fits a 64 KiB stack, so the child reaches the
  // neighbour's check, which finds nothing changed.
  EXPECT_EXIT(victim_next_to_a_neighbour(&big_frame<40 * kib>), ::testing::ExitedWithCode(3),
              "no overflow reported; 0 bytes of the neighbouring stack overwritten");
}

}  // namespace
