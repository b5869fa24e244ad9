// SPDX-License-Identifier: Apache-2.0
// ito::mutex: Go's sync.Mutex algorithm, with ULTs parked on the mutex's own
// queue instead of a runtime semaphore.
//
// state_ = waiter count << 3 | starving | woken | locked.
//  - Normal mode: unlock clears `locked` and, unless a woken or spinning
//    locker is already on its way (`woken`), wakes the first parked waiter,
//    which then competes with running lockers. A waiter that loses goes back
//    to the front of the queue. Barging lets a busy mutex change hands without
//    a context switch each time, as pthread mutexes do.
//  - Starvation mode, entered by a waiter that has waited over a millisecond:
//    unlock hands the mutex to the first waiter directly, leaving `locked`
//    clear but `starving` set so that nobody else takes it; the waiter sets
//    `locked` itself. New lockers queue at the back. The mode ends when the
//    waiter that received it was the last one or had not waited that long.
// The waiter count is in state_ (not just the queue) so that unlock can
// decide with one atomic instruction; a waiter counts itself before it takes
// the queue lock, so a wake-up can find the queue empty and leaves a token.
// A waiter stays counted until it leaves for good, and uncounts itself: when
// it takes the mutex, or when its deadline passes while it is still queued
// (a timed lock; the waker claims a record first, as for condition waits, so
// a wake-up is never spent on a waiter that is leaving). Go's unlock uncounts
// the waiter it wakes instead; with time-outs it cannot know who that is.
// Unlike Go's, unlock releases the mutex and claims the wake-up in the same
// CAS: C++ code may free a mutex as soon as its last user has unlocked it.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <limits>
#include <new>

#include "arch/context.hpp"
#include "ito/error.hpp"
#include "ito/sync.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"
#include "sync/mutex_access.hpp"
#include "sync/waiter.hpp"

