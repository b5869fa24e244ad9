// SPDX-License-Identifier: Apache-2.0
// fork() and the io layer: the child has none of the parent's pool or poller
// threads, and shares the parent's epoll instance. So the child drops the
// delegation pool and the poller (a fresh one of each starts on first use)
// and forgets every descriptor's registration and parked callers (ULTs of
// the parent, which do not exist there). See sched/fork_child.hpp. The
// handlers are registered when libito is loaded (fork_child.cpp).
//
// vfork() (CPython's subprocess, posix_spawn's fallbacks) runs no fork
// handlers: its child shares the parent's memory, and its calls, made on the
// parent's stack and TLS, look like the parent ULT's. Such a call must never
// be delegated (a pool thread would run it in the parent: a close there
// closes the parent's descriptor), park, or touch ito's per-descriptor state.
#pragma once

namespace ito::detail {

// True in the child of vfork() (or of a clone sharing our memory): a system
// call, so asked only where a call would delegate, park or close.
bool in_vfork_child() noexcept;
// This process's id, as recorded at load and in a forked child: no system
// call (glibc's getpid makes one).
int this_process_id() noexcept;

// Each part's share. before_fork takes the part's start lock (so the child
// never inherits it held by a thread it does not have), after_fork_in_parent
// gives it back, after_fork_in_child gives it back and forgets the part.
void poller_before_fork() noexcept;
void poller_after_fork_in_parent() noexcept;
void poller_after_fork_in_child() noexcept;
void pool_before_fork() noexcept;
void pool_after_fork_in_parent() noexcept;
void pool_after_fork_in_child() noexcept;
// Every descriptor entry: unregistered, nobody parked, lock free.
void fd_table_after_fork_in_child() noexcept;

}  // namespace ito::detail
