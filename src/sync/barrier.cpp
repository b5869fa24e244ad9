// SPDX-License-Identifier: Apache-2.0
// ito::barrier. Arrivals are counted under the queue's spinlock; the last
// arriver of a phase takes the whole queue, resets the count for the next
// phase and wakes everyone outside the lock. Waiters of a finished phase are
// off the queue by then, so early arrivers of the next phase cannot mix in.
// A wait the POSIX layer armed can be interrupted by a handler aimed at the
// waiter: it leaves the queue but stays counted, and after the handler waits
// on in its phase, which may have completed meanwhile (POSIX: it "shall
// resume waiting at the barrier as if it was not interrupted").
#include <cerrno>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito {

barrier::barrier(std::uint32_t count) : count_(count) {
  if (count == 0) throw usage_error(EINVAL, "ito::barrier: the count must be at least 1");
}

bool barrier::arrive_and_wait() {
  std::uint32_t phase;
  return arrive_or_wait_on(true, phase) == wait_end::serial;
}

namespace {

// Under the lock: the phase's waiters, each claimed for its wake. One an
// interrupt claimed first is left out of the list: it looks, under this lock,
// whether it is still queued, and finds its phase complete.
detail::waiter* take_phase(detail::wait_queue& q) noexcept {
  detail::waiter* wake = nullptr;
  detail::waiter** last = &wake;
  for (detail::waiter* w = detail::take_all(q); w;) {
    detail::waiter* next = w->next;
    if (detail::claim(*w, detail::by_wake)) {
      *last = w;
      last = &w->next;
    }
    w = next;
  }
  *last = nullptr;
  return wake;
}

}  // namespace

barrier::wait_end barrier::arrive_or_wait_on(bool arriving, std::uint32_t& phase) {
  detail::waiter me(detail::calling_ult());
  detail::timed_park wait(me, sched::timer_queue::never, sched::take_interruptible_arm(me.ult));
  wait.arm();
  lock_.lock();
  if (arriving) {
    phase = phase_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++phase_;
      detail::waiter* wake = take_phase(waiters_);
      lock_.unlock();
      // The spinlock ordered every arriver's writes before this point, and
      // each wake-up releases them to its waiter.
      detail::unpark_all(wake);
      return wait_end::serial;
    }
  } else if (phase_ != phase) {  // completed while its handler ran
    lock_.unlock();
    return wait_end::released;
  }
  detail::push_back(waiters_, &me);
  lock_.unlock();
  if (!wait.park("barrier", this)) return wait_end::released;
  lock_.lock();
  const bool still_waiting = me.queued;
  if (still_waiting) detail::remove(waiters_, &me);
  lock_.unlock();
  return still_waiting ? wait_end::interrupted : wait_end::released;
}

}  // namespace ito
