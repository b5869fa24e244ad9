// SPDX-License-Identifier: Apache-2.0
// Signals aimed at one ULT (posix_thread_signals.hpp).
//
// A ULT's record: its mask, its pending set with one siginfo per signal
// (signals are not queued: a second one while the first is pending is lost,
// as for the kernel's standard signals), and, while it waits for signals on
// a delegation pool thread, that thread's id. The record hangs off the
// handle's slot, is made on first use and kept for the slot's later threads:
// `owner` says which handle it is for, and a record found with another owner
// is reset first. Its mutex is taken only by calls about signals.
//
// Delivery runs the handler as a plain call on the ULT itself, with the
// ULT's mask widened by sa_mask and the signal for its duration:
//   - the caller, for a signal it unblocks (ult_sigmask) or sends itself
//     (the kernel's raise does that one);
//   - a parked or queued ULT, when a worker next switches to it: the resume
//     action (sched/resume_action.hpp) puts a context in front of its saved
//     one;
//   - a ULT running on a worker, from the preemption signal at its next safe
//     point, as asynchronous cancellation acts (sched/preempt.hpp; needs
//     preemption, else the next switch-in does it);
//   - a ULT waiting in sigwait/sigsuspend/pause on a pool thread: the signal
//     is forwarded to that thread (rt_tgsigqueueinfo), whose wait takes it.
#include "compat/posix_thread_signals.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "compat/posix_internal.hpp"
#include "compat/posix_process_signals.hpp"
#include "io/delegated_syscall.hpp"
#include "io/errno_now.hpp"
#include "sched/handles.hpp"
#include "sched/interrupt.hpp"
#include "sched/preempt.hpp"
#include "sched/resume_action.hpp"
#include "sched/scheduler.hpp"

namespace ito::posix {

void act_if_async(sched::ult* self);  // posix_cancel.cpp: the preemption handler's action

namespace {

namespace handles = sched::handles;
using detail::errno_now;

struct small_info {
  int code = SI_TKILL;
  pid_t pid = 0;
  uid_t uid = 0;
  sigval value{};
};

struct thread_signals {
  std::mutex lock;
  std::uint64_t owner = 0;  // the handle this state is for
  sigset_t mask;            // written only by its thread (under the lock)
  sigset_t pending;
  small_info info[NSIG];
  // While it waits on a pool thread: that thread, and the set its wait takes.
  pid_t wait_tid = 0;
  sigset_t wait_set;
  unsigned forwarded = 0;  // signals sent to wait_tid during this wait
  // In sigsuspend: `mask` is the whole mask then, for the main thread too
  // (whose OS thread's mask blocks signals otherwise: blocked_for).
  bool suspended = false;
};

void reset(thread_signals* r, std::uint64_t h) noexcept {
  r->owner = h;
  sigemptyset(&r->mask);
  sigemptyset(&r->pending);
  r->wait_tid = 0;
  r->forwarded = 0;
  r->suspended = false;
}

// h's record, locked into `hold`; made if `make` (else null when it has
// none), reset first if it was an earlier thread's. Null for a stale handle.
thread_signals* lock_state(std::uint64_t h, bool make, std::unique_lock<std::mutex>& hold) {
  std::atomic<void*>* cell = handles::signal_cell(h);
  if (!cell) return nullptr;
  void* p = cell->load(std::memory_order_acquire);
  if (!p) {
    if (!make) return nullptr;
    auto* fresh = new (std::nothrow) thread_signals;
    if (!fresh) return nullptr;
    reset(fresh, h);
    if (cell->compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) p = fresh;
    else delete fresh;
  }
  auto* r = static_cast<thread_signals*>(p);
  hold = std::unique_lock(r->lock);
  // Still h's slot under the lock: a creator setting up the slot's next
  // thread takes this lock after its handle is live.
  if (!handles::signal_cell(h)) {
    hold.unlock();
    return nullptr;
  }
  if (r->owner != h) {
    if (!make) {
      hold.unlock();
      return nullptr;
    }
    reset(r, h);
  }
  return r;
}

sched::ult* main_ult() noexcept {
  sched::runtime_state* rt = sched::g_runtime.load(std::memory_order_acquire);
  return rt ? &rt->main_ult : nullptr;
}

// The caller's handle (given one if it has none), 0 when none can be had.
std::uint64_t own_handle(sched::ult* self) noexcept { return handles::of(self); }

// No thread can block SIGKILL or SIGSTOP, nor glibc's signals 32 and 33.
void drop_unblockable(sigset_t* mask) noexcept {
  for (int s : {SIGKILL, SIGSTOP, 32, 33}) sigdelset(mask, s);
}

bool default_ignored(int sig) noexcept {
  return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

// The lowest signal of `pending` that `mask` leaves open (or, with
// `in_mask`, that is in it), taken out; 0 when none.
int take_lowest(thread_signals* r, const sigset_t& set, bool in_set, small_info* info) noexcept {
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&r->pending, s) != 1 || (sigismember(&set, s) == 1) != in_set) continue;
    sigdelset(&r->pending, s);
    if (info) *info = r->info[s];
    return s;
  }
  return 0;
}

