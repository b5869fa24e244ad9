// SPDX-License-Identifier: Apache-2.0
// ULT-aware synchronisation: a blocked caller parks (its worker runs other
// ULTs) instead of blocking the worker's OS thread. Every type here also works
// from a plain OS thread, which then sleeps on a futex (see docs/SYNC.md).
//
// mutex, condition_variable, shared_mutex and once_flag are constexpr-constructible and
// their initial state is all-zero bytes (the C API's static initialisers rely
// on it).
#pragma once

#include "ito/cxx20.hpp"
#include "ito/detail/spinlock.hpp"
#include "ito/detail/sync_core.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>  // std::cv_status
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>  // std::unique_lock
#include <type_traits>
#include <utility>

namespace ito {

// A mutex for ULTs. Uncontended lock and unlock are one atomic instruction
// each. A contended locker spins briefly, then parks in a FIFO queue; unlock
// wakes the first parked ULT directly (make_ready). A running locker may take
// the mutex before the woken one gets there (barging keeps a busy mutex
// moving), but a waiter kept waiting over a millisecond switches the mutex to
// hand-off mode, in which unlock passes it straight to the first waiter: no
// waiter starves. Not recursive: locking it twice throws usage_error(EDEADLK);
// unlocking it without holding it throws usage_error(EPERM) (always checked).
class mutex {
 public:
  constexpr mutex() noexcept = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock();
  bool try_lock() noexcept;
  void unlock();

 private:
  friend class condition_variable;
  friend struct detail::sync_access;
  friend struct detail::mutex_access;

  // 0, EDEADLK (the caller holds it) or ETIMEDOUT (deadline: CLOCK_MONOTONIC
  // ns; INT64_MAX: none). A timed lock from a ULT may throw std::bad_alloc.
  // holder_waits: a holder's relock is not refused but waits like any other
  // locker, for ever or until the deadline (POSIX's normal kind deadlocks).
  int lock_contended(const void* self, std::int64_t deadline_ns, bool holder_waits = false);
  void unlock_contended(std::uint32_t state) noexcept;
  // Parks until woken or handed the mutex: false; or until the deadline: true,
  // off the queue and no longer counted as a waiter.
  bool sleep_in_queue(bool at_front, std::int64_t deadline_ns, bool interruptible);
  void uncount_waiter() noexcept;
  std::uint32_t uncount_from_before_fork(std::uint32_t n) noexcept;
  void wake_first() noexcept;
  bool held_by(const void* self) const noexcept {
    return owner_.load(std::memory_order_relaxed) == self;
  }

  // The layout fits glibc's pthread_mutex_t (40 bytes), which is this core
  // too: aux_ sits at glibc's __kind, which pthread's static initialisers set.
  std::atomic<std::uint32_t> state_{0};  // flags and waiter count: see src/sync/mutex.cpp
  detail::spinlock queue_lock_;
  std::atomic<const void*> owner_{nullptr};  // the holder's ULT (or OS thread), for the checks
  // Low byte: the POSIX mutex kind (0 here). Above it, wake-ups that found
  // the queue empty: their waiter had counted itself in state_ but not queued
  // yet, and takes one instead of parking. Tokens change under queue_lock_.
  std::atomic<std::uint32_t> aux_{0};
  std::uint32_t depth_ = 0;  // the POSIX recursive kind's re-locks; the holder's alone
  detail::wait_queue waiters_;
};

// A condition variable for ito::mutex, with the interface of
// std::condition_variable. Timed waits measure steady_clock (CLOCK_MONOTONIC).
// A timed wait whose deadline has passed still releases the mutex and lets
// others run before it re-takes it and reports the timeout (as
// std::condition_variable); huge timeouts saturate to "no deadline". A timed
// wait from a ULT may throw std::bad_alloc (arming its timer), leaving nothing
// changed. Waiting without holding the mutex throws usage_error(EPERM).
class condition_variable {
 public:
  constexpr condition_variable() noexcept = default;
  condition_variable(const condition_variable&) = delete;
  condition_variable& operator=(const condition_variable&) = delete;

