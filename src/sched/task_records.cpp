// SPDX-License-Identifier: Apache-2.0
// create_thread's records (ito/detail/task_record.hpp): their memory, their
// queueing on the creator's branch deque, their join (taken back and run as
// a call, or waited for), and the ULT that runs one somebody else took.
#include "sched/task_records.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>

#include "ito/thread.hpp"
#include "sched/branches.hpp"
#include "sched/extension.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"

namespace ito::sched {
namespace {

using ito::detail::branch_finished;
using ito::detail::task_record;
using ito::detail::task_record_dropped;

constexpr std::align_val_t record_alignment{ito::detail::task_record_align};

// The heap's aligned new and delete are not split-stack code and have no
// shim: in the split build, a function that calls them pays
// __morestack_non_split (~8 ns) on every call, whichever path it takes
// (docs/SPLIT_STACKS.md). So only these two call them, off the common path.
[[gnu::noinline]] void* memory_from_heap() {
  return ::operator new(ito::detail::task_record_bytes, record_alignment);
}
[[gnu::noinline]] void memory_to_heap(void* m) noexcept { ::operator delete(m, record_alignment); }

void* take_cached(worker* w) noexcept {
  void* m = w->free_task_records;
  if (!m) [[unlikely]] return nullptr;
  std::memcpy(&w->free_task_records, m, sizeof(void*));
  --w->free_task_record_count;
  return m;
}

// Back to the calling worker's cache, or to the heap (outside the runtime,
// or a full cache: records made on one worker and freed on another).
void give_back(void* m) noexcept {
  worker* w = current_worker();
  if (w && w->rt == g_runtime.load(std::memory_order_relaxed) &&
      w->free_task_record_count < worker::max_free_task_records) [[likely]] {
    std::memcpy(m, &w->free_task_records, sizeof(void*));
    w->free_task_records = m;
    ++w->free_task_record_count;
    return;
  }
  memory_to_heap(m);
}

void free_record(task_record* r, bool orphaned) noexcept {
  r->destroy(r, orphaned);
  give_back(r);
}

// The record has run: it no longer counts as unfinished.
inline void count_ended(worker* w) noexcept { worker_stats::bump(w->stats.finished); }

// The body of a record's ULT (record_as_ult): runs it, then hands it to its
// future's holder, or frees it if the future was dropped.
void run_taken_record(void* frame) {
  task_record* r = nullptr;
  std::memcpy(&r, frame, sizeof r);
  r->run(r);
  const std::uintptr_t s = r->state.exchange(branch_finished, std::memory_order_acq_rel);
  if (s == task_record_dropped) free_record(r, /*orphaned=*/true);
  else if (s != 0) make_ready(reinterpret_cast<ult*>(s));
}

// Whether a record may run as a call on the caller's stack. A ULT made for it
// would have a whole stack of its own: run here only while at least half of
// the caller's stack is left below its frame. (Segments of the split-stack
// policies grow: always; a stack of unknown size: as parallel_invoke does.)
[[gnu::noinline]] bool room_on_other_stack(const worker* w, const ult* self,
                                           const char* here) noexcept {
  if (w->stack_provider) return true;
  const stack::stack_block& s = stack_of(self);  // the main ULT's, a host's
  return !s || here >= s.lo + s.size() / 2;
}
inline bool room_to_run_here(const worker* w, const ult* self) noexcept {
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  // A pool ULT's own stack (no provider gives one: its ULTs keep it empty).
  if (self->stack && !self->inline_host) [[likely]]
    return here >= self->stack.lo + self->stack.size() / 2;
  return room_on_other_stack(w, self, here);
}

[[gnu::noinline]] void queue_on_empty_deque(worker* w, ito::detail::branch* item) noexcept {
  // As push_ready: only a push onto an empty deque pays for a fence.
  if (w->branches.push(item) && !w->alone) notify_work(w->rt);
}

}  // namespace

ult* record_as_ult(worker* w, ito::detail::branch* item) noexcept {
  auto* r = static_cast<task_record*>(
      reinterpret_cast<ito::detail::branch*>(reinterpret_cast<std::uintptr_t>(item) & ~std::uintptr_t{1}));
  worker_stats::bump(w->stats.records_made_ults);
  // The record's count as an unfinished ULT goes to the ULT made for it.
  ult* u = make_detached(w, &run_taken_record, r);
  count_ended(w);
  return u;
}

__attribute__((no_sanitize("thread"))) bool runs_taken_record(const ult* u) noexcept {
  return u->body == &run_taken_record;
}

void drain_task_records(worker* w) noexcept {
  while (void* m = take_cached(w)) memory_to_heap(m);
}

}  // namespace ito::sched

namespace ito::detail {

using sched::current_worker;
using sched::worker;

void* task_record_memory() {
  worker* w = current_worker();
  // Outside a ULT (the ULT path says so), on the scheduler's stack (a flow
  // node's body), or in the distributed mode: a ULT.
  if (!w || !w->current || sched::processes_extension()) [[unlikely]] return nullptr;
  if (void* m = sched::take_cached(w)) [[likely]] return m;
  return sched::memory_from_heap();
}

void free_task_record_memory(void* memory) noexcept { sched::give_back(memory); }

void queue_task_record(task_record* r) noexcept {
  worker* w = current_worker();
  sched::worker_stats::bump(w->stats.spawns);  // ended by count_ended
  r->queued_on = w;
  branch* item = sched::queued_item(r);
  if (w->branches.push_behind_others(item)) [[likely]] return;
  sched::queue_on_empty_deque(w, item);
}

void wait_task_record(task_record* r) {
  if (r->state.load(std::memory_order_acquire) == branch_finished) return;  // waited for before
  worker* w = current_worker();
  if (!w || !w->current) [[unlikely]] throw_outside_ult("ito::join");
  if (r->queued_on == w && sched::room_to_run_here(w, w->current) &&
      sched::take_back_from(w, sched::queued_item(r))) [[likely]] {
    sched::ult* self = w->current;
    ++self->records_running;
    r->run(r);
    --self->records_running;
    sched::count_ended(current_worker());  // the call may have moved the caller
    r->state.store(branch_finished, std::memory_order_relaxed);
    return;
  }
  // Someone else runs it, or will: this worker's scheduler takes it while we wait.
  sched::wait_for_branch(r, "create_thread's future");
}

void free_task_record(task_record* r) noexcept { sched::free_record(r, /*orphaned=*/false); }

void drop_task_record(task_record* r) noexcept {
  if (r->state.exchange(task_record_dropped, std::memory_order_acq_rel) == branch_finished)
    sched::free_record(r, /*orphaned=*/true);
}

void drop_task_exception(task_record* r, bool orphaned) noexcept {
  if (orphaned) report_orphaned_exception(&r->error, 0);
  r->error.reset();
}

void keep_task_exception(task_record* r) noexcept {
  try {
    throw;
  } catch (const sched::exit_unwind&) {
    r->exited = true;
  } catch (...) {
    r->error.emplace(std::current_exception());
  }
}

}  // namespace ito::detail
