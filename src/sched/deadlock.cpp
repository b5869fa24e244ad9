// SPDX-License-Identifier: Apache-2.0
// ITO_DEADLOCK (deadlock.hpp): the proof that nothing can wake any ULT, and
// the report.
//
// The proof holds when, with every worker on the idle list:
//   - no ULT is runnable anywhere (deques, inboxes, the injector), no flow
//     task may run, no timer is pending, no OS thread is inside make_ready;
//   - no os_pool job or delegated call is posted and unfinished;
//   - every thread of the process is a worker or one of ito's own helpers;
//   - every live ULT, the main one included, is suspended on one of ito's
//     synchronisation objects or in a join, and none was missed;
//   - no distributed scheduler is installed and the runtime is not stopping.
// It is taken twice, 0.5 s apart, and idle_leaves must be the same from the
// first look to the last: no worker left the idle list, so no ULT ran, and
// the ULTs seen blocked were blocked all along. Nothing but a ULT can wake a
// ULT then: the poller wakes only ULTs in I/O waits, timers there are none,
// pool threads hold no job, and no other thread exists.
#include "sched/deadlock.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "common/setting_values.hpp"
#include "sched/extension.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult_report.hpp"

namespace ito::sched {
namespace {

std::atomic<std::int64_t> g_outside_work{0};

std::mutex g_helpers_lock;
// Guarded by g_helpers_lock. Never destroyed: pool threads may still end
// (and unlist themselves) while static destructors run at exit.
std::vector<pid_t>* g_helpers = new std::vector<pid_t>;
// In a forked child, the parent's list: kept reachable (volatile: a store no
// code reads would be dropped, and LeakSanitizer would report the list).
std::vector<pid_t>* volatile g_parents_helpers = nullptr;

// The first proof comes this long after every worker went idle; the second
// as long after the first. A failed one is tried again after twice the
// interval, up to the cap (a program idle on I/O pays a walk of its ULTs
// every few seconds, no more).
constexpr std::int64_t proof_interval_ns = 500'000'000;
constexpr std::int64_t max_interval_ns = 4'000'000'000;

// Every worker is on the idle list; *leaves: idle_leaves, read under the same lock.
bool all_idle(runtime_state* rt, std::uint64_t* leaves) {
  std::lock_guard lock(rt->idle_mutex);
  *leaves = rt->idle_leaves;
  return rt->idle.size() == rt->workers.size();
}

// Reads other workers' current ULT: racy by design when the proof fails (a
// worker woke meanwhile); when it holds, nobody writes it.
__attribute__((no_sanitize("thread"))) bool nothing_runnable(runtime_state* rt) {
  if (!rt->injector.looks_empty()) return false;
  if (rt->timers.next_deadline() != timer_queue::never) return false;
  if (rt->tasks && rt->tasks->has_work(rt)) return false;
  for (auto& w : rt->workers) {
    if (w->current) return false;
    if (!w->bound_ready_looks_empty() || !w->deque.looks_empty() || !w->yielded.looks_empty())
      return false;
  }
  return true;
}

// Every thread of the process is a worker of rt or one of ito's helpers.
// Without /proc nothing can be ruled out.
bool only_known_threads(runtime_state* rt) {
  std::vector<pid_t> known;
  try {
    std::lock_guard lock(g_helpers_lock);
    known = *g_helpers;
  } catch (...) {
    return false;
  }
  for (auto& w : rt->workers) known.push_back(w->tid.load(std::memory_order_relaxed));
  DIR* d = opendir("/proc/self/task");
  if (!d) return false;
  bool ok = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const auto tid = static_cast<pid_t>(std::atol(e->d_name));
    if (std::find(known.begin(), known.end(), tid) == known.end()) {
      ok = false;
      break;
    }
  }
  closedir(d);
  return ok;
}

bool proof(runtime_state* rt, std::uint64_t epoch) {
  std::uint64_t leaves = 0;
  if (!all_idle(rt, &leaves) || leaves != epoch) return false;
  if (processes_extension() || rt->stopping.load(std::memory_order_acquire)) return false;
  // Before the queues: a waker that is done has pushed what it woke.
  if (rt->outside_wakers.load(std::memory_order_seq_cst) != 0) return false;
  if (g_outside_work.load(std::memory_order_seq_cst) != 0) return false;
  if (!nothing_runnable(rt)) return false;
  if (!only_known_threads(rt)) return false;
  if (!all_blocked_on_each_other(rt)) return false;
  return all_idle(rt, &leaves) && leaves == epoch;
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

// Flushes f unless a thread holds its lock (a blocked ULT's worker may).
void flush_if_free(std::FILE* f) {
  if (ftrylockfile(f) != 0) return;
  fflush_unlocked(f);
  funlockfile(f);
}

[[gnu::cold]] void report_deadlock(runtime_state* rt) {
  const bool ends = rt->on_deadlock != deadlock_mode::report;
  // Written to memory first, then with one write: stderr's lock may be held
  // by a worker whose ULT blocked while printing.
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  if (out) {
    std::fprintf(out,
                 "ito: deadlock: every ULT is blocked on ito's mutexes, condition variables, "
                 "reader-writer locks, barriers, semaphores, once flags or joins, and nothing "
                 "is left that could wake any of them (no timer, I/O wait, pool job or other "
                 "thread):\n");
    std::size_t n = report_live_ults(rt, out);
    if (ends)
      std::fprintf(out,
                   "ito: %zu ULT(s) and the main ULT can never continue; the process ends with "
                   "exit status %d (ITO_DEADLOCK=report only reports, ITO_DEADLOCK=ignore does "
                   "not look)\n",
                   n, deadlock_exit_status);
    else
      std::fprintf(out,
                   "ito: %zu ULT(s) and the main ULT can never continue; the process is left "
                   "waiting (ITO_DEADLOCK=report)\n",
                   n);
    if (std::fclose(out) == 0) write_all(STDERR_FILENO, text, size);
    std::free(text);
  } else {
    static const char brief[] = "ito: deadlock: every ULT is blocked and nothing can wake them\n";
    write_all(STDERR_FILENO, brief, sizeof brief - 1);
  }
  if (!ends) return;
  flush_if_free(stdout);
  flush_if_free(stderr);
  _exit(deadlock_exit_status);
}

}  // namespace

void deadlock_watch(worker* w) {
  runtime_state* rt = w->rt;
  // Cheap tests first: this runs on every park timeout of an idle worker.
  if (processes_extension()) return;
  // Worker 0's scheduler runs on a ULT-sized stack (its OS stack is the main
  // ULT's): leave the proof and the report to the others when there are any.
  if (w->index == 0 && rt->workers.size() > 1) return;
  if (rt->parked.load(std::memory_order_relaxed) != rt->workers.size()) return;
  if (rt->timers.next_deadline() != timer_queue::never) return;
  deadlock_state& st = rt->deadlock;
  std::unique_lock lock(st.lock, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another idle worker is at it
  std::uint64_t epoch = 0;
  if (!all_idle(rt, &epoch)) return;
  const std::int64_t now = monotonic_ns();
  if (epoch != st.epoch) {  // a new idle stretch
    st.epoch = epoch;
    st.proofs = 0;
    st.reported = false;
    st.interval_ns = proof_interval_ns;
    st.next_proof_ns = now + proof_interval_ns;
    return;
  }
  if (st.reported || now < st.next_proof_ns) return;
  if (!proof(rt, epoch)) {
    st.proofs = 0;
    st.interval_ns = std::min(st.interval_ns * 2, max_interval_ns);
    st.next_proof_ns = now + st.interval_ns;
    return;
  }
  if (++st.proofs < 2) {
    st.next_proof_ns = now + proof_interval_ns;
    return;
  }
  st.reported = true;
  report_deadlock(rt);
}

deadlock_mode deadlock_mode_from_environment() noexcept {
  // A bad value stopped the start (resolve_options): parse without throwing.
  const config::setting& s = config::declared(config::setting_id::deadlock);
  switch (config::parse_choice(s, config::text_setting(s.id))) {  // report, abort, ignore
    case 0: return deadlock_mode::report;
    case 1: return deadlock_mode::abort;
    case 2: return deadlock_mode::ignore;
    default: return deadlock_mode::automatic;  // unset
  }
}

void outside_work_begins() noexcept { g_outside_work.fetch_add(1, std::memory_order_seq_cst); }
void outside_work_ends() noexcept { g_outside_work.fetch_sub(1, std::memory_order_seq_cst); }

void forget_helpers_in_child() noexcept {
  // A helper of the parent may have held the lock, or been inside the list,
  // at the fork: a fresh lock, and a fresh list. The old one stays reachable
  // (LeakSanitizer would report it at the child's exit), never touched.
  new (&g_helpers_lock) std::mutex;
  g_parents_helpers = g_helpers;
  g_helpers = new std::vector<pid_t>;
}

void helper_thread_begins() noexcept {
  try {
    std::lock_guard lock(g_helpers_lock);
    g_helpers->push_back(gettid());
  } catch (...) {
    // Unlisted, it counts as a thread outside ito: no report, never a false one.
  }
}

void helper_thread_ends() noexcept {
  const pid_t me = gettid();
  std::lock_guard lock(g_helpers_lock);
  auto it = std::find(g_helpers->begin(), g_helpers->end(), me);
  if (it != g_helpers->end()) g_helpers->erase(it);
}

}  // namespace ito::sched
