// SPDX-License-Identifier: Apache-2.0
// parallel_invoke's branches: queued as records on their caller's stack,
// taken back and run as calls by the caller in the common case; a branch
// that someone else takes first runs as a detached ULT of its own, which
// tells the caller through the record's state word when it is done.
//
//   state   0            queued, or running as a ULT elsewhere
//           finished     its ULT ran it (error holds what it threw)
//           waiter W     the caller suspended on it; its end wakes W
//
// The record lives in the caller's frame: the ULT running a stolen branch
// touches it last in the exchange that publishes its end.
#include "sched/branches.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>

#include "ito/parallel.hpp"
#include "ito/ult.hpp"
#include "sched/extension.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"
#include "sched/task_records.hpp"

namespace ito::sched {
namespace {

constexpr std::uintptr_t branch_running = 0;
using ito::detail::branch_finished;

// A stolen branch's ULT.
void run_taken_branch(void* frame) {
  ito::detail::branch* b = nullptr;
  std::memcpy(&b, frame, sizeof b);
  b->run(b);  // keeps what the branch threw in b->error
  const std::uintptr_t waiter = b->state.exchange(branch_finished, std::memory_order_acq_rel);
  if (waiter != branch_running) make_ready(reinterpret_cast<ult*>(waiter));
}

ult* as_ult(worker* w, ito::detail::branch* b) noexcept {
  if (is_queued_record(b)) return record_as_ult(w, b);
  worker_stats::bump(w->stats.branches_made_ults);
  ult* u = make_detached(w, &run_taken_branch, b);
  // Its body reads its caller's stack, which lives in this process.
  if (processes_extension()) [[unlikely]] ++u->must_stay;
  return u;
}

// suspend()'s hook for a caller whose branch another worker runs.
void register_waiter(ult* self, void* arg) {
  auto* b = static_cast<ito::detail::branch*>(arg);
  std::uintptr_t expected = branch_running;
  if (!b->state.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(self),
                                        std::memory_order_acq_rel, std::memory_order_acquire))
    make_ready(self);  // it finished meanwhile
}

}  // namespace

void wait_for_branch(ito::detail::branch* b, const char* blocked_in) {
  while (b->state.load(std::memory_order_acquire) != branch_finished)
    suspend(&register_waiter, b, blocked_in, b);
}

namespace {

[[gnu::noinline]] void wait_for(ito::detail::branch* b) { wait_for_branch(b, "parallel_invoke"); }

}  // namespace

ult* take_own_branch(worker* w) noexcept {
  ito::detail::branch* b = nullptr;
  if (w->branches.looks_empty()) return nullptr;
  // The newest, as the owner pops (a steal from the top would interrupt
  // every thread under the asymmetric fence).
  if (!(w->alone ? w->branches.pop_unshared(b) : w->branches.pop(b))) return nullptr;
  return as_ult(w, b);
}

// The live-ULT report calls these on descriptors other threads may be
// setting up: its reads are racy by design (ult_report.cpp), these too.
__attribute__((no_sanitize("thread"))) bool runs_taken_branch(const ult* u) noexcept {
  return u->body == &run_taken_branch;
}

__attribute__((no_sanitize("thread"))) const void* taken_branch_record(const ult* u) noexcept {
  const void* b = nullptr;
  std::memcpy(&b, u->frame, sizeof b);
  return b;
}

ult* steal_branch(worker* victim, worker* thief) noexcept {
  ito::detail::branch* b = nullptr;
  if (victim->branches.steal(b) != chase_lev_deque<ito::detail::branch*>::steal_result::success)
    return nullptr;
  return as_ult(thief, b);
}

namespace {

// push_branch past its common case: outside a ULT, a deque that is empty
// (idle workers may need a wake-up) or full, the distributed mode.
[[gnu::noinline, gnu::aligned(64)]] void push_branch_elsewhere(worker* w, ito::detail::branch* b) {
  if (!w || !w->current) [[unlikely]] ito::detail::throw_outside_ult("ito::parallel_invoke");
  b->queued_on = w;
  if (processes_extension()) [[unlikely]] {
    // The caller's stack, which the record and the branch's captures live
    // on, must not move to another process meanwhile; a tagged queued_on
    // sends its take-back here too, to undo that.
    ++w->current->must_stay;
    b->queued_on = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(w) | 1);
  }
  // As push_ready: only a push onto an empty deque pays for a fence.
  if (w->branches.push(b) && !w->alone) notify_work(w->rt);
}

[[gnu::noinline]] bool take_back_elsewhere(worker* w, ito::detail::branch* b) noexcept {
  const auto queued_on = reinterpret_cast<std::uintptr_t>(b->queued_on);
  const bool taken_back =
      (queued_on & ~std::uintptr_t{1}) == reinterpret_cast<std::uintptr_t>(w) && take_back_from(w, b);
  if (!taken_back) wait_for(b);
  if (queued_on & 1) [[unlikely]] --current_ult()->must_stay;
  return taken_back;
}

}  // namespace
}  // namespace ito::sched

namespace ito::detail {

void keep_current_exception(void** error) noexcept {
  *error = new std::exception_ptr(std::current_exception());
}

void rethrow_first(void** errors, std::size_t n) {
  std::exception_ptr first;
  for (std::size_t i = 0; i < n; ++i) {
    auto* e = static_cast<std::exception_ptr*>(errors[i]);
    if (e && !first) first = std::move(*e);
    delete e;
  }
  std::rethrow_exception(first);
}

// The common cases call nothing: no registers to save. This, push_branch_elsewhere
// and take_back_or_wait start on a cache line: where they fell moved fib's
// parallel_invoke row by 5-8% between builds that did not change them
// (BENCHMARKS.md, "A started child's exception state installed, not read back").
[[gnu::aligned(64)]] void push_branch(branch* b) {
  sched::worker* w = sched::current_worker();
  if (w && w->current && !sched::processes_extension()) [[likely]] {
    b->queued_on = w;
    if (w->branches.push_behind_others(b)) [[likely]] return;
  }
  sched::push_branch_elsewhere(w, b);
}

[[gnu::aligned(64)]] bool take_back_or_wait(branch* b) noexcept {
  sched::worker* w = sched::current_worker();
  if (b->queued_on == w && sched::take_back_from(w, b)) [[likely]] return true;
  return sched::take_back_elsewhere(w, b);
}

}  // namespace ito::detail
