// SPDX-License-Identifier: Apache-2.0
// Signal masks and signal waits for ULTs (see sched/worker_signals.hpp for
// where signals are delivered).
//
// The main thread's mask is worker 0's own (the main ULT never leaves it), so
// the main ULT's pthread_sigmask is the real call and decides which
// process-directed signals the program takes asynchronously. Another ULT has
// no OS thread of its own: its pthread_sigmask reads and writes one mask that
// all such ULTs share (it starts as the main thread's), which tells sigwait
// users what they blocked; delivery follows the main thread's mask. A signal
// such a ULT sends itself (raise, pthread_kill or pthread_sigqueue of itself)
// while that mask blocks it stays pending for those ULTs (not for the
// process, which the main thread may take), shows in their sigpending,
// satisfies their sigwait, and is delivered by the pthread_sigmask that
// unblocks it, before it returns (with pthread_sigqueue's value).
// sigwait, sigwaitinfo, sigtimedwait and sigsuspend are delegated from any
// ULT: a pool thread blocks every signal except while such a call waits, so
// the signals the call asks for reach it and no other of ito's threads.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
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
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

namespace {

using ito::detail::errno_now;

std::mutex g_shared_mask_lock;
sigset_t g_shared_mask;  // guarded by g_shared_mask_lock
bool g_shared_mask_set = false;
sigset_t g_shared_pending;  // guarded by g_shared_mask_lock; empty when zeroed
// For each signal in g_shared_pending: the value pthread_sigqueue gave it,
// if that is how it was sent (guarded by g_shared_mask_lock).
struct queued_value {
  bool queued;
  sigval value;
};
queued_value g_pending_values[NSIG];

// The main ULT, or a plain OS thread: its mask is its OS thread's.
bool owns_its_thread() noexcept {
  ito::sched::ult* u = ito::sched::current_ult();
  return !u || u == &ito::sched::current_worker()->rt->main_ult;
}

// No thread can block SIGKILL or SIGSTOP (the request is silently ignored),
// nor glibc's own two signals below SIGRTMIN (glibc drops them too).
void drop_unblockable(sigset_t* mask) noexcept {
  for (int s : {SIGKILL, SIGSTOP, 32, 33}) sigdelset(mask, s);
}

int apply(int how, const sigset_t* set, sigset_t* mask) noexcept {
  if (!set) return 0;
  switch (how) {
    case SIG_BLOCK: sigorset(mask, mask, set); drop_unblockable(mask); return 0;
    case SIG_UNBLOCK: {
      sigset_t keep;
      sigfillset(&keep);
      for (int s = 1; s < NSIG; ++s)
        if (sigismember(set, s) == 1) sigdelset(&keep, s);
      sigandset(mask, mask, &keep);
      return 0;
    }
    case SIG_SETMASK: *mask = *set; drop_unblockable(mask); return 0;
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

// Sends sig to this OS thread, by the id the kernel knows it by (not the one
// glibc's TCB in force says: a ULT's own number in its TLS block), with
// pthread_sigqueue's siginfo when `queued`.
int send_to_this_os_thread(int sig, const queued_value& sent) noexcept {
  if (!sent.queued) return ::raise(sig);  // glibc's raise asks the kernel for the id
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_pid = ::getpid();
  info.si_uid = ::getuid();
  info.si_value = sent.value;
  return static_cast<int>(::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), ::gettid(), sig, &info));
}

// Runs sig's handler on this worker now: unblocked for the moment of the call
// (workers other than the first block asynchronous signals: worker_signals.hpp).
int deliver_here(int sig, const queued_value& sent = {}) noexcept {
  sigset_t one, saved;
  sigemptyset(&one);
  if (sig > 0 && sig < NSIG) sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, &saved);
  const int r = send_to_this_os_thread(sig, sent);
  const int e = errno_now();
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  errno_now() = e;
  return r;
}

// Removes from the ULTs' pending set the lowest signal of `of` (for
// sigwait) or, with `unblocked`, one that `of` leaves unblocked; 0 if none.
// `sent`, when not null, receives how it was sent.
int take_pending(const sigset_t& of, bool unblocked, queued_value* sent = nullptr) noexcept {
  std::lock_guard hold(g_shared_mask_lock);
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&g_shared_pending, s) != 1 || (sigismember(&of, s) == 1) == unblocked) continue;
    sigdelset(&g_shared_pending, s);
    if (sent) *sent = g_pending_values[s];
    return s;
  }
  return 0;
}

