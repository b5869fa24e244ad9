// SPDX-License-Identifier: Apache-2.0
// ito::condition_variable. A waiter joins the queue before it releases the
// mutex, so a notify issued after that release always finds it.
//
// A timed wait can be ended by a notify and by its timer at the same moment.
// Both claim the waiter record's ended_by, once; only the winner wakes the
// waiter and the loser never touches the record again. The woken waiter then
// cancels its timer (once cancel returns the timer callback is not running,
// so the record may die) and, if it timed out, leaves the queue if no notify
// took it out. So a wait ends exactly once, and a notify that loses the race
// moves on to the next waiter instead of being lost.
#include <cerrno>
#include <string>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"
#include "sync/waiter.hpp"

namespace ito {

mutex& condition_variable::held_mutex(std::unique_lock<mutex>& lock, const char* function) {
  if (!lock.owns_lock() || !lock.mutex()->held_by(detail::caller_identity()))
    throw usage_error(EPERM, std::string(function) + ": the caller must hold the mutex");
  return *lock.mutex();
}

std::int64_t detail::steady_now_ns() noexcept { return sched::monotonic_ns(); }
std::int64_t condition_variable::now_ns() noexcept { return sched::monotonic_ns(); }

void condition_variable::notify_one() noexcept {
  queue_lock_.lock();
  detail::waiter* chosen = detail::pop_claimed(waiters_);
  queue_lock_.unlock();
  if (chosen) detail::unpark(*chosen);
}

void condition_variable::notify_all() noexcept {
  detail::waiter* chosen = nullptr;
  detail::waiter** last = &chosen;
  queue_lock_.lock();
  while (detail::waiter* w = detail::pop_claimed(waiters_)) {
    *last = w;
    last = &w->next;
  }
  *last = nullptr;
  queue_lock_.unlock();
  detail::unpark_all(chosen);  // the claimed records live until their waiter is woken
}

void condition_variable::wait(std::unique_lock<mutex>& lock) {
  mutex& m = held_mutex(lock, "ito::condition_variable::wait");
  const detail::kept_in_process kept;
  detail::waiter me(detail::calling_ult());
  queue_lock_.lock();
  detail::push_back(waiters_, &me);
  queue_lock_.unlock();
  m.unlock();
  detail::park(me, "condition_variable", this);
  m.lock();
}

// A wait whose deadline has already passed still lets go of the mutex, as
// pthread_cond_timedwait does (it unlocks, finds the futex wait timed out, and
// relocks): a caller polling with zero timeouts must not keep the mutex from
// the thread that would make its predicate true. A ULT also yields in between:
// on one worker nobody else could run otherwise, and the woken locker would
// find the mutex taken again. Nothing is queued, so no notify is consumed.
bool condition_variable::expired_wait(mutex& m) {
  const detail::kept_in_process kept;
  m.unlock();
  if (sched::current_ult()) sched::yield(false);
  m.lock();
  return true;
}

bool condition_variable::wait_until_ns(std::unique_lock<mutex>& lock, std::int64_t deadline_ns) {
  mutex& m = held_mutex(lock, "ito::condition_variable::wait_until");
  // Taken here, so that the mutex's relock below is never interruptible.
  const bool interruptible = sched::take_interruptible_arm(detail::calling_ult());
  if (deadline_ns <= now_ns()) return expired_wait(m);

  const detail::kept_in_process kept;
  detail::waiter me(detail::calling_ult());
  detail::timed_park wait(me, deadline_ns, interruptible);
  wait.arm();  // before queueing (may throw)
  queue_lock_.lock();
  detail::push_back(waiters_, &me);
  queue_lock_.unlock();
  m.unlock();

  const bool timed_out = wait.park("condition_variable", this);

  if (timed_out) {
    queue_lock_.lock();
    if (me.queued) detail::remove(waiters_, &me);
    queue_lock_.unlock();
  }
  m.lock();
  return timed_out;
}

}  // namespace ito
