// SPDX-License-Identifier: Apache-2.0
// State of src/sync's primitives that their C and POSIX translations look at
// and the C++ API does not expose.
#pragma once

#include <cstdint>

#include "ito/sync.h"
#include "ito/sync.hpp"
#include "sync/mutex_access.hpp"

namespace ito::detail {

// What the C and POSIX layers' destroy functions need to see (under the
// objects' own locks), and the C API's sem_post limit.
struct sync_access {
  // Locked or waited for; a leftover `woken` flag (after a timed lock gave up) is neither.
  static bool busy(mutex& m) noexcept { return mutex_access::busy(m); }
  static bool busy(condition_variable& c) noexcept { return has_waiters(c.queue_lock_, c.waiters_); }
  static bool busy(barrier& b) noexcept { return has_waiters(b.lock_, b.waiters_); }
  // 0 for storage no init call has made a barrier of (pthread_barrier_wait: EINVAL).
  static std::uint32_t count(const barrier& b) noexcept { return b.count_; }
  // Negative: callers wait, or are about to.
  static bool busy(counting_semaphore& s) noexcept {
    return s.count_.load(std::memory_order_acquire) < 0;
  }
  // sem_post: one permit, unless the value is already at the C API's maximum.
  static bool post(counting_semaphore& s) noexcept { return s.add_permits(1, ITO_SEM_VALUE_MAX); }

 private:
  static bool has_waiters(spinlock& lock, const wait_queue& q) noexcept {
    lock.lock();
    const bool waiting = q.head != nullptr;
    lock.unlock();
    return waiting;
  }
};

}  // namespace ito::detail