  void notify_one() noexcept;
  void notify_all() noexcept;

  void wait(std::unique_lock<mutex>& lock);
  template <class Predicate>
  void wait(std::unique_lock<mutex>& lock, Predicate pred) {
    while (!pred()) wait(lock);
  }

  template <class Clock, class Duration>
  std::cv_status wait_until(std::unique_lock<mutex>& lock,
                            const std::chrono::time_point<Clock, Duration>& abs_time) {
    return wait_until_ns(lock, detail::deadline_at(abs_time)) ? std::cv_status::timeout
                                                              : std::cv_status::no_timeout;
  }
  template <class Clock, class Duration, class Predicate>
  bool wait_until(std::unique_lock<mutex>& lock,
                  const std::chrono::time_point<Clock, Duration>& abs_time, Predicate pred) {
    const std::int64_t deadline = detail::deadline_at(abs_time);
    while (!pred()) {
      if (wait_until_ns(lock, deadline)) return pred();
    }
    return true;
  }

  template <class Rep, class Period>
  std::cv_status wait_for(std::unique_lock<mutex>& lock,
                          const std::chrono::duration<Rep, Period>& rel_time) {
    return wait_until_ns(lock, detail::deadline_after(rel_time)) ? std::cv_status::timeout
                                                                 : std::cv_status::no_timeout;
  }
  template <class Rep, class Period, class Predicate>
  bool wait_for(std::unique_lock<mutex>& lock, const std::chrono::duration<Rep, Period>& rel_time,
                Predicate pred) {
    const std::int64_t deadline = detail::deadline_after(rel_time);
    while (!pred()) {
      if (wait_until_ns(lock, deadline)) return pred();
    }
    return true;
  }

  // The C API's timed wait: deadline in CLOCK_MONOTONIC nanoseconds. Returns
  // true if it timed out. (The templates above all end up here.)
  bool wait_until_ns(std::unique_lock<mutex>& lock, std::int64_t deadline_ns);
  // CLOCK_MONOTONIC now, in nanoseconds: the clock of wait_until_ns.
  static std::int64_t now_ns() noexcept;

 private:
  friend struct detail::sync_access;

  // The mutex `lock` holds; usage_error(EPERM) if the caller does not hold it.
  static mutex& held_mutex(std::unique_lock<mutex>& lock, const char* function);
  // A wait whose deadline has passed: unlocks m, lets others run, relocks; true.
  static bool expired_wait(mutex& m);

  detail::spinlock queue_lock_;
  detail::wait_queue waiters_;
};

// A reusable barrier for `count` participants, like pthread_barrier_t: every
// phase releases its `count` arrivers together, and exactly one of them (the
// last to arrive) gets true from arrive_and_wait, as PTHREAD_BARRIER_SERIAL_THREAD.
class barrier {
 public:
  // count == 0 throws usage_error(EINVAL).
  explicit barrier(std::uint32_t count);
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  bool arrive_and_wait();

 private:
  friend struct detail::sync_access;
  enum class wait_end { released, serial, interrupted };
  // Arrives (arriving) or, after an interrupted wait, waits on in `phase`,
  // still counted. An interruptible arm the caller took (pthread_barrier_wait)
  // can end the wait early: `interrupted`, with `phase` the one it is counted in.
  wait_end arrive_or_wait_on(bool arriving, std::uint32_t& phase);

