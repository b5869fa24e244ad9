// SPDX-License-Identifier: Apache-2.0
// The scheduler's protocol: spawn, join, yield, suspend/wake, finish.
// Everything here except make_ready must be called from a ULT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sched/custom_stack.hpp"
#include "sched/join_word.hpp"
#include "sched/loader_locks.hpp"
#include "sched/resume_action.hpp"
#include "sched/ult.hpp"
#include "sched/ult_tls.hpp"
#include "sched/worker.hpp"

namespace ito::sched {

// Initial-exec TLS is read as %fs:offset on every access, so a ULT that moved
// to another OS thread across a switch still reads its new worker. (General-
// dynamic TLS would hand out an address the compiler may keep: never use it.)
extern constinit thread_local worker* tls_worker __attribute__((tls_model("initial-exec")));

// The worker running this OS thread, or null.
#if defined(__aarch64__)
// On aarch64 the thread pointer is a register (tpidr_el0), not a memory
// operand: GCC reads it once per function and keeps it across calls, switches
// included, so a ULT that moved would read its old worker's variable (a
// mutex's unlock then saw another owner). Read it afresh each time; the
// variable's offset from it is the same in every thread.
inline worker* current_worker() noexcept {
  std::uintptr_t tp;
  asm volatile("mrs %0, tpidr_el0" : "=r"(tp) : : "memory");
  const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(&tls_worker) -
                                reinterpret_cast<std::uintptr_t>(__builtin_thread_pointer());
  return *reinterpret_cast<worker* const*>(tp + offset);
}
#else
inline worker* current_worker() noexcept {
  asm volatile("" ::: "memory");  // never reuse a value read before a switch
  return tls_worker;
}
#endif
// The running ULT, or null outside a ULT.
inline ult* current_ult() noexcept {
  worker* w = current_worker();
  return w ? w->current : nullptr;
}

// Whether the code running on w runs under a lock of the dynamic loader
// (loader_locks.hpp): one its OS thread owns, or, for a ULT with a TLS block
// of its own, one that ULT owns (glibc records the TCB's thread id).
inline bool inside_loader_lock(const worker* w) noexcept {
  if (loader_lock_held_by(w->tid.load(std::memory_order_relaxed))) return true;
  return __atomic_load_n(&w->ult_tls, __ATOMIC_RELAXED) && w->current && w->current->tls &&
         loader_lock_held_by(ult_tls::tcb_tid_now());
}

// Whether a blocking call by the caller must keep off its worker's OS thread
// (park on the poller, delegate, sleep on the runtime's timers): true for a
// ULT, except the main ULT of a runtime started with its other workers
// deferred (the POSIX layer's) while nothing has been spawned: no other ULT
// exists that could run meanwhile, so the plain call does the same, and a
// process under libito-preload.so that never makes a thread starts no
// delegation thread. False outside a ULT, and while the worker's OS thread
// holds a lock of the dynamic loader (loader_locks.hpp: the ULT runs a
// constructor under dlopen, and must not leave the OS thread that owns it).
inline bool must_not_block_worker() noexcept {
  worker* w = current_worker();
  if (!w || !w->current) return false;
  return (w->rt->others.load(std::memory_order_acquire) != runtime_state::others_deferred ||
          w->stats.spawns.load(std::memory_order_relaxed) != 0) &&
         !inside_loader_lock(w);
}

// Takes a stack from the current worker and reserves frame_bytes (16-aligned)
// at its top; *frame receives their address.
ult* allocate(std::size_t frame_bytes, void** frame);
// The same for a caller that holds its worker: inline where a descriptor
// released on this worker can be reused (below).
inline ult* allocate(worker* w, std::size_t frame_bytes, void** frame);
// The same on a stack that is not the pool's (see custom_stack.hpp).
ult* allocate_on(stack::stack_block s, stack_origin origin, std::size_t frame_bytes,
                 void** frame);
// Starts `child` running body(frame). Child-first: the caller is pushed and the
// child runs at once (help-first from a ULT bound to its worker).
// id_was_public: others may know the child's id before fork returns, so its
// end must always be published with an atomic exchange.
void fork(ult* child, void (*body)(void*), bool id_was_public = true) noexcept;
// fork for create_thread(near(data)): the processes extension may send the
// child, help-first, to the process holding data; otherwise fork.
void fork_near(ult* child, void (*body)(void*), const void* data) noexcept;
// A new ULT running body(arg) that nobody joins (it frees itself at its
// end), not queued: the caller runs or queues it. May be called from the
// scheduler stack.
ult* make_detached(worker* w, void (*body)(void*), void* arg);
// Waits until `child` has finished, for its only possible joiner (the owner
// of its future). Others use join_claim.
void wait_finished(ult* child);
// Claims `child` for joining and waits for its end. 0: the caller owns it
// (read its results, then release it); EINVAL: detached or another joiner
// has it; ESRCH: already joined or reaped; EDEADLK: the caller itself.
// interruptible: the caller armed the wait (sched/interrupt.hpp); EINTR:
// interrupted before the child ended (the claim is given up).
int join_claim(ult* child, bool interruptible = false);
// Gives a finished ULT's stack back; the descriptor is dead afterwards.
// `orphaned`: nobody joined it (a stored exception is reported).
void release(ult* child, bool orphaned = false);
// 0 (it frees itself when it ends, or now if it has), EINVAL if it is already
// detached or being joined, ESRCH if it was joined or reaped.
int detach(ult* child);
void yield(bool push_to_head);
// The preemption handler's yield (preempt.cpp): self, interrupted at a safe
// point, goes to the back of w's queue through the scheduler loop, which
// fires due timers and takes ULTs woken from outside (the main ULT among them).
void preempt_current(worker* w, ult* self) noexcept;

// Suspends the running ULT. `after(self, arg)` runs once the ULT's context is
// saved, on the next context's stack, and must hand `self` to whoever will
// wake it (or wake it at once with make_ready). It must not block.
// blocked_in / blocked_on: what it waits in and on, for hang reports and dumps;
// the deadlock watch counts a ULT as waiting for another ULT only by these
// names (ult_report.cpp: waits_for_another_ult): a name changed at a call
// site must change there too.
void suspend(void (*after)(ult* self, void* arg), void* arg, const char* blocked_in = "suspend",
             const void* blocked_on = nullptr);
// Makes a suspended ULT runnable. Any thread may call it.
void make_ready(ult* u);

// Sleeps the running ULT until monotonic_ns() >= deadline_ns.
void sleep_until_ns(std::int64_t deadline_ns);

// Unwinds the running ULT to its entry and ends it (exit()).
[[noreturn]] void exit_current(void* value);

// Thrown by exit_current; caught at the ULT's entry. Code that catches (...)
// must rethrow it, as with glibc's forced unwinding.
struct exit_unwind {
  void* value;
};

// --- Used by the worker loop, the runtime and the stack policies (internal) ---
// Readies a descriptor for a new ULT: running, no exception state, a fresh id.
inline void renew(worker* w, ult* u) noexcept {
  join_word::start(u);
  u->eh = {};
  u->id = w->next_id;
  w->next_id += worker::id_step;
}
// A ULT that has not started has this exception state (renew's). The start
// paths install it instead of reading the child's copy: renew has just
// written that copy with 8-byte stores, which a 16-byte load cannot take
// from the store buffer (a store-forwarding stall).
inline constexpr eh_state no_eh_state{};
// Hands the OS thread's C++ exception globals from the context leaving
// (saved into `out`) to the one arriving (`in`). Behind one test of the
// worker's line (a predicted branch where there is neither), what only some
// runtimes do: the program's copy of the globals where there is one (yield
// measured ~0.7 ns slower swapping a scratch copy unconditionally), and,
// with ult_tls, true: the caller must load the arriving context's thread
// pointer (ult_tls::arrive) as the last thing before the stack switch. The
// callers do that in a function of its own that makes the switch too (a
// tail call), so that their common path keeps nothing live across a call
// and saves no registers.
// `resumed`: the ULT about to be resumed from its saved context (not one
// started or run inline), whose pending resume action (resume_action.hpp)
// goes in front of that context; the caller reads resumed->sp afterwards.
// switch_extras and ult_tls are atomic for the few threads that turn them on
// for good (resume_action.cpp, ult_tls::turn_on); a relaxed load is the
// plain one. ult_tls is read as a volatile byte instead: GCC kept the
// atomic load's address in a register across calls, and run_ult's common
// path saved one more register for it. A stale false only meets ULTs
// without a block: one with a block reaches this worker after its creator
// read runtime_state::tls_blocks (acquire), which turn_on stores last.
// switch_eh in two halves, for a caller whose extras path goes out of line
// whole (switch_to: the resume action it may call made yield's common path
// save three registers when inline). The first: the runtime's own globals;
// true when the worker has extras to switch (switch_eh_extras).
inline bool swap_own_eh(worker* w, eh_state& out, const eh_state& in) noexcept {
  out.own = *w->eh;
  *w->eh = in.own;
  return __atomic_load_n(&w->switch_extras, __ATOMIC_RELAXED);
}
inline bool switch_eh_extras(worker* w, eh_state& out, const eh_state& in,
                             ult* resumed) noexcept {
  if (eh_globals* program = w->program_eh) {
    out.program = *program;
    *program = in.program;
  }
  before_resuming(resumed);
  return *static_cast<const volatile bool*>(&w->ult_tls);
}
inline bool switch_eh(worker* w, eh_state& out, const eh_state& in,
                      ult* resumed = nullptr) noexcept {
  if (swap_own_eh(w, out, in)) [[unlikely]] return switch_eh_extras(w, out, in, resumed);
  return false;
}
// Installs `in` for a context arriving after one that keeps nothing (`left`,
// a ULT that ended: its TLS block, if any, is freed once off it).
// `resumed` as switch_eh's.
inline void install_eh(worker* w, const eh_state& in, const ult* next,
                       ult* left = nullptr, ult* resumed = nullptr) noexcept {
  *w->eh = in.own;
  if (__atomic_load_n(&w->switch_extras, __ATOMIC_RELAXED)) [[unlikely]] {
    if (eh_globals* program = w->program_eh) *program = in.program;
    before_resuming(resumed);
    if (*static_cast<const volatile bool*>(&w->ult_tls)) ult_tls::arrive(w, next, left);
  }
}
// The stack u runs on: its own, or for a child joined inline its joiner's
// (one level: a child running inline hosts none); the main ULT's is its OS
// thread's. Empty when unknown.
inline const stack::stack_block& stack_of(const ult* u) noexcept {
  if (u->inline_host) u = u->inline_host;
  if (u->stack) return u->stack;
  static constexpr stack::stack_block none{};
  const runtime_state* rt = g_runtime.load(std::memory_order_relaxed);
  return rt && u == &rt->main_ult ? rt->main_stack : none;
}
// Canary written at the bottom of a stack that has no guard page.
inline constexpr std::uint64_t stack_canary = 0x17017017DEADBEEFull;
// Readies a descriptor for a new ULT: a fresh id, the frame reserved below it.
inline ult* prepare(worker* w, ult* u, std::size_t frame_bytes, void** frame) noexcept {
  renew(w, u);
  auto frame_top = reinterpret_cast<std::uintptr_t>(u);
  *frame = reinterpret_cast<void*>((frame_top - frame_bytes) & ~std::uintptr_t{15});
  u->frame = *frame;
  if (!u->stack.guarded) [[unlikely]] std::memcpy(u->stack.lo, &stack_canary, sizeof stack_canary);
  return u;
}
// A descriptor released on this worker, its stack still attached and its
// fields reset at release, so reuse costs a few stores; null if none. Only
// pool descriptors are kept there, so it is always empty under a stack provider.
inline ult* take_released(worker* w) noexcept {
  ult* u = w->free_ults;
  if (!u) [[unlikely]] return nullptr;
  w->free_ults = u->next;
  --w->free_count;
  u->next = nullptr;
  worker_stats::bump(w->stats.stacks_reused);
  return u;
}
ult* allocate_slow(worker* w, std::size_t frame_bytes, void** frame);
// allocate's common case, which calls nothing: a descriptor this worker
// released, for a frame that fits; null otherwise.
inline ult* allocate_released(worker* w, std::size_t frame_bytes, void** frame) noexcept {
  if (frame_bytes <= w->stacks.frame_limit) [[likely]] {
    if (ult* u = take_released(w)) [[likely]] return prepare(w, u, frame_bytes, frame);
  }
  return nullptr;
}
inline ult* allocate(worker* w, std::size_t frame_bytes, void** frame) {
  if (ult* u = allocate_released(w, frame_bytes, frame)) [[likely]] return u;
  return allocate_slow(w, frame_bytes, frame);
}
void set_current_worker(worker* w) noexcept;
ult* pop_local_slow(worker* w) noexcept;
void push_ready_slow(worker* w, ult* u, bool deque_was_empty) noexcept;

// Next runnable ULT local to w: deque bottom, bound inbox, injector, own yielded.
inline ult* pop_local(worker* w) noexcept {
  ult* u = nullptr;
  if (w->alone ? w->deque.pop_unshared(u) : w->deque.pop(u)) [[likely]] return u;
  return pop_local_slow(w);
}
// A worker whose ULTs never run out never reaches its scheduler loop, which
// fires timers and takes ULTs made ready by other threads (injector, inbox).
// So every 64th (poll_interval) pick after a ULT ends, blocks or joins looks
// there first; Go's scheduler does the same with its global run queue.
// `tick` counts those picks; a ULT's end reuses the `finished` statistic (no
// extra store on the spawn path).
inline constexpr std::uint64_t poll_interval = 64;
ult* poll_outside_work(worker* w) noexcept;
inline ult* next_local(worker* w, std::uint64_t tick) noexcept {
  if ((tick & (poll_interval - 1)) == 0) [[unlikely]] {
    if (ult* u = poll_outside_work(w)) return u;
  }
  return pop_local(w);
}
// Hands a runnable ULT to w's deque (or to the inbox of the worker it is bound to).
inline void push_ready(worker* w, ult* u) noexcept {
  if (u->bound) [[unlikely]] return push_ready_slow(w, u, false);
  // Only a push onto an empty deque pays for a fence (see idle.hpp), and
  // never on a one-worker runtime: the only worker is the one pushing.
  if (w->deque.push(u) && !w->alone) [[unlikely]] push_ready_slow(w, nullptr, true);
}
void run_ult(worker* w, ult* u) noexcept;  // from the scheduler loop
void* make_scheduler_context(worker* w);    // for a worker whose OS stack is taken
void scheduler_loop(worker* w);

// Says how many exceptions escaped detached ULTs, if more than were shown
// one by one (at runtime stop); resets the count.
void report_orphaned_exception_count() noexcept;

// Called when a running ULT is seen outside a ULT or with a dead handle.
[[noreturn]] void fatal(const char* message);

}  // namespace ito::sched
