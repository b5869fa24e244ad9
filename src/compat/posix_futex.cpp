// SPDX-License-Identifier: Apache-2.0
// syscall(SYS_futex, ...) from ULTs, for libraries that wait on futexes of
// their own instead of pthread's objects: Rust's std (its Mutex, Condvar,
// RwLock, Once and thread parking), Go-style runtimes, hand-made locks. A
// kernel FUTEX_WAIT from a ULT would hold its worker, and with one worker
// the ULT that would wake it never runs (rg -j2 hung so). The preload
// library sends those calls here (src/preload/preload.c).
//
// A ULT waiting on a process-private futex parks in ito's word table
// (sync/word_wait.hpp); a plain OS thread, or a wait on a futex shared with
// other processes, waits in the kernel (a ULT's on a delegation pool
// thread). A wake wakes parked ULTs first, then passes what is left of its
// count to the kernel, so either kind of waiter is found. Commands that move
// or wake waiters by other rules (requeue, wake-op, priority inheritance)
// first wake every ULT parked on the words they name (futex users accept
// spurious wake-ups and look at their word again) and then go to the kernel.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#include <new>

#include "compat/posix_internal.hpp"
#include "io/delegated_syscall.hpp"
#include "sched/timers.hpp"
#include "sync/word_wait.hpp"

namespace {

using ito::detail::errno_now;

long kernel_futex(std::uint32_t* word, int op, std::uint32_t val, const timespec* timeout,
                  std::uint32_t* word2, std::uint32_t val3) noexcept {
  return ::syscall(SYS_futex, word, op, val, timeout, word2, val3);
}

const std::atomic<std::uint32_t>& as_atomic(const std::uint32_t* word) noexcept {
  return *reinterpret_cast<const std::atomic<std::uint32_t>*>(word);
}

// -1 with errno e, as the system call.
long fail(int e) noexcept {
  errno_now() = e;
  return -1;
}

// The wait's deadline on CLOCK_MONOTONIC: FUTEX_WAIT's timeout is relative
// (on the monotonic clock), FUTEX_WAIT_BITSET's absolute on the clock its
// flag names. 0, or EINVAL for a bad timespec.
int deadline_of(int cmd, int op, const timespec* timeout, std::int64_t* deadline) noexcept {
  *deadline = ito::sched::timer_queue::never;
  if (!timeout) return 0;
  if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1'000'000'000)
    return EINVAL;
  if (cmd == FUTEX_WAIT) {
    const std::int64_t now = ito::posix::clock_ns(CLOCK_MONOTONIC);
    if (timeout->tv_sec > (INT64_MAX - now) / 1'000'000'000 - 1) return 0;  // never, in effect
    *deadline = now + std::int64_t{timeout->tv_sec} * 1'000'000'000 + timeout->tv_nsec;
    return 0;
  }
  return ito::posix::to_deadline(timeout, (op & FUTEX_CLOCK_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC,
                                 deadline);
}

long wait(std::uint32_t* word, int op, int cmd, std::uint32_t val, const timespec* timeout,
          std::uint32_t val3) {
  const bool in_ult = ito::sched::must_not_block_worker();
  if (!in_ult || (cmd == FUTEX_WAIT_BITSET && val3 != FUTEX_BITSET_MATCH_ANY))
    return kernel_futex(word, op, val, timeout, nullptr, val3);
  if (!(op & FUTEX_PRIVATE_FLAG)) {  // its wakers may be in other processes
    ito::posix::carried_guard keep_locale;
    return ito::detail::delegated_syscall(
        [&] { return kernel_futex(word, op, val, timeout, nullptr, val3); });
  }
  std::int64_t deadline;
  if (int e = deadline_of(cmd, op, timeout, &deadline)) return fail(e);
  const int saved = errno_now();
  int e;
  try {
    e = ito::detail::wait_on_word_until(as_atomic(word), val, deadline, "futex");
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);  // no timer: nothing was queued (not a kernel error, but honest)
  }
  if (e) return fail(e);
  errno_now() = saved;
  return 0;
}

// Up to n waiters woken: parked ULTs first, then the kernel's.
long wake(std::uint32_t* word, int op, std::uint32_t n, std::uint32_t val3) {
  std::uint32_t woken = 0;
  if (op & FUTEX_PRIVATE_FLAG) {
    const std::uint32_t limit = static_cast<std::int32_t>(n) < 0 ? INT_MAX : n;
    woken = ito::detail::wake_on_word(as_atomic(word), limit);
    if (woken >= limit) return woken;
    n = limit - woken;
  }
  const long r = kernel_futex(word, op, n, nullptr, nullptr, val3);
  if (r < 0) return woken ? static_cast<long>(woken) : -1;
  return woken + r;
}

}  // namespace

extern "C" long ito_preload_futex(std::uint32_t* word, int op, std::uint32_t val,
                                  const timespec* timeout, std::uint32_t* word2,
                                  std::uint32_t val3) {
  const int cmd = op & FUTEX_CMD_MASK;
  switch (cmd) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
      return wait(word, op, cmd, val, timeout, val3);
    case FUTEX_WAKE:
      return wake(word, op, val, val3);
    case FUTEX_WAKE_BITSET:
      if (val3 == FUTEX_BITSET_MATCH_ANY) return wake(word, op, val, val3);
      break;
    default:
      break;
  }
  // Requeue, wake-op and the rest: the kernel's rules, after every ULT
  // parked on either word has been woken to look again.
  if (op & FUTEX_PRIVATE_FLAG) {
    ito::detail::wake_all_on_word(as_atomic(word));
    if (word2 && (cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE || cmd == FUTEX_WAKE_OP))
      ito::detail::wake_all_on_word(as_atomic(word2));
  }
  return kernel_futex(word, op, val, timeout, word2, val3);
}