  detail::spinlock lock_;
  std::uint32_t count_;
  std::uint32_t arrived_ = 0;  // in the current phase; guarded by lock_
  std::uint32_t phase_ = 0;    // phases completed (wraps); guarded by lock_
  detail::wait_queue waiters_;
};

// A reader-writer lock (SharedMutex: works with std::shared_lock and
// std::unique_lock). Uncontended lock, unlock, lock_shared and unlock_shared
// are one atomic instruction each. Writers are not starved by a stream of
// readers: once anyone waits, newcomers queue behind them, and the queue is
// served in arrival order, a run of readers at its front together (so readers
// are not starved by writers either). A reader that re-locks for reading
// while a writer waits therefore waits too (as glibc's
// PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP). Misuse is checked:
// lock/lock_shared by the writer throw usage_error(EDEADLK); unlock by anyone
// but the writer, or unlock_shared with no reader, throw usage_error(EPERM).
// The core of pthread_rwlock_t and ito_rwlock_t (all-zero bytes: unlocked).
class shared_mutex {
 public:
  constexpr shared_mutex() noexcept = default;
  shared_mutex(const shared_mutex&) = delete;
  shared_mutex& operator=(const shared_mutex&) = delete;

  void lock();
  bool try_lock() noexcept;
  void unlock();
  void lock_shared();
  bool try_lock_shared() noexcept;
  void unlock_shared();

 private:
  friend struct detail::shared_mutex_access;

  // The slow path of every lock: 0, EDEADLK (the caller is the writer) or
  // ETIMEDOUT (deadline: CLOCK_MONOTONIC ns; INT64_MAX: none). May throw
  // std::bad_alloc arming a ULT's timer, leaving nothing changed.
  int lock_slow(bool write, std::int64_t deadline_ns);
  // Unlocks; false (nothing changed) if the caller is not the writer / no reader holds it.
  bool release_write() noexcept;
  bool release_read() noexcept;
  void unlock_slow() noexcept;
  // Hands the lock to the waiters it can go to now; the caller holds queue_lock_.
  detail::waiter* grant_locked() noexcept;
  bool written_by(const void* self) const noexcept {
    return writer_.load(std::memory_order_relaxed) == self;
  }

  std::atomic<std::uint32_t> state_{0};  // readers << 2 | parked | writer: src/sync/shared_mutex.cpp
  detail::spinlock queue_lock_;
  std::atomic<const void*> writer_{nullptr};  // the writer's ULT (or OS thread), for the checks
  detail::wait_queue waiters_;
};

// A counting semaphore. Permits released while callers wait go straight to
// the longest-waiting one (FIFO); uncontended acquire and release are one
// atomic instruction each (a CAS: release checks the count against max()).
// A timed acquire that gives up never loses a permit released meanwhile: the
// permit is either still in the count or the acquire takes it (and succeeds).
// The core of sem_t and ito_sem_t.
class counting_semaphore {
 public:
  static constexpr std::ptrdiff_t max() noexcept {
    return std::numeric_limits<std::ptrdiff_t>::max();
  }
  // A negative initial count throws usage_error(EINVAL).
  explicit counting_semaphore(std::ptrdiff_t initial);
  counting_semaphore(const counting_semaphore&) = delete;
  counting_semaphore& operator=(const counting_semaphore&) = delete;

