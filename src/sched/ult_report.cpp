// SPDX-License-Identifier: Apache-2.0
#include "sched/ult_report.hpp"

#include <cstring>
#include <unordered_set>

#include "sched/branches.hpp"
#include "sched/scheduler.hpp"

namespace ito::sched {
namespace {

// The report reads other workers' current ULT and descriptors of ULTs that may
// be running: a snapshot of a program that looks hung, racy by design (each
// read is of a word-sized field that only ever holds a valid value).
#define ITO_RACY_READ __attribute__((no_sanitize("thread")))

struct report {
  runtime_state* rt;
  std::FILE* out;
  std::size_t live = 0;
  std::unordered_set<const ult*> registered;  // mapped descriptors: safe to read
};

// The ULT u waits to join, if any: its join_target, when that is a live
// descriptor whose join word names u (join_target is never cleared).
ITO_RACY_READ const ult* joining(const ult* u, const report& r) {
  const ult* t = u->join_target;
  if (!t || !r.registered.count(t)) return nullptr;
  return join_word::read(t) == reinterpret_cast<std::uintptr_t>(u)
             ? t
             : nullptr;
}

ITO_RACY_READ int running_on(runtime_state* rt, const ult* u) {
  for (auto& w : rt->workers)
    if (w->current == u) return static_cast<int>(w->index);
  return -1;
}

// " (parallel_invoke branch 0x...)" for a ULT that runs a branch taken from
// its caller's deque (its caller is "blocked in parallel_invoke on" the same
// address), " (create_thread record 0x...)" likewise for a record taken
// from its creator's deque (its future's holder waits in "create_thread's
// future" on it), " (detached)" for another detached one.
ITO_RACY_READ void print_kind(const ult* u, std::uintptr_t s, const report& r) {
  if (!has_ended(s) && runs_taken_branch(u))
    std::fprintf(r.out, " (parallel_invoke branch %p)", taken_branch_record(u));
  else if (!has_ended(s) && runs_taken_record(u))
    std::fprintf(r.out, " (create_thread record %p)", taken_branch_record(u));
  else if (s == join_detached)
    std::fprintf(r.out, " (detached)");
}

ITO_RACY_READ void describe(const ult* u, report& r) {
  auto s = join_word::read(u);
  if (s == join_released) return;  // a cached descriptor, no ULT
  ++r.live;
  std::fprintf(r.out, "ito:   ULT %llu", static_cast<unsigned long long>(u->id));
  print_kind(u, s, r);
  std::fprintf(r.out, ": ");
  if (has_ended(s)) {
    std::fprintf(r.out, "finished, not joined yet\n");
  } else if (int w = running_on(r.rt, u); w >= 0) {
    std::fprintf(r.out, "running on worker %d\n", w);
  } else if (const ult* child = joining(u, r)) {
    std::fprintf(r.out, "blocked in join of ULT %llu\n", static_cast<unsigned long long>(child->id));
  } else if (u->blocked_in) {
    if (u->blocked_on)
      std::fprintf(r.out, "blocked in %s on %p\n", u->blocked_in, u->blocked_on);
    else
      std::fprintf(r.out, "blocked in %s\n", u->blocked_in);
  } else {
    std::fprintf(r.out, "runnable, waiting for a worker\n");
  }
}

}  // namespace

ITO_RACY_READ std::size_t report_live_ults(runtime_state* rt, std::FILE* out) {
  report r{rt, out, 0, {}};
  registry_visit(
      rt, [](ult* u, void* p) { static_cast<report*>(p)->registered.insert(u); }, &r);
  registry_visit(rt, [](ult* u, void* p) { describe(u, *static_cast<report*>(p)); }, &r);
  const ult& main = rt->main_ult;
  if (const ult* child = joining(&main, r))
    std::fprintf(out, "ito:   main ULT: blocked in join of ULT %llu\n",
                 static_cast<unsigned long long>(child->id));
  else if (main.blocked_in && main.blocked_on)
    std::fprintf(out, "ito:   main ULT: blocked in %s on %p\n", main.blocked_in, main.blocked_on);
  else if (main.blocked_in)
    std::fprintf(out, "ito:   main ULT: blocked in %s\n", main.blocked_in);
  return r.live;
}

namespace {

// What ULTs wait in (suspend's blocked_in) when only another ULT can wake
// them: ito's own synchronisation objects (src/sync; "ito sync object" is
// park()'s default), and a parallel_invoke caller waiting for a branch, or
// a create_thread future's holder for its record, that runs as a ULT
// elsewhere. Sleeps, I/O, delegated calls, flow futures
// and the distributed mode's waits end by themselves or from outside: never
// counted. Nor is the POSIX layer's sem_t: sem_post is async-signal-safe, so
// a signal handler may be what the waiter waits for.
bool waits_for_another_ult(const char* in) {
  static constexpr const char* kinds[] = {"mutex",     "condition_variable", "shared_mutex",
                                          "barrier",   "counting_semaphore", "once_flag",
                                          "ito sync object",
                                          "parallel_invoke", "create_thread's future"};
  if (!in) return false;
  for (const char* k : kinds)
    if (!std::strcmp(in, k)) return true;
  return false;
}

struct blocked_count {
  report r;
  std::uint64_t unfinished = 0;  // live ULTs that have not ended
  bool all = true;               // each of them blocked on a sync object or a join
};

// May u be blocked on a sync object or in a join? Reads only u itself (a
// join_target that is set is necessary for a join, not proof of one).
ITO_RACY_READ bool may_wait_for_another_ult(const ult* u) {
  return waits_for_another_ult(u->blocked_in) || u->join_target != nullptr;
}

// The first walk: cheap, and it stops looking at the first ULT that is not
// settled or cannot be waiting for another (a ULT in I/O, say).
ITO_RACY_READ void count_unfinished(const ult* u, blocked_count& c) {
  if (!c.all) return;
  auto s = join_word::read(u);
  if (s == join_released) return;  // a cached descriptor, no ULT
  if (s == join_finished) return;  // ended, nobody waits for it: it wakes nobody
  if (has_ended(s) || s == join_remote) {
    c.all = false;  // ending or handing itself over: not settled
    return;
  }
  ++c.unfinished;
  if (running_on(c.r.rt, u) >= 0 || !may_wait_for_another_ult(u)) c.all = false;
}

// The second walk, with every descriptor known: a ULT not in a sync object
// must be its join target's registered joiner.
ITO_RACY_READ void check_join(const ult* u, blocked_count& c) {
  if (!c.all) return;
  auto s = join_word::read(u);
  if (s == join_released || s == join_finished) return;
  if (!waits_for_another_ult(u->blocked_in) && !joining(u, c.r)) c.all = false;
}

}  // namespace

ITO_RACY_READ bool all_blocked_on_each_other(runtime_state* rt) {
  const ult& main = rt->main_ult;
  if (running_on(rt, &main) >= 0 || !may_wait_for_another_ult(&main)) return false;
  blocked_count c{{rt, nullptr, 0, {}}};
  registry_visit(
      rt, [](ult* u, void* p) { count_unfinished(u, *static_cast<blocked_count*>(p)); }, &c);
  if (!c.all) return false;
  // Every ULT forked and not finished was seen (the walk missed none).
  std::uint64_t finished = 0, spawned = 0;
  for (auto& w : rt->workers) finished += w->stats.finished.load(std::memory_order_acquire);
  for (auto& w : rt->workers) spawned += w->stats.spawns.load(std::memory_order_acquire);
  if (spawned - finished != c.unfinished) return false;
  registry_visit(
      rt, [](ult* u, void* p) { static_cast<blocked_count*>(p)->r.registered.insert(u); }, &c);
  registry_visit(rt, [](ult* u, void* p) { check_join(u, *static_cast<blocked_count*>(p)); }, &c);
  return c.all && (waits_for_another_ult(main.blocked_in) || joining(&main, c.r));
}

}  // namespace ito::sched