siginfo_t to_siginfo(int sig, const small_info& i) noexcept {
  siginfo_t si{};
  si.si_signo = sig;
  si.si_code = i.code;
  si.si_pid = i.pid;
  si.si_uid = i.uid;
  si.si_value = i.value;
  return si;
}

small_info from_siginfo(const siginfo_t& si) noexcept {
  small_info i;
  i.code = si.si_code;
  i.pid = si.si_pid;
  i.uid = si.si_uid;
  i.value = si.si_value;
  return i;
}

// Runs sig's default action or its handler on the calling OS thread through
// the kernel: unblocked for the moment of a raise. For a default action that
// ends or stops the whole process.
void deliver_through_kernel(int sig) noexcept {
  sigset_t one, saved;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, &saved);
  const int e = errno_now();
  ::raise(sig);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  errno_now() = e;
}

void take_open_process_signals(std::uint64_t h);
sigset_t opened_by(const sigset_t& mask) noexcept;

// Runs what sig does now, on the calling ULT (h its handle, r its record).
void run_action(std::uint64_t h, int sig, const siginfo_t& info) {
  struct sigaction sa;
  if (::sigaction(sig, nullptr, &sa) != 0) return;
  if (!(sa.sa_flags & SA_SIGINFO)) {
    if (sa.sa_handler == SIG_IGN) return;
    if (sa.sa_handler == SIG_DFL) {
      if (!default_ignored(sig)) deliver_through_kernel(sig);
      return;
    }
  }
  sigset_t saved;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) return;
    saved = r->mask;
    sigorset(&r->mask, &r->mask, &sa.sa_mask);
    if (!(sa.sa_flags & SA_NODEFER)) sigaddset(&r->mask, sig);
    drop_unblockable(&r->mask);
  }
  if (sa.sa_flags & SA_RESETHAND) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
  }
  const int e = errno_now();
  if (sa.sa_flags & SA_SIGINFO) {
    siginfo_t si = info;
    ucontext_t uc{};
    uc.uc_sigmask = saved;
    sa.sa_sigaction(sig, &si, &uc);
  } else {
    sa.sa_handler(sig);
  }
  errno_now() = e;  // this OS thread's: the handler may have switched
  if (sched::ult* self = sched::current_ult()) ++self->signal_handlers_run;
  {
    std::unique_lock<std::mutex> hold;
    if (thread_signals* r = lock_state(h, true, hold)) r->mask = saved;
  }
  // A process signal that came while the handler blocked it (its own
  // signal, sa_mask) and found no other thread was kept for the process:
  // the thread takes it now, as the kernel's sigreturn would.
  take_open_process_signals(h);
}

// The threads main creates start with its mask.
std::mutex g_main_mask_lock;
sigset_t g_main_mask;  // guarded by g_main_mask_lock
std::atomic<bool> g_main_blocks_any{false};

