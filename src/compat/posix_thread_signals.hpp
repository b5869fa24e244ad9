// SPDX-License-Identifier: Apache-2.0
// Signals aimed at one ULT (posix_thread_signals.cpp): each ULT other than
// main has its own mask and its own pending set, and a signal sent to it with
// pthread_kill, pthread_sigqueue or tgkill runs its handler on it.
//
// The main ULT keeps its OS thread's mask (worker 0's, the real one), as
// before: everything here is for the others. A thread's state is a record
// made on first use, found through its handle's slot (sched/handles.hpp), so
// a ULT that never touches signals has none and pays nothing.
#pragma once

#include <signal.h>
#include <time.h>

#include <cstdint>

#include "sched/ult.hpp"

namespace ito::posix {

// The caller's mask is its OS thread's: the main ULT, or not a ULT at all.
bool owns_its_thread() noexcept;

// pthread_sigmask for a ULT other than main: reads and writes its own mask;
// the pending signals it unblocks run their handlers before it returns.
int ult_sigmask(int how, const sigset_t* set, sigset_t* old);

// The main thread's mask changed to `mask` (or the runtime started with it):
// the threads main creates from now on start with it.
void main_mask_is(const sigset_t& mask) noexcept;

// A thread the caller has just made (its handle), not started yet: it starts
// with the caller's mask (POSIX). Costs a load or two when the caller blocks
// nothing.
void inherit_signal_mask(std::uint64_t child_handle) noexcept;

// A signal for ULT u (handle h; not main, maybe the caller) from
// pthread_kill (code SI_TKILL) or pthread_sigqueue (SI_QUEUE, value): its
// handler runs on u (now, if u is the caller and leaves it unblocked; else
// as soon as u runs again, interrupting it if it computes, or waking it from
// sigwait, sigsuspend and pause); a blocked one stays pending on u; an
// ignored one is dropped; one whose default action ends or stops the process
// does that. 0 or an error number.
int send_to_ult(sched::ult* u, std::uint64_t h, int sig, int code, const sigval& value);

// The handlers of the caller's pending signals it leaves unblocked run now,
// on it (the resume action of sched/resume_action.hpp and the preemption
// handler's asynchronous action call this).
void deliver_pending_signals(sched::ult* self);
// A thread about to end (its body returned): what is on its way to it, and
// its open pending signals, run on it first.
void thread_ends(sched::ult* self);
// Whether self has any (for the preemption handler's action, to ask again).
bool has_deliverable_signals(sched::ult* self) noexcept;

// The caller's own pending signals (a ULT other than main).
void own_pending_signals(sigset_t* out);

// sigtimedwait (timeout null: sigwaitinfo) and sigsuspend for a ULT (main
// too: its waits must be seen by the catcher of posix_process_signals.hpp):
// its own pending signals first, those kept for the process, then a wait on
// a delegation pool thread for a process-directed signal or one aimed at it.
int ult_sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout);
int ult_sigsuspend(const sigset_t* mask);

// On the pool thread of a delegated call that opens the signals `mask`
// leaves open while it waits (pselect, ppoll, epoll_pwait), around the call:
// a signal aimed at the ULT (handle h), or a process signal the catcher
// takes, that the call opens is sent to that thread while it waits.
void register_pool_wait(std::uint64_t h, const sigset_t& mask);
void unregister_pool_wait(std::uint64_t h, const sigset_t& mask);

// For the catcher of process-directed signals (posix_process_signals.cpp):
// the main thread's mask as last set; h's thread waits for sig on a pool
// thread, which gets it (true); u (handle h, not main) leaves sig open and
// has it aimed at it with `info` (true), else nothing is done.
void main_mask_now(sigset_t* out) noexcept;
bool hand_to_waiter(std::uint64_t h, int sig) noexcept;
bool aim_if_open(sched::ult* u, std::uint64_t h, int sig, const siginfo_t& info);

}  // namespace ito::posix