  void acquire();
  bool try_acquire() noexcept;
  // Timed acquires, as std::counting_semaphore's: false once the deadline has
  // passed without a permit. Huge timeouts saturate to "no deadline". From a
  // ULT they may throw std::bad_alloc (arming the timer), having taken nothing.
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& rel_time) {
    return try_acquire() || try_acquire_until_ns(detail::deadline_after(rel_time));
  }
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& abs_time) {
    return try_acquire() || try_acquire_until_ns(detail::deadline_at(abs_time));
  }
  // The deadline in CLOCK_MONOTONIC nanoseconds (INT64_MAX: none); the
  // templates above end up here.
  bool try_acquire_until_ns(std::int64_t deadline_ns);
  // update < 0 throws usage_error(EINVAL). As for std::counting_semaphore,
  // the count must not exceed max(): a release that would push it past throws
  // usage_error(EOVERFLOW) and leaves the count unchanged.
  void release(std::ptrdiff_t update = 1);

 private:
  friend struct detail::sync_access;

  // release(update) (update > 0) unless the count would exceed limit: then
  // false, and nothing changes. The C and POSIX limit is ITO_SEM_VALUE_MAX.
  bool add_permits(std::ptrdiff_t update, std::ptrdiff_t limit) noexcept;
  // Waits for a permit until deadline_ns: false if it gave up. `what` names
  // the wait in hang reports and dumps.
  bool acquire_slow(std::int64_t deadline_ns, const char* what);
  // A timed-out waiter settles with the releases: true if it took its
  // registration back (a time-out), false if a release had already counted a
  // permit for it (it waits for that permit and keeps it).
  bool withdraw(detail::waiter& me, const char* what);
  void hand_permits(std::ptrdiff_t permits) noexcept;

  // Permits when >= 0; when < 0, minus the number of callers queued for one.
  // Sized and ordered to fit glibc's 32-byte sem_t (src/compat/posix_sem.cpp).
  std::atomic<std::ptrdiff_t> count_;
  // Never read by the core: the POSIX layer tags its sem_t here, where glibc
  // keeps `private`, to tell its own semaphores from glibc's.
  std::uint32_t foreign_tag_ = 0;
  detail::spinlock lock_;
  detail::wait_queue waiters_;  // guarded by lock_
};

// For call_once and pthread_once, in pthread_once_t's 4 bytes. All-zero
// bytes: not yet called. Callers that find the function running park on the
// state word's address (src/sync/word_wait.hpp): there is no room for a queue.
class once_flag {
 public:
  constexpr once_flag() noexcept = default;
  once_flag(const once_flag&) = delete;
  once_flag& operator=(const once_flag&) = delete;

 private:
  template <class F, class... Args>
  friend void call_once(once_flag& flag, F&& fn, Args&&... args);
  friend struct detail::sync_access;

  static constexpr std::uint32_t done = 2;
  // Returns true if the caller must run the function; false once it has run.
  // Callers arriving while another runs it park until it ends.
  bool enter() noexcept;
  // Ends a run: succeeded (done for good) or threw (the next caller retries).
  void leave(bool succeeded) noexcept;

  std::atomic<std::uint32_t> state_{0};  // idle, running, done, or running with callers parked
};

// Runs fn(args...) once for all callers of `flag`, as std::call_once: callers
// return after it has completed; if it throws, the exception propagates and
// the next caller (or a parked one) runs it again.
template <class F, class... Args>
void call_once(once_flag& flag, F&& fn, Args&&... args) {
  if (flag.state_.load(std::memory_order_acquire) == once_flag::done) return;
  if (!flag.enter()) return;
  try {
    std::invoke(std::forward<F>(fn), std::forward<Args>(args)...);
  } catch (...) {
    flag.leave(false);
    throw;
  }
  flag.leave(true);
}

// ULT-local storage with pthread_key semantics: each ULT has its own value for
// every key (initially null); when a ULT ends, each non-null value whose key
// has a destructor is set to null and the destructor called with it, for up to
// key_destructor_rounds rounds while destructors set new values. Plain OS
// threads (and the main ULT, which is its OS thread) have their own values too,
// destroyed when the thread exits. Destructors must not throw.
using key = unsigned;
inline constexpr unsigned max_keys = 1024;             // PTHREAD_KEYS_MAX
inline constexpr unsigned key_destructor_rounds = 4;   // PTHREAD_DESTRUCTOR_ITERATIONS

// Throws usage_error(EAGAIN) when max_keys keys exist.
key key_create(void (*destructor)(void*) = nullptr);
// Values still set are not destroyed. A key not created (or deleted) throws
// usage_error(EINVAL).
void key_delete(key k);
// The caller's value, or null (also for a deleted key). Never locks.
void* get_specific(key k) noexcept;
// Sets the caller's value. Never locks; allocates when the caller's table must
// grow (bad_alloc). A key not created throws usage_error(EINVAL).
void set_specific(key k, const void* value);

}  // namespace ito
