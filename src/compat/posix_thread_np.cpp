// SPDX-License-Identifier: Apache-2.0
// The calls that take a pthread_t beyond create/join/detach: stack
// attributes, signals, scheduling, names, CPU clocks, affinity, and the
// non-blocking and timed joins. glibc's versions read the pthread_t as its
// own thread descriptor and would crash on an ito handle.
//
// A handle is a ULT (compat::find_ult), or, for an OS thread that is not a
// ULT, that thread's own glibc pthread_self (ito_pthread_self gives it):
// those go to glibc. Anything else is ESRCH. Choices: docs/POSIX.md.
#define ITO_PTHREAD_NO_RENAME 1  // the plain names below are glibc's
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "compat/c_create.hpp"
#include "compat/posix_thread_signals.hpp"
#include "compat/posix_attr.hpp"
#include "compat/posix_internal.hpp"
#include "compat/posix_sched.hpp"
#include "ito/pthread.h"
#include "sched/join_word.hpp"
#include "sched/ult.hpp"

namespace ito::posix {
namespace {

// What a pthread_t names: a live ULT, or the calling OS thread itself.
struct target {
  sched::ult* ult = nullptr;
  bool os_self = false;
};

int resolve(pthread_t t, target* out) noexcept {
  if (!sched::current_ult() && t == reinterpret_cast<pthread_t>(__builtin_thread_pointer())) {
    out->os_self = true;
    return 0;
  }
  return compat::find_ult(static_cast<ito_ult_t>(t), &out->ult);
}

bool is_calling_ult(const target& t) noexcept { return t.ult && t.ult == sched::current_ult(); }

// --- stack attributes -----------------------------------------------------

int main_ult_attr(pthread_attr_t* attr) {
  // The main ULT runs on the process's main thread, on its own stack: glibc
  // knows it (from /proc/self/maps and RLIMIT_STACK).
  if (sched::current_ult() && sched::current_ult()->bound) return ::pthread_getattr_np(::pthread_self(), attr);
  if (!main_os_thread_known()) return ENOTSUP;
  return ::pthread_getattr_np(main_os_thread(), attr);
}

int ult_attr(const sched::ult* u, pthread_attr_t* attr) {
  if (u->bound) return main_ult_attr(attr);
  // A child joined inline (sched/scheduler.cpp) runs on its joiner's stack:
  // a collector scanning the range must find the child's frames there.
  const stack::stack_block& s = sched::stack_of(u);
  if (!s) return ENOTSUP;  // lazy / fair_use: linked segments, no one range
  std::memset(static_cast<void*>(attr), 0, sizeof *attr);
  glibc_attr* a = as_attr(attr);
  a->stackaddr = s.hi;  // glibc keeps the top; pthread_attr_getstack subtracts the size
  a->stacksize = s.size();
  a->guardsize = s.guarded ? static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) : 0;
  a->flags = attr_flag_stackaddr;
  if (sched::join_word::read(u) == sched::join_detached)
    a->flags |= attr_flag_detached;
  const sched_choice c = sched_of(u);
  a->schedpolicy = c.policy;
  a->schedparam.sched_priority = c.priority;
  return 0;
}

// --- names: a side table, as the descriptor has no room; an entry is stale
// once its descriptor serves another ULT (another id) -------------------------

struct name_entry {
  std::uint64_t ult_id;  // the life of the descriptor it was set in (ids are never reused)
  char name[16];
};
detail::spinlock g_names_lock;
std::unordered_map<const sched::ult*, name_entry>& names() {
  static auto* table = new std::unordered_map<const sched::ult*, name_entry>();  // never freed: used at exit
  return *table;
}

// A thread's name until it sets one: the process's, as NPTL threads inherit
// their creator's (and the main thread's is the program's).
void default_name(char out[16]) {
  static char cached[16];
  static std::atomic<bool> read{false};
  if (!read.load(std::memory_order_acquire)) {
    char buf[16] = "";
    if (FILE* f = std::fopen("/proc/self/comm", "r")) {
      if (std::fgets(buf, sizeof buf, f)) buf[std::strcspn(buf, "\n")] = '\0';
      std::fclose(f);
    }
    std::memcpy(cached, buf, sizeof buf);
    read.store(true, std::memory_order_release);
  }
  std::memcpy(out, cached, 16);
}

// --- joins that do not block forever -----------------------------------------

constexpr std::int64_t try_only = -1;

// Joins `t` once it has finished: EBUSY (try_only) or ETIMEDOUT if it has not
// by the deadline (CLOCK_MONOTONIC). The C API's join has no time-out, so
// this polls: a few yields, then sleeps growing to 1 ms, never past the
// deadline. The handle is looked up afresh each round: a ULT joined by
// another meanwhile may have been reused.
int join_by(pthread_t t, void** retval, std::int64_t deadline) {
  if (!sched::current_ult()) return EPERM;
  errno_guard keep_errno;
  for (unsigned round = 0;; ++round) {
    sched::ult* u = nullptr;
    if (compat::find_ult(static_cast<ito_ult_t>(t), &u) != 0) return ESRCH;
    if (u == sched::current_ult()) return EDEADLK;
    if (u->bound) return EINVAL;
    const std::uintptr_t s = sched::join_word::read(u);
    if (s == sched::join_detached || sched::is_joiner(s)) return EINVAL;
    if (s == sched::join_finished) return ito_join(static_cast<ito_ult_t>(t), retval);
    if (deadline == try_only) return EBUSY;
    const std::int64_t now = sched::monotonic_ns();
    if (now >= deadline) return ETIMEDOUT;
    if (round < 16) {
      sched::yield(false);
    } else {
      const std::int64_t step = std::int64_t{10'000} << std::min(round - 16, 7u);  // 10 µs .. 1.28 ms
      sched::sleep_until_ns(std::min(deadline, now + step));
    }
  }
}

int timed_join(pthread_t t, void** retval, clockid_t clock, const timespec* abstime) {
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;
  std::int64_t deadline = sched::timer_queue::never;  // no abstime: no time-out, as glibc
  if (abstime) {
    if (int e = to_deadline(abstime, clock, &deadline)) return e;
  }
  return join_by(t, retval, deadline);
}

// glibc keeps 32 and 33 (below SIGRTMIN) for itself: EINVAL, as glibc.
bool valid_signal(int sig) noexcept {
  return sig >= 0 && sig < NSIG && !(sig >= 32 && sig < SIGRTMIN);
}

}  // namespace
}  // namespace ito::posix