// A signal the calling ULT (not main) sends itself: pending for the ULTs
// while their mask blocks it (a second one of a pending signal is merged, as
// the kernel merges a standard signal), else its handler runs here before
// the call returns. 0 or -1 with errno.
int send_to_calling_ult(int sig, const queued_value& sent) noexcept {
  if (sig > 0 && sig < NSIG) {
    std::lock_guard hold(g_shared_mask_lock);
    if (g_shared_mask_set && sigismember(&g_shared_mask, sig) == 1) {
      if (sigismember(&g_shared_pending, sig) != 1) g_pending_values[sig] = sent;
      sigaddset(&g_shared_pending, sig);  // pending for the thread, as tgkill's would be
      return 0;
    }
  }
  return deliver_here(sig, sent);
}

}  // namespace

namespace ito::posix {

void remember_main_signal_mask() noexcept {
  std::lock_guard hold(g_shared_mask_lock);
  ::pthread_sigmask(SIG_BLOCK, nullptr, &g_shared_mask);
  g_shared_mask_set = true;
}

// pthread_sigqueue of the calling thread.
int queue_to_self(int sig, sigval value) noexcept {
  if (owns_its_thread()) return ::pthread_sigqueue(::pthread_self(), sig, value);
  if (sig == 0) return 0;  // it is alive
  return send_to_calling_ult(sig, {true, value}) == 0 ? 0 : errno_now();
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
      std::lock_guard hold(g_shared_mask_lock);  // the others' mask follows main's
      ::pthread_sigmask(SIG_BLOCK, nullptr, &g_shared_mask);
      g_shared_mask_set = true;
    }
    return e;
  }
  std::unique_lock hold(g_shared_mask_lock);
  if (!g_shared_mask_set) {  // the C or C++ API started the runtime: nothing recorded
    sigemptyset(&g_shared_mask);
    g_shared_mask_set = true;
  }
  sigset_t next = g_shared_mask;
  if (int e = apply(how, set, &next)) return e;
  if (old) *old = g_shared_mask;
  g_shared_mask = next;
  hold.unlock();
  // POSIX: a pending signal this call unblocks is delivered before it returns.
  queued_value sent{};
  while (int sig = take_pending(next, true, &sent)) deliver_here(sig, sent);
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
// (unless the ULT blocked it itself: then it stays pending for the ULTs).
int ito_raise(int sig) {
  if (owns_its_thread()) return ::raise(sig);
  return send_to_calling_ult(sig, {});
}

// A ULT other than main has no thread-directed signals but those above: the
// worker's own pending set (on worker 0, the main thread's) is not its.
// The process-directed ones are /proc's ShdPnd (bit n-1 for signal n).
int ito_sigpending(sigset_t* set) {
  if (owns_its_thread() || !set) return ::sigpending(set);
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
  std::lock_guard hold(g_shared_mask_lock);
  sigorset(set, set, &g_shared_pending);
  return 0;
}

// The waits take a signal pending for the ULTs first (a self-sent one).
int ito_sigwait(const sigset_t* set, int* sig) {
  if (!owns_its_thread() && set && sig)
    if (int s = take_pending(*set, false)) return *sig = s, 0;
  return delegated_errno_call([&] { return ::sigwait(set, sig); });
}
int ito_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  if (!owns_its_thread() && set) {
    queued_value sent{};
    if (int s = take_pending(*set, false, &sent)) {
      if (info) {
        *info = siginfo_t{};
        info->si_signo = s;
        info->si_code = sent.queued ? SI_QUEUE : SI_TKILL;
        info->si_pid = getpid();
        info->si_uid = getuid();
        if (sent.queued) info->si_value = sent.value;
      }
      return s;
    }
  }
  if (!timeout) return delegated_call([&] { return ::sigwaitinfo(set, info); });
  return delegated_call([&] { return ::sigtimedwait(set, info, timeout); });
}
int ito_sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  return ito_sigtimedwait(set, info, nullptr);
}
int ito_sigsuspend(const sigset_t* mask) {
  if (!owns_its_thread() && mask) {
    queued_value sent{};
    if (int s = take_pending(*mask, true, &sent)) {
      deliver_here(s, sent);
      errno_now() = EINTR;
      return -1;
    }
  }
  return delegated_call([&] { return ::sigsuspend(mask); });
}

}  // extern "C"
