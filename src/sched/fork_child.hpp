// SPDX-License-Identifier: Apache-2.0
// fork() while a runtime runs. The child has one OS thread: the one that
// called fork, perhaps on a ULT's stack. Its workers, pool threads and other
// ULTs do not exist there, so the child forgets the runtime (leaking its
// memory, as NPTL leaks the other threads' stacks) and the calling thread goes
// on as a plain OS thread: every blocking call is then the plain call, and a
// new runtime may be started (the POSIX layer starts one on first use).
#pragma once

#include "sched/worker.hpp"

namespace ito::sched {

// Registers the child handler with pthread_atfork, once per process (called at
// every runtime start).
void install_fork_handler() noexcept;

// Whether `self`, whose body just returned, is that thread in such a child:
// the runtime it ran in is gone (no worker), or the child started another
// since, which adopted the OS thread as its main ULT (so its running ULT is
// not self). `w`: current_worker(), which the caller has at hand (inline:
// this runs at every ULT's end, and a call here cost fib 8 instructions a
// spawn).
inline bool forked_child_thread(const worker* w, const ult* self) noexcept {
  return !w || w->current != self;
}

// A ULT's body returned (or called pthread_exit) in such a child: the process
// ends with status 0 as when its last thread ends. If the child started a
// runtime of its own since, that is once its threads have ended, as NPTL's
// pthread_exit of a main thread.
[[noreturn]] void end_forked_child_thread() noexcept;

}  // namespace ito::sched