using ito::posix::resolve;
using ito::posix::target;

extern "C" {

int ito_pthread_getattr_np(pthread_t thread, pthread_attr_t* attr) {
  if (!attr) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_getattr_np(::pthread_self(), attr);
  return ito::posix::ult_attr(t.ult, attr);
}

// Signals. sig 0 checks that the thread is alive. A plain OS thread's own
// signal is the real call. A ULT other than main has a mask and a pending
// set of its own (posix_thread_signals.hpp): the signal is aimed at it, and
// its handler runs on it. So for the main thread from another thread, with
// its OS thread's mask (worker 0's) as what blocks it.
int ito_pthread_kill(pthread_t thread, int sig) {
  if (!ito::posix::valid_signal(sig)) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_kill(::pthread_self(), sig);
  if (sig == 0) return 0;
  // The main thread's own call is the real one (it owns its OS thread).
  if (t.ult == &ito::sched::current_worker()->rt->main_ult && ito::posix::is_calling_ult(t))
    return ::pthread_kill(::pthread_self(), sig);
  return ito::posix::send_to_ult(t.ult, static_cast<std::uint64_t>(thread), sig, SI_TKILL, {});
}

int ito_pthread_sigqueue(pthread_t thread, int sig, const union sigval value) {
  if (!ito::posix::valid_signal(sig)) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_sigqueue(::pthread_self(), sig, value);
  if (sig == 0) return 0;
  // The main thread's own call is the real one (it owns its OS thread).
  if (t.ult == &ito::sched::current_worker()->rt->main_ult && ito::posix::is_calling_ult(t))
    return ::pthread_sigqueue(::pthread_self(), sig, value);
  return ito::posix::send_to_ult(t.ult, static_cast<std::uint64_t>(thread), sig, SI_QUEUE, value);
}

// Scheduling: a ULT keeps the policy and priority it is given and reports
// them; its workers do not order it by them (posix_sched.hpp).
int ito_pthread_getschedparam(pthread_t thread, int* policy, struct sched_param* param) {
  if (!policy || !param) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_getschedparam(::pthread_self(), policy, param);
  const ito::posix::sched_choice c = ito::posix::sched_of(t.ult);
  *policy = c.policy;
  std::memset(param, 0, sizeof *param);
  param->sched_priority = c.priority;
  return 0;
}

int ito_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param* param) {
  if (!param) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_setschedparam(::pthread_self(), policy, param);
  const ito::posix::sched_choice c{policy, param->sched_priority};
  if (int e = ito::posix::check_sched(c)) return e;
  ito::posix::set_sched(t.ult, c);
  return 0;
}

