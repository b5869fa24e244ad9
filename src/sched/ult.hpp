// SPDX-License-Identifier: Apache-2.0
// The ULT descriptor. With the fixed policy it lives at the top of the ULT's own
// stack, so a spawn needs no allocation besides the (cached) stack itself; a
// stack provider (stack/provider.hpp: lazy, fair_use) places it where it likes
// and keeps its own per-ULT state next to it, not in here.
#pragma once

#include <atomic>
#include <cstdint>

#include "arch/sanitizer.hpp"
#include "stack/stack_pool.hpp"

namespace ito::sched {

struct worker;
struct ult_registry;

// The C++ exception globals of one libstdc++ (__cxa_eh_globals: the caught-
// exception stack and the uncaught count).
struct eh_globals {
  void* caught = nullptr;
  std::uint64_t uncaught = 0;  // an unsigned int, and the struct's padding
};
// A ULT's, kept while it is switched out and swapped into the worker's OS
// thread at every switch: ito's own libstdc++'s, and the program's when that
// is another copy (libito-preload.so links its own: sched/program_eh.hpp).
struct eh_state {
  eh_globals own;
  eh_globals program;
  bool empty() const noexcept {
    return !own.caught && !own.uncaught && !program.caught && !program.uncaught;
  }
};

// Where a ULT's stack came from, hence where it goes back at release.
enum class stack_origin : unsigned char {
  pool,       // the runtime's stack pool (every ULT unless asked otherwise)
  dedicated,  // mapped for one ULT of the size it asked for (pthread_attr_setstacksize)
  caller,     // the caller's own memory (pthread_attr_setstack): left alone
  provided,   // the runtime's stack provider (lazy / fair_use: split-stack
              // segments); it owns the descriptor too
  foreign,    // a pool stack of another process (distributed mode): this
              // process hosts a copy, which goes back with a message
};

struct ult {
  void* sp = nullptr;  // saved context while not running
  // The join word: written only through sched/join_word.hpp, which has its
  // states and transitions. 0 is join_running.
  std::atomic<std::uintptr_t> join_state{0};
  void (*body)(void*) = nullptr;  // what fork runs
  void* frame = nullptr;          // fork's argument: the bytes reserved at the top of the stack
  // Destroys what the frame still holds, at release. orphaned_id: the ULT's
  // id when nobody joined it (a stored exception is reported), else 0.
  void (*frame_cleanup)(void* frame, unsigned long long orphaned_id) = nullptr;
  void (*frame_catch)(void*, bool) = nullptr;  // takes what the body threw (else: fatal)
  stack::stack_block stack;       // empty for a ULT adopted from an OS thread
  worker* bound = nullptr;        // runs only on this worker (the main ULT), or null
  std::uint64_t id = 0;
  bool exited = false;            // ended by exit() rather than by returning
  bool id_was_public = false;     // others could know the id before fork returned
  bool has_future = false;        // owned by an ito::future: no handle may join or detach it
  // Forked help-first and not run yet: its joiner may run it inline. Read
  // by the joiner before it takes the child, as a hint, while a thief may be
  // starting it: relaxed atomics, plain moves.
  std::atomic<bool> unstarted{false};
  stack_origin stack_from = stack_origin::pool;
  std::uint32_t resumes = 0;      // bumped whenever this ULT is switched to
  std::uint32_t parent_resumes = 0;  // parent->resumes when this ULT was forked
  // Where its frame keeps a thrown exception (create_thread's frames of
  // trivial types), 0: nowhere. The distributed mode carries an exception to
  // a joiner on another process through it. (This and the next flag fill
  // the padding before exit_value; plain fields, not bits: a spawn writes
  // both without masking.)
  std::uint32_t frame_error_offset = 0;
  // Its result, once it has one, is not trivially copyable: it may hold this
  // process's pointers, so the distributed mode keeps the ULT on its home
  // process and hands the result to no joiner elsewhere.
  bool frame_result_local = false;
  void* exit_value = nullptr;     // exit()'s value, for the C API
  ult* next = nullptr;            // intrusive link: wait queues, inboxes
  ult* join_target = nullptr;     // the ULT this one is about to join
  ult* parent = nullptr;          // the ULT that forked this one (compared, never followed)
  // While its joiner runs it inline (join_inline, scheduler.cpp): that joiner,
  // on whose stack it runs; else null.
  ult* inline_host = nullptr;
  void* locals = nullptr;         // ULT-local key values, allocated on first set
  eh_state eh;                    // its C++ exception globals while switched out
  // Its own TLS block's thread pointer (glibc's TCB), or null: it runs on
  // its worker's (ult_tls.hpp; ITO_ULT_TLS). Read by the switch only where
  // the runtime gives blocks (worker::switch_extras).
  void* tls = nullptr;
  std::uint32_t handle = 0;       // its slot in the handle table (handles.hpp), or 0
  arch::sanitizer_fiber fiber;

