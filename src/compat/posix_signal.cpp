// SPDX-License-Identifier: Apache-2.0
// Signal masks and signal waits for ULTs (see sched/worker_signals.hpp for
// where process-directed signals are delivered).
//
// The main thread's mask is worker 0's own (the main ULT never leaves it), so
// the main ULT's pthread_sigmask is the real call and decides which
// process-directed signals the program takes asynchronously. Every other ULT
// has its own mask and pending set (posix_thread_signals.cpp): its
// pthread_sigmask reads and writes them, a signal it sends itself or another
// thread aims at it is pending there while blocked, shows in its sigpending,
// satisfies its sigwait, and is delivered by the pthread_sigmask that
// unblocks it, before it returns. sigwait, sigwaitinfo, sigtimedwait and
// sigsuspend are delegated from any ULT: a pool thread blocks every signal
// except while such a call waits, so the signals the call asks for reach it
// and no other of ito's threads.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "io/delegated_syscall.hpp"
#include "compat/posix_internal.hpp"
#include "io/errno_now.hpp"
#include "sched/preempt.hpp"
#include "sched/handles.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"
#include "compat/posix_process_signals.hpp"
#include "compat/posix_thread_signals.hpp"

namespace {

using ito::detail::errno_now;
using ito::posix::owns_its_thread;

// A call that returns an error number: run on a pool thread from a ULT.
template <class Call>
int delegated_errno_call(Call&& call) {
  if (!ito::sched::current_ult()) return call();
  ito::posix::carried_guard keep_locale;
  const int saved = errno_now();
  const int r = ito::detail::delegated_syscall([&] {
    const int e = call();
    if (e == 0) return 0;
    errno_now() = e;
    return -1;
  });
  const int e = r == 0 ? 0 : errno_now();
  errno_now() = saved;
  return e;
}

// A call that returns -1 and sets errno: run on a pool thread from a ULT.
template <class Call>
auto delegated_call(Call&& call) -> decltype(call()) {
  if (!ito::sched::current_ult()) return call();
  ito::posix::carried_guard keep_locale;
  return ito::detail::delegated_syscall(call);
}

// Runs sig's handler on this worker now: unblocked for the moment of the call.
int deliver_here(int sig) noexcept {
  sigset_t one, saved;
  sigemptyset(&one);
  if (sig > 0 && sig < NSIG) sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, &saved);
  const int r = ::raise(sig);
  const int e = errno_now();
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  errno_now() = e;
  return r;
}

}  // namespace

namespace ito::posix {

void remember_main_signal_mask() noexcept {
  sigset_t mask;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  main_mask_is(mask);
}

}  // namespace ito::posix

extern "C" {

int ito_pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  if (owns_its_thread()) {
    // Worker 0 keeps the preemption signal open, or a main thread that
    // blocks every signal (to sigwait in another thread) could not have the
    // ULTs sharing its worker preempted.
    sigset_t kept_open;
    if (set && how != SIG_UNBLOCK && ito::sched::preemption_active() &&
        sigismember(set, ito::sched::preempt_signal) == 1 && ito::sched::current_ult()) {
      kept_open = *set;
      sigdelset(&kept_open, ito::sched::preempt_signal);
      set = &kept_open;
    }
    const int e = ::pthread_sigmask(how, set, old);
    if (e == 0 && set && ito::sched::current_ult()) {
      sigset_t now;  // the threads main creates start with it
      ::pthread_sigmask(SIG_BLOCK, nullptr, &now);
      ito::posix::main_mask_is(now);
      // With threads about, one of them may take what main blocks
      // (posix_process_signals.hpp); what was kept for the process and main
      // now opens is main's, delivered before this returns.
      if (!sigisemptyset(&now) && ito::sched::current_worker()->rt->others.load(
                                      std::memory_order_acquire) ==
                                      ito::sched::runtime_state::others_running)
        ito::posix::watch_process_signals();
      siginfo_t info;
      while (int s = ito::posix::take_process_pending(now, false, &info)) ::raise(s);
      // So are those other threads aimed at main while it blocked them.
      ito::posix::deliver_pending_signals(ito::sched::current_ult());
    }
    return e;
  }
  return ito::posix::ult_sigmask(how, set, old);
}

