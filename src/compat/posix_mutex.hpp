// SPDX-License-Identifier: Apache-2.0
// The POSIX layer's mutex object and its fast paths, shared by the mutex and
// condition-variable files (a condition wait unlocks and relocks it).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

#include "compat/posix_internal.hpp"

namespace ito::posix {

inline constexpr int kind_mask = 3;  // glibc's PTHREAD_MUTEX_KIND_MASK_NP

struct pmutex {
  std::atomic<std::uint32_t> state{0};  // 0 free, 1 locked, 2 locked + maybe waiters
  detail::spinlock queue_lock;
  std::atomic<const void*> owner{nullptr};  // for EDEADLK, EPERM and recursion
  int kind = 0;             // at glibc's __kind: written by init or a static initialiser
  std::uint32_t count = 0;  // recursive re-locks beyond the first; only the owner touches it
  detail::wait_queue waiters;
};

inline pmutex* as_mutex(pthread_mutex_t* m) noexcept {
  return std::launder(reinterpret_cast<pmutex*>(m));
}
// Normal and default (and glibc's adaptive) behave alike here.
inline int kind_of(const pmutex* m) noexcept { return m->kind & kind_mask; }

// Locks with a deadline (timer_queue::never: none). check_owner: handle a
// re-lock by the holder (EDEADLK or recursion); off when relocking after a
// condition wait, which cannot hold it.
int mutex_lock_slow(pmutex* m, const void* self, std::int64_t deadline, bool check_owner);
void mutex_wake(pmutex* m) noexcept;

// Takes a free mutex with one CAS; false if it is held.
inline bool try_acquire(pmutex* m, const void* self) noexcept {
  std::uint32_t s = 0;
  if (!m->state.compare_exchange_strong(s, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed))
    return false;
  m->owner.store(self, std::memory_order_relaxed);
  return true;
}

inline int mutex_lock(pmutex* m, std::int64_t deadline) {
  const void* self = identity();
  if (try_acquire(m, self)) [[likely]] return 0;
  return mutex_lock_slow(m, self, deadline, true);
}

inline int mutex_unlock(pmutex* m) noexcept {
  // Every kind checks the holder: unlocking someone else's mutex is EPERM,
  // never a corrupted lock.
  if (m->owner.load(std::memory_order_relaxed) != identity()) return EPERM;
  if (m->count > 0) {
    --m->count;
    return 0;
  }
  m->owner.store(nullptr, std::memory_order_relaxed);
  if (m->state.exchange(0, std::memory_order_release) == 2) mutex_wake(m);
  return 0;
}

}  // namespace ito::posix
