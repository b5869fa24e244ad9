// SPDX-License-Identifier: Apache-2.0
// POSIX unnamed semaphores for ULTs, inside glibc's 32-byte sem_t: a waiter
// parks its ULT, never the worker (CPython's locks are semaphores).
//
// A tag at glibc's `private` field tells ito's semaphores from glibc's:
// sem_init of glibc writes 0 or 128 there, ito writes its tag. Process-shared
// ones (pshared=1) and named ones (sem_open) are glibc's, and every call
// hands an untagged semaphore to glibc, so both keep glibc's semantics.
//
// Fast paths: wait is one CAS on `value`; post is one CAS plus a load of
// `waiting`, and takes the queue lock only when someone may be parked.
#define ITO_PTHREAD_NO_RENAME 1  // sem_* below are glibc's
#include <semaphore.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <new>

#include "compat/posix_internal.hpp"
#include "ito/pthread.h"

namespace ito::posix {
namespace {

constexpr std::uint32_t ito_sem_tag = 0x69746f53;  // "itoS"; never 0 or FUTEX_PRIVATE_FLAG

struct psem {
  std::atomic<std::uint32_t> value{0};
  // Waiters between finding value 0 and leaving: post wakes only if nonzero.
  std::atomic<std::uint32_t> waiting{0};
  std::uint32_t tag = ito_sem_tag;
  detail::spinlock lock;
  detail::wait_queue waiters;
};
static_assert(sizeof(psem) <= sizeof(sem_t));
static_assert(alignof(psem) <= alignof(sem_t));
static_assert(offsetof(psem, tag) == 8, "glibc keeps `private` at offset 8 of sem_t");

psem* as_sem(sem_t* s) noexcept { return std::launder(reinterpret_cast<psem*>(s)); }
bool is_ours(sem_t* s) noexcept { return as_sem(s)->tag == ito_sem_tag; }

bool try_take(psem* s) noexcept {
  std::uint32_t v = s->value.load(std::memory_order_seq_cst);
  while (v > 0) {
    if (s->value.compare_exchange_weak(v, v - 1, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return true;
  }
  return false;
}

constexpr std::int64_t never = sched::timer_queue::never;

// Waits until it takes one unit or the deadline passes: 0 or ETIMEDOUT.
int wait_slow(psem* s, std::int64_t deadline) {
  errno_guard keep_errno;
  // seq_cst on both sides: a post that raised value after our check below
  // must see `waiting`, or our check sees its value.
  s->waiting.fetch_add(1, std::memory_order_seq_cst);
  int rc = 0;
  for (;;) {
    if (try_take(s)) break;
    if (deadline != never && sched::monotonic_ns() >= deadline) {
      rc = ETIMEDOUT;
      break;
    }
    detail::waiter me(detail::calling_ult());
    detail::timed_park wait(me, deadline);
    try {
      wait.arm();  // before queueing
    } catch (const std::bad_alloc&) {
      rc = ENOMEM;
      break;
    }
    s->lock.lock();
    // Queued only while the value is still 0: a post after this check takes
    // the lock to wake, so it finds this record.
    if (s->value.load(std::memory_order_relaxed) != 0) {
      s->lock.unlock();
      continue;
    }
    detail::push_back(s->waiters, &me);
    s->lock.unlock();
    if (wait.park("sem_t", s)) {
      s->lock.lock();  // a post that popped us lost the claim and moved on
      if (me.queued) detail::remove(s->waiters, &me);
      s->lock.unlock();
      rc = try_take(s) ? 0 : ETIMEDOUT;
      break;
    }
    // Woken by a post: compete for the unit again (a caller on the fast
    // path may have taken it first).
  }
  s->waiting.fetch_sub(1, std::memory_order_release);
  return rc;
}

// sem_* report errors through errno; set it after every switch is over.
int fail(int code) noexcept {
  errno = code;
  return -1;
}

int timed_wait(sem_t* sem, clockid_t clock, const timespec* abstime) {
  if (!sem) return fail(EINVAL);
  psem* s = as_sem(sem);
  std::int64_t deadline = 0;
  // abstime is checked first, as glibc does, even when a unit is free.
  if (int e = to_deadline(abstime, clock, &deadline)) return fail(e);
  if (try_take(s)) return 0;
  if (int e = wait_slow(s, deadline)) return fail(e);
  return 0;
}

}  // namespace
}  // namespace ito::posix

using ito::posix::as_sem;
using ito::posix::fail;
using ito::posix::is_ours;
using ito::posix::psem;

extern "C" {

int ito_posix_sem_init(sem_t* sem, int pshared, unsigned value) {
  if (!sem || value > static_cast<unsigned>(SEM_VALUE_MAX)) return fail(EINVAL);
  if (pshared) return ::sem_init(sem, pshared, value);  // across processes: glibc's own
  std::memset(static_cast<void*>(sem), 0, sizeof *sem);
  (::new (static_cast<void*>(sem)) psem())->value.store(value, std::memory_order_relaxed);
  return 0;
}

int ito_posix_sem_destroy(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_destroy(sem);
  return 0;  // as glibc: waiters on a destroyed semaphore are undefined behaviour
}

int ito_posix_sem_wait(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_wait(sem);
  psem* s = as_sem(sem);
  if (ito::posix::try_take(s)) [[likely]] return 0;
  if (int e = ito::posix::enter()) return fail(e);
  ito::posix::wait_slow(s, ito::posix::never);
  return 0;
}

int ito_posix_sem_trywait(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_trywait(sem);
  return ito::posix::try_take(as_sem(sem)) ? 0 : fail(EAGAIN);
}

int ito_posix_sem_timedwait(sem_t* sem, const struct timespec* abstime) {
  if (sem && !is_ours(sem)) return ::sem_timedwait(sem, abstime);
  if (int e = ito::posix::enter()) return fail(e);
  return ito::posix::timed_wait(sem, CLOCK_REALTIME, abstime);
}

int ito_posix_sem_clockwait(sem_t* sem, clockid_t clock, const struct timespec* abstime) {
  if (sem && !is_ours(sem)) return ::sem_clockwait(sem, clock, abstime);
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return fail(EINVAL);  // as glibc
  if (int e = ito::posix::enter()) return fail(e);
  return ito::posix::timed_wait(sem, clock, abstime);
}

int ito_posix_sem_post(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_post(sem);
  psem* s = as_sem(sem);
  std::uint32_t v = s->value.load(std::memory_order_relaxed);
  do {
    if (v >= static_cast<std::uint32_t>(SEM_VALUE_MAX)) return fail(EOVERFLOW);
  } while (!s->value.compare_exchange_weak(v, v + 1, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
  if (s->waiting.load(std::memory_order_seq_cst) != 0) {
    s->lock.lock();
    ito::posix::wake_one_and_unlock(s->lock, s->waiters);
  }
  return 0;
}

int ito_posix_sem_getvalue(sem_t* sem, int* value) {
  if (!sem || !value) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_getvalue(sem, value);
  *value = static_cast<int>(as_sem(sem)->value.load(std::memory_order_relaxed));
  return 0;
}

}  // extern "C"
