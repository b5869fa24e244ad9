// SPDX-License-Identifier: Apache-2.0
// Preemption (preempt.hpp): the watch thread and the signal handler.
#include "sched/preempt.hpp"

#include <fcntl.h>
#include <link.h>
#include <locale.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "arch/sanitizer.hpp"
#include "io/errno_now.hpp"
#include "common/setting_values.hpp"
#include "ito/options.hpp"
#include "os/futex.hpp"
#include "sched/deadlock.hpp"
#include "sched/loader_locks.hpp"
#include "sched/scheduler.hpp"

// ito's code in a program linked with libito.a and cmake/ito-text.ld; null
// without the script (and in libito.so, where the object's bounds serve).
extern "C" {
extern const char __ito_text_start[] __attribute__((weak, visibility("hidden")));
extern const char __ito_text_end[] __attribute__((weak, visibility("hidden")));
}

namespace ito::sched {

// The watch of one runtime.
struct preempt_watch {
  runtime_state* rt = nullptr;
  pthread_t thread{};
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> word{0};   // futex: bumped to wake the watch
  std::atomic<bool> sleeping{false};    // waiting for a worker to leave the idle list
  std::atomic<std::uint64_t> signals{0};  // sent (ITO_STATS)
  // ULTs with an asynchronous action asked (ask_async_action): the watch
  // compares each worker's running ULT with them, by address only (a
  // descriptor another thread runs may be released and unmapped under it, so
  // the watch never reads one). A stale entry (its ULT ended, the descriptor
  // reused) costs at most one signal: the handler finds nothing to do there
  // and drops it.
  static constexpr unsigned max_async_targets = 16;
  std::atomic<const ult*> async_targets[max_async_targets] = {};
};

namespace {

// --- Where a ULT may be interrupted ---------------------------------------

struct code_range {
  std::uintptr_t lo, hi;
};
// The executable segments of the objects a ULT must not be preempted in.
// Rebuilt by the watch when an object was loaded since (dlopen); the handler
// reads the newest. Old tables are kept (a few per process): a handler may
// still read one.
struct range_table {
  static constexpr unsigned capacity = 64;
  unsigned long long adds = 0;  // dl_phdr_info::dlpi_adds when it was built
  unsigned count = 0;
  code_range ranges[capacity];
};
std::atomic<const range_table*> g_ranges{nullptr};

// Objects whose code may hold a lock another ULT of the worker needs, or
// state a switch must not cut: ito itself is found by address.
constexpr const char* runtime_objects[] = {
    "libc.so",    "ld-linux",    "ld64.so",    "libstdc++.so", "libgcc_s.so", "libpthread.so",
    "libdl.so",   "librt.so",    "libnss_",    "libresolv.so", "linux-vdso",  "linux-gate",
    "libasan.so", "libtsan.so",  "libubsan.so", "liblsan.so",  "libito",
};

bool is_runtime_object(const char* path) noexcept {
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  for (const char* name : runtime_objects)
    if (std::strncmp(base, name, std::strlen(name)) == 0) return true;
  return false;
}

// An address inside ito's own code.
void marker() noexcept {}

// ito's own section in the main program, if it was linked with ito-text.ld:
// false if not (the program's code and ito's are then one range).
bool ito_text_section(code_range* r) noexcept {
  const auto lo = reinterpret_cast<std::uintptr_t>(__ito_text_start);
  const auto hi = reinterpret_cast<std::uintptr_t>(__ito_text_end);
  const auto here = reinterpret_cast<std::uintptr_t>(&marker);
  if (!lo || !(lo <= here && here < hi)) return false;
  *r = {lo, hi};
  return true;
}

bool object_holds(const dl_phdr_info* info, std::uintptr_t addr) noexcept {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || !(p.p_flags & PF_X)) continue;
    const std::uintptr_t lo = info->dlpi_addr + p.p_vaddr;
    if (addr >= lo && addr < lo + p.p_memsz) return true;
  }
  return false;
}

struct scan {
  range_table* table;
  bool ito_inseparable;  // ito's code lies in the main program, not apart in ito_text
};

