// SPDX-License-Identifier: Apache-2.0
// What the C and POSIX layers need of ito::shared_mutex beyond its C++
// interface: error codes instead of exceptions, timed locks, and the state
// that destroy and unlock look at. They translate; the core decides.
#pragma once

#include <cerrno>
#include <cstdint>
#include <limits>

#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito::detail {

struct shared_mutex_access {
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

  // 0, EDEADLK (the caller holds it for writing) or ETIMEDOUT; deadline in
  // CLOCK_MONOTONIC ns, `never` for none. May throw std::bad_alloc (a ULT's timer).
  static int lock(shared_mutex& m, bool write, std::int64_t deadline_ns) {
    if (write ? m.try_lock() : m.try_lock_shared()) return 0;
    return m.lock_slow(write, deadline_ns);
  }
  // 0, EDEADLK (the caller holds it for writing) or EBUSY.
  static int try_lock(shared_mutex& m, bool write) noexcept {
    if (write ? m.try_lock() : m.try_lock_shared()) return 0;
    return m.written_by(caller_identity()) ? EDEADLK : EBUSY;
  }
  // Either kind of hold, as pthread_rwlock_unlock: 0 or EPERM.
  static int unlock(shared_mutex& m) noexcept {
    return m.release_write() || m.release_read() ? 0 : EPERM;
  }
  // Held, or waited for.
  static bool busy(shared_mutex& m) noexcept {
    return m.state_.load(std::memory_order_acquire) != 0;
  }
  // Callers parked in its queue (a hold alone is not counted).
  static bool waited_for(shared_mutex& m) noexcept {
    m.queue_lock_.lock();
    const bool waiting = m.waiters_.head != nullptr;
    m.queue_lock_.unlock();
    return waiting;
  }
};

}  // namespace ito::detail
