// SPDX-License-Identifier: Apache-2.0
// One-shot completion: the signaller wakes exactly the one waiter, a ULT
// directly (make_ready) or an OS thread through a futex.
#include <cstdint>

#include "os/adaptive_spin.hpp"
#include "os/futex.hpp"
#include "ito/os_pool.hpp"
#include "sched/scheduler.hpp"

namespace ito::detail {

namespace {
constexpr std::uintptr_t pending = 0;
constexpr std::uintptr_t done_state = 1;
constexpr std::uintptr_t os_waiter = 2;
}  // namespace

struct completion_access {
  // suspend()'s hook: the ULT's context is saved, so it may be published as
  // the waiter now. If the signal came first, the ULT runs again at once.
  static void publish_waiter(sched::ult* self, void* arg) {
    auto* c = static_cast<completion*>(arg);
    std::uintptr_t expected = pending;
    if (!c->state_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(self),
                                           std::memory_order_acq_rel, std::memory_order_acquire))
      sched::make_ready(self);  // signalled first: run again at once
  }
};

void completion::wait(bool block_thread) noexcept {
  if (state_.load(std::memory_order_acquire) == done_state) return;
  if (!block_thread && sched::current_ult()) {
    sched::suspend(&completion_access::publish_waiter, this, "a delegated call", this);
    // Resumed only by signal() or by the hook having seen it; the result's
    // writes are visible through the acquire in here.
    return;
  }
  // A short job is often done before a futex sleep would even start.
  thread_local os::adaptive_spin linger;
  if (linger.wait([this] { return state_.load(std::memory_order_acquire) == done_state; }))
    return;
  std::uintptr_t expected = pending;
  if (!state_.compare_exchange_strong(expected, os_waiter, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
    return;  // signalled meanwhile
  while (os_word_.load(std::memory_order_acquire) == 0) os::futex_wait(&os_word_, 0);
}

void completion::signal() noexcept {
  std::uintptr_t old = state_.exchange(done_state, std::memory_order_acq_rel);
  if (old == os_waiter) {
    os_word_.store(1, std::memory_order_release);
    // The waiter may see the store, return and free us before this wake: a
    // wake on a dead address finds no sleeper (see os/futex.hpp).
    os::futex_wake_one(&os_word_);
  } else if (old > os_waiter) {
    sched::make_ready(reinterpret_cast<sched::ult*>(old));  // its last touch of *this
  }
}

}  // namespace ito::detail