// What blocks signals for the thread of record r (handle h): its mask, and
// for the main thread, which owns its OS thread, that thread's real mask too
// (the record's mask is then only what a running handler adds to it).
sigset_t blocked_for(const thread_signals* r, std::uint64_t h) noexcept {
  sigset_t out = r->mask;
  if (r->suspended) return out;
  sched::ult* m = main_ult();
  if (m && m->handle && handles::of(m) == h) {
    std::lock_guard hold(g_main_mask_lock);
    sigorset(&out, &out, &g_main_mask);
  }
  return out;
}

// u has a signal it leaves unblocked: get it run.
void wake_for_signal(sched::ult* u) {
  sched::set_resume_action(&deliver_pending_signals);
  sched::ask_resume_action(u);
  // A wait that cancellation could interrupt (a condition or semaphore wait,
  // a sleep) ends early as if spuriously, so the switch-in runs the handler;
  // the caller waits again (a sleep goes on to its deadline). A note left
  // while it waits in none is forgotten by the next such wait's start.
  sched::interrupt(u);
  if (sched::preemption_active()) {
    sched::set_async_action(&act_if_async);
    sched::ask_async_action(u);
  }
}

// Signals the pool thread this ULT waits on was sent but its wait did not
// take (they came as it ended): they are that thread's own pending ones
// (/proc's SigPnd; it blocks every signal otherwise), taken back here into
// the record.
void take_back_forwarded(std::uint64_t h, const sigset_t& set) {
  char status[4096];
  const int fd = ::open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = ::read(fd, status, sizeof status - 1);
  ::close(fd);
  status[n > 0 ? n : 0] = '\0';
  const char* at = std::strstr(status, "\nSigPnd:");
  if (!at) return;
  const unsigned long long bits = std::strtoull(at + 8, nullptr, 16);
  for (int s = 1; s <= 64 && s < NSIG; ++s) {
    if (!(bits >> (s - 1) & 1) || sigismember(&set, s) != 1) continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, s);
    siginfo_t si;
    const timespec now{0, 0};
    if (::sigtimedwait(&one, &si, &now) != s) continue;
    std::unique_lock<std::mutex> hold;
    if (thread_signals* r = lock_state(h, true, hold)) {
      if (sigismember(&r->pending, s) != 1) r->info[s] = from_siginfo(si);
      sigaddset(&r->pending, s);
    }
  }
}

// On the pool thread: waits for a signal of `set` (timeout null: no limit),
// taking one aimed at the ULT (h) as well as a process-directed one.
int pool_wait(std::uint64_t h, const sigset_t& set, siginfo_t* info, const timespec* timeout) {
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) {
      errno_now() = EAGAIN;
      return -1;
    }
    small_info got;
    if (int s = take_lowest(r, set, true, &got)) {  // sent as the ULT came here
      *info = to_siginfo(s, got);
      return s;
    }
    r->wait_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    r->wait_set = set;
    r->forwarded = 0;
  }
  // One kept for the process (posix_process_signals.hpp) before this wait
  // was registered: the catcher keeps one only after looking for waiters.
  int got = take_process_pending(set, true, info);
  if (!got) {
    // An untimed wait goes on when a signal outside the set interrupts it
    // (the preemption signal, which a pool thread may take).
    do got = timeout ? ::sigtimedwait(&set, info, timeout) : ::sigwaitinfo(&set, info);
    while (got < 0 && errno_now() == EINTR && !timeout);
  }
  const int e = errno_now();
  unsigned forwarded = 0;
  {
    std::unique_lock<std::mutex> hold;
    if (thread_signals* r = lock_state(h, true, hold)) {
      r->wait_tid = 0;
      forwarded = r->forwarded;
      r->forwarded = 0;
    }
  }
  // Which of them the wait took is not known: whatever is left is taken back.
  if (forwarded) take_back_forwarded(h, set);
  errno_now() = e;
  return got;
}

int delegated_wait(std::uint64_t h, const sigset_t& set, siginfo_t* info, const timespec* timeout) {
  carried_guard keep_locale;
  return detail::delegated_syscall([&] { return pool_wait(h, set, info, timeout); });
}

}  // namespace

