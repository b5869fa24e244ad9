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

#include <unwind.h>

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

// Back to w's cache, or to the heap when it is full (records made on one
// worker and freed on another).
inline void recycle_on(worker* w, void* m) noexcept {
  if (w->free_task_record_count < worker::max_free_task_records) [[likely]] {
    std::memcpy(m, &w->free_task_records, sizeof(void*));
    w->free_task_records = m;
    ++w->free_task_record_count;
    return;
  }
  memory_to_heap(m);
}

// Back to the calling worker's cache; to the heap outside the runtime.
void give_back(void* m) noexcept {
  worker* w = current_worker();
  if (w && w->rt == g_runtime.load(std::memory_order_relaxed)) [[likely]] return recycle_on(w, m);
  memory_to_heap(m);
}

void free_record(task_record* r, bool orphaned) noexcept {
  if (r->error.has) [[unlikely]] ito::detail::drop_task_exception(r, orphaned);
  if (r->destroy) r->destroy(r, orphaned);
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
// The full test, for a ULT whose record_floor is unknown or below the frame.
[[gnu::noinline]] bool room_to_run_here_slow(const worker* w, const ult* self,
                                             const char* here) noexcept {
  if (self->stack && !self->inline_host) return here >= self->stack.lo + self->stack.size() / 2;
  if (w->stack_provider) return true;
  const stack::stack_block& s = stack_of(self);  // a host's
  return !s || here >= s.lo + s.size() / 2;
}
// The common case is one load and a compare: the floor was worked out when
// the ULT got its stack (ult::record_floor).
inline bool room_to_run_here(const worker* w, const ult* self) noexcept {
  // A local's address, not __builtin_frame_address: that would make every
  // caller set up a frame pointer.
  const char probe = 0;
  const char* here = &probe;
  if (reinterpret_cast<std::uintptr_t>(here) >= self->record_floor) [[likely]] return true;
  return room_to_run_here_slow(w, self, here);
}

// The common join: r is still the bottom item of the caller's worker's deque
// and the stack has room, so the caller takes it back to run it as a call
// (run_taken_back). Returns whether it did.
inline bool take_back_to_run(task_record* r) noexcept {
  worker* w = current_worker();
  if (!w) [[unlikely]] return false;  // not in the runtime
  // Only this worker pushes on its deque: its bottom item is r only if r
  // was queued here (records need no queued_on).
  const ult* self = w->current;
  return self && room_to_run_here(w, self) && take_back_from(w, queued_item(r));
}
// Runs r as the caller; returns the caller's worker after it (the call may
// have moved the caller to another). r's state stays 0: a join frees it at
// once, wait_for marks it finished. Inlined into join_task_record_word and
// wait_for only: runs_record_as_call finds a record's call by those frames.
inline worker* run_taken_back(task_record* r) noexcept {
  r->run(r);
  worker* w = current_worker();  // read afresh
  count_ended(w);
  return w;
}

// Returns once r has run: taken back and run here, or someone else runs it
// (this worker's scheduler takes it while the caller waits). noipa: its
// frame must be this function, neither inlined nor cloned
// (runs_record_as_call compares the frame's start with its address).
[[gnu::noipa]] void wait_for(task_record* r) {
  if (r->state.load(std::memory_order_acquire) == branch_finished) return;  // waited for before
  if (take_back_to_run(r)) [[likely]] {
    run_taken_back(r);
    r->state.store(branch_finished, std::memory_order_relaxed);
    return;
  }
  if (!current_ult()) ito::detail::throw_outside_ult("ito::join");
  wait_for_branch(r, "create_thread's future");
}

// A result_fits_word record that has run: its word, and r freed to w, the
// caller's worker (a ULT of the live runtime).
inline ito::detail::joined_word word_of_ran(worker* w, task_record* r) noexcept {
  if (r->did_not_return) [[unlikely]] return {0, false};
  const ito::detail::joined_word j{r->result_word, true};
  // Nothing to destroy (destroy is null for these results; the call ended
  // when it ran).
  recycle_on(w, r);
  return j;
}

[[gnu::noinline]] ito::detail::joined_word join_word_elsewhere(task_record* r) {
  wait_for(r);
  return word_of_ran(current_worker(), r);
}

[[gnu::noinline]] task_record* queue_on_empty_deque(worker* w, task_record* r,
                                                    ito::detail::branch* item) noexcept {
  // As push_ready: only a push onto an empty deque pays for a fence.
  if (w->branches.push(item) && !w->alone) notify_work(w->rt);
  return r;
}

// Whether create_thread may queue a record on w: not outside a ULT (its ULT
// path says so), on the scheduler's stack (a flow node's body), or in the
// distributed mode (other processes' thieves take ULTs).
inline bool records_used_by(const worker* w) noexcept {
  return w && w->current && !processes_extension();
}

// From here on r counts as a ULT that has not finished (ended by
// count_ended): the runtime does not stop before it has run.
inline task_record* queue_on(worker* w, task_record* r) noexcept {
  worker_stats::bump(w->stats.spawns);
  ito::detail::branch* item = queued_item(r);
  if (w->branches.push_behind_others(item)) [[likely]] return r;
  return queue_on_empty_deque(w, r, item);
}

// A word call's record (ito::detail::queue_word_call), on w's deque.
inline task_record* queue_word_call_on(worker* w, void* memory, void (*run)(ito::detail::branch*) noexcept,
                                       std::uint64_t first, std::uint64_t second) noexcept {
  auto* r = ::new (memory) task_record;
  r->run = run;
  r->call_words[0] = first;
  r->call_words[1] = second;
  return queue_on(w, r);
}

// queue_word_call past its common case: no memory cached, or no records.
[[gnu::noinline]] task_record* queue_word_call_elsewhere(void (*run)(ito::detail::branch*) noexcept,
                                                         std::uint64_t first, std::uint64_t second) {
  void* m = ito::detail::task_record_memory();
  return m ? queue_word_call_on(current_worker(), m, run, first, second) : nullptr;
}

}  // namespace

