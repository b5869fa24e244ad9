// SPDX-License-Identifier: Apache-2.0
// pthread barriers, read-write locks and spinlocks for ULTs, each inside its
// glibc type's storage; the barrier and the read-write lock are src/sync's
// cores, translated. Blocked callers park their ULT, never the worker.
#include <cstddef>
#include <cstring>
#include <new>

#include "arch/cpu_relax.hpp"
#include "compat/posix_internal.hpp"
#include "ito/pthread.h"
#include "sync/shared_mutex_access.hpp"
#include "sync/sync_access.hpp"

namespace ito::posix {
namespace {

// --- barrier: ito::barrier (src/sync), translated --------------------------
static_assert(sizeof(barrier) <= sizeof(pthread_barrier_t));
static_assert(alignof(barrier) <= alignof(pthread_barrier_t));
barrier& as_barrier(pthread_barrier_t* b) { return *std::launder(reinterpret_cast<barrier*>(b)); }

// --- rwlock: ito::shared_mutex (src/sync), which prefers no one: its queue
// is served in arrival order, so writers are not starved by readers ----------
static_assert(sizeof(shared_mutex) <= offsetof(pthread_rwlock_t, __data.__flags),
              "glibc's static initialisers may set __flags: stay clear of it");
static_assert(alignof(shared_mutex) <= alignof(pthread_rwlock_t));
shared_mutex& as_rwlock(pthread_rwlock_t* l) {
  return *std::launder(reinterpret_cast<shared_mutex*>(l));
}

using rw = detail::shared_mutex_access;
constexpr std::int64_t try_only = -1;  // a deadline meaning "do not wait"

// rdlock/wrlock and their try, timed and clock forms. deadline: try_only,
// rw::never, or a CLOCK_MONOTONIC time. A lock that makes the caller wait
// starts the runtime first (the caller waits as a ULT); one taken at once
// needs none: the main thread is the same holder before and after it starts
// (identity()).
int rw_lock(pthread_rwlock_t* rwlock, bool write, std::int64_t deadline) {
  if (!rwlock) return EINVAL;
  shared_mutex& l = as_rwlock(rwlock);
  if (deadline == try_only) return rw::try_lock(l, write);
  if (!sched::current_ult()) [[unlikely]] {
    if (rw::try_lock(l, write) == 0) return 0;
    if (int e = enter()) return e;
  }
  errno_guard keep_errno;
  for (;;) {
    // Not a cancellation point, but an asynchronous cancellation or a
    // signal's handler interrupts the wait, as a mutex's.
    const bool cancellable = begin_cancellable_wait(/*only_async=*/true);
    int e;
    try {
      e = rw::lock(l, write, deadline);
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

// The timed forms. As glibc, the clock and abstime are checked first, even
// when the lock is free.
int rw_timed_lock(pthread_rwlock_t* rwlock, bool write, clockid_t clock, const timespec* abstime) {
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;
  std::int64_t deadline = 0;
  if (int e = to_deadline(abstime, clock, &deadline)) return e;
  return rw_lock(rwlock, write, deadline);
}

}  // namespace
}  // namespace ito::posix

using namespace ito::posix;

namespace {

// glibc's attribute layouts: struct pthread_barrierattr { int pshared; },
// struct pthread_rwlockattr { int lockkind; int pshared; }.
bool process_shared(const pthread_barrierattr_t* a) {
  return a && reinterpret_cast<const int*>(a)[0] == PTHREAD_PROCESS_SHARED;
}
bool process_shared(const pthread_rwlockattr_t* a) {
  return a && reinterpret_cast<const int*>(a)[1] == PTHREAD_PROCESS_SHARED;
}

}  // namespace

extern "C" {

// Process-shared barriers and rwlocks are refused (ENOTSUP) rather than made
// private ones, which would crash the first process to wait on another's
// queue entry (docs/POSIX.md). Mutexes and conditions do work across processes.
int ito_pthread_barrier_init(pthread_barrier_t* barrier, const pthread_barrierattr_t* attr,
                             unsigned count) {
  if (!barrier || count == 0) return EINVAL;
  if (process_shared(attr)) return ENOTSUP;
  std::memset(static_cast<void*>(barrier), 0, sizeof *barrier);
  ::new (static_cast<void*>(barrier)) ito::barrier(count);
  return 0;
}

int ito_pthread_barrier_destroy(pthread_barrier_t* barrier) {
  if (!barrier) return EINVAL;
  return ito::detail::sync_access::busy(as_barrier(barrier)) ? EBUSY : 0;
}

int ito_pthread_barrier_wait(pthread_barrier_t* barrier) {
  if (!barrier) return EINVAL;
  if (int e = enter()) return e;
  ito::barrier& b = as_barrier(barrier);
  if (ito::detail::sync_access::count(b) == 0) return EINVAL;  // never initialised
  errno_guard keep_errno;
  using end = ito::detail::sync_access::barrier_wait_end;
  std::uint32_t phase = 0;
  for (bool arriving = true;; arriving = false) {
    // Not a cancellation point, but a handler aimed at the waiter (or an
    // asynchronous cancellation) runs in the wait, as in NPTL's futex wait;
    // the thread, still counted, then waits on (LTP pthread_barrier_wait/3-2).
    const bool armed = begin_cancellable_wait(/*only_async=*/true);
    const end e = ito::detail::sync_access::arrive_or_wait_on(b, arriving, phase);
    end_cancellable_wait(armed);
    if (e != end::interrupted) return e == end::serial ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
    after_signal_interrupted_wait();
  }
}

int ito_pthread_rwlock_init(pthread_rwlock_t* rwlock, const pthread_rwlockattr_t* attr) {
  if (!rwlock) return EINVAL;
  if (process_shared(attr)) return ENOTSUP;
  std::memset(static_cast<void*>(rwlock), 0, sizeof *rwlock);
  ::new (static_cast<void*>(rwlock)) ito::shared_mutex();
  return 0;
}

// A lock still held is destroyed as NPTL destroys it, without a check:
// programs destroy one whose holder has exited (LTP
// pthread_rwlock_timedwrlock/6-2), and POSIX leaves it undefined. Callers
// parked in its queue would be stranded on freed storage: EBUSY. The C API's
// ito_rwlock_destroy is stricter and refuses a held lock too.
int ito_pthread_rwlock_destroy(pthread_rwlock_t* rwlock) {
  if (!rwlock) return EINVAL;
  return rw::waited_for(as_rwlock(rwlock)) ? EBUSY : 0;
}

constexpr std::int64_t never = rw::never;
int ito_pthread_rwlock_rdlock(pthread_rwlock_t* l) { return rw_lock(l, false, never); }
int ito_pthread_rwlock_tryrdlock(pthread_rwlock_t* l) { return rw_lock(l, false, try_only); }
int ito_pthread_rwlock_wrlock(pthread_rwlock_t* l) { return rw_lock(l, true, never); }
int ito_pthread_rwlock_trywrlock(pthread_rwlock_t* l) { return rw_lock(l, true, try_only); }
int ito_pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const struct timespec* t) {
  return rw_timed_lock(l, false, CLOCK_REALTIME, t);
}
int ito_pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const struct timespec* t) {
  return rw_timed_lock(l, true, CLOCK_REALTIME, t);
}
int ito_pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  return rw_timed_lock(l, false, c, t);
}
int ito_pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  return rw_timed_lock(l, true, c, t);
}

