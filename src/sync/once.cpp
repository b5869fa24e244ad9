// SPDX-License-Identifier: Apache-2.0
// ito::once_flag. The done state is read without a lock by call_once; every
// transition happens under the flag's spinlock, so a caller that finds the
// function running can queue itself without missing its end.
#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito {
namespace {

constexpr std::uint32_t idle = 0;
constexpr std::uint32_t running = 1;

}  // namespace

bool once_flag::enter() {
  for (;;) {
    detail::waiter me(detail::calling_ult());
    lock_.lock();
    const std::uint32_t s = state_.load(std::memory_order_relaxed);
    if (s == done) {
      lock_.unlock();
      return false;
    }
    if (s == idle) {
      state_.store(running, std::memory_order_relaxed);
      lock_.unlock();
      return true;
    }
    detail::push_back(waiters_, &me);
    lock_.unlock();
    detail::park(me, "once_flag", this);  // then look again: done, or it threw and is idle
  }
}

void once_flag::leave(bool succeeded) noexcept {
  lock_.lock();
  state_.store(succeeded ? done : idle, std::memory_order_release);
  detail::waiter* parked = detail::take_all(waiters_);
  lock_.unlock();
  detail::unpark_all(parked);
}

}  // namespace ito
