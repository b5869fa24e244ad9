// SPDX-License-Identifier: Apache-2.0
// POSIX unnamed semaphores for ULTs: glibc's 32-byte sem_t is an
// ito::counting_semaphore (src/sync/semaphore.cpp), so a waiter parks its
// ULT, never the worker (CPython's locks are semaphores). This file
// translates: errno instead of exceptions, SEM_VALUE_MAX, clocks to deadlines.
//
// A tag at glibc's `private` field tells ito's semaphores from glibc's:
// sem_init of glibc writes 0 or 128 there, ito writes its tag. Process-shared
// ones (pshared=1) and named ones (sem_open) are glibc's, and every call
// hands an untagged semaphore to glibc, so both keep glibc's semantics; a ULT
// that must wait on one does so on a delegation pool thread, so its worker
// runs the other ULTs meanwhile (the poster may be one of them).
//
// Fast paths are the core's: wait is one CAS, post one CAS (and the queue
// lock only when the count says someone waits).
#define ITO_PTHREAD_NO_RENAME 1  // sem_* below are glibc's
#include <semaphore.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "compat/posix_internal.hpp"
#include "io/fork_child.hpp"
#include "ito/delegate.hpp"
#include "ito/pthread.h"
#include "sync/sync_access.hpp"

namespace ito::posix {
namespace {

using detail::sync_access;

constexpr std::uint32_t ito_sem_tag = 0x69746f53;  // "itoS"; never 0 or FUTEX_PRIVATE_FLAG
// Not "counting_semaphore": the hang watch must not count sem_t waits, since
// sem_post is async-signal-safe and a signal handler may be what they wait for.
constexpr const char* sem_wait_name = "sem_t";

static_assert(sizeof(counting_semaphore) <= sizeof(sem_t));
static_assert(alignof(counting_semaphore) <= alignof(sem_t));
static_assert(sync_access::foreign_tag_offset() == 8, "glibc keeps `private` at offset 8 of sem_t");
static_assert(SEM_VALUE_MAX == ITO_SEM_VALUE_MAX);

counting_semaphore& core(sem_t* s) noexcept {
  return *std::launder(reinterpret_cast<counting_semaphore*>(s));
}
// Reads the tag word as bytes: an untagged sem_t is glibc's, not a core.
bool is_ours(sem_t* s) noexcept {
  std::uint32_t tag;
  const char* at = reinterpret_cast<const char*>(s) + sync_access::foreign_tag_offset();
  std::memcpy(&tag, at, sizeof tag);
  return tag == ito_sem_tag;
}

constexpr std::int64_t never = sched::timer_queue::never;

// sem_* report errors through errno; set it after every switch is over.
int fail(int code) noexcept {
  detail::errno_now() = code;  // the worker the caller runs on now
  return -1;
}

// A wait on glibc's semaphore: in the kernel. From a ULT that would hold its
// worker, so unless a unit is free at once it runs on a pool thread.
template <class Wait>
int glibc_wait(sem_t* sem, Wait&& wait) {
  if (!sched::current_ult() || detail::in_vfork_child()) return wait();
  const int saved = errno;
  if (::sem_trywait(sem) == 0) return 0;
  if (errno != EAGAIN) return -1;
  errno = saved;
  carried_guard keep_locale;
  struct outcome {
    int value;
    int error;
  };
  outcome o{};
  try {
    o = ito::delegate([&]() noexcept -> outcome {
      const int r = wait();
      return {r, r < 0 ? errno : 0};
    });
  } catch (...) {
    return wait();  // no pool thread to be had: the worker waits too
  }
  if (o.value < 0) detail::errno_now() = o.error;  // the worker this ULT returned on
  return o.value;
}

// The slow path of every wait: 0, ETIMEDOUT or ENOMEM (arming a ULT's timer).
// A cancellation point: pthread_cancel interrupts the wait, unless a permit
// came first (it is kept, and the cancellation acts at the next point).
int wait_slow(sem_t* sem, std::int64_t deadline) {
  errno_guard keep_errno;  // the wait may resume the caller on another worker
  sched::ult* self = sched::current_ult();
  const std::uint32_t handlers_before = self ? self->signal_handlers_run : 0;
  for (;;) {
    const bool cancellable = begin_cancellable_wait();
    bool got = false;
    try {
      got = sync_access::acquire(core(sem), deadline, sem_wait_name);
    } catch (const std::bad_alloc&) {
      end_cancellable_wait(cancellable);
      return ENOMEM;
    }
    if (!end_cancellable_wait(cancellable) || got) return got ? 0 : ETIMEDOUT;
    cancellation_point();
    // A handler that ran on the waiter (as it was switched in) ends the wait
    // with EINTR, as NPTL's sem_wait, which is never restarted (signal(7)).
    if (self && self->signal_handlers_run != handlers_before) return EINTR;
    // Else a stale interrupt: wait on.
  }
}

int timed_wait(sem_t* sem, clockid_t clock, const timespec* abstime) {
  if (!sem) return fail(EINVAL);
  std::int64_t deadline = 0;
  // abstime is checked first, as glibc does, even when a unit is free.
  if (int e = to_deadline(abstime, clock, &deadline)) return fail(e);
  if (core(sem).try_acquire()) return 0;
  if (int e = wait_slow(sem, deadline)) return fail(e);
  return 0;
}

}  // namespace
}  // namespace ito::posix

