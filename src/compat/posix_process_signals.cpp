// SPDX-License-Identifier: Apache-2.0
// Process-directed signals that the main thread blocks (posix_process_signals.hpp).
//
// The catcher is an OS thread that blocks every signal and waits, with
// sigtimedwait, for those the main thread blocks that have a handler (the
// set is computed again every 100 ms, so a handler installed or a mask
// changed later is seen then). The kernel gives a process-directed signal
// to a thread that does not block it: worker 0 when the main thread leaves
// it open (it is not in the set then), else this waiter, a pool thread in a
// delegated sigwait for it, or one in a delegated pselect/ppoll that opens
// it. What the catcher takes goes, in this order, to a thread that waits for
// it (its pool thread is sent it), to a ULT whose own mask leaves it open
// (handler on that ULT), or into the process's pending set kept here, which
// the next thread to unblock it or wait for it takes. The catcher starts
// only once the main thread blocks a signal while it makes threads (or one
// of them changes its mask): a program with no thread has none.
#include "compat/posix_process_signals.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "compat/posix_thread_signals.hpp"
#include "sched/handles.hpp"
#include "sched/join_word.hpp"
#include "sched/preempt.hpp"
#include "sched/scheduler.hpp"

namespace ito::posix {
namespace {

namespace handles = sched::handles;

std::mutex g_lock;  // the pending set, and a catcher's choice of a thread
sigset_t g_pending;  // guarded by g_lock; empty when zeroed
siginfo_t g_info[NSIG];
std::atomic<bool> g_started{false};
// The catcher is in its wait (false from the wait's return until what it
// took has been handed on).
std::atomic<bool> g_catcher_waiting{false};

// Signals the catcher never takes: those no thread can block or that a
// thread raises on itself by faulting, glibc's own, ito's preemption signal.
bool never_caught(int s) noexcept {
  switch (s) {
    case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL:
    case SIGTRAP: case SIGSYS: case 32: case 33:
      return true;
    default:
      return s == sched::preempt_signal && sched::preemption_active();
  }
}

// The main thread blocks them, and a handler would run: the catcher's set.
sigset_t catch_set() noexcept {
  sigset_t main_mask, set;
  main_mask_now(&main_mask);
  sigemptyset(&set);
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&main_mask, s) != 1 || never_caught(s)) continue;
    struct sigaction sa;
    if (::sigaction(s, nullptr, &sa) != 0) continue;
    if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
      continue;
    sigaddset(&set, s);
  }
  return set;
}

bool finished(sched::ult* u) noexcept {
  return sched::join_word::read(u) == sched::join_finished;
}

void route(int sig, const siginfo_t& info) {
  sched::runtime_state* rt = sched::g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  sigset_t main_mask;
  main_mask_now(&main_mask);
  if (sigismember(&main_mask, sig) != 1) {
    // The main thread opened it since the catcher's wait began: its own.
    const pid_t main_tid = rt->workers[0]->tid.load(std::memory_order_relaxed);
    if (main_tid) ::syscall(SYS_tgkill, ::getpid(), main_tid, sig);
    return;
  }
  std::lock_guard hold(g_lock);
  const std::uint32_t slots = handles::slots_handed_out();
  for (std::uint32_t i = 1; i < slots; ++i)
    if (const handles::value h = handles::live_at(i); h && hand_to_waiter(h, sig)) return;
  for (std::uint32_t i = 1; i < slots; ++i) {
    const handles::value h = handles::live_at(i);
    sched::ult* u = h ? handles::find(h) : nullptr;
    if (!u || u == &rt->main_ult || finished(u)) continue;
    if (aim_if_open(u, h, sig, info)) return;
  }
  if (sigismember(&g_pending, sig) != 1) g_info[sig] = info;
  sigaddset(&g_pending, sig);
}

void* catcher_main(void*) {
  pthread_setname_np(pthread_self(), "ito-signals");
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    const sigset_t set = catch_set();
    const timespec tick{0, 100'000'000};
    siginfo_t info;
    g_catcher_waiting.store(true, std::memory_order_seq_cst);
    const int s = ::sigtimedwait(&set, &info, &tick);
    g_catcher_waiting.store(false, std::memory_order_seq_cst);
    if (s > 0) route(s, info);
  }
  return nullptr;
}

}  // namespace

void watch_process_signals() noexcept {
  if (g_started.load(std::memory_order_acquire) || g_started.exchange(true)) return;
  // Not a helper of the deadlock proof's (sched/deadlock.hpp): it may make
  // a ULT runnable, so while it exists no deadlock is reported.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  pthread_t t;
  const int e = pthread_create(&t, nullptr, &catcher_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (e != 0) {
    std::fprintf(stderr, "ito: cannot start the signal catcher: %s; process signals the main "
                         "thread blocks wait for it\n", std::strerror(e));
    return;
  }
  pthread_detach(t);
}

int take_process_pending(const sigset_t& set, bool in_set, siginfo_t* info) noexcept {
  if (!g_started.load(std::memory_order_acquire)) [[likely]] return 0;
  std::lock_guard hold(g_lock);
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&g_pending, s) != 1 || (sigismember(&set, s) == 1) != in_set) continue;
    sigdelset(&g_pending, s);
    if (info) *info = g_info[s];
    return s;
  }
  return 0;
}

void take_in_flight_process_signals(sched::ult* self, std::uint64_t h, const sigset_t& open) {
  if (!g_started.load(std::memory_order_acquire)) [[likely]] return;
  sigset_t set = catch_set();
  sigandset(&set, &set, &open);
  if (sigisemptyset(&set)) return;
  // Still pending in the kernel (the catcher has not run since): taken here,
  // on this thread's worker, and run on it.
  const timespec now{0, 0};
  siginfo_t info;
  for (int s; (s = ::sigtimedwait(&set, &info, &now)) > 0;) aim_if_open(self, h, s, info);
  // Taken by the catcher, not handed on yet: wait until it is back in its
  // wait (a moment: it only looks for a thread).
  for (unsigned round = 0; round < 1000 && !g_catcher_waiting.load(std::memory_order_seq_cst);
       ++round)
    sched::yield(false);
}

bool process_signals_watched() noexcept { return g_started.load(std::memory_order_acquire); }

void add_process_pending(sigset_t* out) noexcept {
  if (!g_started.load(std::memory_order_acquire)) [[likely]] return;
  std::lock_guard hold(g_lock);
  sigorset(out, out, &g_pending);
}

}  // namespace ito::posix
