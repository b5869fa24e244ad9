// SPDX-License-Identifier: Apache-2.0
// pthread condition variables for ULTs, on the POSIX layer's mutex. The
// object lives in glibc's pthread_cond_t (48 bytes); all-zero bytes
// (PTHREAD_COND_INITIALIZER) are a condition on CLOCK_REALTIME, which is
// clock id 0, so no init call is needed.
//
// A waiter joins the queue before it releases the mutex, so a signal sent
// after that release always finds it; signal and a timed wait's timer both
// claim the waiter record and only the winner wakes it (posix_common.cpp).
#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "ito/pthread.h"

namespace ito::posix {
namespace {

struct pcond {
  detail::spinlock queue_lock;
  clockid_t clock = CLOCK_REALTIME;  // of timedwait's abstime
  detail::wait_queue waiters;
};
static_assert(sizeof(pcond) <= sizeof(pthread_cond_t));
static_assert(alignof(pcond) <= alignof(pthread_cond_t));
static_assert(CLOCK_REALTIME == 0, "all-zero bytes must mean CLOCK_REALTIME");

pcond* as_cond(pthread_cond_t* c) noexcept { return std::launder(reinterpret_cast<pcond*>(c)); }

// glibc's condattr encoding: bit 0 process-shared, the clock id above it.
constexpr int clock_shift = 1;

// abstime is on `clock`, or on the condition's own clock when clock < 0.
int wait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* abstime,
         clockid_t clock = -1) {
  if (!cond || !mutex) return EINVAL;
  if (int e = enter()) return e;
  pcond* c = as_cond(cond);
  pmutex* m = as_mutex(mutex);
  const void* self = identity();
  if (m->owner.load(std::memory_order_relaxed) != self) return EPERM;
  std::int64_t deadline = sched::timer_queue::never;
  if (abstime) {
    if (int e = to_deadline(abstime, clock < 0 ? c->clock : clock, &deadline)) return e;
  }
  errno_guard keep_errno;
  detail::waiter me(detail::calling_ult());
  c->queue_lock.lock();
  detail::push_back(c->waiters, &me);
  c->queue_lock.unlock();
  // A recursive mutex is released completely and restored to its depth.
  const std::uint32_t depth = m->count;
  m->count = 0;
  m->owner.store(nullptr, std::memory_order_relaxed);
  if (m->state.exchange(0, std::memory_order_release) == 2) mutex_wake(m);

  const bool timed_out = park_until(me, deadline, c->queue_lock, c->waiters, "pthread_cond", c);

  mutex_lock_slow(m, self, sched::timer_queue::never, /*check_owner=*/false);
  m->count = depth;
  return timed_out ? ETIMEDOUT : 0;
}

}  // namespace
}  // namespace ito::posix

using ito::posix::as_cond;

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
  (::new (static_cast<void*>(cond)) ito::posix::pcond())->clock = clock;
  return 0;
}

int ito_pthread_cond_destroy(pthread_cond_t* cond) {
  if (!cond) return EINVAL;
  auto* c = as_cond(cond);
  c->queue_lock.lock();
  const bool waiting = !ito::detail::is_empty(c->waiters);
  c->queue_lock.unlock();
  return waiting ? EBUSY : 0;
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
  auto* c = as_cond(cond);
  c->queue_lock.lock();
  ito::posix::wake_one_and_unlock(c->queue_lock, c->waiters);
  return 0;
}

int ito_pthread_cond_broadcast(pthread_cond_t* cond) {
  if (!cond) return EINVAL;
  auto* c = as_cond(cond);
  ito::detail::waiter* chosen = nullptr;
  ito::detail::waiter** last = &chosen;
  c->queue_lock.lock();
  while (ito::detail::waiter* w = ito::detail::pop_front(c->waiters)) {
    if (ito::detail::claim(*w, ito::posix::by_wake)) {
      *last = w;
      last = &w->next;
    }
  }
  *last = nullptr;
  c->queue_lock.unlock();
  ito::detail::unpark_all(chosen);
  return 0;
}

}  // extern "C"