using ito::posix::core;
using ito::posix::fail;
using ito::posix::is_ours;

extern "C" {

int ito_posix_sem_init(sem_t* sem, int pshared, unsigned value) {
  if (!sem || value > static_cast<unsigned>(SEM_VALUE_MAX)) return fail(EINVAL);
  if (pshared) return ::sem_init(sem, pshared, value);  // across processes: glibc's own
  std::memset(static_cast<void*>(sem), 0, sizeof *sem);
  auto* s = ::new (static_cast<void*>(sem)) ito::counting_semaphore(value);
  ito::detail::sync_access::foreign_tag(*s) = ito::posix::ito_sem_tag;
  return 0;
}

int ito_posix_sem_destroy(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_destroy(sem);
  return 0;  // as glibc: waiters on a destroyed semaphore are undefined behaviour
}

int ito_posix_sem_wait(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ito::posix::glibc_wait(sem, [sem] { return ::sem_wait(sem); });
  ito::posix::cancellation_point();  // "shall occur", so even when a unit is free (as glibc)
  if (core(sem).try_acquire()) [[likely]] return 0;
  if (int e = ito::posix::enter()) return fail(e);
  if (int e = ito::posix::wait_slow(sem, ito::posix::never)) return fail(e);  // EINTR only
  return 0;
}

int ito_posix_sem_trywait(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_trywait(sem);
  return core(sem).try_acquire() ? 0 : fail(EAGAIN);
}

int ito_posix_sem_timedwait(sem_t* sem, const struct timespec* abstime) {
  if (sem && !is_ours(sem))
    return ito::posix::glibc_wait(sem, [=] { return ::sem_timedwait(sem, abstime); });
  if (int e = ito::posix::enter()) return fail(e);
  ito::posix::cancellation_point();
  return ito::posix::timed_wait(sem, CLOCK_REALTIME, abstime);
}

int ito_posix_sem_clockwait(sem_t* sem, clockid_t clock, const struct timespec* abstime) {
  if (sem && !is_ours(sem))
    return ito::posix::glibc_wait(sem, [=] { return ::sem_clockwait(sem, clock, abstime); });
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return fail(EINVAL);  // as glibc
  if (int e = ito::posix::enter()) return fail(e);
  ito::posix::cancellation_point();
  return ito::posix::timed_wait(sem, clock, abstime);
}

int ito_posix_sem_post(sem_t* sem) {
  if (!sem) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_post(sem);
  return ito::detail::sync_access::post(core(sem)) ? 0 : fail(EOVERFLOW);
}

int ito_posix_sem_getvalue(sem_t* sem, int* value) {
  if (!sem || !value) return fail(EINVAL);
  if (!is_ours(sem)) return ::sem_getvalue(sem, value);
  *value = static_cast<int>(ito::detail::sync_access::value(core(sem)));
  return 0;
}

}  // extern "C"
