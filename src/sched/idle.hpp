// SPDX-License-Identifier: Apache-2.0
// Idle workers park on a futex; whoever makes work visible wakes one.
//
// A parking worker registers in `parked` (seq_cst), then re-scans for work; a
// producer publishes its work, then (seq_cst fence) reads `parked`: one of the
// two always sees the other. A fence costs ~6 ns here, so a push onto a deque
// that already held work skips it: the work there was visible before, and a
// parked worker that still missed the new item cannot lose it (it sits in a
// running worker's deque), and the worker that finds the first item wakes the
// next sleeper (scheduler_loop's stop_spinning), so wake-ups chain.
// Every other producer (timers, injector, inboxes) always fences.
#pragma once

#include <atomic>

#include "sched/worker.hpp"

namespace ito::sched {

void wake_one(runtime_state* rt);
void wake_worker(worker* w);
void wake_all(runtime_state* rt);
// Parks an idle worker's OS thread on its futex until it is woken, work may
// be visible, or the next timer is due.
// Returns true if the park timeout ran out (no wake-up, no timer).
bool sleep_idle_worker(worker* w);

// An idle worker looks for work idle_spin_rounds times, idle_round_pauses
// `pause`s apart (60-75 us on the project's VMs), before it parks.
inline constexpr int idle_spin_rounds = 200;
inline constexpr int idle_round_pauses = 32;
inline constexpr int idle_spin_pauses = idle_spin_rounds * idle_round_pauses;

// The longest a parked worker sleeps without a wake-up before looking again.
inline constexpr long park_timeout_ns = 10'000'000;

inline void notify_work(runtime_state* rt) noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (rt->parked.load(std::memory_order_relaxed) != 0) wake_one(rt);
}

}  // namespace ito::sched