int add_object(dl_phdr_info* info, std::size_t, void* p) noexcept {
  auto* s = static_cast<scan*>(p);
  s->table->adds = info->dlpi_adds;
  const bool main_program = !info->dlpi_name || !*info->dlpi_name;
  const bool holds_ito = object_holds(info, reinterpret_cast<std::uintptr_t>(&marker));
  if (holds_ito && main_program) {
    // libito.a: only ito's own section is runtime code; the rest of the
    // program may be preempted.
    code_range ito_text{};
    if (!ito_text_section(&ito_text)) {
      s->ito_inseparable = true;
    } else if (s->table->count < range_table::capacity) {
      s->table->ranges[s->table->count++] = ito_text;
      return 0;
    }
  }
  if (!holds_ito && (main_program || !is_runtime_object(info->dlpi_name))) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    if (s->table->count == range_table::capacity) return 0;  // the rest stays preemptible
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    s->table->ranges[s->table->count++] = {lo, lo + ph.p_memsz};
  }
  return 0;
}

// A new table of the objects loaded now; *ito_inseparable says whether ito's
// code lies in the main program without a section of its own.
range_table* build_ranges(bool* ito_inseparable) {
  auto* t = new (std::nothrow) range_table;
  if (!t) return nullptr;
  scan s{t, false};
  dl_iterate_phdr(&add_object, &s);
  if (ito_inseparable) *ito_inseparable = s.ito_inseparable;
  return t;
}

unsigned long long loads_so_far() noexcept {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* p) -> int {
        *static_cast<unsigned long long*>(p) = info->dlpi_adds;
        return 1;  // the first object is enough: the count is global
      },
      &adds);
  return adds;
}

void refresh_ranges_if_loaded() {
  const range_table* now = g_ranges.load(std::memory_order_acquire);
  if (now && now->adds == loads_so_far()) return;
  if (range_table* t = build_ranges(nullptr)) g_ranges.store(t, std::memory_order_release);
}

bool in_runtime_code(std::uintptr_t pc) noexcept {
  const range_table* t = g_ranges.load(std::memory_order_acquire);
  if (!t) return true;
  for (unsigned i = 0; i < t->count; ++i)
    if (pc >= t->ranges[i].lo && pc < t->ranges[i].hi) return true;
  return false;
}

void interrupted_at(const ucontext_t* uc, std::uintptr_t* pc, std::uintptr_t* sp) noexcept {
#if defined(__x86_64__)
  *pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  *sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  *pc = uc->uc_mcontext.pc;
  *sp = uc->uc_mcontext.sp;
#endif
}

// A safe point: the ULT runs the program's own code on its own stack (not
// a handler of the program's on an alternate stack).
bool safe_point(const ult* self, const ucontext_t* uc) noexcept {
  std::uintptr_t pc = 0, sp = 0;
  interrupted_at(uc, &pc, &sp);
  if (in_runtime_code(pc)) return false;
  // The program's code run by the loader with its lock held (a constructor
  // under dlopen, dl_iterate_phdr's callback): that OS thread owns the lock.
  if (const worker* w = current_worker(); w && inside_loader_lock(w)) return false;
  const stack::stack_block& s = stack_of(self);
  if (!s) return true;  // an adopted OS thread's stack we could not read: its own anyway
  return sp > reinterpret_cast<std::uintptr_t>(s.lo) && sp <= reinterpret_cast<std::uintptr_t>(s.hi);
}

// --- The handler ------------------------------------------------------------

std::atomic<async_action_fn> g_async_action{nullptr};
bool is_async_target(const preempt_watch* watch, const ult* u) noexcept;
preempt_watch* current_watch() noexcept;

struct sigaction g_program_action;  // what the program had installed before ito
std::atomic<bool> g_installed{false};
std::atomic<unsigned> g_active{0};  // runtimes with preemption on (0 or 1)

// A signal ito did not send: the program's own handler, as if ito were not there.
void pass_to_program(int sig, siginfo_t* info, void* uc) {
  const struct sigaction& a = g_program_action;
  if (a.sa_flags & SA_SIGINFO) {
    if (a.sa_sigaction) a.sa_sigaction(sig, info, uc);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN && a.sa_handler) {
    a.sa_handler(sig);
  }
}