int ito_pthread_rwlock_unlock(pthread_rwlock_t* rwlock) {
  if (!rwlock) return EINVAL;
  return rw::unlock(as_rwlock(rwlock));
}

int ito_pthread_spin_init(pthread_spinlock_t* lock, int) {
  if (!lock) return EINVAL;
  *lock = 0;
  return 0;
}

int ito_pthread_spin_destroy(pthread_spinlock_t* lock) { return lock ? 0 : EINVAL; }

int ito_pthread_spin_lock(pthread_spinlock_t* lock) {
  if (!lock) return EINVAL;
  std::atomic_ref<int> word(*const_cast<int*>(lock));
  if (word.exchange(1, std::memory_order_acquire) == 0) [[likely]] return 0;
  if (int e = enter()) return e;  // a spinner that must yield needs to be a ULT
  for (unsigned round = 0; word.exchange(1, std::memory_order_acquire) != 0; ++round) {
    // The holder is a ULT that may share this worker: spinning forever could
    // keep it from running, so after a while let other ULTs in.
    for (int i = 0; i < 64 && word.load(std::memory_order_relaxed) != 0; ++i)
      ito::arch::cpu_relax();
    if (round >= 16) {
      {
        errno_guard keep_errno;
        backoff(round - 16);
      }
      exit_if_a_handler_asked(ito::sched::current_ult());
    }
  }
  return 0;
}

int ito_pthread_spin_trylock(pthread_spinlock_t* lock) {
  if (!lock) return EINVAL;
  std::atomic_ref<int> word(*const_cast<int*>(lock));
  return word.exchange(1, std::memory_order_acquire) == 0 ? 0 : EBUSY;
}

int ito_pthread_spin_unlock(pthread_spinlock_t* lock) {
  if (!lock) return EINVAL;
  std::atomic_ref<int> word(*const_cast<int*>(lock));
  word.store(0, std::memory_order_release);
  return 0;
}

}  // extern "C"
