// SPDX-License-Identifier: Apache-2.0
// A blocked caller's record, and how to park and wake it. The record lives on
// the blocked caller's own stack, so blocking allocates nothing.
//
// A ULT joins its primitive's queue while it still runs (under the queue's
// spinlock) and only then suspends, so a waker may reach the record before
// the ULT's context is saved. Both sides therefore meet at a handshake: the
// suspend hook (which runs once the context is saved) and the waker each add
// one to `wakes`, and whichever arrives second makes the ULT runnable. This
// keeps spinlocks from being held across a context switch.
#pragma once

#include <atomic>
#include <cstdint>

#include "ito/sync.hpp"
#include "sched/extension.hpp"
#include "sched/interrupt.hpp"
#include "sched/scheduler.hpp"
#include "sched/timers.hpp"
#include "sched/ult.hpp"
#include "sync/fork_generation.hpp"

namespace ito::sched {
struct runtime_state;
}

namespace ito::detail {

struct waiter {
  explicit waiter(sched::ult* self) noexcept : ult(self) {}
  waiter(const waiter&) = delete;
  waiter& operator=(const waiter&) = delete;

  sched::ult* const ult;  // null: a plain OS thread, which sleeps on a futex on `wakes`
  std::atomic<std::uint32_t> wakes{0};
  // Timed waits: who ended the wait, set once by whichever of notify and
  // timeout gets there first; the other leaves the record alone.
  std::atomic<std::uint32_t> ended_by{0};
  bool queued = false;  // in a wait_queue; guarded by that queue's spinlock
  const void* key = nullptr;  // the word it waits on, in a queue shared by words (word_wait.hpp)
  waiter* next = nullptr;
  waiter* prev = nullptr;
  const std::uint32_t generation = fork_generation();
};

// A record a forked child inherited: its thread exists only in the parent, so
// nothing may be handed to it nor may it be woken (a ULT woken there would
// resume the parent's context). A wake that finds one drops it from its queue
// (the record stays readable: the parent's stacks are leaked in the child).
inline bool from_before_fork(const waiter& w) noexcept {
  return w.generation != fork_generation();
}

// A waiter for the caller: its ULT, or a plain OS thread.
sched::ult* calling_ult() noexcept;
// Who a mutex records as its holder: the running ULT or, outside one, the OS
// thread. The main ULT is its OS thread for life (bound to worker 0, which is
// that thread), so it is recorded as that thread: a lock the main thread
// takes before the runtime starts is still its own once it runs as the main
// ULT, and after the runtime stops (the POSIX layer starts the runtime only
// when something needs it, not at the first lock).
// Inline: every lock and unlock asks.
inline const void* caller_identity() noexcept {
  sched::ult* u = sched::current_ult();
  if (u && !u->bound) return u;
  return sched::os_thread_identity();
}
// Worker 0 outside any ULT (a signal handler that interrupted its scheduler)
// therefore counts as the main ULT: a handler must not take locks anyway
// (they are not async-signal-safe).

// The distributed mode moves no ULT that holds a lock: the lock lives in this
// process's memory and records its holder (sched::ult::must_stay). Called
// with +1 by whoever takes a lock (mutex, either side of a shared_mutex) and
// -1 when it lets go; one load and a predicted branch outside that mode.
void count_held_lock_slow(int delta) noexcept;
inline void count_held_lock(int delta) noexcept {
  if (sched::processes_extension()) [[unlikely]] count_held_lock_slow(delta);
}
// While one lives, the calling ULT stays in this process as if it held a
// lock: it is inside a primitive whose object is in this process's memory.
// A parked waiter, once woken, is runnable but not yet out of the primitive
// (a mutex may have been handed to it); a condition-variable wait lets its
// mutex go and takes it back.
struct kept_in_process {
  kept_in_process() noexcept { count_held_lock(1); }
  ~kept_in_process() { count_held_lock(-1); }
  kept_in_process(const kept_in_process&) = delete;
  kept_in_process& operator=(const kept_in_process&) = delete;
};

// Blocks until unpark(w). For a ULT, its worker runs other ULTs meanwhile.
// what / object: the primitive it waits in, for hang reports and dumps.
void park(waiter& w, const char* what = "ito sync object", const void* object = nullptr);
// For a plain OS thread only: park(), giving up at deadline_ns (CLOCK_MONOTONIC).
// Returns false if it gave up; the caller must then settle the race with a
// concurrent unpark through ended_by.
bool park_os_until(waiter& w, std::int64_t deadline_ns);
// Wakes a parked (or about to park) waiter. w may be gone once this returns.
void unpark(waiter& w) noexcept;
// Wakes every waiter of a list linked by `next` (as take_all returns it).
void unpark_all(waiter* list) noexcept;

// The ways a timed wait ends (waiter::ended_by): an interrupted wait
// (sched/interrupt.hpp) ends as a timed-out one does.
inline constexpr std::uint32_t by_wake = 1;
inline constexpr std::uint32_t by_timeout = 2;
inline constexpr std::uint32_t by_interrupt = 3;

// Sets ended_by to `reason` if nobody has yet; true if this call did.
inline bool claim(waiter& w, std::uint32_t reason) noexcept {
  std::uint32_t none = 0;
  return w.ended_by.compare_exchange_strong(none, reason, std::memory_order_acq_rel,
                                            std::memory_order_acquire);
}

// --- wait_queue operations; the caller holds the queue's spinlock ---

inline bool is_empty(const wait_queue& q) noexcept { return q.head == nullptr; }

inline void push_back(wait_queue& q, waiter* w) noexcept {
  w->next = nullptr;
  w->prev = q.tail;
  if (q.tail) q.tail->next = w;
  else q.head = w;
  q.tail = w;
  w->queued = true;
}

inline void push_front(wait_queue& q, waiter* w) noexcept {
  w->prev = nullptr;
  w->next = q.head;
  if (q.head) q.head->prev = w;
  else q.tail = w;
  q.head = w;
  w->queued = true;
}

inline void remove(wait_queue& q, waiter* w) noexcept {
  if (w->prev) w->prev->next = w->next;
  else q.head = w->next;
  if (w->next) w->next->prev = w->prev;
  else q.tail = w->prev;
  w->next = w->prev = nullptr;
  w->queued = false;
}

inline waiter* pop_front(wait_queue& q) noexcept {
  waiter* w = q.head;
  if (w) remove(q, w);
  return w;
}

// Empties the queue; returns its waiters in order, linked by `next`.
inline waiter* take_all(wait_queue& q) noexcept {
  waiter* all = q.head;
  for (waiter* w = all; w; w = w->next) w->queued = false;
  q.head = q.tail = nullptr;
  return all;
}

// Pops waiters off q until one is claimed by_wake (a wait that has just
// timed out is skipped, and a record from before a fork dropped, counted in
// `dropped`); null if none is left. The caller holds q's lock and unparks the
// one returned after releasing it.
inline waiter* pop_claimed(wait_queue& q, std::uint32_t& dropped) noexcept {
  while (waiter* w = pop_front(q)) {
    if (from_before_fork(*w)) ++dropped;
    else if (claim(*w, by_wake)) return w;
  }
  return nullptr;
}

inline waiter* pop_claimed(wait_queue& q) noexcept {
  std::uint32_t dropped = 0;
  return pop_claimed(q, dropped);
}

// One wait with a deadline (CLOCK_MONOTONIC ns; sched::timer_queue::never for
// none), for every timed primitive. A ULT's deadline is a timer that claims
// the waiter by_timeout and unparks it, so a wake and the time-out race only
// through claim(); an OS thread sleeps on its futex until the deadline.
// interruptible: the caller took the ULT's arming (take_interruptible_arm):
// interrupt() may then end the park, which returns as from a time-out.
class timed_park {
 public:
  timed_park(waiter& w, std::int64_t deadline_ns, bool interruptible = false) noexcept
      : w_(w), deadline_ns_(deadline_ns), interruptible_(interruptible && w.ult) {}
  timed_park(const timed_park&) = delete;
  timed_park& operator=(const timed_park&) = delete;
  ~timed_park() { disarm(); }

  // Arms a ULT's timer. Call it before w is queued: arming may throw
  // std::bad_alloc, and a record left queued would dangle once the frame
  // unwinds. A timer that fires before w is queued has claimed it, and the
  // park returns at once.
  void arm();
  // Parks until unparked, the deadline passed or (interruptible) interrupted.
  // true: not woken (w is claimed by_timeout or by_interrupt and may still be
  // queued: the caller takes it off).
  bool park(const char* what, const void* object);

 private:
  struct timer : sched::timer_entry {
    waiter* w = nullptr;
  };
  struct interrupt_record : sched::interruptible_wait {
    waiter* w = nullptr;
  };
  static void on_timeout(sched::timer_entry* t);
  static void on_interrupt(sched::interruptible_wait* i) noexcept;
  void park_interruptible(const char* what, const void* object);
  void disarm() noexcept;

  waiter& w_;
  const std::int64_t deadline_ns_;
  const bool interruptible_;
  timer timer_;
  sched::runtime_state* rt_ = nullptr;  // set while the timer is armed
};

}  // namespace ito::detail
