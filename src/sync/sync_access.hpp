// SPDX-License-Identifier: Apache-2.0
// State of src/sync's primitives that their C and POSIX translations look at
// and the C++ API does not expose.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ito/sync.h"
#include "ito/sync.hpp"
#include "sync/mutex_access.hpp"

namespace ito::detail {

// What the C and POSIX layers' destroy functions need to see (under the
// objects' own locks), the C API's sem_post limit, and what sem_t and
// pthread_once_t need of the cores they are.
struct sync_access {
  // Locked or waited for; a leftover `woken` flag (after a timed lock gave up) is neither.
  static bool busy(mutex& m) noexcept { return mutex_access::busy(m); }
  static bool busy(condition_variable& c) noexcept { return has_waiters(c.queue_lock_, c.waiters_); }
  static bool busy(barrier& b) noexcept { return has_waiters(b.lock_, b.waiters_); }
  // 0 for storage no init call has made a barrier of (pthread_barrier_wait: EINVAL).
  static std::uint32_t count(const barrier& b) noexcept { return b.count_; }
  // pthread_barrier_wait: arrive, or wait on in `phase` after a handler ran.
  using barrier_wait_end = barrier::wait_end;
  static barrier_wait_end arrive_or_wait_on(barrier& b, bool arriving, std::uint32_t& phase) {
    return b.arrive_or_wait_on(arriving, phase);
  }
  // Negative: callers wait, or are about to.
  static bool busy(counting_semaphore& s) noexcept {
    return s.count_.load(std::memory_order_acquire) < 0;
  }
  // sem_post: one permit, unless the value is already at the C API's maximum.
  static bool post(counting_semaphore& s) noexcept { return s.add_permits(1, ITO_SEM_VALUE_MAX); }
  // sem_wait / sem_timedwait's slow path: a permit (true) or the deadline
  // (CLOCK_MONOTONIC ns, INT64_MAX: none) passed. `what` names the wait for
  // hang reports. From a ULT with a deadline it may throw std::bad_alloc.
  static bool acquire(counting_semaphore& s, std::int64_t deadline_ns, const char* what) {
    return s.acquire_slow(deadline_ns, what);
  }
  // sem_getvalue: the permits there are (0 while callers wait).
  static std::ptrdiff_t value(const counting_semaphore& s) noexcept {
    const std::ptrdiff_t c = s.count_.load(std::memory_order_relaxed);
    return c > 0 ? c : 0;
  }
  // The word where the POSIX layer tags its sem_t (glibc's `private`).
  static std::uint32_t& foreign_tag(counting_semaphore& s) noexcept { return s.foreign_tag_; }
  static constexpr std::size_t foreign_tag_offset() noexcept {
    return offsetof(counting_semaphore, foreign_tag_);
  }
  // once_flag is pthread_once_t: its fast path, one acquire load.
  static bool done(const once_flag& f) noexcept {
    return f.state_.load(std::memory_order_acquire) == once_flag::done;
  }

 private:
  static bool has_waiters(spinlock& lock, const wait_queue& q) noexcept {
    lock.lock();
    const bool waiting = q.head != nullptr;
    lock.unlock();
    return waiting;
  }
};

}  // namespace ito::detail