int ito_pthread_setschedprio(pthread_t thread, int priority) {
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_setschedprio(::pthread_self(), priority);
  ito::posix::sched_choice c = ito::posix::sched_of(t.ult);
  c.priority = priority;  // within the policy it has
  if (int e = ito::posix::check_sched(c)) return e;
  ito::posix::set_sched(t.ult, c);
  return 0;
}

// Names live per ULT in ito (at most 15 bytes, as Linux's); the OS threads'
// own names (the workers') are left alone.
int ito_pthread_setname_np(pthread_t thread, const char* name) {
  if (!name) return EINVAL;
  if (std::strlen(name) > 15) return ERANGE;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_setname_np(::pthread_self(), name);
  ito::posix::name_entry entry{t.ult->id, {}};
  std::strcpy(entry.name, name);
  ito::posix::g_names_lock.lock();
  try {
    ito::posix::names()[t.ult] = entry;
  } catch (...) {
    ito::posix::g_names_lock.unlock();
    return ENOMEM;
  }
  ito::posix::g_names_lock.unlock();
  return 0;
}

int ito_pthread_getname_np(pthread_t thread, char* buf, size_t size) {
  if (!buf) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_getname_np(::pthread_self(), buf, size);
  char name[16];
  ito::posix::default_name(name);
  ito::posix::g_names_lock.lock();
  auto& table = ito::posix::names();
  if (auto it = table.find(t.ult); it != table.end()) {
    if (it->second.ult_id == t.ult->id) std::memcpy(name, it->second.name, sizeof name);
    else table.erase(it);  // a name of the stack's previous ULT
  }
  ito::posix::g_names_lock.unlock();
  if (std::strlen(name) + 1 > size) return ERANGE;
  std::strcpy(buf, name);
  return 0;
}

// A ULT has no CPU-time clock of its own (its worker's also counts the other
// ULTs it ran): POSIX's ENOENT, "no per-thread CPU-time clocks".
int ito_pthread_getcpuclockid(pthread_t thread, clockid_t* clock) {
  if (!clock) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_getcpuclockid(::pthread_self(), clock);
  return ENOENT;
}

// A ULT may run on any worker: its affinity is the process's. Setting it
// to a set that includes all of those CPUs changes nothing (0); a narrower
// set cannot be honoured (ENOTSUP), one with none of them is EINVAL.
int ito_pthread_getaffinity_np(pthread_t thread, size_t size, cpu_set_t* set) {
  if (!set) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_getaffinity_np(::pthread_self(), size, set);
  return ::sched_getaffinity(::getpid(), size, set) == 0 ? 0 : errno;
}

int ito_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t* set) {
  if (!set) return EINVAL;
  target t;
  if (int e = resolve(thread, &t)) return e;
  if (t.os_self) return ::pthread_setaffinity_np(::pthread_self(), size, set);
  cpu_set_t process;
  CPU_ZERO(&process);
  if (::sched_getaffinity(::getpid(), sizeof process, &process) != 0) return errno;
  cpu_set_t wanted;
  CPU_ZERO(&wanted);
  std::memcpy(&wanted, set, std::min(size, sizeof wanted));
  cpu_set_t common;
  CPU_AND(&common, &wanted, &process);
  if (CPU_COUNT(&common) == 0) return EINVAL;
  return CPU_EQUAL(&common, &process) ? 0 : ENOTSUP;
}

int ito_pthread_tryjoin_np(pthread_t thread, void** retval) {
  return ito::posix::join_by(thread, retval, ito::posix::try_only);
}

int ito_pthread_timedjoin_np(pthread_t thread, void** retval, const struct timespec* abstime) {
  return ito::posix::timed_join(thread, retval, CLOCK_REALTIME, abstime);
}

int ito_pthread_clockjoin_np(pthread_t thread, void** retval, clockid_t clock,
                             const struct timespec* abstime) {
  return ito::posix::timed_join(thread, retval, clock, abstime);
}

}  // extern "C"
