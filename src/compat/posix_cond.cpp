// SPDX-License-Identifier: Apache-2.0
// pthread condition variables for ULTs: ito::condition_variable (src/sync)
// with the clock of timedwait beside it, in glibc's pthread_cond_t (48
// bytes); all-zero bytes (PTHREAD_COND_INITIALIZER) are a condition on
// CLOCK_REALTIME, which is clock id 0, so no init call is needed. This file
// only translates clocks, deadlines, recursion depth and error codes.
#include <cstddef>
#include <cstring>
#include <mutex>

#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "compat/posix_pshared.hpp"
#include "ito/pthread.h"
#include "sync/sync_access.hpp"

namespace ito::posix {
namespace {

struct pcond {
  condition_variable cv;
  clockid_t clock = CLOCK_REALTIME;  // of timedwait's abstime
};
static_assert(sizeof(pcond) <= sizeof(pthread_cond_t));
static_assert(alignof(pcond) <= alignof(pthread_cond_t));
static_assert(CLOCK_REALTIME == 0, "all-zero bytes must mean CLOCK_REALTIME");
// A process-shared condition keeps its words before the clock and a flag in it.
static_assert(offsetof(pcond, clock) >= pshared::cond_words_bytes);

bool is_pshared(const pcond* c) noexcept { return (c->clock & pshared::cond_flag) != 0; }

pcond* as_cond(pthread_cond_t* c) noexcept { return std::launder(reinterpret_cast<pcond*>(c)); }

// glibc's condattr encoding: bit 0 process-shared, the clock id above it.
constexpr int clock_shift = 1;

// abstime is on `clock`, or on the condition's own clock when clock < 0.
int wait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime,
         clockid_t clock = -1) {
  using access = detail::mutex_access;
  if (!cond || !mutex) return EINVAL;
  if (int e = enter()) return e;
  pcond* c = as_cond(cond);
  ito::mutex& m = as_mutex(mutex);
  const bool shared_mutex = pshared::is_mutex(mutex);
  // ito's own condition queues ULTs of this process and relocks ito's core:
  // a process-shared mutex needs a process-shared condition.
  if (shared_mutex && !is_pshared(c)) return EINVAL;
  if (shared_mutex ? !pshared::held(mutex) : !access::held_by(m, identity())) return EPERM;
  std::int64_t deadline = sched::timer_queue::never;
  if (abstime) {
    const clockid_t own = c->clock & ~pshared::cond_flag;
    if (int e = to_deadline(abstime, clock < 0 ? own : clock, &deadline)) return e;
  }
  errno_guard keep_errno;
  // A cancellation point: a cancellation acts with the mutex held, here or
  // once the wait it interrupted has taken the mutex back.
  const bool cancellable = begin_cancellable_wait();
  if (is_pshared(c)) {
    const int e = pshared::wait(cond, mutex, deadline);
    if (end_cancellable_wait(cancellable)) cancellation_point();
    return e;
  }
  // A recursive mutex is released completely and restored to its depth.
  const std::uint32_t depth = access::take_depth(m);
  std::unique_lock<ito::mutex> lock(m, std::adopt_lock);
  bool timed_out = false;
  int rc = 0;
  try {
    timed_out = c->cv.wait_until_ns(lock, deadline);
  } catch (const std::bad_alloc&) {  // arming the time-out's timer; nothing changed
    rc = ENOMEM;
  }
  lock.release();  // the caller holds it again, as it did
  access::restore_depth(m, depth);
  if (end_cancellable_wait(cancellable)) {
    cancellation_point();
    timed_out = false;  // a stale interrupt: a spurious wake-up, which POSIX allows
  }
  return rc != 0 ? rc : timed_out ? ETIMEDOUT : 0;
}

}  // namespace
}  // namespace ito::posix

using ito::posix::as_cond;
using ito::posix::is_pshared;

extern "C" {

int ito_pthread_condattr_init(pthread_condattr_t* attr) {
  if (!attr) return EINVAL;
  *reinterpret_cast<int*>(attr) = CLOCK_REALTIME << ito::posix::clock_shift;
  return 0;
}

int ito_pthread_condattr_destroy(pthread_condattr_t* attr) { return attr ? 0 : EINVAL; }

int ito_pthread_condattr_setclock(pthread_condattr_t* attr, clockid_t clock) {
  if (!attr) return EINVAL;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;
  int& word = *reinterpret_cast<int*>(attr);
  word = (word & 1) | (clock << ito::posix::clock_shift);
  return 0;
}

int ito_pthread_condattr_getclock(const pthread_condattr_t* attr, clockid_t* clock) {
  if (!attr || !clock) return EINVAL;
  *clock = *reinterpret_cast<const int*>(attr) >> ito::posix::clock_shift;
  return 0;
}

int ito_pthread_cond_init(pthread_cond_t* cond, const pthread_condattr_t* attr) {
  if (!cond) return EINVAL;
  clockid_t clock = CLOCK_REALTIME;
  if (attr) clock = *reinterpret_cast<const int*>(attr) >> ito::posix::clock_shift;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;
  std::memset(static_cast<void*>(cond), 0, sizeof *cond);
  // PTHREAD_PROCESS_SHARED (bit 0, glibc's setpshared): waiters may be other
  // processes (posix_pshared.hpp).
  if (attr && (*reinterpret_cast<const int*>(attr) & 1)) {
    ito::posix::pshared::init_cond(cond);
    as_cond(cond)->clock = clock | ito::posix::pshared::cond_flag;
    return 0;
  }
  (::new (static_cast<void*>(cond)) ito::posix::pcond())->clock = clock;
  return 0;
}

int ito_pthread_cond_destroy(pthread_cond_t* cond) {
  if (!cond) return EINVAL;
  if (ito::posix::is_pshared(as_cond(cond))) return ito::posix::pshared::destroy_cond(cond);
  return ito::detail::sync_access::busy(as_cond(cond)->cv) ? EBUSY : 0;
}

int ito_pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  return ito::posix::wait(cond, mutex, nullptr);
}

int ito_pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                               const struct timespec* abstime) {
  if (!abstime) return EINVAL;
  return ito::posix::wait(cond, mutex, abstime);
}

int ito_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                               const struct timespec* abstime) {
  if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)) return EINVAL;
  return ito::posix::wait(cond, mutex, abstime, clock);
}

int ito_pthread_cond_signal(pthread_cond_t* cond) {
  if (!cond) return EINVAL;
  if (ito::posix::is_pshared(as_cond(cond))) [[unlikely]] {
    ito::posix::pshared::signal(cond, false);
    return 0;
  }
  as_cond(cond)->cv.notify_one();
  return 0;
}

int ito_pthread_cond_broadcast(pthread_cond_t* cond) {
  if (!cond) return EINVAL;
  if (ito::posix::is_pshared(as_cond(cond))) [[unlikely]] {
    ito::posix::pshared::signal(cond, true);
    return 0;
  }
  as_cond(cond)->cv.notify_all();
  return 0;
}

}  // extern "C"