  // The one test the scheduler makes for a provider's ULT: a byte it reads anyway.
  bool from_provider() const noexcept { return stack_from == stack_origin::provided; }

  // Cold, last (off the lines the spawn and join paths touch): while
  // suspended, what it waits in ("mutex", "join", "sleep", ...) and on which
  // object, for hang reports and dumps (ult_report.hpp); its place in the
  // registry of descriptors (registry.hpp).
  const char* blocked_in = nullptr;
  const void* blocked_on = nullptr;
  // With a processes extension (the distributed mode): how many reasons it
  // has to stay in this process, 0 when it may migrate. Each lock it holds
  // (sync/waiter.hpp count_held_lock: a lock lives in this process's memory
  // and records its holder), a join in progress (woken, it still reads the
  // child's descriptor and frame here), a frame to clean whose objects this
  // heap owns. Reset when the ULT ends.
  std::uint32_t must_stay = 0;
  // Created near data held in this process (create_thread(near(p))): other
  // processes' thieves pass it by, since it would fetch its data there.
  // Reset when the ULT ends, as must_stay.
  bool near_its_data = false;
  ult_registry* registry = nullptr;
  ult* registry_prev = nullptr;
  ult* registry_next = nullptr;
  // A wait that may be ended early (POSIX cancellation): sched/interrupt.hpp
  // has the slot's states. The flags are the ULT's own, written only by it.
  std::atomic<std::uintptr_t> interrupt_slot{0};
  bool wait_interruptible = false;  // armed: the next supporting wait may be interrupted
  bool wait_interrupted = false;    // the armed wait was
  // Set (for good) by its first interruptible join: its registrations as a
  // joiner may be withdrawn, so its children's ends take it by CAS
  // (join_word.hpp); other joiners' by a plain store, as before.
  bool may_withdraw_joins = false;
  // Set by another thread: the preemption handler runs the POSIX layer's
  // asynchronous action (cancellation) the next time it interrupts this ULT
  // at a safe point (sched/preempt.hpp, ask_async_action).
  std::atomic<bool> async_action_pending{false};
  // Set by another thread: the POSIX layer's resume action (a signal aimed
  // at this ULT) runs on it before its own code runs again, the next time a
  // worker switches to it (sched/resume_action.hpp).
  std::atomic<bool> resume_action_pending{false};
  // A resume action (a signal handler run as the ULT was switched in) asked
  // to end the ULT (pthread_exit) while it was suspended inside ito, where
  // it cannot unwind: the POSIX layer ends it at its next cancellation point
  // or spin-lock round (resume_action.cpp). It names the ULT by its id,
  // which every ULT gets afresh: a descriptor reused holds no stale request
  // and the spawn path resets nothing.
  std::uint64_t exit_deferred_for = 0;
  void* exit_deferred_value = nullptr;
  // The POSIX scheduling policy and priority a program gave it
  // (compat/posix_sched.hpp), valid while sched_for is its id, as
  // exit_deferred_for: the spawn path resets nothing. Else SCHED_OTHER at 0.
  // Written by any thread (pthread_setschedparam of another): atomics.
  std::atomic<std::uint64_t> sched_for{0};
  std::atomic<std::uint32_t> sched_value{0};
  // Bumped by the POSIX layer each time a signal handler ran on this ULT
  // (its own field, written only by it): a sleep that a signal interrupted
  // compares it to say EINTR.
  std::uint32_t signal_handlers_run = 0;
  // (Last, after the two 4-byte fields: sizeof(ult) stays 312 bytes.)
  // The lowest address at which a create_thread record may still run as a
  // call on this ULT's stack (task_records.cpp; 0: anywhere). A join above
  // it runs the record without another look; below it, or while unknown
  // (all ones, the default), the full test decides. Set with the stack it
  // derives from, and kept while a released descriptor is reused.
  std::uintptr_t record_floor = unknown_record_floor;
  static constexpr std::uintptr_t unknown_record_floor = ~std::uintptr_t{0};
};

// An OS thread's identity: its thread pointer (glibc's thread control
// block), which no ULT descriptor can share. The main ULT, bound for life to
// the OS thread it adopted, is that thread as a lock holder and for its
// handle from before the runtime (sync/waiter.hpp, sched/handles.hpp).
inline const void* os_thread_identity() noexcept { return __builtin_thread_pointer(); }

}  // namespace ito::sched
