// SPDX-License-Identifier: Apache-2.0
// Shared by the POSIX layer (posix_*.cpp): starting the runtime on first use,
// keeping errno per ULT across switches, deadlines, and timed parking.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <pthread.h>
#include <signal.h>

#include "compat/carried_state.hpp"
#include "io/errno_now.hpp"
#include "ito/sync.hpp"
#include "sched/scheduler.hpp"
#include "sync/waiter.hpp"

namespace ito::posix {

// errno is glibc TLS, i.e. the *worker's*: a ULT that blocks may come back on
// another worker, or after other ULTs changed it on this one. Every POSIX call
// that can switch keeps the caller's value and writes it back into the errno
// of whichever worker it returns on.
// Both ends ask glibc for errno's address afresh (errno_now): with plain
// `errno`, gcc may keep the address taken before the switch (__errno_location
// is declared const) and restore into the worker the ULT left. ASan's build
// did, about one run in six of PosixErrors.ErrnoSurvivesSwitchesAndMigration.
// TSan models each ULT as a thread of its own and ito's switches do not
// synchronise them, so it would report two ULTs touching their worker's errno
// one after the other as a race: these two accesses are exempt.
// The guard carries the rest of glibc's per-thread state that a switch may
// cross (the locale, h_errno: carried_state.hpp) the same way.
struct errno_guard {
  carried_state other;
  int saved;
  __attribute__((no_sanitize("thread"))) errno_guard()
      : other(save_carried()), saved(detail::errno_now()) {}
  errno_guard(const errno_guard&) = delete;
  errno_guard& operator=(const errno_guard&) = delete;
  __attribute__((no_sanitize("thread"))) ~errno_guard() {
    restore_carried(other);
    detail::errno_now() = saved;
  }
  // Keeps what the caller has now instead (pthread_once: what its routine set).
  __attribute__((no_sanitize("thread"))) void keep_current() {
    other = save_carried();
    saved = detail::errno_now();
  }
};

// Under the preload, while it watches for a module with TLS loaded after
// start (src/preload/thread_mode.c, ito_posix_watch_tls_loads): what every
// thread creation runs first (create_ult), which may turn TLS blocks on for
// it. Null otherwise: one load on the create path.
extern std::atomic<void (*)()> g_tls_load_check;

// Starts the runtime if none runs and the caller is a plain OS thread; the
// caller becomes the main ULT. 0, or EAGAIN (bad ITO_* variable, on stderr),
// or EPERM for an OS thread that is not a ULT while a runtime runs. Under
// libito-preload.so, EPERM until its constructor has run: libc and the
// program's libstdc++ lock mutexes while they initialise, too early to start.
int start_runtime_slow() noexcept;
inline int ensure_runtime() noexcept {
  return sched::current_ult() ? 0 : start_runtime_slow();
}

// Every entry point that may make the caller wait (a lock held by another,
// a condition wait, a barrier, ...) calls this first, so that it waits as a
// ULT; what completes at once (a free lock, an unlock, a signal, a key) needs
// no runtime: the main thread is one and the same holder before and after
// the runtime starts (identity()), so a process that never makes a thread
// nor waits starts none. An OS thread that cannot become a ULT (EPERM) goes
// on as itself. One TLS load on the fast path.
inline int enter() noexcept {
  if (sched::current_ult()) [[likely]] return 0;
  const int e = start_runtime_slow();
  return e == EPERM ? 0 : e;
}

// Called on the main thread as the POSIX layer starts the runtime: the other
// ULTs' shared signal mask starts as the main thread's (posix_signal.cpp).
void remember_main_signal_mask() noexcept;

// glibc's pthread_t of the OS thread on which the POSIX layer started the
// runtime (the main ULT's thread), for pthread_getattr_np of the main thread
// from another thread. Unknown when the C or C++ API started the runtime.
bool main_os_thread_known() noexcept;
pthread_t main_os_thread() noexcept;

// pthread_exit on the main ULT: waits until every other ULT has ended, then
// exit(0), as a process whose main thread called pthread_exit does.
[[noreturn]] void wait_for_others_then_exit();

// pthread_exit from a signal handler that interrupted worker w's own loop,
// where no ULT runs (LTP's pthread_spin_lock/3-1: the main thread spins, so
// its ULT mostly sleeps between tries). On worker 0 it is the main thread's
// exit: once every other ULT has ended (it waits while other workers run
// them), exit(0). Anything else is reported and aborts.
[[noreturn]] void exit_outside_any_ult(sched::worker* w);


// The mutex-holder identity (detail::caller_identity): the running ULT or,
// for the main ULT and outside any ULT, the OS thread. Inline: the mutex
// fast paths read it on every call.
inline const void* identity() noexcept {
  sched::ult* u = sched::current_ult();
  if (u && !u->bound) [[likely]] return u;
  return sched::os_thread_identity();
}

// Cancellation (posix_cancel.cpp). A cancellation point that does not wait
// acts on a pending cancellation, if the thread has it enabled.
void cancellation_point();
// A signal handler that ran as self was switched in called pthread_exit
// (sched/ult.hpp, exit_deferred_for): exit now. Cancellation points call it, and
// loops that wait without one (a spin lock's).
void exit_if_a_handler_asked(sched::ult* self);
// Around a wait at a cancellation point: begin acts on a pending
// cancellation, else arms the ULT's next interruptible wait (a condition or
// semaphore wait, cancellable_sleep_until) when it may be cancelled; end
// says whether pthread_cancel interrupted that wait. The caller then calls
// cancellation_point() where POSIX lets it act (not when the wait got what
// it waited for: a semaphore's permit is not lost), and otherwise treats the
// interruption as a spurious wake-up.
// only_async: a wait that is not a cancellation point (a mutex), which only
// an asynchronous cancellation may end. Every wait of a thread with a
// handle is armed (even with cancellation disabled), so that a handler
// aimed at the waiter runs in it, as under NPTL; true then.
bool begin_cancellable_wait(bool only_async = false);
bool end_cancellable_wait(bool armed) noexcept;
// After an interrupted wait begun with only_async (not a cancellation
// point: a mutex's): acts on what may end the thread there (an asynchronous
// cancellation, a handler's pthread_exit); else a handler ran (as the ULT
// was switched in) or the interrupt was stale, and the caller waits again.
void after_signal_interrupted_wait();
// A ULT's sleep until deadline_ns (CLOCK_MONOTONIC), a cancellation point.
// True when it ended early because a signal's handler ran on the ULT (the
// caller's EINTR).
bool cancellable_sleep_until(std::int64_t deadline_ns);
// The same for a duration (negative: none), saturated at never.
bool cancellable_sleep_for(long long ns);

// Nanoseconds since the epoch of `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC).
std::int64_t clock_ns(clockid_t clock) noexcept;
// An absolute time on `clock` as a CLOCK_MONOTONIC deadline (what ito's timers
// use); saturates at timer_queue::never. EINVAL for a bad tv_nsec.
int to_deadline(const timespec* abstime, clockid_t clock, std::int64_t* deadline) noexcept;

// Lets another ULT run (after a few calls, sleeps a little): for spinning.
void backoff(unsigned round) noexcept;

// The thread id gettid() gives the ULT with this handle (posix_thread_ids.cpp):
// also what its own TCB says, with ITO_ULT_TLS.
pid_t thread_id_of(std::uint64_t handle) noexcept;

}  // namespace ito::posix
