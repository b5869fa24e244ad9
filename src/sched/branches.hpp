// SPDX-License-Identifier: Apache-2.0
// parallel_invoke's branches (ito/parallel.hpp) as the scheduler sees them:
// work in a worker's branch deque that becomes a ULT only when someone other
// than its caller takes it.
#pragma once

#include "sched/worker.hpp"

namespace ito::sched {

// The oldest branch of w's deque, as a ULT ready to run on w; null if none.
// From w's scheduler loop (its own deque, when it has no ULT to run).
ult* take_own_branch(worker* w) noexcept;
// The oldest branch of victim's deque, as a ULT ready to run on thief; null
// if none (or a race lost). From thief's scheduler loop.
ult* steal_branch(worker* victim, worker* thief) noexcept;

// Takes item (a branch, or a queued record: task_records.hpp) back if it is
// the bottom item of w's deque.
inline bool take_back_from(worker* w, ito::detail::branch* item) noexcept {
  return w->alone ? w->branches.pop_if_bottom_unshared(item) : w->branches.pop_if_bottom(item);
}
// Suspends the caller until b has run as a ULT elsewhere (the caller is the
// only one who waits for it). blocked_in: as suspend()'s.
void wait_for_branch(ito::detail::branch* b, const char* blocked_in);

// For the live-ULT report: whether u runs a branch someone took from its
// caller's deque, and the address of that branch's record (the caller waits
// "in parallel_invoke on" it). The address is only printed, never followed:
// the report may read a descriptor that is being set up for another ULT.
bool runs_taken_branch(const ult* u) noexcept;
bool runs_taken_record(const ult* u) noexcept;
const void* taken_branch_record(const ult* u) noexcept;

}  // namespace ito::sched
