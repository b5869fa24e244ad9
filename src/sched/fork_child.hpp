// SPDX-License-Identifier: Apache-2.0
// fork() while a runtime runs. The child has one OS thread: the one that
// called fork, perhaps on a ULT's stack. Its workers, pool threads and other
// ULTs do not exist there, so the child forgets the runtime (leaking its
// memory, as NPTL leaks the other threads' stacks) and the calling thread goes
// on as a plain OS thread: every blocking call is then the plain call, and a
// new runtime may be started (the POSIX layer starts one on first use).
#pragma once

namespace ito::sched {

// Registers the child handler with pthread_atfork, once per process (called at
// every runtime start).
void install_fork_handler() noexcept;

// A ULT's body returned (or called pthread_exit) in such a child, where it was
// the only thread: the process ends with status 0, as when the last thread ends.
[[noreturn]] void end_forked_child_thread() noexcept;

}  // namespace ito::sched
