// SPDX-License-Identifier: Apache-2.0
// What the POSIX layer needs of ito::mutex, which is also pthread_mutex_t:
// the mutex kinds (the kind byte sits at glibc's __kind), recursion, error
// codes instead of exceptions, and timed locks. It translates; the core decides.
#pragma once

#include <cstdint>
#include <limits>

#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito::detail {

struct mutex_access {
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  // glibc's PTHREAD_MUTEX_KIND_MASK_NP: normal/default 0, recursive 1, errorcheck 2, adaptive 3.
  static constexpr int kind_mask = 3;
  static constexpr int recursive = 1;
  static constexpr int errorcheck = 2;
  // mutex.cpp's `locked` bit of state_ (asserted there).
  static constexpr std::uint32_t locked_bit = 1;

  // A fresh unlocked mutex of that kind in m's storage.
  static void init(mutex& m, int kind) noexcept;
  // glibc's PTHREAD_MUTEX_PRIO_PROTECT_NP bit of __kind, in the kind byte:
  // a priority-protect mutex (its ceiling: compat/posix_prioceiling.cpp).
  // The core ignores it, as kind() does.
  static constexpr std::uint32_t protect_bit = 0x40;
  static void mark_protect(mutex& m) noexcept {
    m.aux_.fetch_or(protect_bit, std::memory_order_relaxed);
  }
  static bool is_protect(const mutex& m) noexcept {
    return (m.aux_.load(std::memory_order_relaxed) & protect_bit) != 0;
  }
  static int kind(const mutex& m) noexcept {
    return static_cast<int>(m.aux_.load(std::memory_order_relaxed)) & kind_mask;
  }
  // 0, EDEADLK (relocked by its holder, errorcheck), EAGAIN (recursion
  // count full) or ETIMEDOUT (deadline: CLOCK_MONOTONIC ns, `never` for
  // none). A timed lock from a ULT may throw std::bad_alloc.
  static int lock(mutex& m, const void* self, std::int64_t deadline_ns);
  // The uncontended lock, inline in the POSIX entry points: takes m if it is
  // free with nobody waiting; false sends the caller to lock().
  static bool lock_if_free(mutex& m, const void* self) noexcept {
    std::uint32_t s = 0;
    if (!m.state_.compare_exchange_strong(s, locked_bit, std::memory_order_acquire,
                                          std::memory_order_relaxed))
      return false;
    m.owner_.store(self, std::memory_order_relaxed);
    count_held_lock(1);
    return true;
  }
  // 0, EBUSY, or EAGAIN (recursion count full).
  static int try_lock(mutex& m, const void* self) noexcept;
  // 0 or EPERM (the caller does not hold it): every kind checks the holder,
  // so unlocking someone else's mutex is an error, never a corrupted lock.
  // Inline: the contended case alone leaves the caller's code.
  static int unlock(mutex& m, const void* self) noexcept {
    if (!m.held_by(self)) return EPERM;
    if (m.depth_ > 0) {
      --m.depth_;
      return 0;
    }
    m.owner_.store(nullptr, std::memory_order_relaxed);
    count_held_lock(-1);
    std::uint32_t expected = locked_bit;
    if (!m.state_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                          std::memory_order_relaxed))
      m.unlock_contended(expected);
    return 0;
  }
  // Locked, or waited for.
  static bool busy(const mutex& m) noexcept;
  // A condition wait releases a recursive mutex completely and restores its
  // depth: take it before unlocking, give it back after relocking.
  static std::uint32_t take_depth(mutex& m) noexcept {
    const std::uint32_t d = m.depth_;
    m.depth_ = 0;
    return d;
  }
  static void restore_depth(mutex& m, std::uint32_t depth) noexcept { m.depth_ = depth; }
  static bool held_by(const mutex& m, const void* self) noexcept { return m.held_by(self); }
};

}  // namespace ito::detail
