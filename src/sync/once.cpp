// SPDX-License-Identifier: Apache-2.0
// ito::once_flag, also pthread_once_t: one 32-bit state word. The first
// caller moves it idle -> running and runs the function; a caller that finds
// it running marks it `parked` and waits on the word; the end of the run
// stores done (or idle, after an exception) and wakes the word's waiters only
// if someone marked it. A woken caller looks again: done, or idle and it may
// run the function itself.
//
// running and parked carry the fork generation above their two low bits (as
// glibc's once word does): in a forked child, a word left running by a
// parent's thread, which does not exist there, counts as idle, and the
// child's caller runs the function again. done stays one value, the only
// one the fast path compares with.
#include "ito/sync.hpp"
#include "sync/fork_generation.hpp"
#include "sync/word_wait.hpp"

namespace ito {
namespace {

constexpr std::uint32_t idle = 0;  // PTHREAD_ONCE_INIT
constexpr std::uint32_t running = 1;
constexpr std::uint32_t parked = 3;  // running, and callers wait for its end
constexpr std::uint32_t phase_mask = 3;
constexpr int generation_shift = 2;

constexpr std::uint32_t phase(std::uint32_t s) noexcept { return s & phase_mask; }

std::uint32_t running_now() noexcept {
  return detail::fork_generation() << generation_shift | running;
}

// Running (or parked) in a process the fork left behind.
bool running_before_fork(std::uint32_t s) noexcept {
  return (s & ~phase_mask) != (running_now() & ~phase_mask);
}

}  // namespace

bool once_flag::enter() noexcept {
  static_assert(done != idle && done != running && done != parked && done == phase(done));
  std::uint32_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (s == done) return false;
    if (s == idle || running_before_fork(s)) {
      if (state_.compare_exchange_weak(s, running_now(), std::memory_order_acquire,
                                       std::memory_order_acquire))
        return true;
      continue;
    }
    if (phase(s) == running && !state_.compare_exchange_weak(s, s | parked,
                                                             std::memory_order_acquire,
                                                             std::memory_order_acquire))
      continue;
    detail::wait_on_word(state_, s | parked, "once_flag");
    s = state_.load(std::memory_order_acquire);
  }
}

void once_flag::leave(bool succeeded) noexcept {
  if (phase(state_.exchange(succeeded ? done : idle, std::memory_order_acq_rel)) == parked)
    detail::wake_all_on_word(state_);
}

}  // namespace ito