ult* record_as_ult(worker* w, ito::detail::branch* item) noexcept {
  task_record* r = record_of_item(item);
  worker_stats::bump(w->stats.records_made_ults);
  // The record's count as an unfinished ULT goes to the ULT made for it.
  ult* u = make_detached(w, &run_taken_record, r);
  count_ended(w);
  return u;
}

// A frame of join_task_record_word or wait_for on the caller's stack is a
// record's call in progress: the caller runs user code (it calls this), and
// user code runs below those two only through the record's call. The
// unwinder tells each frame's function by its start, as an exception does;
// no counter on the join path (two stores on every join: ~0.9 ns of fib's
// 13, bench/ab.sh).
bool runs_record_as_call() noexcept {
  struct search {
    std::uintptr_t join, wait;
    bool found = false;
  } s{reinterpret_cast<std::uintptr_t>(&ito::detail::join_task_record_word),
      reinterpret_cast<std::uintptr_t>(&wait_for)};
  _Unwind_Backtrace(
      [](_Unwind_Context* frame, void* arg) {
        auto* s = static_cast<search*>(arg);
        const std::uintptr_t start = _Unwind_GetRegionStart(frame);
        if (start == s->join || start == s->wait) {
          s->found = true;
          return _URC_NORMAL_STOP;
        }
        return _URC_NO_REASON;
      },
      &s);
  return s.found;
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
  if (!sched::records_used_by(w)) [[unlikely]] return nullptr;
  if (void* m = sched::take_cached(w)) [[likely]] return m;
  return sched::memory_from_heap();
}

void free_task_record_memory(void* memory) noexcept { sched::give_back(memory); }

void queue_task_record(task_record* r) noexcept { sched::queue_on(current_worker(), r); }

// This and join_task_record_word start on a cache line, as parallel_invoke's
// fast paths do (sched/branches.cpp): fib's row, ~70% of its time in the two,
// moved 9.55 -> 9.19 ns with it (BENCHMARKS.md, "A help-first join back to
// 470490d's instructions").
[[gnu::aligned(64)]] task_record* queue_word_call(void (*run)(branch*) noexcept, std::uint64_t first,
                                                  std::uint64_t second) {
  worker* w = current_worker();
  // The common case calls nothing (no registers to save).
  if (sched::records_used_by(w)) [[likely]] {
    if (void* m = sched::take_cached(w)) [[likely]]
      return sched::queue_word_call_on(w, m, run, first, second);
  }
  return sched::queue_word_call_elsewhere(run, first, second);
}

void wait_task_record(task_record* r) { sched::wait_for(r); }

[[gnu::aligned(64)]] joined_word join_task_record_word(task_record* r) {
  // (A record waited for before is no longer queued: not taken back.)
  if (!sched::take_back_to_run(r)) [[unlikely]] return sched::join_word_elsewhere(r);
  return sched::word_of_ran(sched::run_taken_back(r), r);
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
  r->did_not_return = true;
  try {
    throw;
  } catch (const sched::exit_unwind&) {
    // ito::exit(): no result, no exception.
  } catch (...) {
    r->error.emplace(std::current_exception());
  }
}

}  // namespace ito::detail