void on_preempt_signal(int sig, siginfo_t* info, void* ucv) {
  const int saved_errno = errno;
  worker* w = current_worker();
  if (!w || !w->preempt_asked.exchange(false, std::memory_order_acq_rel)) {
    pass_to_program(sig, info, ucv);
    errno = saved_errno;
    return;
  }
  auto* uc = static_cast<ucontext_t*>(ucv);
  ult* self = w->current;
  if (!self || !safe_point(self, uc)) {
    if (self) worker_stats::bump(w->stats.preempts_refused);
    errno = saved_errno;
    return;
  }
  // The worker goes on with other ULTs (or, for an action that unwinds the
  // ULT, with this one's exit) under the mask it had before the signal
  // (this signal open again), not the handler's.
  pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, nullptr);
  if (self->async_action_pending.load(std::memory_order_acquire)) {
    if (async_action_fn action = g_async_action.load(std::memory_order_acquire)) {
      errno = saved_errno;
      action(self);  // returns only when it had nothing to do
      // Or when what it did parked the ULT (a signal's handler that waits,
      // as Boehm GC's in sigsuspend): it may be on another worker now.
      w = current_worker();
    }
  } else if (preempt_watch* watch = current_watch(); watch && is_async_target(watch, self)) {
    async_action_done(self);  // a stale target: this descriptor's ULT was asked, not this one
  }
  worker_stats::bump(w->stats.preempts);
  const locale_t locale = uselocale(nullptr);
  preempt_current(w, self);
  // Resumed, perhaps on another worker: sigreturn will install the frame's
  // mask and alternate stack, which must be this OS thread's now.
  pthread_sigmask(SIG_BLOCK, nullptr, &uc->uc_sigmask);
  sigaltstack(nullptr, &uc->uc_stack);
  if (uselocale(nullptr) != locale) uselocale(locale);
  // errno_now: this OS thread's errno, never the address from before the
  // switch (glibc's __errno_location is const; the compiler may reuse it).
  ito::detail::errno_now() = saved_errno;
}

void install_handler() {
  if (g_installed.exchange(true)) return;
  struct sigaction a {};
  a.sa_sigaction = &on_preempt_signal;
  // SA_RESTART: a system call the signal lands in goes on (the watch sends
  // none to a thread that is not running, but a thread may enter one as the
  // signal flies). No SA_ONSTACK: the handler switches away on the ULT's stack.
  a.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&a.sa_mask);
  sigaction(preempt_signal, &a, &g_program_action);
}

// --- The watch --------------------------------------------------------------

constexpr std::int64_t never_ns = timer_queue::never;

