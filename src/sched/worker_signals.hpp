// SPDX-License-Identifier: Apache-2.0
// Which OS thread a signal reaches. A ULT runs on any worker, so a worker's
// own mask means nothing to the program; the program's main thread is worker
// 0, where the main ULT stays. So workers 1..N-1 block every asynchronous
// signal (they start with the main thread's mask and block the rest): a
// process-directed signal reaches worker 0 when the program's main thread
// leaves it unblocked, or the pool thread of a delegated sigwait, sigsuspend
// or pselect that asks for it — never a worker behind the program's back.
// Signals a thread raises on itself by faulting or writing (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPIPE, SIGXFSZ) stay deliverable.
#pragma once

#include <signal.h>

namespace ito::sched {

// The signals a worker other than worker 0 blocks.
const sigset_t& asynchronous_signals() noexcept;

// Called by a worker thread (not worker 0) as it starts. With preemption on,
// its signal (preempt.hpp) stays open: the watch sends it to that thread.
void block_asynchronous_signals(bool keep_preempt_signal) noexcept;

}  // namespace ito::sched
