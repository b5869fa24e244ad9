// SPDX-License-Identifier: Apache-2.0
// Signal masks and signal waits for ULTs (see sched/worker_signals.hpp for
// where signals are delivered).
//
// The main thread's mask is worker 0's own (the main ULT never leaves it), so
// the main ULT's pthread_sigmask is the real call and decides which
// process-directed signals the program takes asynchronously. Another ULT has
// no OS thread of its own: its pthread_sigmask reads and writes one mask that
// all such ULTs share (it starts as the main thread's), which tells sigwait
// users what they blocked; delivery follows the main thread's mask.
// sigwait, sigwaitinfo, sigtimedwait and sigsuspend are delegated from any
// ULT: a pool thread blocks every signal except while such a call waits, so
// the signals the call asks for reach it and no other of ito's threads.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "io/delegated_syscall.hpp"
#include "compat/posix_internal.hpp"
#include "io/errno_now.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

namespace {

using ito::detail::errno_now;

std::mutex g_shared_mask_lock;
sigset_t g_shared_mask;  // guarded by g_shared_mask_lock
bool g_shared_mask_set = false;

// The main ULT, or a plain OS thread: its mask is its OS thread's.
bool owns_its_thread() noexcept {
  ito::sched::ult* u = ito::sched::current_ult();
  return !u || u == &ito::sched::current_worker()->rt->main_ult;
}

int apply(int how, const sigset_t* set, sigset_t* mask) noexcept {
  if (!set) return 0;
  switch (how) {
    case SIG_BLOCK: sigorset(mask, mask, set); return 0;
    case SIG_UNBLOCK: {
      sigset_t keep;
      sigfillset(&keep);
      for (int s = 1; s < NSIG; ++s)
        if (sigismember(set, s) == 1) sigdelset(&keep, s);
      sigandset(mask, mask, &keep);
      return 0;
    }
    case SIG_SETMASK: *mask = *set; return 0;
    default: return EINVAL;
  }
}

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

}  // namespace

namespace ito::posix {

void remember_main_signal_mask() noexcept {
  std::lock_guard hold(g_shared_mask_lock);
  ::pthread_sigmask(SIG_BLOCK, nullptr, &g_shared_mask);
  g_shared_mask_set = true;
}

}  // namespace ito::posix

extern "C" {

int ito_pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  if (owns_its_thread()) {
    const int e = ::pthread_sigmask(how, set, old);
    if (e == 0 && set && ito::sched::current_ult()) {
      std::lock_guard hold(g_shared_mask_lock);  // the others' mask follows main's
      ::pthread_sigmask(SIG_BLOCK, nullptr, &g_shared_mask);
      g_shared_mask_set = true;
    }
    return e;
  }
  std::lock_guard hold(g_shared_mask_lock);
  if (!g_shared_mask_set) {  // the C or C++ API started the runtime: nothing recorded
    sigemptyset(&g_shared_mask);
    g_shared_mask_set = true;
  }
  sigset_t next = g_shared_mask;
  if (int e = apply(how, set, &next)) return e;
  if (old) *old = g_shared_mask;
  g_shared_mask = next;
  return 0;
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
// (unless the ULT blocked it itself: then it stays pending for the process).
int ito_raise(int sig) {
  if (owns_its_thread()) return ::raise(sig);
  sigset_t blocked_by_ult;
  ito_pthread_sigmask(SIG_BLOCK, nullptr, &blocked_by_ult);
  if (sig > 0 && sig < NSIG && sigismember(&blocked_by_ult, sig) == 1) return ::kill(getpid(), sig);
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

int ito_sigwait(const sigset_t* set, int* sig) {
  return delegated_errno_call([&] { return ::sigwait(set, sig); });
}
int ito_sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  return delegated_call([&] { return ::sigwaitinfo(set, info); });
}
int ito_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  return delegated_call([&] { return ::sigtimedwait(set, info, timeout); });
}
int ito_sigsuspend(const sigset_t* mask) {
  return delegated_call([&] { return ::sigsuspend(mask); });
}

}  // extern "C"
