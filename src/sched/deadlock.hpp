// SPDX-License-Identifier: Apache-2.0
// ITO_DEADLOCK: saying when a program is deadlocked — every ULT blocked on
// ito's own objects (mutex, condition variable, reader-writer lock, barrier,
// semaphore, once, join) and nothing left that could wake any of them.
//
// Nothing here runs on a fast path. A worker whose park times out (every
// 10 ms while it has nothing to do) calls deadlock_watch while it is still on
// the idle list; the watch acts only when every worker is on that list and no
// timer is pending. The proof (deadlock.cpp) is count-based and taken twice,
// 0.5 s apart, with the idle list unchanged in between: a worker that leaves
// the idle list (and only such a worker can run a ULT) bumps
// runtime_state::idle_leaves under the idle lock.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace ito::sched {

struct runtime_state;
struct worker;

enum class deadlock_mode : unsigned char {
  automatic,  // unset: as abort (a report needs the main ULT blocked too)
  report,     // say so once, keep running
  abort,      // say so, then end the process with deadlock_exit_status
  ignore,     // never look
};

// The process's exit status after a deadlock report (ITO_DEADLOCK=abort or unset).
inline constexpr int deadlock_exit_status = 4;

// The watch's state, one per runtime; only deadlock_watch touches it, under `lock`.
struct deadlock_state {
  std::mutex lock;
  std::uint64_t epoch = ~std::uint64_t{0};  // idle_leaves when this idle stretch began
  std::int64_t next_proof_ns = 0;           // when to try the proof next
  std::int64_t interval_ns = 0;             // between tries; doubles after a failed one
  int proofs = 0;                           // proofs passed in this stretch
  bool reported = false;                    // in this stretch (ITO_DEADLOCK=report)
};

// ITO_DEADLOCK's value (checked by resolve_options already); read at start.
deadlock_mode deadlock_mode_from_environment() noexcept;

// From the idle path of w (sleep_idle_worker), with w still on the idle list.
void deadlock_watch(worker* w);

// Work that runs outside the workers and may wake a ULT when it is done (an
// os_pool job, hence a delegated call): counted from its post until its
// completion has been reported. While any is counted, nothing is reported.
void outside_work_begins() noexcept;
void outside_work_ends() noexcept;

// ito's own OS threads that are not workers (pool threads, the I/O poller,
// the dump thread) say so, by thread id; any other thread of the process
// might reach the runtime (unlock, notify, make a ULT runnable), so while one
// exists nothing is reported.
void helper_thread_begins() noexcept;
void helper_thread_ends() noexcept;
// In a child forked from a runtime (sched/fork_child.cpp): the parent's
// helpers do not exist there, and one may have held the list's lock.
void forget_helpers_in_child() noexcept;

}  // namespace ito::sched
