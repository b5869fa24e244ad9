// SPDX-License-Identifier: Apache-2.0
// The POSIX layer's common parts: lazy start and clean exit of the runtime,
// deadlines, carried thread state. See include/ito/pthread.h and docs/POSIX.md.
#include <locale.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/setting_values.hpp"
#include "compat/posix_internal.hpp"
#include "ito/options.hpp"
#include "sched/idle.hpp"
#include "sched/preempt.hpp"
#include "sched/runtime_control.hpp"
#include "sched/ult_tls.hpp"

namespace ito::posix {
namespace {

std::atomic<sched::runtime_state*> g_posix_runtime{nullptr};
std::atomic<pthread_t> g_main_os_thread{0};
// Set by libito-preload.so's constructor: from then on the runtime starts at
// first use, as from source (libc's and libstdc++'s initialisation, before
// it, is too early).
std::atomic<bool> g_preload_ready{false};

// In a child forked while the runtime ran: that runtime is gone (see
// sched/fork_child.hpp); the next entry point starts a new one.
void forget_runtime_in_child() noexcept {
  g_posix_runtime.store(nullptr, std::memory_order_relaxed);
  g_main_os_thread.store(0, std::memory_order_relaxed);
}

}  // namespace
}  // namespace ito::posix

// Defined only by libito-preload.so, which starts the runtime itself.
extern "C" __attribute__((weak)) int ito_posix_preload_marker;

