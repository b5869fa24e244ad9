// SPDX-License-Identifier: Apache-2.0
// The scheduler loop each worker runs when its ULTs run out: fire timers,
// take local work, steal from a random victim, spin briefly, then park.
#include <algorithm>

#include "arch/context.hpp"
#include "common/random.hpp"
#include "os/futex.hpp"
#include "sched/branches.hpp"
#include "sched/extension.hpp"
#include "sched/idle.hpp"
#include "sched/preempt.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"
#include "sched/wake_placement.hpp"
#include "stack/provider.hpp"
#include "trace/trace.hpp"

namespace ito::sched {
namespace {

// One ULT from victim's deques: yielded ones first (they asked to run
// elsewhere), then the oldest of its ready ones.
ult* steal_from(worker* victim) noexcept {
  ult* u = nullptr;
  if (victim->yielded.steal(u) == chase_lev_deque<ult*>::steal_result::success ||
      victim->deque.steal(u) == chase_lev_deque<ult*>::steal_result::success)
    return u;
  return nullptr;
}

ult* try_steal(worker* w) noexcept {
  const auto n = static_cast<unsigned>(w->rt->workers.size());
  if (n < 2) return nullptr;
  for (unsigned attempt = 0; attempt < n; ++attempt) {
    auto v = static_cast<unsigned>(common::next_random(w->rng) % (n - 1));
    if (v >= w->index) ++v;
    worker_stats::bump(w->stats.steal_attempts);
    worker* victim = w->rt->workers[v].get();
    ult* u = steal_from(victim);
    if (!u) u = steal_branch(victim, w);
    if (u) {
      worker_stats::bump(w->stats.steals);
      trace::record(trace::kind::steal, v);
      return u;
    }
  }
  return nullptr;
}

bool work_visible(worker* w) noexcept {
  runtime_state* rt = w->rt;
  if (!w->bound_ready_looks_empty() || !rt->injector.looks_empty()) return true;
  if (rt->timers.next_deadline() <= monotonic_ns()) return true;
  if (rt->tasks && rt->tasks->has_work(rt)) return true;
  return ults_waiting(rt);
}

void wake_locked(runtime_state* rt, worker* w) {  // with idle_mutex held
  keep_off_waker_cpu(w);
  w->on_idle_list = false;
  rt->idle.erase(std::find(rt->idle.begin(), rt->idle.end(), w));
  ++rt->idle_leaves;
  rt->parked.fetch_sub(1, std::memory_order_relaxed);
  w->wake_word.store(1, std::memory_order_release);
  os::futex_wake_one(&w->wake_word);
}

// Takes w off the idle list if nobody did; consumes a wake-up otherwise.
void leave_idle(worker* w) {
  runtime_state* rt = w->rt;
  bool narrowed;
  {
    std::lock_guard lock(rt->idle_mutex);
    if (w->on_idle_list) {
      w->on_idle_list = false;
      rt->idle.erase(std::find(rt->idle.begin(), rt->idle.end(), w));
      ++rt->idle_leaves;
      rt->parked.fetch_sub(1, std::memory_order_relaxed);
    }
    w->wake_word.store(0, std::memory_order_relaxed);
    narrowed = take_narrowed(w);
  }
  if (narrowed) restore_park_cpus(w);
  wake_preempt_watch(rt);  // it sleeps while every worker is parked
}

}  // namespace

ult* steal_for_outside(runtime_state* rt, std::uint64_t& rng) noexcept {
  const auto n = static_cast<unsigned>(rt->workers.size());
  const auto first = static_cast<unsigned>(common::next_random(rng) % n);
  for (unsigned i = 0; i < n; ++i)
    if (ult* u = steal_from(rt->workers[(first + i) % n].get())) return u;
  return nullptr;
}

bool ults_waiting(runtime_state* rt) noexcept {
  for (auto& v : rt->workers)
    if (!v->deque.looks_empty() || !v->yielded.looks_empty() || !v->branches.looks_empty())
      return true;
  return false;
}

void wake_one(runtime_state* rt) {
  std::lock_guard lock(rt->idle_mutex);
  if (rt->idle.empty()) return;
  // A wake-up spent on a worker that is leaving its park anyway (it saw work
  // while re-scanning) would leave a sleeper asleep: pick a sleeper first.
  for (auto it = rt->idle.rbegin(); it != rt->idle.rend(); ++it) {
    if ((*it)->asleep.load(std::memory_order_relaxed)) return wake_locked(rt, *it);
  }
  wake_locked(rt, rt->idle.back());
}

void wake_worker(worker* w) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (w->rt->parked.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(w->rt->idle_mutex);
  if (w->on_idle_list) wake_locked(w->rt, w);
}

void wake_all(runtime_state* rt) {
  std::lock_guard lock(rt->idle_mutex);
  while (!rt->idle.empty()) wake_locked(rt, rt->idle.back());
}

bool sleep_idle_worker(worker* w) {
  runtime_state* rt = w->rt;
  if (w->stack_provider) w->stack_provider->parking(w);  // what it cached, for the others
  remember_park_cpus(w);
  {
    std::lock_guard lock(rt->idle_mutex);
    w->on_idle_list = true;
    rt->idle.push_back(w);
    rt->parked.fetch_add(1, std::memory_order_seq_cst);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (work_visible(w) || rt->stopping.load(std::memory_order_acquire)) {
    leave_idle(w);
    return false;
  }
  worker_stats::bump(w->stats.parks);
  w->asleep.store(true, std::memory_order_relaxed);
  trace::record(trace::kind::park);
  bool timed_out = false;
  for (;;) {
    while (w->wake_word.load(std::memory_order_acquire) == 0) {
      std::int64_t wait = park_timeout_ns;
      std::int64_t deadline = rt->timers.next_deadline();
      if (deadline != timer_queue::never) wait = std::min(wait, deadline - monotonic_ns());
      if (wait <= 0) break;
      if (os::futex_wait_for(&w->wake_word, 0, wait) == os::futex_status::timed_out) {
        // Only the park timeout counts: a timer's deadline is an expected
        // wake-up, and so is a waker that chose this worker as it timed out.
        timed_out = wait == park_timeout_ns && w->wake_word.load(std::memory_order_acquire) == 0;
        break;
      }
    }
    // The park timed out with no wake-up: look for work without leaving the
    // idle list, and sleep again at once if there is none, so that an idle
    // runtime's workers stay on the list (the deadlock watch counts on it:
    // a worker leaves only to run something). The distributed mode leaves to
    // ask other processes for work (scheduler_loop: wants_work).
    if (!timed_out || processes_extension()) break;
    w->asleep.store(false, std::memory_order_relaxed);
    if (work_visible(w) || rt->stopping.load(std::memory_order_acquire)) break;
    if (rt->on_deadlock != deadlock_mode::ignore) deadlock_watch(w);
    timed_out = false;
    w->asleep.store(true, std::memory_order_relaxed);
  }
  w->asleep.store(false, std::memory_order_relaxed);
  trace::record(trace::kind::unpark);
  leave_idle(w);
  return timed_out;
}

namespace {

// A worker that was looking for work found some. If it was the last one
// looking and others sleep, wake one: there may be more work behind this
// (a run of pushes onto one deque wakes only for the first). So wake-ups
// chain for as long as work is found, as Go's scheduler does on leaving the
// spinning state, and the runtime never waits out a park timeout for it.
// The load of `parked` is seq_cst too: on ARM a relaxed load may be satisfied
// before the fetch_sub's store is visible (x86 never reorders a locked RMW
// with a later load; there both compile to the same instructions).
void stop_spinning(runtime_state* rt) {
  if (rt->spinning.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      rt->parked.load(std::memory_order_seq_cst) != 0)
    wake_one(rt);
}

}  // namespace

void scheduler_loop(worker* w) {
  runtime_state* rt = w->rt;
  int idle_rounds = 0;
  bool spinning = false;  // counted in rt->spinning
  bool after_timeout = false;
  bool tasks_first = false;  // a ULT just gave the worker back
  for (;;) {
    if (rt->timers.next_deadline() != timer_queue::never) rt->timers.fire_expired(monotonic_ns());
    // Tasks (flow nodes) get a batch each time a ULT hands the worker back,
    // before the next ULT: ULTs that keep yielding (every 64th yield passes
    // through here) can then not starve them, on any number of workers.
    bool ran_tasks = tasks_first && rt->tasks && rt->tasks->run_some(w);
    tasks_first = false;
    ult* u = ran_tasks ? nullptr : pop_local(w);
    if (!u && !ran_tasks) ran_tasks = rt->tasks && rt->tasks->run_some(w);
    if (!u && !ran_tasks) u = take_own_branch(w);
    if (!u && !ran_tasks) u = try_steal(w);
    if (!u && !ran_tasks && processes_extension()) [[unlikely]] {
      processes_extension()->wants_work(w);  // what other processes send lands here
      u = pop_local(w);
    }
    if (u || ran_tasks) {
      if (after_timeout) worker_stats::bump(w->stats.late_wakeups);
      after_timeout = false;
      if (spinning) {
        spinning = false;
        stop_spinning(rt);
      }
      idle_rounds = 0;
      if (!u) continue;
      w->yields_since_scheduler = 0;
      run_ult(w, u);
      tasks_first = true;
      continue;
    }
    if (rt->stopping.load(std::memory_order_acquire)) {
      if (spinning) rt->spinning.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    if (++idle_rounds < idle_spin_rounds) {
      if (!spinning) {
        spinning = true;
        rt->spinning.fetch_add(1, std::memory_order_relaxed);
      }
      arch::cpu_relax(idle_round_pauses);
      continue;
    }
    if (spinning) {
      spinning = false;
      rt->spinning.fetch_sub(1, std::memory_order_seq_cst);
    }
    // Woken by a producer: spin a while again, counted as looking, so that
    // finding work passes the wake-up on. Timed out: look once, and park
    // again at once if there is still nothing (an idle runtime stays idle).
    after_timeout = sleep_idle_worker(w);
    idle_rounds = after_timeout ? idle_spin_rounds - 1 : 0;
    if (!after_timeout) {
      spinning = true;
      rt->spinning.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

}  // namespace ito::sched
