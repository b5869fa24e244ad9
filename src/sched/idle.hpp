// Idle workers park on a futex; whoever makes work visible wakes one.
//
// No lost wake-ups: a parking worker registers in `parked` (seq_cst), then
// re-scans for work; a producer publishes its work, then (seq_cst fence) reads
// `parked`. One of the two always sees the other.
#pragma once

#include <atomic>

#include "sched/worker.hpp"

namespace ito::sched {

void wake_one(runtime_state* rt);
void wake_worker(worker* w);
void wake_all(runtime_state* rt);
// Blocks until woken, work may be visible, or the next timer is due.
void park(worker* w);

inline void notify_work(runtime_state* rt) noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (rt->parked.load(std::memory_order_relaxed) != 0) wake_one(rt);
}

}  // namespace ito::sched
