// SPDX-License-Identifier: Apache-2.0
// pthread mutexes for ULTs: normal, errorcheck and recursive, with timed lock.
//
// The object is ito::mutex, the same core as ito_mutex_t and the C++ API
// (Go's algorithm with a starvation mode: see src/sync/mutex.cpp), in glibc's
// pthread_mutex_t storage (40 bytes) with its kind byte where glibc keeps
// __kind, so all-zero bytes (PTHREAD_MUTEX_INITIALIZER) are an unlocked
// default mutex and PTHREAD_RECURSIVE/ERRORCHECK_MUTEX_INITIALIZER_NP give
// those kinds without any init call. This file only translates: attributes,
// kinds, clocks and deadlines in, error codes out.
#include <cstddef>
#include <cstring>

#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "compat/posix_pshared.hpp"
#include "ito/pthread.h"

namespace ito::posix {
namespace {

static_assert(sizeof(mutex) <= sizeof(pthread_mutex_t));
static_assert(alignof(mutex) <= alignof(pthread_mutex_t));
// The kind byte (the low byte of mutex::aux_, at offset 16) is glibc's __kind.
static_assert(offsetof(pthread_mutex_t, __data.__kind) == 16);
static_assert(sizeof(void*) == 8 && alignof(std::atomic<const void*>) == 8,
              "mutex::aux_ follows state_, the queue lock and owner_ at offset 16");

using access = detail::mutex_access;

// A free mutex needs no runtime (the main thread is the same holder before
// and after it starts: identity()); one that may make the caller wait starts
// it first, so that the caller waits as a ULT.
int lock(pthread_mutex_t* mutex, std::int64_t deadline) {
  if (!mutex) return EINVAL;
  const void* self = identity();
  if (access::lock_if_free(as_mutex(mutex), self)) [[likely]] return 0;
  if (int e = enter()) return e;
  errno_guard keep_errno;
  if (pshared::is_mutex(mutex)) return pshared::lock(mutex, deadline);
  for (;;) {
    // Not a cancellation point, but an asynchronous cancellation or a
    // signal's handler interrupts the wait (NPTL's futex wait too).
    const bool cancellable = begin_cancellable_wait(/*only_async=*/true);
    int e;
    try {
      e = access::lock(as_mutex(mutex), self, deadline);
    } catch (const std::bad_alloc&) {  // arming the time-out's timer
      end_cancellable_wait(cancellable);
      return ENOMEM;
    }
    if (!end_cancellable_wait(cancellable) || e != ETIMEDOUT) return e;
    // Else a handler ran, or a stale interrupt: wait on. Past the deadline
    // too, the next call tries the lock once before it times out, as NPTL
    // retries the lock when a handler returns (LTP
    // pthread_rwlock_timedwrlock/6-2: the lock came free while the handler ran).
    after_signal_interrupted_wait();
  }
}

}  // namespace
}  // namespace ito::posix

using ito::posix::as_mutex;

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
  word = (word & ~ito::detail::mutex_access::kind_mask) | type;
  return 0;
}

int ito_pthread_mutexattr_gettype(const pthread_mutexattr_t* attr, int* type) {
  if (!attr || !type) return EINVAL;
  *type = *reinterpret_cast<const int*>(attr) & ito::detail::mutex_access::kind_mask;
  return 0;
}

int ito_pthread_mutex_init(pthread_mutex_t* mutex, const pthread_mutexattr_t* attr) {
  if (!mutex) return EINVAL;
  int kind = PTHREAD_MUTEX_DEFAULT;
  if (attr) kind = *reinterpret_cast<const int*>(attr) & ito::detail::mutex_access::kind_mask;
  // PTHREAD_PROCESS_SHARED (glibc's own setpshared sets the bit): waiters
  // may be other processes, which ito's core cannot queue (posix_pshared.hpp).
  if (attr && (*reinterpret_cast<const unsigned*>(attr) & ito::posix::pshared::mutexattr_flag)) {
    ito::posix::pshared::init_mutex(mutex, kind);
    return 0;
  }
  std::memset(static_cast<void*>(mutex), 0, sizeof *mutex);
  ito::detail::mutex_access::init(as_mutex(mutex), kind);
  if (attr) ito::posix::note_protect(mutex, attr);  // PTHREAD_PRIO_PROTECT: its ceiling
  return 0;
}

int ito_pthread_mutex_destroy(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  if (ito::posix::pshared::is_mutex(mutex)) return ito::posix::pshared::mutex_busy(mutex) ? EBUSY : 0;
  if (ito::detail::mutex_access::busy(as_mutex(mutex))) return EBUSY;
  ito::posix::forget_protect(mutex);
  return 0;
}

int ito_pthread_mutex_lock(pthread_mutex_t* mutex) {
  return ito::posix::lock(mutex, ito::detail::mutex_access::never);
}

int ito_pthread_mutex_trylock(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  const int e = ito::detail::mutex_access::try_lock(as_mutex(mutex), ito::posix::identity());
  // A process-shared mutex always looks held to ito's core.
  if (e == EBUSY && ito::posix::pshared::is_mutex(mutex)) [[unlikely]]
    return ito::posix::pshared::trylock(mutex);
  return e;
}

int ito_pthread_mutex_timedlock(pthread_mutex_t* mutex, const struct timespec* abstime) {
  return ito_pthread_mutex_clocklock(mutex, CLOCK_REALTIME, abstime);
}

int ito_pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                const struct timespec* abstime) {
  if (!mutex) return EINVAL;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;  // as glibc
  // POSIX: a mutex free now is taken whatever the time-out says.
  if (ito_pthread_mutex_trylock(mutex) == 0) return 0;
  std::int64_t deadline = 0;
  if (int e = ito::posix::to_deadline(abstime, clock, &deadline)) return e;
  return ito::posix::lock(mutex, deadline);
}

// ito's mutexes are never robust (their attribute is ignored): the call for
// that kind says so rather than reach glibc.
int ito_pthread_mutex_consistent(pthread_mutex_t* mutex) {
  (void)mutex;
  return EINVAL;
}

int ito_pthread_mutex_unlock(pthread_mutex_t* mutex) {
  if (!mutex) return EINVAL;
  const int e = ito::detail::mutex_access::unlock(as_mutex(mutex), ito::posix::identity());
  // A process-shared mutex's owner, for ito's core, is nobody.
  if (e == EPERM && ito::posix::pshared::is_mutex(mutex)) [[unlikely]]
    return ito::posix::pshared::unlock(mutex);
  return e;
}

}  // extern "C"