bool owns_its_thread() noexcept {
  sched::ult* u = sched::current_ult();
  return !u || u == main_ult();
}

void main_mask_is(const sigset_t& mask) noexcept {
  std::lock_guard hold(g_main_mask_lock);
  g_main_mask = mask;
  g_main_blocks_any.store(!sigisemptyset(&mask), std::memory_order_release);
}

void inherit_signal_mask(std::uint64_t child) noexcept {
  sched::ult* self = sched::current_ult();
  sigset_t mask;
  if (!self || self == main_ult()) {
    if (!g_main_blocks_any.load(std::memory_order_acquire)) [[likely]] return;
    watch_process_signals();  // another thread than main: one may take them
    std::lock_guard hold(g_main_mask_lock);
    mask = g_main_mask;
  } else {
    // Its own record, which only it writes the mask of: read without a lock.
    if (!self->handle) [[likely]] return;
    std::atomic<void*>* cell = handles::signal_cell(handles::of(self));
    auto* r = cell ? static_cast<thread_signals*>(cell->load(std::memory_order_acquire)) : nullptr;
    if (!r || r->owner != handles::of(self) || sigisemptyset(&r->mask)) return;
    mask = r->mask;
  }
  std::unique_lock<std::mutex> hold;
  if (thread_signals* r = lock_state(child, true, hold)) {
    reset(r, child);
    r->mask = mask;
    drop_unblockable(&r->mask);
  }
}

int ult_sigmask(int how, const sigset_t* set, sigset_t* old) {
  sched::ult* self = sched::current_ult();
  const std::uint64_t h = own_handle(self);
  if (!h) return EAGAIN;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) return EAGAIN;
    sigset_t next = r->mask;
    if (set) {
      switch (how) {
        case SIG_BLOCK: sigorset(&next, &next, set); break;
        case SIG_UNBLOCK: {
          for (int s = 1; s < NSIG; ++s)
            if (sigismember(set, s) == 1) sigdelset(&next, s);
          break;
        }
        case SIG_SETMASK: next = *set; break;
        default: return EINVAL;
      }
      drop_unblockable(&next);
    }
    if (old) *old = r->mask;
    r->mask = next;
  }
  if (set) {
    take_open_process_signals(h);
    // A signal the main thread blocks may now have a thread to go to.
    if (g_main_blocks_any.load(std::memory_order_acquire)) watch_process_signals();
  }
  // POSIX: a pending signal this call unblocks is delivered before it returns.
  deliver_pending_signals(self);
  return 0;
}

namespace {

// Aims sig at u (handle h; main too, from another thread) with `info`:
// send_to_ult's work. With
// only_if_open, a signal u blocks is left alone (*aimed false).
int aim(sched::ult* u, std::uint64_t h, int sig, const small_info& info, bool only_if_open,
        bool* aimed) {
  *aimed = false;
  struct sigaction sa;
  if (::sigaction(sig, nullptr, &sa) != 0) return EINVAL;
  bool open;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) return handles::signal_cell(h) ? EAGAIN : ESRCH;
    const sigset_t blocked = blocked_for(r, h);
    open = sigismember(&blocked, sig) != 1;
    if (!open && only_if_open) return 0;
    *aimed = true;
    if (open && !(sa.sa_flags & SA_SIGINFO)) {
      // Dropped when ignored; the default action of the rest ends or stops
      // the whole process, whichever thread takes it (as NPTL).
      if (sa.sa_handler == SIG_IGN || (sa.sa_handler == SIG_DFL && default_ignored(sig))) return 0;
      if (sa.sa_handler == SIG_DFL) {
        hold.unlock();
        deliver_through_kernel(sig);
        return 0;
      }
    }
    if (r->wait_tid && sigismember(&r->wait_set, sig) == 1) {
      // Waiting for it on a pool thread (sigwait, sigsuspend, pause): that
      // thread's wait takes it, with this information (tgkill gives
      // SI_TKILL's itself; the kernel lets no one else claim that code, nor
      // SI_USER's: a process signal handed on arrives as SI_TKILL).
      siginfo_t si = to_siginfo(sig, info);
      const long sent = info.code != SI_QUEUE
                            ? ::syscall(SYS_tgkill, ::getpid(), r->wait_tid, sig)
                            : ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), r->wait_tid, sig, &si);
      if (sent == 0) {
        ++r->forwarded;
        return 0;
      }
    }
    if (sigismember(&r->pending, sig) != 1) {
      sigaddset(&r->pending, sig);
      r->info[sig] = info;
    }
  }
  if (!open) return 0;  // pending until it unblocks it or waits for it
  if (u == sched::current_ult()) deliver_pending_signals(u);
  else wake_for_signal(u);
  return 0;
}

