// SPDX-License-Identifier: Apache-2.0
// Deadlines for timed waits and sleeps. Workers fire expired timers from their
// scheduler loop and sleep no longer than the next deadline when idle.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>

namespace ito::sched {

std::int64_t monotonic_ns() noexcept;

struct timer_entry {
  std::int64_t deadline_ns = 0;
  void (*fire)(timer_entry*) = nullptr;  // runs under the queue's lock: keep it short
  std::uint64_t order = 0;
};

class timer_queue {
 public:
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

  void add(timer_entry* t);
  // After cancel returns, t's fire is neither running nor going to run.
  // Returns false if it had already fired.
  bool cancel(timer_entry* t);
  // Fires every timer due at `now`; returns how many.
  int fire_expired(std::int64_t now);
  std::int64_t next_deadline() const noexcept { return next_.load(std::memory_order_acquire); }

 private:
  struct earlier {
    bool operator()(const timer_entry* a, const timer_entry* b) const noexcept {
      return a->deadline_ns != b->deadline_ns ? a->deadline_ns < b->deadline_ns
                                              : a->order < b->order;
    }
  };
  void publish_next();  // with mutex_ held

  std::mutex mutex_;
  std::set<timer_entry*, earlier> entries_;
  std::uint64_t order_ = 0;
  std::atomic<std::int64_t> next_{never};
};

}  // namespace ito::sched
