// SPDX-License-Identifier: Apache-2.0
// ito::shared_mutex: the reader-writer lock core of the C++, C and POSIX APIs.
//
// state_ = reader count << 2 | parked | writer.
//  - Fast paths need one atomic instruction: a reader adds itself while
//    neither `writer` nor `parked` is set, a writer takes an all-zero word,
//    and unlocking undoes that unless the result leaves `parked` alone (the
//    last holder gone while others wait): then the slow path hands over.
//  - `parked` says the queue is not empty. It is set and cleared only under
//    queue_lock_, and a locker sets it (by CAS, so against the state it
//    judged) before it queues: an unlock that lands after that CAS sees it
//    and comes to the queue lock to wake, so no wake-up is lost.
//  - Writer preference without starving readers: while `parked` is set no
//    newcomer takes the lock, it queues. The queue is served in arrival
//    order by direct hand-off (grant_locked sets the new holders in state_
//    before waking them): the first writer alone, or the run of readers at
//    the front together.
#include <cerrno>

#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"
#include "sync/shared_mutex_access.hpp"
#include "sync/waiter.hpp"

namespace ito {
namespace {

constexpr std::uint32_t writer = 1;
constexpr std::uint32_t parked = 2;
constexpr std::uint32_t one_reader = 4;

constexpr std::uint32_t by_grant = detail::by_wake;  // made a holder, then woken

static_assert(detail::shared_mutex_access::never == sched::timer_queue::never);

std::uint32_t readers_in(std::uint32_t s) noexcept { return s >> 2; }

struct rw_waiter : detail::waiter {
  rw_waiter(sched::ult* u, bool w) noexcept : detail::waiter(u), write(w) {}
  const bool write;
};

}  // namespace

void shared_mutex::lock() {
  std::uint32_t s = 0;
  if (state_.compare_exchange_strong(s, writer, std::memory_order_acquire,
                                     std::memory_order_relaxed)) [[likely]] {
    writer_.store(detail::caller_identity(), std::memory_order_relaxed);
    detail::count_held_lock(1);
    return;
  }
  if (lock_slow(true, detail::shared_mutex_access::never) == EDEADLK)
    throw usage_error(EDEADLK, "ito::shared_mutex::lock: the caller already holds it for writing");
}

bool shared_mutex::try_lock() noexcept {
  std::uint32_t s = 0;
  if (!state_.compare_exchange_strong(s, writer, std::memory_order_acquire,
                                      std::memory_order_relaxed))
    return false;
  writer_.store(detail::caller_identity(), std::memory_order_relaxed);
  detail::count_held_lock(1);
  return true;
}

void shared_mutex::unlock() {
  if (!release_write()) [[unlikely]]
    throw usage_error(EPERM, "ito::shared_mutex::unlock: the caller does not hold it for writing");
}

bool shared_mutex::release_write() noexcept {
  if (!written_by(detail::caller_identity())) return false;
  writer_.store(nullptr, std::memory_order_relaxed);
  detail::count_held_lock(-1);
  std::uint32_t s = writer;
  if (!state_.compare_exchange_strong(s, 0, std::memory_order_release,
                                      std::memory_order_relaxed)) [[unlikely]] {
    // Others are parked: leave `parked` alone (nobody gets in meanwhile) and
    // hand over. Cleared here, not under the queue lock, where a grant made
    // meanwhile (a timed-out waiter's) may already have set it for someone else.
    state_.fetch_and(~writer, std::memory_order_release);
    unlock_slow();
  }
  return true;
}

void shared_mutex::lock_shared() {
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  if (!(s & (writer | parked)) &&
      state_.compare_exchange_strong(s, s + one_reader, std::memory_order_acquire,
                                     std::memory_order_relaxed)) [[likely]] {
    detail::count_held_lock(1);
    return;
  }
  if (lock_slow(false, detail::shared_mutex_access::never) == EDEADLK)
    throw usage_error(EDEADLK,
                      "ito::shared_mutex::lock_shared: the caller holds it for writing");
}

bool shared_mutex::try_lock_shared() noexcept {
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  while (!(s & (writer | parked))) {
    if (state_.compare_exchange_weak(s, s + one_reader, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      detail::count_held_lock(1);
      return true;
    }
  }
  return false;
}

void shared_mutex::unlock_shared() {
  if (!release_read()) [[unlikely]]
    throw usage_error(EPERM, "ito::shared_mutex::unlock_shared: nobody holds it for reading");
}

bool shared_mutex::release_read() noexcept {
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    // Readers are not recorded one by one: any caller may be one of them.
    if ((s & writer) || readers_in(s) == 0) return false;
    if (state_.compare_exchange_weak(s, s - one_reader, std::memory_order_release,
                                     std::memory_order_relaxed))
      break;
  }
  detail::count_held_lock(-1);
  // The last reader left while others wait: hand the lock over.
  if (s - one_reader == parked) [[unlikely]]
    unlock_slow();
  return true;
}

int shared_mutex::lock_slow(bool write, std::int64_t deadline_ns) {
  const void* self = detail::caller_identity();
  if (written_by(self)) return EDEADLK;  // only the writer itself can have stored it

  rw_waiter me(detail::calling_ult(), write);
  // Armed by the POSIX layer: a signal's handler or an asynchronous
  // cancellation ends the wait as a time-out would.
  detail::timed_park wait(me, deadline_ns, sched::take_interruptible_arm(me.ult));
  wait.arm();  // before queueing (may throw)

  queue_lock_.lock();
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    const bool free_now = write ? s == 0 : !(s & (writer | parked));
    if (free_now) {
      const std::uint32_t taken = write ? writer : s + one_reader;
      if (state_.compare_exchange_weak(s, taken, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        queue_lock_.unlock();
        if (write) writer_.store(self, std::memory_order_relaxed);
        detail::count_held_lock(1);
        return 0;
      }
      continue;
    }
    if ((s & parked) || state_.compare_exchange_weak(s, s | parked, std::memory_order_relaxed,
                                                      std::memory_order_relaxed))
      break;
  }
  detail::push_back(waiters_, &me);
  queue_lock_.unlock();

  if (wait.park("shared_mutex", this)) {
    // Leaving may let others in: a writer gone from the front lets the
    // readers behind it join the readers holding the lock.
    queue_lock_.lock();
    if (me.queued) detail::remove(waiters_, &me);
    detail::waiter* wake = grant_locked();
    queue_lock_.unlock();
    detail::unpark_all(wake);
    return ETIMEDOUT;
  }
  // grant_locked made us a holder before waking us.
  if (write) writer_.store(self, std::memory_order_relaxed);
  detail::count_held_lock(1);
  return 0;
}

// The last holder left while others are parked.
void shared_mutex::unlock_slow() noexcept {
  queue_lock_.lock();
  detail::waiter* wake = grant_locked();
  queue_lock_.unlock();
  detail::unpark_all(wake);
}

detail::waiter* shared_mutex::grant_locked() noexcept {
  detail::waiter* wake = nullptr;
  detail::waiter** last = &wake;
  std::uint32_t granted_readers = 0;
  bool granted_writer = false;
  for (;;) {
    auto* front = static_cast<rw_waiter*>(waiters_.head);
    if (!front) break;
    if (detail::from_before_fork(*front)) {  // a forked child's copy of a parent's waiter
      detail::pop_front(waiters_);
      continue;
    }
    if (front->write) {
      // A writer waits for every holder to leave, and for the readers just granted.
      const std::uint32_t s = state_.load(std::memory_order_relaxed);
      if ((s & writer) || readers_in(s) != 0 || granted_readers != 0) break;
    } else if (state_.load(std::memory_order_relaxed) & writer) {
      break;
    }
    detail::pop_front(waiters_);
    if (!detail::claim(*front, by_grant)) continue;  // its time-out won: it is leaving
    *last = front;
    last = &front->next;
    if (front->write) {
      granted_writer = true;
      break;
    }
    ++granted_readers;
  }
  *last = nullptr;
  // Publish the new holders, and whether anyone still waits, in one step:
  // readers leaving meanwhile change the word, hence the CAS.
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    std::uint32_t desired = s + granted_readers * one_reader;
    if (granted_writer) desired |= writer;
    if (detail::is_empty(waiters_)) desired &= ~parked;
    else desired |= parked;
    if (state_.compare_exchange_weak(s, desired, std::memory_order_acq_rel,
                                     std::memory_order_relaxed))
      break;
  }
  return wake;
}

}  // namespace ito