int ito_sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  if (int e = ito_pthread_sigmask(how, set, old)) {
    errno_now() = e;
    return -1;
  }
  return 0;
}

// The handler of a signal a ULT raises on itself runs before raise returns:
// on a worker that blocks it, it is unblocked for the moment of the call
// (unless the ULT blocked it itself: then it stays pending on the ULT).
int ito_raise(int sig) {
  if (owns_its_thread()) return ::raise(sig);
  if (sig > 0 && sig < NSIG) {
    sigset_t mask;
    ito::posix::ult_sigmask(SIG_BLOCK, nullptr, &mask);
    if (sigismember(&mask, sig) == 1) {
      ito::sched::ult* self = ito::sched::current_ult();
      const int e = ito::posix::send_to_ult(self, ito::sched::handles::of(self), sig, SI_TKILL, {});
      if (e) errno_now() = e;
      return e ? -1 : 0;
    }
  }
  return deliver_here(sig);
}

// A ULT other than main: its own pending signals (those aimed at it), and
// the process-directed ones: /proc's ShdPnd (bit n-1 for signal n). The
// worker's own pending set (on worker 0, the main thread's) is not its.
int ito_sigpending(sigset_t* set) {
  if (owns_its_thread() || !set) {
    const int r = ::sigpending(set);
    if (r == 0 && set) {
      ito::posix::add_process_pending(set);
      sigset_t aimed;  // at main by other threads
      ito::posix::own_pending_signals(&aimed);
      sigorset(set, set, &aimed);
    }
    return r;
  }
  sigemptyset(set);
  char status[4096];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ::sigpending(set);  // no /proc: the worker's view
  const ssize_t n = ::read(fd, status, sizeof status - 1);
  ::close(fd);
  status[n > 0 ? n : 0] = '\0';
  if (const char* at = std::strstr(status, "ShdPnd:")) {
    const unsigned long long bits = std::strtoull(at + 7, nullptr, 16);
    for (int s = 1; s <= 64 && s < NSIG; ++s)
      if (bits >> (s - 1) & 1) sigaddset(set, s);
  }
  sigset_t own;
  ito::posix::own_pending_signals(&own);
  sigorset(set, set, &own);
  ito::posix::add_process_pending(set);
  return 0;
}

// The waits take a signal pending on the ULT first, then wait on a pool
// thread for a process-directed one or one aimed at the ULT.
// The main ULT's waits too: the catcher of process signals must see them.
int ito_sigwait(const sigset_t* set, int* sig) {
  if (ito::sched::current_ult() && set && sig) {
    const int saved = errno_now();
    const int s = ito::posix::ult_sigtimedwait(set, nullptr, nullptr);
    const int e = s > 0 ? 0 : errno_now();
    errno_now() = saved;
    if (s > 0) *sig = s;
    return e;
  }
  return delegated_errno_call([&] { return ::sigwait(set, sig); });
}
int ito_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  if (ito::sched::current_ult() && set) return ito::posix::ult_sigtimedwait(set, info, timeout);
  if (!timeout) return delegated_call([&] { return ::sigwaitinfo(set, info); });
  return delegated_call([&] { return ::sigtimedwait(set, info, timeout); });
}
int ito_sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  return ito_sigtimedwait(set, info, nullptr);
}
int ito_sigsuspend(const sigset_t* mask) {
  if (ito::sched::current_ult() && mask) return ito::posix::ult_sigsuspend(mask);
  return delegated_call([&] { return ::sigsuspend(mask); });
}

}  // extern "C"
