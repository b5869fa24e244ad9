// SPDX-License-Identifier: Apache-2.0
// ito::once_flag, also pthread_once_t: one 32-bit state word. The first
// caller moves it idle -> running and runs the function; a caller that finds
// it running marks it `parked` and waits on the word; the end of the run
// stores done (or idle, after an exception) and wakes the word's waiters only
// if someone marked it. A woken caller looks again: done, or idle and it may
// run the function itself.
#include "ito/sync.hpp"
#include "sync/word_wait.hpp"

namespace ito {
namespace {

constexpr std::uint32_t idle = 0;  // PTHREAD_ONCE_INIT
constexpr std::uint32_t running = 1;
constexpr std::uint32_t parked = 3;  // running, and callers wait for its end

}  // namespace

bool once_flag::enter() noexcept {
  static_assert(done != idle && done != running && done != parked);
  std::uint32_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (s == done) return false;
    if (s == idle) {
      if (state_.compare_exchange_weak(s, running, std::memory_order_acquire,
                                       std::memory_order_acquire))
        return true;
      continue;
    }
    if (s == running && !state_.compare_exchange_weak(s, parked, std::memory_order_acquire,
                                                      std::memory_order_acquire))
      continue;
    detail::wait_on_word(state_, parked, "once_flag");
    s = state_.load(std::memory_order_acquire);
  }
}

void once_flag::leave(bool succeeded) noexcept {
  if (state_.exchange(succeeded ? done : idle, std::memory_order_acq_rel) == parked)
    detail::wake_all_on_word(state_);
}

}  // namespace ito
