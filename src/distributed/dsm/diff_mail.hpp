// SPDX-License-Identifier: Apache-2.0
// A release's diffs to their homes as messages: one per home per release,
// applied by the home's progress thread (or by any thread of the home that
// waits for its own diffs meanwhile), then acknowledged.
//
// Why not one put per page: MPICH's one-sided transfers to a rank complete
// only when that rank makes MPI progress (progress.hpp), so each put and its
// flush cost a round trip through the home's progress thread; a sort at two
// ranks, one node per rank, sent ~4,600 diffs per run, one round trip each.
// Several puts in flight at once are what lost writes over UCX's
// shared-memory transports (dsm.cpp, complete_diff); a point-to-point message
// per home carries every page's runs in one round trip and leaves RMA out.
// The home writes the runs through the alias, as a put would: no page state
// changes there, no DSM lock is taken. The messages are the transport's mail
// (transport.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::dist::detail {

struct dsm;

// Collective. window: the alias every home's diffs are written into (the
// DSM's data window: the region, then the globals), `bytes` long.
// progress_running: whether this rank has someone to apply mail that
// arrives (progress.hpp's thread; a test's harness says so per rank).
// The mail's state is d's (d.mailbox): one per rank, not per process.
void start_diff_mail(dsm& d, char* window, std::size_t bytes, bool (*progress_running)() noexcept);
// Collective, after the progress thread stopped.
void stop_diff_mail(dsm& d) noexcept;
// True when diffs go by message: the mail is up and a progress thread runs
// to apply them at the homes (without one, releases put page by page).
bool diff_mail_open(const dsm& d) noexcept;
// Queues bytes [at, at + length) of the window, `bytes` their new value, for
// `home`. Copies them: the caller's buffer is free at once.
void queue_diff(dsm& d, int home, std::size_t at, const char* bytes, std::size_t length);
// Sends each home its queued diffs and returns once every one has applied
// them. Returns the messages sent (0 when nothing was queued).
std::uint64_t deliver_diffs(dsm& d);
// Applies every batch that has arrived at d's rank, and acknowledges each
// (the progress thread's hook; any thread: the transport hands each mail to
// exactly one receiver). Nothing when the mail is not up.
void serve_diffs(dsm& d);
// Waits until done(arg) is true (it polls, never blocks), applying the diffs
// that arrive meanwhile (at d, when not null): a rank that waits in MPI (a
// barrier) serves its pages' writers at once rather than at its progress
// thread's next round.
void wait_serving_diffs(dsm* d, bool (*done)(void*), void* arg);

}  // namespace ito::dist::detail
