// SPDX-License-Identifier: Apache-2.0
// Whether an OS thread holds one of the dynamic loader's locks.
//
// ld.so serialises dlopen, dlclose and dl_iterate_phdr with recursive
// mutexes of its own, owned by the OS thread that took them, and it runs the
// program's code while it holds them: the constructors and destructors of
// the objects it loads and unloads, dl_iterate_phdr's callback. A ULT in that
// code must not leave its worker: another ULT there would take the "held"
// lock again as its owner (two dlopens at once), and the ULT, resumed on
// another worker, could not release it (the owner is the first OS thread):
// the next dlopen hangs (CPython importing extension modules from threads
// did, with preemption). So while a worker's OS thread holds one, its ULT is
// not preempted and its blocking calls block the worker.
//
// The locks are glibc's private data: found once by looking, in ld.so's
// exported `_rtld_global`, for the recursive mutex this thread owns inside a
// dl_iterate_phdr callback (the loader's write lock) and its neighbours of
// the same kind (dlopen's lock before it, the TLS lock after it). Where they
// are not found, nothing is detected (as before).
#pragma once

#include <sys/types.h>

namespace ito::sched {

// Looks for the locks (once per process; cheap after the first call).
void find_loader_locks() noexcept;

// Whether the OS thread `tid` holds one of the locks found.
bool loader_lock_held_by(pid_t tid) noexcept;

// Whether the locks were found (tests).
bool loader_locks_found() noexcept;

}  // namespace ito::sched
