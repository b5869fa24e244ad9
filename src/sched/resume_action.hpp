// SPDX-License-Identifier: Apache-2.0
// Work a ULT must do before it runs its own code again, asked by another
// thread while the ULT is parked or queued: the POSIX layer runs a handler of
// a signal aimed at it (compat/posix_thread_signals.cpp), as the kernel runs
// one when it returns a thread to user mode.
//
// The switch does it the kernel's way: a ULT with an action pending gets a
// new context on its stack, below the one it saved, that runs the action and
// then resumes the saved one (arch::make_context's trampoline: a context
// whose main returns {saved sp, nothing}). So the suspended code (a wait in
// ito) is left exactly as it was, and the action may itself block.
//
// The test lives behind worker::switch_extras, which the first ask turns on
// for every worker (for good): a program that never aims a signal at a ULT
// switches as before.
#pragma once

#include "sched/ult.hpp"

namespace ito::sched {

struct worker;

using resume_action_fn = void (*)(ult* self);
void set_resume_action(resume_action_fn action) noexcept;

// Marks u: its next switch-in runs the action first. Any thread may call it.
void ask_resume_action(ult* u) noexcept;

// Whether any ask was made (a worker that starts later turns its
// switch_extras on too: runtime_start.cpp).
bool resume_actions_asked() noexcept;

// Called by the switch (behind switch_extras) for a ULT it is about to
// resume from its saved context: with an action pending, next->sp becomes a
// context that runs it first.
void arrive_with_resume_action(ult* next) noexcept;
inline void before_resuming(ult* next) noexcept {
  if (next && next->resume_action_pending.load(std::memory_order_relaxed)) [[unlikely]]
    arrive_with_resume_action(next);
}

}  // namespace ito::sched