// Moves the signals kept pending for the process that h's mask leaves open
// into its own pending set (they are its now).
void take_open_process_signals(std::uint64_t h) {
  sigset_t mask;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, false, hold);
    if (!r) return;
    mask = r->mask;
  }
  siginfo_t si;
  while (int s = take_process_pending(mask, false, &si)) {
    std::unique_lock<std::mutex> hold;
    if (thread_signals* r = lock_state(h, true, hold)) {
      if (sigismember(&r->pending, s) != 1) r->info[s] = from_siginfo(si);
      sigaddset(&r->pending, s);
    }
  }
}

}  // namespace

int send_to_ult(sched::ult* u, std::uint64_t h, int sig, int code, const sigval& value) {
  if (sig == 0) return 0;
  small_info info;
  info.code = code;
  info.pid = ::getpid();
  info.uid = ::getuid();
  info.value = value;
  bool aimed;
  return aim(u, h, sig, info, false, &aimed);
}

bool aim_if_open(sched::ult* u, std::uint64_t h, int sig, const siginfo_t& info) {
  bool aimed = false;
  aim(u, h, sig, from_siginfo(info), true, &aimed);
  return aimed;
}

bool hand_to_waiter(std::uint64_t h, int sig) noexcept {
  std::unique_lock<std::mutex> hold;
  thread_signals* r = lock_state(h, false, hold);
  if (!r || !r->wait_tid || sigismember(&r->wait_set, sig) != 1) return false;
  if (::syscall(SYS_tgkill, ::getpid(), r->wait_tid, sig) != 0) return false;
  ++r->forwarded;
  return true;
}

namespace {
sigset_t opened_by(const sigset_t& mask) noexcept {
  sigset_t opened;
  sigfillset(&opened);
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&mask, s) == 1) sigdelset(&opened, s);
  return opened;
}
}  // namespace

void register_pool_wait(std::uint64_t h, const sigset_t& mask) {
  const sigset_t opened = opened_by(mask);
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) return;
    r->wait_tid = tid;
    r->wait_set = opened;
    r->forwarded = 0;
  }
  // Kept for the process before this wait was registered: this thread's own
  // now, taken as the wait opens it.
  siginfo_t si;
  while (int s = take_process_pending(opened, true, &si)) ::syscall(SYS_tgkill, ::getpid(), tid, s);
}

void unregister_pool_wait(std::uint64_t h, const sigset_t& mask) {
  unsigned forwarded = 0;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, false, hold);
    if (!r) return;
    r->wait_tid = 0;
    forwarded = r->forwarded;
    r->forwarded = 0;
  }
  if (forwarded) take_back_forwarded(h, opened_by(mask));
}

void main_mask_now(sigset_t* out) noexcept {
  std::lock_guard hold(g_main_mask_lock);
  *out = g_main_mask;
}

void deliver_pending_signals(sched::ult* self) {
  if (!self || !self->handle) [[likely]] return;
  const std::uint64_t h = handles::of(self);
  for (;;) {
    int sig;
    small_info info;
    {
      std::unique_lock<std::mutex> hold;
      thread_signals* r = lock_state(h, false, hold);
      if (!r) return;
      sig = take_lowest(r, blocked_for(r, h), false, &info);
    }
    if (!sig) return;
    run_action(h, sig, to_siginfo(sig, info));
  }
}