namespace ito {
namespace {

constexpr std::uint32_t locked = 1;
constexpr std::uint32_t woken = 2;
constexpr std::uint32_t starving = 4;
constexpr std::uint32_t one_waiter = 8;
static_assert(detail::mutex_access::locked_bit == locked);
constexpr int waiter_shift = 3;

constexpr std::uint32_t one_token = 1u << 8;  // in aux_, above the POSIX kind

constexpr std::int64_t no_deadline = std::numeric_limits<std::int64_t>::max();
static_assert(no_deadline == sched::timer_queue::never);

constexpr std::int64_t starvation_threshold_ns = 1'000'000;
// A spinning locker looks at state_ after each round of `pause`s: Go's 30
// (~0.3 us) first, then twice as many each round up to 256 (~3 us). Each look
// takes the cache line from a holder that keeps it busy: its next lock or
// unlock then misses (~130 ns on the project's Intel VM).
constexpr int first_round_pauses = 30;
constexpr int longest_round_pauses = 256;
constexpr int busy_spin_pauses = 120;  // Go's 4 rounds of 30: covers a short critical section
// A mutex still held after this many looks keeps changing hands under
// pressure: a spinner that then finds it free looks once more before taking
// it, so that a holder that let go only to take it again at once keeps it
// and its cache line, rather than both paying a hand-off's cache misses.
constexpr int rounds_before_second_look = 3;
constexpr int second_look_pauses = 8;

std::uint32_t waiters_in(std::uint32_t state) noexcept { return state >> waiter_shift; }

// How many `pause`s the next spinning round may take, 0 to stop spinning.
// Spinning helps only if the holder can be running meanwhile: not when the
// caller's worker is the runtime's only one. A ULT whose worker has other
// work spins Go's few rounds. One whose worker has nothing else queued spins
// on as long as an idle worker looks for work before parking: parking the
// ULT would leave its worker just as idle, then cost a wake-up and a steal
// (the thief's membarrier interrupts the holder's CPU too). BENCHMARKS.md,
// "The contended mutex spins on while its worker is idle" and "Spinners back
// off, and spin on as long as an idle worker". A timed lock, which reads no
// clock while it spins, keeps to Go's rounds.
int next_spin_round(int round, int pauses_spent, bool timed) noexcept {
  sched::worker* w = sched::current_worker();
  if (w && w->rt->workers.size() <= 1) return 0;
  const bool idle = w && !timed && w->deque.looks_empty() && w->yielded.looks_empty();
  const int budget = idle ? sched::idle_spin_pauses : busy_spin_pauses;
  const int doubled = first_round_pauses << std::min(round, 4);  // 480: past the cap
  return std::max(0, std::min({doubled, longest_round_pauses, budget - pauses_spent}));
}

}  // namespace

void mutex::lock() {
  const void* self = detail::caller_identity();
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  if (!(s & (locked | starving)) &&
      state_.compare_exchange_strong(s, s | locked, std::memory_order_acquire,
                                     std::memory_order_relaxed)) [[likely]] {
    owner_.store(self, std::memory_order_relaxed);
    detail::count_held_lock(1);
    return;
  }
  if (lock_contended(self, no_deadline) == EDEADLK)
    throw usage_error(EDEADLK, "ito::mutex::lock: the caller already holds this mutex "
                               "(ito::mutex is not recursive)");
}

bool mutex::try_lock() noexcept {
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  while (!(s & (locked | starving))) {
    if (state_.compare_exchange_weak(s, s | locked, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      owner_.store(detail::caller_identity(), std::memory_order_relaxed);
      detail::count_held_lock(1);
      return true;
    }
  }
  return false;
}

void mutex::unlock() {
  const void* self = detail::caller_identity();
  if (!held_by(self)) [[unlikely]]
    throw usage_error(EPERM, "ito::mutex::unlock: the caller does not hold this mutex");
  owner_.store(nullptr, std::memory_order_relaxed);
  detail::count_held_lock(-1);
  std::uint32_t expected = locked;
  if (state_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                     std::memory_order_relaxed)) [[likely]]
    return;
  unlock_contended(expected);
}

[[gnu::noinline]] int mutex::lock_contended(const void* self, std::int64_t deadline_ns,
                                            bool holder_waits) {
  // Only the holder itself can have stored its own identity.
  if (!holder_waits && held_by(self)) return EDEADLK;
  // Armed by the POSIX layer (a signal's handler or an asynchronous
  // cancellation may end the wait): taken once, for every sleep of this call.
  const bool interruptible = sched::take_interruptible_arm(detail::calling_ult());
  std::int64_t wait_start = 0;
  bool is_starving = false;
  bool awoke = false;    // we own the `woken` flag: clear it when we next update state_
  bool counted = false;  // we are in state_'s waiter count
  const bool timed = deadline_ns != no_deadline;
  int spin_rounds = 0;
  int spun = 0;  // pauses since we last woke
  std::uint32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    const int pauses =
        (old & (locked | starving)) == locked ? next_spin_round(spin_rounds, spun, timed) : 0;
    if (pauses > 0) {
      // Spinning counts as a wake-up on its way: unlock need not wake a sleeper.
      if (!awoke && !(old & woken) && waiters_in(old) != 0 &&
          state_.compare_exchange_weak(old, old | woken, std::memory_order_relaxed))
        awoke = true;
      arch::cpu_relax(pauses);
      spun += pauses;
      old = state_.load(std::memory_order_relaxed);
      if (++spin_rounds >= rounds_before_second_look && !(old & (locked | starving))) {
        arch::cpu_relax(second_look_pauses);
        old = state_.load(std::memory_order_relaxed);
      }
      continue;
    }
    const bool free_now = !(old & (locked | starving));
    std::uint32_t desired = old;
    if (!(old & starving)) desired |= locked;  // a starving mutex belongs to the queue
    if (!free_now && !counted) desired += one_waiter;
    if (free_now && counted) desired -= one_waiter;  // taking it: a waiter no more
    if (is_starving && (old & locked)) desired |= starving;
    if (awoke) desired &= ~woken;
    if (!state_.compare_exchange_weak(old, desired, std::memory_order_acquire,
                                      std::memory_order_relaxed))
      continue;
    if (free_now) break;  // it was free: ours
    counted = true;
    awoke = false;  // cleared by that CAS

    const bool waited_before = wait_start != 0;
    if (!waited_before) wait_start = sched::monotonic_ns();
    if (sleep_in_queue(/*at_front=*/waited_before, deadline_ns, interruptible)) return ETIMEDOUT;
    is_starving = is_starving || sched::monotonic_ns() - wait_start > starvation_threshold_ns;
    old = state_.load(std::memory_order_relaxed);
    if (old & starving) {
      // Handed over: nobody else can take it. We are still counted as a
      // waiter and `locked` is clear; fix both, maybe leaving starvation mode.
      std::uint32_t delta = locked - one_waiter;
      if (!is_starving || waiters_in(old) == 1) delta -= starving;
      state_.fetch_add(delta, std::memory_order_acquire);
      break;
    }
    awoke = true;
    spin_rounds = 0;
    spun = 0;
  }
  owner_.store(self, std::memory_order_relaxed);
  detail::count_held_lock(1);
  return 0;
}