// How long the ULT running on w may go on while others wait for it: a slice
// when only queued work waits (its deque, yielded ULTs, branches: throughput);
// a tenth of one when a woken ULT does (the main ULT in the bound inbox, a ULT
// woken from outside in the injector, a sleeper whose deadline passed:
// latency, as Linux lets a woken thread preempt after a short granularity).
// never_ns when nothing waits.
std::int64_t allowed_run(runtime_state* rt, worker* w, std::int64_t now, std::int64_t slice) noexcept {
  if (!w->bound_ready_looks_empty() || !rt->injector.looks_empty() ||
      rt->timers.next_deadline() <= now)
    return std::max<std::int64_t>(slice / 10, 100'000);
  if (!w->deque.looks_empty() || !w->yielded.looks_empty() || !w->branches.looks_empty())
    return slice;
  return never_ns;
}

// Whether the OS thread is on a CPU or waiting for one (state R): one blocked
// in a system call ito does not know would take the signal as EINTR and gain
// nothing (its handler would refuse: it is in libc).
bool thread_running(pid_t tid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* end = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
  return end && end[1] == ' ' && end[2] == 'R';
}

struct seen {
  const ult* running = nullptr;
  std::int64_t since = 0;
};

bool is_async_target(const preempt_watch* watch, const ult* u) noexcept {
  for (const auto& t : watch->async_targets)
    if (t.load(std::memory_order_acquire) == u) return true;
  return false;
}

preempt_watch* current_watch() noexcept {
  runtime_state* rt = g_runtime.load(std::memory_order_acquire);
  return rt ? rt->preempt.load(std::memory_order_acquire) : nullptr;
}

void* watch_main(void* p) {
  auto* watch = static_cast<preempt_watch*>(p);
  runtime_state* rt = watch->rt;
  pthread_setname_np(pthread_self(), "ito-preempt");
  // Never a ULT's waker: the deadlock proof may count it as ito's own.
  helper_thread_begins();
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  const std::int64_t slice = static_cast<std::int64_t>(rt->opts.preempt_us.value_or(0)) * 1000;
  const std::int64_t tick = std::max<std::int64_t>(slice / 2, 50'000);
  constexpr std::int64_t min_wait = 100'000;  // at most 10 looks per ms
  std::vector<seen> last(rt->workers.size());
  const pid_t pid = getpid();
  std::int64_t wait = tick;
  while (!watch->stop.load(std::memory_order_acquire)) {
    const std::uint32_t word = watch->word.load(std::memory_order_acquire);
    os::futex_wait_for(&watch->word, word, wait);
    const std::int64_t now = monotonic_ns();
    bool any_running = false;
    std::int64_t next_look = tick;
    for (std::size_t i = 0; i < rt->workers.size(); ++i) {
      worker* w = rt->workers[i].get();
      const ult* running = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
      if (!running) {
        last[i] = {};
        continue;
      }
      any_running = true;
      // A ULT first seen now has run since some time after the last look.
      if (running != last[i].running) last[i] = {running, now};
      const std::int64_t ran = now - last[i].since;
      // A ULT with an asynchronous action asked (a cancellation) is
      // interrupted at once, whoever waits.
      const std::int64_t allowed =
          is_async_target(watch, running) ? 0 : allowed_run(rt, w, now, slice);
      if (allowed == never_ns) continue;
      if (ran < allowed) {
        next_look = std::min(next_look, allowed - ran);
        continue;
      }
      const pid_t tid = w->tid.load(std::memory_order_relaxed);
      if (tid == 0 || !thread_running(tid)) continue;
      refresh_ranges_if_loaded();
      w->preempt_asked.store(true, std::memory_order_release);
      syscall(SYS_tgkill, pid, tid, preempt_signal);
      watch->signals.fetch_add(1, std::memory_order_relaxed);
      // A ULT the handler left running (not at a safe point: inside libc,
      // say) is asked again after another allowance, not at every look: a
      // long memcpy would otherwise draw a signal every 100 us.
      last[i].since = now;
      next_look = std::min(next_look, allowed);
    }
    // A sleeper's deadline is a wake-up nobody delivers while every worker
    // computes: look again then, not a tick later.
    const std::int64_t deadline = rt->timers.next_deadline();
    if (any_running && deadline != never_ns && deadline > now)
      next_look = std::min(next_look, deadline - now);
    wait = std::clamp<std::int64_t>(next_look, min_wait, tick);
    if (any_running || rt->parked.load(std::memory_order_seq_cst) != rt->workers.size()) continue;
    // Every worker is parked: sleep until one leaves the idle list.
    watch->sleeping.store(true, std::memory_order_seq_cst);
    const std::uint32_t before = watch->word.load(std::memory_order_seq_cst);
    if (rt->parked.load(std::memory_order_seq_cst) == rt->workers.size() &&
        !watch->stop.load(std::memory_order_acquire))
      os::futex_wait(&watch->word, before);
    watch->sleeping.store(false, std::memory_order_relaxed);
    for (auto& s : last) s = {};
  }
  helper_thread_ends();
  return nullptr;
}

void wake(preempt_watch* watch) noexcept {
  watch->word.fetch_add(1, std::memory_order_seq_cst);
  os::futex_wake(&watch->word, 1);
}

}  // namespace

const char* preemption_unavailable(const options& resolved) noexcept {
#if ITO_TSAN
  (void)resolved;
  return "not under ThreadSanitizer, which runs a signal's handler late, at a point of its own";
#else
  if (resolved.stacks != stack_policy::fixed)
    return "not with the lazy and fair_use stack policies (a handler cannot switch away on a "
           "split-stack segment)";
  static const bool ito_inseparable = [] {
    bool inseparable = false;
    const range_table* t = build_ranges(&inseparable);
    if (t) g_ranges.store(t, std::memory_order_release);
    return inseparable;
  }();
  if (ito_inseparable)
    return "it needs ito's code apart from the program's, to never interrupt ito itself: link "
           "libito.a with ito-text.ld (ito::ito in CMake and pkg-config --static do), or link "
           "libito.so (ito::ito_shared), or run under libito-preload.so";
  return nullptr;
#endif
}

void check_preemption_available(const options& resolved) {
  if (resolved.preempt_us.value_or(0) == 0) return;
  if (const char* why = preemption_unavailable(resolved))
    throw config_error(std::string("ito: ITO_PREEMPT / options.preempt_us: preemption is "
                                   "unavailable here: ") + why,
                       config::text_setting(config::setting_id::preempt) != nullptr);
}

bool preemption_active() noexcept { return g_active.load(std::memory_order_relaxed) != 0; }

void start_preemption(runtime_state* rt) {
  if (rt->opts.preempt_us.value_or(0) == 0 || rt->preempt.load(std::memory_order_relaxed)) return;
  refresh_ranges_if_loaded();
  install_handler();
  auto* watch = new preempt_watch;
  watch->rt = rt;
  // The watch blocks every signal itself; it starts with them blocked so none
  // lands on it before.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  const int err = pthread_create(&watch->thread, nullptr, &watch_main, watch);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (err != 0) {
    std::fprintf(stderr, "ito: cannot start the preemption watch: %s; ULTs stay cooperative\n",
                 std::strerror(err));
    delete watch;
    return;
  }
  rt->preempt.store(watch, std::memory_order_release);
  g_active.fetch_add(1, std::memory_order_relaxed);
  // Called on worker 0 (the others start here): its mask is the main
  // thread's, which may block the signal since before the runtime.
  if (worker* w = current_worker(); w && w->index == 0) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, preempt_signal);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  }
}