void thread_ends(sched::ult* self) {
  if (!self || !self->handle) [[likely]] return;
  const std::uint64_t h = handles::of(self);
  // Only once the catcher runs can a process signal be on its way here; the
  // mask's complement costs a loop over every signal (ito_create+ito_join
  // went from 41 to 138 ns when every ending thread paid it).
  if (process_signals_watched()) [[unlikely]] {
    sigset_t mask;
    sigemptyset(&mask);
    {
      std::unique_lock<std::mutex> hold;
      if (thread_signals* r = lock_state(h, false, hold)) mask = r->mask;
    }
    take_in_flight_process_signals(self, h, opened_by(mask));
  }
  deliver_pending_signals(self);
}

bool has_deliverable_signals(sched::ult* self) noexcept {
  if (!self || !self->handle) return false;
  std::unique_lock<std::mutex> hold;
  thread_signals* r = lock_state(handles::of(self), false, hold);
  if (!r) return false;
  const sigset_t blocked = blocked_for(r, handles::of(self));
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&r->pending, s) == 1 && sigismember(&blocked, s) != 1) return true;
  return false;
}

void own_pending_signals(sigset_t* out) {
  sigemptyset(out);
  sched::ult* self = sched::current_ult();
  if (!self || !self->handle) return;
  std::unique_lock<std::mutex> hold;
  if (thread_signals* r = lock_state(handles::of(self), false, hold)) *out = r->pending;
}

int ult_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  sched::ult* self = sched::current_ult();
  const std::uint64_t h = own_handle(self);
  if (!h) {
    errno_now() = EAGAIN;
    return -1;
  }
  siginfo_t got;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    small_info pending;
    if (int s = r ? take_lowest(r, *set, true, &pending) : 0) {
      if (info) *info = to_siginfo(s, pending);
      return s;
    }
  }
  if (int s = take_process_pending(*set, true, &got)) {
    if (info) *info = got;
    return s;
  }
  const int s = delegated_wait(h, *set, &got, timeout);
  if (s > 0 && info) *info = got;
  return s;
}

int ult_sigsuspend(const sigset_t* mask) {
  sched::ult* self = sched::current_ult();
  const std::uint64_t h = own_handle(self);
  if (!h) {
    errno_now() = EAGAIN;
    return -1;
  }
  sigset_t saved;
  {
    std::unique_lock<std::mutex> hold;
    thread_signals* r = lock_state(h, true, hold);
    if (!r) {
      errno_now() = EAGAIN;
      return -1;
    }
    saved = r->mask;
    r->mask = *mask;
    drop_unblockable(&r->mask);
    r->suspended = true;
  }
  take_open_process_signals(h);
  // A pending signal the wait's mask opens ends it at once; else wait, on a
  // pool thread, for one that runs a handler or ends the process (those the
  // mask leaves open and the disposition does not ignore).
  bool ran = false;
  if (has_deliverable_signals(self)) {
    deliver_pending_signals(self);
    ran = true;
  }
  if (!ran) {
    sigset_t wanted;
    sigemptyset(&wanted);
    for (int s = 1; s < NSIG; ++s) {
      if (sigismember(mask, s) == 1 || s == SIGKILL || s == SIGSTOP || s == 32 || s == 33) continue;
      if (s == sched::preempt_signal && sched::preemption_active()) continue;
      struct sigaction sa;
      if (::sigaction(s, nullptr, &sa) != 0) continue;
      if (!(sa.sa_flags & SA_SIGINFO) &&
          (sa.sa_handler == SIG_IGN || (sa.sa_handler == SIG_DFL && default_ignored(s))))
        continue;
      sigaddset(&wanted, s);
    }
    siginfo_t got;
    const int s = delegated_wait(h, wanted, &got, nullptr);
    if (s > 0) run_action(h, s, got);
    deliver_pending_signals(self);  // taken back from the pool thread
  }
  {
    std::unique_lock<std::mutex> hold;
    if (thread_signals* r = lock_state(h, true, hold)) {
      r->mask = saved;
      r->suspended = false;
    }
  }
  deliver_pending_signals(self);
  errno_now() = EINTR;
  return -1;
}

}  // namespace ito::posix
