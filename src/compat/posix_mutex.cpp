// SPDX-License-Identifier: Apache-2.0
// pthread mutexes for ULTs: normal, errorcheck and recursive, with timed lock.
//
// The object lives in glibc's pthread_mutex_t storage (40 bytes) with its
// `kind` where glibc keeps __kind, so all-zero bytes (PTHREAD_MUTEX_INITIALIZER)
// are an unlocked default mutex and PTHREAD_RECURSIVE/ERRORCHECK_MUTEX_
// INITIALIZER_NP give those kinds without any init call.
//
// The lock word is Drepper's three-state futex mutex ("Futexes are tricky"):
// 0 free, 1 locked, 2 locked and maybe contended. Uncontended lock and unlock
// are one atomic instruction each; a contended locker parks its ULT on the
// mutex's own queue, and unlock wakes the first one, which competes again.
#include <cstddef>

#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "ito/pthread.h"

namespace ito::posix {

static_assert(sizeof(pmutex) <= sizeof(pthread_mutex_t));
static_assert(alignof(pmutex) <= alignof(pthread_mutex_t));
static_assert(offsetof(pmutex, kind) == offsetof(pthread_mutex_t, __data.__kind));

int mutex_lock_slow(pmutex* m, const void* self, std::int64_t deadline, bool check_owner) {
  if (check_owner && m->owner.load(std::memory_order_relaxed) == self) {
    if (kind_of(m) != PTHREAD_MUTEX_RECURSIVE) return EDEADLK;  // never a silent deadlock
    if (m->count == UINT32_MAX) return EAGAIN;
    ++m->count;
    return 0;
  }
  errno_guard keep_errno;
  // A short spin first: the holder may be running on another worker.
  const bool may_spin = sched::current_worker() && sched::current_worker()->rt->workers.size() > 1;
  for (int i = 0; may_spin && i < 100; ++i) {
    std::uint32_t s = m->state.load(std::memory_order_relaxed);
    if (s == 0 && m->state.compare_exchange_weak(s, 1, std::memory_order_acquire)) {
      m->owner.store(self, std::memory_order_relaxed);
      return 0;
    }
    __builtin_ia32_pause();
  }
  for (;;) {
    if (m->state.exchange(2, std::memory_order_acquire) == 0) {
      m->owner.store(self, std::memory_order_relaxed);
      return 0;
    }
    if (deadline != sched::timer_queue::never && sched::monotonic_ns() >= deadline) return ETIMEDOUT;
    detail::waiter me(detail::calling_ult());
    m->queue_lock.lock();
    // Queued only while the word still says "contended": an unlock after this
    // check must take the queue lock to wake, so it finds this record.
    if (m->state.load(std::memory_order_relaxed) != 2) {
      m->queue_lock.unlock();
      continue;
    }
    detail::push_back(m->waiters, &me);
    m->queue_lock.unlock();
    if (park_until(me, deadline, m->queue_lock, m->waiters, "pthread_mutex", m)) return ETIMEDOUT;
  }
}

void mutex_wake(pmutex* m) noexcept {
  m->queue_lock.lock();
  wake_one_and_unlock(m->queue_lock, m->waiters);
}

}  // namespace ito::posix

using ito::posix::as_mutex;
using ito::posix::pmutex;

extern "C" {

int ito_pthread_mutexattr_init(pthread_mutexattr_t* attr) {
  if (!attr) return EINVAL;
  // glibc's encoding (type in the low bits), so its other mutexattr setters
  // keep working on it; ito uses only the type.
  *reinterpret_cast<int*>(attr) = PTHREAD_MUTEX_DEFAULT;
  return 0;
}

int ito_pthread_mutexattr_destroy(pthread_mutexattr_t* attr) { return attr ? 0 : EINVAL; }

int ito_pthread_mutexattr_settype(pthread_mutexattr_t* attr, int type) {
  if (!attr) return EINVAL;
  if (type != PTHREAD_MUTEX_NORMAL && type != PTHREAD_MUTEX_RECURSIVE &&
      type != PTHREAD_MUTEX_ERRORCHECK && type != PTHREAD_MUTEX_DEFAULT)
    return EINVAL;
  int& word = *reinterpret_cast<int*>(attr);
  word = (word & ~ito::posix::kind_mask) | type;
  return 0;
}

int ito_pthread_mutexattr_gettype(const pthread_mutexattr_t* attr, int* type) {
  if (!attr || !type) return EINVAL;
  *type = *reinterpret_cast<const int*>(attr) & ito::posix::kind_mask;
  return 0;
}

int ito_pthread_mutex_init(pthread_mutex_t* mutex, const pthread_mutexattr_t* attr) {
  if (!mutex) return EINVAL;
  int kind = PTHREAD_MUTEX_DEFAULT;
  if (attr) kind = *reinterpret_cast<const int*>(attr) & ito::posix::kind_mask;
  std::memset(static_cast<void*>(mutex), 0, sizeof *mutex);
  pmutex* m = ::new (static_cast<void*>(mutex)) pmutex();
  m->kind = kind;
  return 0;
}

int ito_pthread_mutex_destroy(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  return as_mutex(mutex)->state.load(std::memory_order_acquire) != 0 ? EBUSY : 0;
}

int ito_pthread_mutex_lock(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  if (int e = ito::posix::enter()) return e;
  return ito::posix::mutex_lock(as_mutex(mutex), ito::sched::timer_queue::never);
}

int ito_pthread_mutex_trylock(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  if (int e = ito::posix::enter()) return e;
  pmutex* m = as_mutex(mutex);
  const void* self = ito::posix::identity();
  if (ito::posix::try_acquire(m, self)) return 0;
  if (m->owner.load(std::memory_order_relaxed) == self &&
      ito::posix::kind_of(m) == PTHREAD_MUTEX_RECURSIVE) {
    if (m->count == UINT32_MAX) return EAGAIN;
    ++m->count;
    return 0;
  }
  return EBUSY;
}

int ito_pthread_mutex_timedlock(pthread_mutex_t* mutex, const struct timespec* abstime) {
  return ito_pthread_mutex_clocklock(mutex, CLOCK_REALTIME, abstime);
}

int ito_pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                const struct timespec* abstime) {
  if (!mutex) return EINVAL;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;  // as glibc
  if (int e = ito::posix::enter()) return e;
  pmutex* m = as_mutex(mutex);
  const void* self = ito::posix::identity();
  // POSIX: a mutex free now is taken whatever the time-out says.
  if (ito::posix::try_acquire(m, self)) return 0;
  std::int64_t deadline = 0;
  if (int e = ito::posix::to_deadline(abstime, clock, &deadline)) return e;
  return ito::posix::mutex_lock_slow(m, self, deadline, true);
}

// ito's mutexes are never robust nor priority-protected (their attributes
// are ignored): the calls for those kinds say so rather than reach glibc.
int ito_pthread_mutex_consistent(pthread_mutex_t* mutex) {
  (void)mutex;
  return EINVAL;
}

int ito_pthread_mutex_getprioceiling(const pthread_mutex_t* mutex, int* ceiling) {
  (void)mutex;
  (void)ceiling;
  return EINVAL;
}

int ito_pthread_mutex_setprioceiling(pthread_mutex_t* mutex, int ceiling, int* old_ceiling) {
  (void)mutex;
  (void)ceiling;
  (void)old_ceiling;
  return EINVAL;
}

int ito_pthread_mutex_unlock(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  return ito::posix::mutex_unlock(as_mutex(mutex));
}

}  // extern "C"
