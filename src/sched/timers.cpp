// SPDX-License-Identifier: Apache-2.0
#include "sched/timers.hpp"

#include <time.h>

namespace ito::sched {

std::int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void timer_queue::publish_next() {
  next_.store(entries_.empty() ? never : (*entries_.begin())->deadline_ns,
              std::memory_order_release);
}

void timer_queue::add(timer_entry* t) {
  std::lock_guard lock(mutex_);
  t->order = order_++;
  entries_.insert(t);
  publish_next();
}

bool timer_queue::cancel(timer_entry* t) {
  std::lock_guard lock(mutex_);
  bool was_pending = entries_.erase(t) != 0;
  publish_next();
  return was_pending;
}

int timer_queue::fire_expired(std::int64_t now) {
  if (next_.load(std::memory_order_acquire) > now) return 0;
  std::lock_guard lock(mutex_);
  int fired = 0;
  while (!entries_.empty() && (*entries_.begin())->deadline_ns <= now) {
    timer_entry* t = *entries_.begin();
    entries_.erase(entries_.begin());
    t->fire(t);
    ++fired;
  }
  publish_next();
  return fired;
}

}  // namespace ito::sched
