// SPDX-License-Identifier: Apache-2.0
// Process-shared mutexes and condition variables (see posix_pshared.hpp).
#include "compat/posix_pshared.hpp"

#include <climits>
#include <cstddef>
#include <cstring>
#include <limits>

#include "compat/posix_internal.hpp"
#include "compat/posix_mutex.hpp"
#include "io/fork_child.hpp"
#include "ito/delegate.hpp"
#include "os/futex.hpp"
#include "sched/interrupt.hpp"

namespace ito::posix::pshared {
namespace {

constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
static_assert(never == sched::timer_queue::never);

// A process-shared mutex in glibc's pthread_mutex_t (40 bytes on x86-64, 48
// on aarch64; __kind is at offset 16 in both). The first
// 16 bytes are ito::mutex's state word and owner, kept at values that make
// its inline fast paths fail (they are all the POSIX layer tries before it
// looks at the kind byte).
struct mutex_words {
  std::atomic<std::uint32_t> busy_state;  // ito::mutex::state_: all bits set
  std::uint32_t unused_4;
  std::atomic<const void*> no_owner;  // ito::mutex::owner_: no caller's identity
  std::uint8_t kind;                  // glibc's __kind: the POSIX kind | mutex_flag
  std::uint8_t unused_17[3];
  std::uint32_t depth;                // a recursive mutex's re-locks; the holder's alone
  // 0 free, 1 locked, 2 locked and perhaps waited for (the kernel's shared
  // futex sleeps on it).
  os::futex_word word;
  std::uint32_t unused_28;
  std::atomic<std::uint64_t> owner;   // owner_key() of the holder, 0 when free
};
static_assert(sizeof(mutex_words) <= sizeof(pthread_mutex_t));
static_assert(offsetof(mutex_words, kind) == 16 && offsetof(mutex_words, depth) == 20);
static_assert(offsetof(mutex_words, word) == 24 && offsetof(mutex_words, owner) == 32);
static_assert(detail::mutex_access::locked_bit == 1);

mutex_words* words(pthread_mutex_t* m) noexcept { return reinterpret_cast<mutex_words*>(m); }
const mutex_words* words(const pthread_mutex_t* m) noexcept {
  return reinterpret_cast<const mutex_words*>(m);
}

const void* const no_identity = reinterpret_cast<const void*>(std::uintptr_t{1});

// Who holds it, across processes: the pid (below 2^22, Linux's pid_max
// limit) and the caller's identity (a ULT descriptor or an OS thread's
// control block: 64-aligned objects of at least 64 bytes, below 2^47), in
// one word, so "is it me" is one load that no other holder can match.
std::uint64_t owner_key() noexcept {
  const auto id = reinterpret_cast<std::uintptr_t>(identity());
  return (static_cast<std::uint64_t>(detail::this_process_id()) << 41) | (id >> 6);
}

// Sleeps while *word == expected, until a wake-up or the deadline. A ULT
// waits on a delegation pool thread, so that its worker runs the others
// (the holder may be one of them); an OS thread waits itself.
os::futex_status wait_shared(os::futex_word* word, std::uint32_t expected,
                             std::int64_t deadline_ns) noexcept {
  if (deadline_ns != never && deadline_ns <= sched::monotonic_ns())
    return os::futex_status::timed_out;
  if (sched::current_ult() && !detail::in_vfork_child()) {
    try {
      return ito::delegate(
          [&]() noexcept { return os::futex_wait_until_shared(word, expected, deadline_ns); });
    } catch (...) {
      // No pool thread to be had: wait here (the worker waits too).
    }
  }
  return os::futex_wait_until_shared(word, expected, deadline_ns);
}

int kind_of(const mutex_words* w) noexcept {
  return w->kind & detail::mutex_access::kind_mask;
}

}  // namespace

void init_mutex(pthread_mutex_t* m, int kind) noexcept {
  std::memset(static_cast<void*>(m), 0, sizeof *m);
  mutex_words* w = words(m);
  w->busy_state.store(~std::uint32_t{0}, std::memory_order_relaxed);
  w->no_owner.store(no_identity, std::memory_order_relaxed);
  w->kind = static_cast<std::uint8_t>((kind & detail::mutex_access::kind_mask) | mutex_flag);
}

int lock(pthread_mutex_t* m, std::int64_t deadline_ns) noexcept {
  mutex_words* w = words(m);
  const std::uint64_t me = owner_key();
  if (w->owner.load(std::memory_order_relaxed) == me) {
    // As the private kinds: errorcheck refuses, a normal one waits below for
    // ever (or until the deadline), as NPTL's deadlocks.
    if (kind_of(w) == detail::mutex_access::errorcheck) return EDEADLK;
    if (kind_of(w) == detail::mutex_access::recursive) {
      if (w->depth == std::numeric_limits<std::uint32_t>::max()) return EAGAIN;
      ++w->depth;
      return 0;
    }
  }
  std::uint32_t c = 0;
  if (!w->word.compare_exchange_strong(c, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
    if (c != 2) c = w->word.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      if (wait_shared(&w->word, 2, deadline_ns) == os::futex_status::timed_out &&
          sched::monotonic_ns() >= deadline_ns)
        return ETIMEDOUT;  // the word may stay 2: the holder wakes nobody, harmlessly
      c = w->word.exchange(2, std::memory_order_acquire);
    }
  }
  w->owner.store(me, std::memory_order_relaxed);
  return 0;
}

int trylock(pthread_mutex_t* m) noexcept {
  mutex_words* w = words(m);
  const std::uint64_t me = owner_key();
  if (w->owner.load(std::memory_order_relaxed) == me) {
    if (kind_of(w) != detail::mutex_access::recursive) return EBUSY;
    if (w->depth == std::numeric_limits<std::uint32_t>::max()) return EAGAIN;
    ++w->depth;
    return 0;
  }
  std::uint32_t c = 0;
  if (!w->word.compare_exchange_strong(c, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed))
    return EBUSY;
  w->owner.store(me, std::memory_order_relaxed);
  return 0;
}

int unlock(pthread_mutex_t* m) noexcept {
  mutex_words* w = words(m);
  if (w->owner.load(std::memory_order_relaxed) != owner_key()) return EPERM;  // every kind
  if (w->depth > 0) {
    --w->depth;
    return 0;
  }
  w->owner.store(0, std::memory_order_relaxed);
  if (w->word.exchange(0, std::memory_order_release) == 2) os::futex_wake_shared(&w->word, 1);
  return 0;
}

bool mutex_busy(const pthread_mutex_t* m) noexcept {
  return words(m)->word.load(std::memory_order_acquire) != 0;
}

bool held(const pthread_mutex_t* m) noexcept {
  return words(m)->owner.load(std::memory_order_relaxed) == owner_key();
}

namespace {

// A process-shared condition: a sequence a waiter sleeps on (every signal
// changes it, so a signal between the waiter's unlock and its sleep is not
// lost: the futex finds another value); the count of waiters inside wait(),
// so that a signal nobody waits for makes no system call, and a destroy
// after a broadcast waits until the woken ones have left (POSIX allows
// destroying a condition no thread is blocked on: the memory may be reused
// at once); and how many of them no signal has released yet (a destroy
// while some may still be blocked says EBUSY). Its clock word, further on,
// is pcond's.
struct cond_words {
  os::futex_word seq;
  os::futex_word waiters;  // with `destroying` once a destroy waits for them
  std::atomic<std::uint32_t> unreleased;
};
static_assert(sizeof(cond_words) <= cond_words_bytes);
constexpr std::uint32_t destroying = 1u << 31;

// One waiter fewer that a signal still has to release (never below 0: a
// waiter leaving on its own may find its release taken by a signal).
void release_one(cond_words* w) noexcept {
  std::uint32_t n = w->unreleased.load(std::memory_order_relaxed);
  while (n != 0 &&
         !w->unreleased.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
}

cond_words* cwords(pthread_cond_t* c) noexcept { return reinterpret_cast<cond_words*>(c); }

// Releases a private mutex completely (a recursive one with its depth) or a
// process-shared one; gives back the depth to restore.
std::uint32_t release(pthread_mutex_t* m) noexcept {
  if (is_mutex(m)) {
    mutex_words* w = words(m);
    const std::uint32_t depth = w->depth;
    w->depth = 0;
    unlock(m);
    return depth;
  }
  ito::mutex& pm = as_mutex(m);
  const std::uint32_t depth = detail::mutex_access::take_depth(pm);
  detail::mutex_access::unlock(pm, identity());
  return depth;
}

void retake(pthread_mutex_t* m, std::uint32_t depth) noexcept {
  if (is_mutex(m)) {
    while (lock(m, never) != 0) {
    }
    words(m)->depth = depth;
    return;
  }
  ito::mutex& pm = as_mutex(m);
  const void* self = identity();
  if (!detail::mutex_access::lock_if_free(pm, self)) {
    for (;;) {
      try {
        if (detail::mutex_access::lock(pm, self, never) == 0) break;
      } catch (...) {  // only a timed lock arms a timer; none here
      }
    }
  }
  detail::mutex_access::restore_depth(pm, depth);
}

}  // namespace

void init_cond(pthread_cond_t* c) noexcept {
  cond_words* w = cwords(c);
  w->seq.store(0, std::memory_order_relaxed);
  w->waiters.store(0, std::memory_order_relaxed);
  w->unreleased.store(0, std::memory_order_relaxed);
}

namespace {

// An interruptible wait on a condition's futex (sched/interrupt.hpp): the
// interrupter broadcasts it, a spurious wake-up for the other waiters,
// which POSIX allows; changing the word first means the wake cannot be
// lost before the waiting pool thread reaches the futex.
struct futex_interrupt : sched::interruptible_wait {
  cond_words* words = nullptr;
  std::atomic<bool> done{false};
  static void broadcast(sched::interruptible_wait* i) noexcept {
    auto* self = static_cast<futex_interrupt*>(i);
    self->done.store(true, std::memory_order_relaxed);
    // Every waiter leaves as from a broadcast, and counts as released as by
    // one: a woken waiter that sees the sequence changed leaves its release
    // to the signaller (a cancelled waiter's was never given back, and the
    // destroy after it said EBUSY: LTP pthread_cond_wait/2-3).
    self->words->unreleased.store(0, std::memory_order_relaxed);
    self->words->seq.fetch_add(1, std::memory_order_seq_cst);
    os::futex_wake_shared(&self->words->seq, INT_MAX);
  }
};

}  // namespace

int wait(pthread_cond_t* c, pthread_mutex_t* m, std::int64_t deadline_ns) noexcept {
  cond_words* w = cwords(c);
  sched::ult* self = sched::current_ult();
  futex_interrupt interrupt;
  interrupt.end = &futex_interrupt::broadcast;
  interrupt.words = w;
  const bool interruptible = sched::take_interruptible_arm(self);
  // Counted before the sequence is read, and both before the mutex is
  // released: a signaller that changes the sequence after this read sees
  // the count (both sides seq_cst) and wakes the futex.
  w->waiters.fetch_add(1, std::memory_order_seq_cst);
  w->unreleased.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t seq = w->seq.load(std::memory_order_seq_cst);
  const std::uint32_t depth = release(m);
  bool timed_out = false;
  if (!interruptible || sched::publish_interruptible(self, &interrupt)) {
    timed_out = wait_shared(&w->seq, seq, deadline_ns) == os::futex_status::timed_out &&
                deadline_ns != never && sched::monotonic_ns() >= deadline_ns;
    if (interruptible) sched::unpublish_interruptible(self, &interrupt);
  } else {
    interrupt.done.store(true, std::memory_order_relaxed);  // asked before it could wait
  }
  if (interrupt.done.load(std::memory_order_relaxed)) sched::mark_interrupted(self);
  // Left on its own (time-out, interruption, a spurious wake-up) when no
  // signal came since it began: its release is nobody else's to count.
  if (w->seq.load(std::memory_order_relaxed) == seq) release_one(w);
  // Its last touch of the condition: a destroy may be waiting for it.
  if (w->waiters.fetch_sub(1, std::memory_order_acq_rel) == (destroying | 1))
    os::futex_wake_shared(&w->waiters, INT_MAX);  // on dead memory, a wake finds nobody
  retake(m, depth);
  return timed_out ? ETIMEDOUT : 0;
}

void signal(pthread_cond_t* c, bool all) noexcept {
  cond_words* w = cwords(c);
  if (all) {
    w->unreleased.store(0, std::memory_order_relaxed);
  } else {
    release_one(w);
  }
  w->seq.fetch_add(1, std::memory_order_seq_cst);
  if (w->waiters.load(std::memory_order_seq_cst) != 0)
    os::futex_wake_shared(&w->seq, all ? INT_MAX : 1);
}

int destroy_cond(pthread_cond_t* c) noexcept {
  cond_words* w = cwords(c);
  if (w->unreleased.load(std::memory_order_acquire) != 0) return EBUSY;
  // Released waiters may still be on their way out of wait(): let them go.
  std::uint32_t v = w->waiters.fetch_or(destroying, std::memory_order_acq_rel) | destroying;
  while (v != destroying) {
    wait_shared(&w->waiters, v, never);
    v = w->waiters.load(std::memory_order_acquire);
  }
  return 0;
}

}  // namespace ito::posix::pshared