// Releases the mutex and claims the wake-up in one CAS. Until that CAS lands
// we hold the mutex, so nobody can have finished with it and destroyed it
// meanwhile (POSIX lets the next holder destroy a mutex right after its own
// unlock); after it, a waiter we must wake still needs the mutex, so it lives
// until wake_first has let go of the queue lock.
[[gnu::noinline]] void mutex::unlock_contended(std::uint32_t old) noexcept {
  for (;;) {
    std::uint32_t desired = old & ~locked;
    bool wake = false;
    if (old & starving) {
      wake = true;  // hand-off: `starving` keeps everyone else out until it runs
    } else if (waiters_in(old) != 0 && !(old & woken)) {
      // Unless a woken or spinning locker is already on its way. The one
      // woken stays counted until it takes the mutex.
      desired |= woken;
      wake = true;
    }
    if (state_.compare_exchange_weak(old, desired, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      if (wake) wake_first();
      return;
    }
  }
}

bool mutex::sleep_in_queue(bool at_front, std::int64_t deadline_ns, bool interruptible) {
  detail::waiter me(detail::calling_ult());
  detail::timed_park wait(me, deadline_ns, interruptible);
  try {
    wait.arm();
  } catch (...) {
    uncount_waiter();
    throw;
  }
  queue_lock_.lock();
  if (aux_.load(std::memory_order_relaxed) >= one_token) {  // our wake-up came before we could queue
    aux_.fetch_sub(one_token, std::memory_order_relaxed);
    queue_lock_.unlock();
    return false;
  }
  if (at_front) detail::push_front(waiters_, &me);
  else detail::push_back(waiters_, &me);
  queue_lock_.unlock();

  const bool timed_out = wait.park("mutex", this);
  if (!timed_out) return false;
  // A waker that popped us lost the claim and moved on to the next waiter.
  queue_lock_.lock();
  if (me.queued) detail::remove(waiters_, &me);
  queue_lock_.unlock();
  uncount_waiter();
  return true;
}

// A waiter leaving without the mutex. The last one out of a starving mutex
// ends the mode: nobody is left to hand it to, and trylock must not see a
// free mutex as busy.
void mutex::uncount_waiter() noexcept {
  std::uint32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    std::uint32_t desired = old - one_waiter;
    if (waiters_in(old) == 1) desired &= ~starving;
    if (state_.compare_exchange_weak(old, desired, std::memory_order_relaxed)) return;
  }
}

void mutex::wake_first() noexcept {
  queue_lock_.lock();
  std::uint32_t dropped = 0;
  detail::waiter* chosen = detail::pop_claimed(waiters_, dropped);
  // With nobody queued, the wake-up is owed to a waiter counted but not queued
  // yet: leave it a token. Unless the count was only records from before a
  // fork: a token then would let a later waiter think it was handed the mutex.
  const bool owed = dropped == 0 || uncount_from_before_fork(dropped) != 0;
  if (!chosen && owed) aux_.fetch_add(one_token, std::memory_order_relaxed);
  queue_lock_.unlock();
  if (chosen) detail::unpark(*chosen);
}

// In a forked child: `n` waiters of the parent, dropped from the queue, leave
// the count (they never will by themselves). Once no waiter is left, the
// starvation mode and the wake-up meant for one of them end with them.
// Returns the waiters still counted.
std::uint32_t mutex::uncount_from_before_fork(std::uint32_t n) noexcept {
  std::uint32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    std::uint32_t desired = old - n * one_waiter;
    if (waiters_in(desired) == 0) desired &= ~(starving | woken);
    if (state_.compare_exchange_weak(old, desired, std::memory_order_relaxed))
      return waiters_in(desired);
  }
}

}  // namespace ito

namespace ito::detail {

void mutex_access::init(mutex& m, int kind) noexcept {
  // The kind byte must be glibc's __kind: static initialisers write it there.
  static_assert(offsetof(mutex, aux_) == 16 && sizeof(mutex) == 40);
  ::new (static_cast<void*>(&m)) mutex();
  m.aux_.store(static_cast<std::uint32_t>(kind & kind_mask), std::memory_order_relaxed);
}

int mutex_access::lock(mutex& m, const void* self, std::int64_t deadline_ns) {
  std::uint32_t s = m.state_.load(std::memory_order_relaxed);
  if (!(s & (locked | starving)) &&
      m.state_.compare_exchange_strong(s, s | locked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) [[likely]] {
    m.owner_.store(self, std::memory_order_relaxed);
    detail::count_held_lock(1);
    return 0;
  }
  if (m.held_by(self) && kind(m) == recursive) {
    if (m.depth_ == std::numeric_limits<std::uint32_t>::max()) return EAGAIN;
    ++m.depth_;
    return 0;
  }
  // POSIX: an errorcheck mutex refuses its holder's relock; a normal (and
  // default, and adaptive) one deadlocks, as NPTL's: the holder queues
  // behind itself, a mutex wait like any other (signal handlers run, a time-out
  // ends it, ITO_DEADLOCK sees it), until the program ends.
  return m.lock_contended(self, deadline_ns, /*holder_waits=*/kind(m) != errorcheck);
}

int mutex_access::try_lock(mutex& m, const void* self) noexcept {
  if (m.try_lock()) return 0;
  if (m.held_by(self) && kind(m) == recursive) {
    if (m.depth_ == std::numeric_limits<std::uint32_t>::max()) return EAGAIN;
    ++m.depth_;
    return 0;
  }
  return EBUSY;
}

bool mutex_access::busy(const mutex& m) noexcept {
  const std::uint32_t s = m.state_.load(std::memory_order_acquire);
  return (s & (locked | starving)) || waiters_in(s) != 0;
}

}  // namespace ito::detail
