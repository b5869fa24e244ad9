// SPDX-License-Identifier: Apache-2.0
// Creating and destroying the process's runtime (used by the C++ and C APIs).
#pragma once

#include <cstdio>
#include <mutex>

#include "ito/options.hpp"
#include "sched/worker.hpp"

namespace ito::sched {

// Starts the workers and adopts the calling thread as the main ULT.
// Throws usage_error(EBUSY) if a runtime already runs. With defer_others,
// workers 1..N-1 get their OS threads only at start_other_workers: a process
// that never spawns a ULT (most programs run under libito-preload.so) never
// pays for them. Until then worker 0 runs everything, as at ITO_WORKERS=1.
runtime_state* start_runtime(const options& resolved, bool defer_others = false);
// Starts workers 1..N-1 if they were deferred: a load on the spawn path of
// the C and POSIX APIs, which call it before each spawn.
void start_other_workers_slow(runtime_state* rt);
inline void start_other_workers(runtime_state* rt) {
  if (rt->others.load(std::memory_order_acquire) != runtime_state::others_running) [[unlikely]]
    start_other_workers_slow(rt);
}
// From the main ULT: waits for every ULT to finish, then stops the workers.
void stop_runtime(runtime_state* rt);
// No ULT of rt is live here (the main ULT aside), none is between its end
// and its exit hook's last message, and no ULT arrived from or left for
// another process meanwhile (the caller holds what serialises migrations).
// For the distributed mode's global quiescence; exact only while nothing can
// spawn, i.e. once it returned true nothing here spawns until a ULT arrives.
bool quiescent_locally(runtime_state* rt) noexcept;
// Every ULT ever forked has finished (the main ULT is not counted). Finishes
// are read before spawns and both only grow, so equal sums mean quiescence.
bool all_finished(runtime_state* rt) noexcept;
// From the main ULT: yields, then naps, until all_finished (pthread_exit of
// the main thread; a forked child's returning thread).
void wait_until_all_finished(runtime_state* rt);
// For a thief that is not one of rt's workers (another process's steal,
// served on the progress thread): one ULT from a random worker's deques
// (yielded ones first), or null.
ult* steal_for_outside(runtime_state* rt, std::uint64_t& rng) noexcept;
// Some worker's deques hold runnable ULTs (a racy look: for deciding whether
// to ask elsewhere for work).
bool ults_waiting(runtime_state* rt) noexcept;
// With ITO_DUMP_SIGNAL set: that signal makes ito list the live ULTs on stderr
// (dump.cpp). Once per process; called at each start.
void install_dump_signal();
// Held by ito::dump_ults while it reads the runtime, and by stop_runtime from
// the workers' end until the runtime is unpublished: a dump never reads a
// runtime being torn down.
std::mutex& dump_lock() noexcept;
// ITO_STATS=1: the per-worker counters (runtime_stats.cpp), once the workers
// have stopped.
void print_stats(runtime_state* rt, std::FILE* out);
// Points the ito_debug table (debug_table.cpp) at rt's workers, or clears it.
void publish_debug_table(runtime_state* rt) noexcept;

}  // namespace ito::sched