namespace ito::posix {
namespace {

bool preloaded() noexcept { return &ito_posix_preload_marker != nullptr; }

// atexit: exit() or a return from main. POSIX ends the other threads with the
// process, so the runtime is stopped (workers joined, stats printed) only
// when that can be done without waiting: on the main ULT, with every ULT
// finished. Otherwise (exit() from another ULT, or ULTs still running) the
// workers simply end with the process, as NPTL threads do.
void stop_at_exit() {
  sched::runtime_state* rt = g_posix_runtime.load(std::memory_order_acquire);
  if (!rt || sched::g_runtime.load(std::memory_order_acquire) != rt) return;
  sched::worker* w = sched::current_worker();
  if (!w || w->rt != rt || w->current != &rt->main_ult || !sched::all_finished(rt)) return;
  g_posix_runtime.store(nullptr, std::memory_order_release);
  sched::stop_runtime(rt);
}

// Once per process (a runtime may be restarted). Under the preload from its
// constructor, before the program's own atexit handlers and static objects:
// the runtime stops after them, whenever it started.
void register_exit_hooks() noexcept {
  static bool registered = false;
  if (registered) return;
  registered = std::atexit(&stop_at_exit) == 0;
  pthread_atfork(nullptr, nullptr, &forget_runtime_in_child);
}

// Under the preload, a program with thread-local variables of its own gets a
// TLS block per thread unless ITO_ULT_TLS says otherwise (thread_mode.c
// decides it at start, through ito_posix_ult_tls_refusal, or when a module
// with TLS is loaded later: ito_posix_ult_tls_turn_on). Read when a runtime
// starts (a forked child's too).
std::atomic<bool> g_tls_blocks_by_default{false};

// A thread's stack under the preload when ITO_STACK_SIZE does not say:
// NPTL's default (the stack limit's soft value, or 2 MiB when unlimited), at
// most 2 MiB and at least ito's own default. A pthread program expects far
// more than 64 KiB (Boehm GC's marker keeps a 64 KiB array in one frame;
// glibc's default is 8 MiB, musl's 128 KiB); 2 MiB keeps room on the main
// thread's stack for a child it joins before it started to run there
// (scheduler.cpp, join_inline).
std::size_t preload_default_stack_size() noexcept {
  constexpr std::size_t most = std::size_t{2} << 20;
  rlimit limit{};
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return most;
  return std::clamp<std::size_t>(static_cast<std::size_t>(limit.rlim_cur),
                                 options::default_stack_size, most);
}

// The POSIX layer's options: the environment's; under the preload, where a
// pthread program expects threads to be preemptive (source mode asks for it
// with ITO_PREEMPT) and NPTL-sized stacks, preemption on and a larger stack
// by default.
options posix_options() {
  options asked{};
  if (preloaded() && !config::text_setting(config::setting_id::stack_size))
    asked.stack_size = preload_default_stack_size();
  options o = resolve_options(asked);
  if (preloaded() && !config::number_setting(config::setting_id::preempt) &&
      !sched::preemption_unavailable(o))
    o.preempt_us = sched::default_preempt_slice_us;
  if (g_tls_blocks_by_default.load(std::memory_order_relaxed)) o.ult_tls = true;
  return o;
}

// 0, EPERM (an OS thread while a runtime runs), EAGAIN; *bad_config when an
// ITO_* variable is at fault (its message is on stderr).
int start_runtime_now(bool* bad_config = nullptr) noexcept {
  if (sched::g_runtime.load(std::memory_order_acquire)) return EPERM;  // an OS thread, not a ULT
  errno_guard keep_errno;
  try {
    // Workers 1..N-1 start with the first thread (ito_pthread_create): a
    // program that never makes one, or not yet, runs on this thread alone.
    sched::runtime_state* rt = sched::start_runtime(posix_options(), true);
    // glibc's pthread_self is the thread pointer (x86-64): no symbol that
    // the preload library would have to tell from its own.
    g_main_os_thread.store(reinterpret_cast<pthread_t>(__builtin_thread_pointer()),
                           std::memory_order_release);
    remember_main_signal_mask();
    g_posix_runtime.store(rt, std::memory_order_release);
    register_exit_hooks();
    return 0;
  } catch (const config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    if (bad_config) *bad_config = true;
    return EAGAIN;
  } catch (...) {
    // EBUSY: another thread started a runtime meanwhile; we are not its ULT.
    return sched::current_ult() ? 0 : EAGAIN;
  }
}

}  // namespace

bool main_os_thread_known() noexcept {
  return g_main_os_thread.load(std::memory_order_acquire) != 0;
}
pthread_t main_os_thread() noexcept { return g_main_os_thread.load(std::memory_order_acquire); }

// Under the preload, on first use once its constructor has run (a forked
// child inherits that state: its libraries are initialised long since).
int start_runtime_slow() noexcept {
  return preloaded() && !g_preload_ready.load(std::memory_order_acquire) ? EPERM
                                                                         : start_runtime_now();
}

void wait_for_others_then_exit() {
  sched::runtime_state* rt = sched::g_runtime.load(std::memory_order_acquire);
  // pthread_exit on the main thread: the process lives until the last
  // thread ends, then exits with status 0.
  sched::wait_until_all_finished(rt);
  std::exit(0);
}

void exit_outside_any_ult(sched::worker* w) {
  sched::runtime_state* rt = w->rt;
  if (w->index != 0)
    sched::fatal("pthread_exit: called in a signal handler on a worker that was running no "
                 "thread (docs/POSIX.md, Signals)");
  // Worker 0 is the program's main thread, which takes the process's signals:
  // the handler ran there while the main thread waited (its ULT parked). As
  // NPTL, the main thread ends and the process with the last thread, with
  // status 0. The threads still running end on the other workers; this one
  // cannot run any while it stays in the handler.
  for (;;) {
    if (sched::all_finished(rt)) std::exit(0);
    if (rt->workers.size() == 1)
      sched::fatal("pthread_exit: called in a signal handler while the main thread waited, "
                   "with other threads still running on the only worker (docs/POSIX.md, Signals)");
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
}

std::int64_t clock_ns(clockid_t clock) noexcept {
  timespec ts{};
  clock_gettime(clock, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int to_deadline(const timespec* abstime, clockid_t clock, std::int64_t* deadline) noexcept {
  if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1'000'000'000) return EINVAL;
  constexpr std::int64_t never = sched::timer_queue::never;
  const std::int64_t now_mono = sched::monotonic_ns();
  const std::int64_t now = clock == CLOCK_MONOTONIC ? now_mono : clock_ns(clock);
  // In seconds first, so that a huge tv_sec saturates instead of overflowing.
  const long double rel = (static_cast<long double>(abstime->tv_sec) * 1e9L + abstime->tv_nsec) -
                          static_cast<long double>(now);
  if (rel <= 0) *deadline = now_mono;
  else if (rel >= static_cast<long double>(never - now_mono)) *deadline = never;
  else *deadline = now_mono + static_cast<std::int64_t>(rel);
  return 0;
}

// TSan: as errno_guard, the worker's TLS is touched by one ULT after another.
__attribute__((no_sanitize("thread"))) carried_state save_carried() noexcept {
  return {::uselocale(nullptr), h_errno};
}

__attribute__((no_sanitize("thread"))) void restore_carried(const carried_state& s) noexcept {
  const auto loc = static_cast<locale_t>(s.locale);
  if (::uselocale(nullptr) != loc) ::uselocale(loc);
  h_errno = s.h_err;
}

// TSan: as save_carried.
__attribute__((no_sanitize("thread"))) void start_as_a_new_thread() noexcept {
  if (::uselocale(nullptr) != LC_GLOBAL_LOCALE) ::uselocale(LC_GLOBAL_LOCALE);
  h_errno = 0;
}

void backoff(unsigned round) noexcept {
  if (!sched::current_ult()) {
    timespec ts{0, 50'000};
    nanosleep(&ts, nullptr);
  } else if (round < 64) {
    sched::yield(false);
  } else {
    sched::sleep_until_ns(sched::monotonic_ns() + 50'000);
  }
}

}  // namespace ito::posix

// libito-preload.so's constructor: a bad ITO_* variable stops the program
// there, as it stops a C++ program at start (exit status 2): running on
// without a runtime would only fail later, less clearly. When the program's
// threads stay OS threads (src/preload/thread_mode.c), the check alone.
extern "C" void ito_posix_check_environment(void) {
  try {
    (void)ito::resolve_options(ito::options{});
  } catch (const ito::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
}

// ITO_PRELOAD_THREADS for thread_mode.c, through the one parser: 0 auto (also
// when unset), 1 ult, 2 os; a bad value stops the program as above.
extern "C" int ito_posix_preload_thread_mode(void) {
  try {
    return static_cast<int>(
        ito::config::choice_setting(ito::config::setting_id::preload_threads).value_or(0));
  } catch (const ito::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
}

// For thread_mode.c: why a program with thread-local variables of its own cannot run on ULTs
// with a TLS block each (its threads then stay OS threads), or null when it
// can: by default, or with ITO_ULT_TLS=1. Null also records that the
// runtime, when it starts, gives the blocks.
extern "C" const char* ito_posix_ult_tls_refusal(void) {
  std::optional<bool> set;
  ito::options resolved;
  try {
    set = ito::config::boolean_setting(ito::config::setting_id::ult_tls);
    resolved = ito::resolve_options(ito::options{});
  } catch (const ito::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
  if (set && !*set) return "ITO_ULT_TLS=0";
  const char* why = ito::sched::ult_tls::unavailable_for(resolved);
  if (!why) ito::posix::g_tls_blocks_by_default.store(true, std::memory_order_relaxed);
  return why;
}

// For thread_mode.c, at start: whether blocks may be turned on later, when a
// module with TLS is loaded (ITO_ULT_TLS unset: =1 gives them from the
// start, =0 never).
extern "C" int ito_posix_ult_tls_later(void) {
  try {
    return !ito::config::boolean_setting(ito::config::setting_id::ult_tls).has_value();
  } catch (const ito::config_error&) {
    return 0;  // reported by ito_posix_check_environment
  }
}

// For thread_mode.c, when a module with TLS was loaded after start: blocks
// for the threads created from now on (null), or why not. Before the
// runtime starts, as ito_posix_ult_tls_refusal; in a running one, by its own
// options, and the threads that exist keep their worker's TLS.
extern "C" const char* ito_posix_ult_tls_turn_on(void) {
  ito::sched::runtime_state* rt = ito::sched::g_runtime.load(std::memory_order_acquire);
  if (!rt) return ito_posix_ult_tls_refusal();
  if (const char* why = ito::sched::ult_tls::unavailable_for(rt->opts)) return why;
  ito::posix::g_tls_blocks_by_default.store(true, std::memory_order_relaxed);
  ito::sched::ult_tls::turn_on(rt);
  return nullptr;
}

std::atomic<void (*)()> ito::posix::g_tls_load_check{nullptr};

// For thread_mode.c: the check every thread creation runs first while it
// watches for modules with TLS (null: none, from now on).
extern "C" void ito_posix_watch_tls_loads(void (*check)(void)) {
  ito::posix::g_tls_load_check.store(check, std::memory_order_release);
}

// libito-preload.so's constructor, when the program's threads are to be
// ULTs: the runtime starts at the first call that needs one (a thread, a
// wait that could block; pthread_create starts the other workers too), so a
// process that never makes a thread nor waits starts none, however many locks
// it takes: no worker state, no stacks mapped, nothing to stop at exit
// (issue 24, item 11).
extern "C" void ito_posix_preload_ready(void) {
  ito_posix_check_environment();
  ito::posix::register_exit_hooks();
  ito::posix::g_preload_ready.store(true, std::memory_order_release);
}
