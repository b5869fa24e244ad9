// SPDX-License-Identifier: Apache-2.0
// pthread barriers, read-write locks and spinlocks for ULTs, each inside its
// glibc type's storage. Blocked callers park their ULT, never the worker.
#include <cstddef>
#include <cstring>
#include <new>

#include "compat/posix_internal.hpp"
#include "ito/pthread.h"

namespace ito::posix {
namespace {

// --- barrier: the last arriver of a phase releases the others ---------------
struct pbarrier {
  detail::spinlock lock;
  std::uint32_t count = 0;
  std::uint32_t arrived = 0;
  detail::wait_queue waiters;
};
static_assert(sizeof(pbarrier) <= sizeof(pthread_barrier_t));
static_assert(alignof(pbarrier) <= alignof(pthread_barrier_t));
pbarrier* as_barrier(pthread_barrier_t* b) { return std::launder(reinterpret_cast<pbarrier*>(b)); }

// --- rwlock: readers share, writers exclude; readers first (glibc's default,
// which lets a reader re-lock for reading while a writer waits) -------------
struct rw_waiter : detail::waiter {
  rw_waiter(sched::ult* u, const void* who) : detail::waiter(u), id(who) {}
  const void* id;
};
struct prwlock {
  detail::spinlock lock;
  std::uint32_t readers = 0;     // holding it for reading
  const void* writer = nullptr;  // holding it for writing
  detail::wait_queue readers_waiting;
  detail::wait_queue writers_waiting;
};
static_assert(sizeof(prwlock) <= offsetof(pthread_rwlock_t, __data.__flags),
              "glibc's static initialisers may set __flags: stay clear of it");
static_assert(alignof(prwlock) <= alignof(pthread_rwlock_t));
prwlock* as_rwlock(pthread_rwlock_t* l) { return std::launder(reinterpret_cast<prwlock*>(l)); }

// With l->lock held and l free: hands it to the waiting readers, else to the
// first waiting writer. Takes the list to wake; the caller wakes it unlocked.
// A waiter is granted only if this claims it first: one whose time-out won
// is leaving the queue on its own (park_until).
detail::waiter* grant(prwlock* l) {
  detail::waiter* wake = nullptr;
  detail::waiter** last = &wake;
  while (detail::waiter* w = detail::pop_front(l->readers_waiting)) {
    if (!detail::claim(*w, by_wake)) continue;
    ++l->readers;
    *last = w;
    last = &w->next;
  }
  *last = nullptr;
  if (wake) return wake;
  while (detail::waiter* w = detail::pop_front(l->writers_waiting)) {
    if (!detail::claim(*w, by_wake)) continue;
    l->writer = static_cast<rw_waiter*>(w)->id;
    w->next = nullptr;
    return w;
  }
  return nullptr;
}

constexpr std::int64_t try_only = -1;  // a deadline meaning "do not wait"

// rdlock/wrlock and their try, timed and clock forms. deadline: try_only,
// timer_queue::never, or a CLOCK_MONOTONIC time.
int rw_lock(pthread_rwlock_t* rwlock, bool write, std::int64_t deadline) {
  if (!rwlock) return EINVAL;
  if (int e = enter()) return e;
  prwlock* l = as_rwlock(rwlock);
  const void* self = identity();
  l->lock.lock();
  if (l->writer == self) {
    l->lock.unlock();
    return EDEADLK;
  }
  const bool free_now = write ? (!l->writer && l->readers == 0) : !l->writer;
  if (free_now) {
    if (write) l->writer = self;
    else ++l->readers;
    l->lock.unlock();
    return 0;
  }
  if (deadline == try_only) {
    l->lock.unlock();
    return EBUSY;
  }
  errno_guard keep_errno;
  rw_waiter me(detail::calling_ult(), self);
  detail::wait_queue& q = write ? l->writers_waiting : l->readers_waiting;
  detail::push_back(q, &me);
  l->lock.unlock();
  // Unless it timed out, the waker has made us a holder already (grant).
  return park_until(me, deadline, l->lock, q, "pthread_rwlock", l) ? ETIMEDOUT : 0;
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

extern "C" {

int ito_pthread_barrier_init(pthread_barrier_t* barrier, const pthread_barrierattr_t*,
                             unsigned count) {
  if (!barrier || count == 0) return EINVAL;
  std::memset(static_cast<void*>(barrier), 0, sizeof *barrier);
  (::new (static_cast<void*>(barrier)) pbarrier())->count = count;
  return 0;
}

int ito_pthread_barrier_destroy(pthread_barrier_t* barrier) {
  if (!barrier) return EINVAL;
  pbarrier* b = as_barrier(barrier);
  b->lock.lock();
  const bool busy = b->arrived != 0;
  b->lock.unlock();
  return busy ? EBUSY : 0;
}

int ito_pthread_barrier_wait(pthread_barrier_t* barrier) {
  if (!barrier) return EINVAL;
  if (int e = enter()) return e;
  pbarrier* b = as_barrier(barrier);
  if (b->count == 0) return EINVAL;  // never initialised
  b->lock.lock();
  if (++b->arrived == b->count) {
    b->arrived = 0;  // the next phase starts now: the barrier is reusable at once
    ito::detail::waiter* all = ito::detail::take_all(b->waiters);
    b->lock.unlock();
    ito::detail::unpark_all(all);
    return PTHREAD_BARRIER_SERIAL_THREAD;
  }
  errno_guard keep_errno;
  ito::detail::waiter me(ito::detail::calling_ult());
  ito::detail::push_back(b->waiters, &me);
  b->lock.unlock();
  ito::detail::park(me, "pthread_barrier", b);
  return 0;
}

int ito_pthread_rwlock_init(pthread_rwlock_t* rwlock, const pthread_rwlockattr_t*) {
  if (!rwlock) return EINVAL;
  std::memset(static_cast<void*>(rwlock), 0, sizeof *rwlock);
  ::new (static_cast<void*>(rwlock)) prwlock();
  return 0;
}

int ito_pthread_rwlock_destroy(pthread_rwlock_t* rwlock) {
  if (!rwlock) return EINVAL;
  prwlock* l = as_rwlock(rwlock);
  l->lock.lock();
  const bool busy = l->writer || l->readers || !ito::detail::is_empty(l->readers_waiting) ||
                    !ito::detail::is_empty(l->writers_waiting);
  l->lock.unlock();
  return busy ? EBUSY : 0;
}

constexpr std::int64_t never = ito::sched::timer_queue::never;
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
  if (int e = enter()) return e;
  prwlock* l = as_rwlock(rwlock);
  l->lock.lock();
  if (l->writer == identity()) {
    l->writer = nullptr;
  } else if (l->readers > 0 && !l->writer) {
    --l->readers;  // readers are not recorded one by one: any reader may be this one
  } else {
    l->lock.unlock();
    return EPERM;
  }
  ito::detail::waiter* wake = (l->readers == 0) ? grant(l) : nullptr;
  l->lock.unlock();
  ito::detail::unpark_all(wake);
  return 0;
}

int ito_pthread_spin_init(pthread_spinlock_t* lock, int) {
  if (!lock) return EINVAL;
  *lock = 0;
  return 0;
}

int ito_pthread_spin_destroy(pthread_spinlock_t* lock) { return lock ? 0 : EINVAL; }

int ito_pthread_spin_lock(pthread_spinlock_t* lock) {
  if (!lock) return EINVAL;
  if (int e = enter()) return e;  // a spinner that must yield needs to be a ULT
  std::atomic_ref<int> word(*const_cast<int*>(lock));
  for (unsigned round = 0; word.exchange(1, std::memory_order_acquire) != 0; ++round) {
    // The holder is a ULT that may share this worker: spinning forever could
    // keep it from running, so after a while let other ULTs in.
    for (int i = 0; i < 64 && word.load(std::memory_order_relaxed) != 0; ++i)
      __builtin_ia32_pause();
    if (round >= 16) {
      errno_guard keep_errno;
      backoff(round - 16);
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