void stop_preemption(runtime_state* rt) noexcept {
  preempt_watch* watch = rt->preempt.load(std::memory_order_acquire);
  if (!watch || watch->stop.load(std::memory_order_relaxed)) return;
  watch->stop.store(true, std::memory_order_release);
  wake(watch);
  pthread_join(watch->thread, nullptr);
  g_active.fetch_sub(1, std::memory_order_relaxed);
}

void free_preemption(runtime_state* rt) noexcept {
  preempt_watch* watch = rt->preempt.exchange(nullptr, std::memory_order_acq_rel);
  if (!watch) return;
  delete watch;
}

std::uint64_t preempt_signals_sent(const runtime_state* rt) noexcept {
  const preempt_watch* watch = rt->preempt.load(std::memory_order_acquire);
  return watch ? watch->signals.load(std::memory_order_relaxed) : 0;
}

void set_async_action(async_action_fn action) noexcept {
  g_async_action.store(action, std::memory_order_release);
}

void ask_async_action(ult* u) noexcept {
  u->async_action_pending.store(true, std::memory_order_release);
  preempt_watch* watch = current_watch();
  if (!watch) return;
  for (auto& t : watch->async_targets) {
    const ult* free_slot = nullptr;
    if (t.load(std::memory_order_relaxed) == u ||
        t.compare_exchange_strong(free_slot, u, std::memory_order_acq_rel)) {
      wake(watch);
      return;
    }
  }
  // All taken: the ULT acts at its next cancellation point instead.
}

void async_action_done(ult* u) noexcept {
  u->async_action_pending.store(false, std::memory_order_relaxed);
  preempt_watch* watch = current_watch();
  if (!watch) return;
  for (auto& t : watch->async_targets) {
    const ult* mine = u;
    t.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel);
  }
}

void wake_preempt_watch(runtime_state* rt) noexcept {
  preempt_watch* watch = rt->preempt.load(std::memory_order_relaxed);
  if (!watch) return;
  // Against the watch's store of `sleeping` and load of `parked`: one of the
  // two sees the other's.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (watch->sleeping.load(std::memory_order_seq_cst)) wake(watch);
}

}  // namespace ito::sched
