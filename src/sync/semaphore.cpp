// SPDX-License-Identifier: Apache-2.0
// ito::counting_semaphore. count_ alone serves the uncontended cases. A caller
// that finds no permit decrements it below zero and queues itself in one hold
// of lock_, so a release that sees a negative count owes permits to waiters
// that are already queued (or will be by the time it has the lock).
//
// Under lock_, with P the permits that releases have counted but not yet
// handed over (they are on their way to the lock):
//     queued waiters == max(0, -count_) + P.
// A waiter whose deadline passes withdraws under lock_: while count_ < 0 it
// takes its registration back (count_ + 1); once count_ >= 0 every queued
// waiter, itself included, is owed one of the P permits, so it waits for its
// own and keeps it. Either way no permit is lost or given twice.
#include <algorithm>
#include <cerrno>
#include <limits>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sync/waiter.hpp"

namespace ito {
namespace {

constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
constexpr const char* core_wait = "counting_semaphore";
// waiter::ended_by of a timed-out waiter that found its permit on its way and
// parks again for it: the release that pops it must wake it. A value past
// waiter.hpp's own reasons.
constexpr std::uint32_t awaiting_permit = detail::by_interrupt + 1;

}  // namespace

counting_semaphore::counting_semaphore(std::ptrdiff_t initial) : count_(initial) {
  if (initial < 0) throw usage_error(EINVAL, "ito::counting_semaphore: negative initial count");
}

bool counting_semaphore::try_acquire() noexcept {
  for (std::ptrdiff_t c = count_.load(std::memory_order_relaxed); c > 0;) {
    if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acquire,
                                     std::memory_order_relaxed))
      return true;
  }
  return false;
}

void counting_semaphore::acquire() {
  std::ptrdiff_t c = count_.load(std::memory_order_relaxed);
  if (c > 0 && count_.compare_exchange_strong(c, c - 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) [[likely]]
    return;
  acquire_slow(never, core_wait);
}

bool counting_semaphore::try_acquire_until_ns(std::int64_t deadline_ns) {
  return try_acquire() || acquire_slow(deadline_ns, core_wait);
}

[[gnu::noinline]] bool counting_semaphore::acquire_slow(std::int64_t deadline_ns,
                                                        const char* what) {
  if (deadline_ns != never && sched::monotonic_ns() >= deadline_ns) return try_acquire();
  detail::waiter me(detail::calling_ult());
  detail::timed_park wait(me, deadline_ns, sched::take_interruptible_arm(me.ult));
  wait.arm();  // may throw std::bad_alloc: nothing is registered yet
  lock_.lock();
  if (count_.fetch_sub(1, std::memory_order_acquire) > 0) {  // a permit came meanwhile
    lock_.unlock();
    return true;
  }
  // Registered: a release now owes us a permit, unless we withdraw.
  detail::push_back(waiters_, &me);
  lock_.unlock();
  if (!wait.park(what, this)) return true;  // handed a permit
  return !withdraw(me, what);
}

bool counting_semaphore::withdraw(detail::waiter& me, const char* what) {
  lock_.lock();
  if (!me.queued) {  // a release popped us after the time-out won the claim: the permit is ours
    lock_.unlock();
    return false;
  }
  for (std::ptrdiff_t c = count_.load(std::memory_order_relaxed); c < 0;) {
    if (count_.compare_exchange_weak(c, c + 1, std::memory_order_relaxed)) {
      detail::remove(waiters_, &me);
      lock_.unlock();
      return true;
    }
  }
  // count_ >= 0: a release has counted our permit and is on its way to pop us.
  me.ended_by.store(awaiting_permit, std::memory_order_relaxed);
  me.wakes.store(0, std::memory_order_relaxed);  // a fresh handshake for the second park
  lock_.unlock();
  detail::park(me, what, this);
  return false;
}

void counting_semaphore::release(std::ptrdiff_t update) {
  if (update < 0) throw usage_error(EINVAL, "ito::counting_semaphore::release: negative update");
  if (update == 0) return;
  if (!add_permits(update, max())) [[unlikely]]
    throw usage_error(EOVERFLOW, "ito::counting_semaphore::release: the count would exceed max()");
}

// A CAS rather than a fetch_add: a count pushed past the limit must never be
// published, since a wrapped (negative) count would read as waiters owed permits.
bool counting_semaphore::add_permits(std::ptrdiff_t update, std::ptrdiff_t limit) noexcept {
  std::ptrdiff_t before = count_.load(std::memory_order_relaxed);
  do {
    if (before > limit - update) return false;
  } while (!count_.compare_exchange_weak(before, before + update, std::memory_order_release,
                                         std::memory_order_relaxed));
  if (before < 0) [[unlikely]] hand_permits(std::min(update, -before));
  return true;
}

[[gnu::noinline]] void counting_semaphore::hand_permits(std::ptrdiff_t permits) noexcept {
  detail::waiter* woken = nullptr;
  detail::waiter** last = &woken;
  lock_.lock();
  for (; permits > 0; --permits) {
    // Never null: every permit owed has its waiter queued (see the top).
    detail::waiter* w = detail::pop_front(waiters_);
    if (detail::from_before_fork(*w)) {
      // In a forked child, a parent's waiter: its permit is released again,
      // into the count, or on to the next waiter while the count says more
      // are registered (this loop hands it, so it goes round once more).
      if (count_.fetch_add(1, std::memory_order_release) < 0) ++permits;
      continue;
    }
    // A waiter whose time-out won the claim is already awake and finds
    // itself off the queue, permit in hand; one awaiting its permit needs a wake.
    if (!detail::claim(*w, detail::by_wake) &&
        w->ended_by.load(std::memory_order_relaxed) != awaiting_permit)
      continue;
    *last = w;
    last = &w->next;
  }
  *last = nullptr;
  lock_.unlock();
  detail::unpark_all(woken);
}

}  // namespace ito
