// SPDX-License-Identifier: Apache-2.0
// Waiting for flow events without spinning: a ULT suspends (its worker runs
// other work), a plain OS thread sleeps on a futex. The records live on the
// waiters' stacks; a short spinlock guards each list (never held across a
// switch, and never taken on the node-to-node path: only when someone waits).
#pragma once

#include <atomic>
#include <cstdint>

#include "ito/detail/spinlock.hpp"
#include "sched/ult.hpp"

namespace ito::flow::detail {

struct flow_waiter {
  sched::ult* ult = nullptr;  // null: an OS thread, sleeping on `woken`
  std::atomic<std::uint32_t> woken{0};
  std::uint64_t target = 0;  // what it waits for (a count the event must reach)
  flow_waiter* next = nullptr;
};

class waiter_list {
 public:
  void lock() noexcept { lock_.lock(); }
  void unlock() noexcept { lock_.unlock(); }
  // With the lock held.
  void push(flow_waiter* w) noexcept {
    w->next = head_;
    head_ = w;
  }
  bool empty() const noexcept { return head_ == nullptr; }
  // Unlinks the waiters whose target is <= reached (all of them when
  // reached is ~0) and returns them linked by `next`. With the lock held.
  flow_waiter* take_reached(std::uint64_t reached) noexcept;

 private:
  ito::detail::spinlock lock_;
  flow_waiter* head_ = nullptr;
};

// Makes a waiter taken from a list runnable. It may be gone once this returns.
void wake(flow_waiter* w) noexcept;
// Wakes a list returned by take_reached.
inline void wake_all(flow_waiter* list) noexcept {
  while (list) {
    flow_waiter* next = list->next;  // read before the waiter can leave
    wake(list);
    list = next;
  }
}

// Blocks the caller until a waker calls wake(w), where w is the record that
// `enlist(w)` put on some list; if enlist returns false (the event happened
// already) it does not block. For a ULT, enlist runs once its context is saved.
// Throws flow_error(EDEADLK) on a worker's scheduler stack (a node body).
void block(bool (*enlist)(flow_waiter* w, void* arg), void* arg, std::uint64_t target);

}  // namespace ito::flow::detail
