// SPDX-License-Identifier: Apache-2.0
// MPI progress while a rank computes. MPICH's one-sided transfers to a rank
// complete only when that rank's MPI makes progress, that is, while one of
// its threads is inside an MPI call (measured: a page fetched from a home
// that computed for 2 s without calling MPI took 2 s). A rank whose ULTs
// compute between fences would stall every other rank's faults on its pages.
// So each rank runs one progress thread that enters MPI (MPI_Iprobe) every
// ITO_DIST_PROGRESS_US microseconds (default 100; 0: no thread, for MPIs with
// asynchronous progress of their own).
#pragma once

namespace ito::dist::detail {

// The interval from ITO_DIST_PROGRESS_US, and the one while the rank is idle
// from ITO_DIST_IDLE_PROGRESS_US (0: the same; -1: unset, decided at start);
// config_error (from the environment) for a bad value.
long resolve_progress_interval_us();
long resolve_idle_progress_interval_us();
// Starts the thread (interval 0: none). After MPI is up. With
// idle_interval_us -1 it polls sooner while idle (ITO_DIST_IDLE_PROGRESS_US's
// default) only where every worker of the host's ranks has a CPU (`host`):
// where ranks share CPUs, an idle rank's frequent polls take them from the
// ranks that compute.
struct host_cpus;
void start_progress(long interval_us, long idle_interval_us, const host_cpus& host);
// What the progress thread calls after each probe, one slot each: the
// distributed scheduler's poller, the exchange of remotely freed blocks, the
// DSM's diffs arriving at their home. Unsetting one (null) waits until it is
// not running.
enum class progress_hook { scheduler, remote_frees, dsm_diffs, count };
void set_progress_hook(progress_hook slot, void (*hook)()) noexcept;
// True while the thread runs.
bool progress_running() noexcept;
// The interval it waits while the rank is idle, in microseconds, as decided
// at its start (0: the interval it waits otherwise).
long idle_progress_interval_us() noexcept;
// Whether every worker of this rank is parked (the scheduler's poller says
// so each round): the thread then waits the idle interval.
void set_rank_idle(bool idle) noexcept;
// Wakes the thread before its interval is over (the hook has work).
void nudge_progress() noexcept;
// Stops and joins it. Before MPI is finalised.
void stop_progress() noexcept;

}  // namespace ito::dist::detail
