// SPDX-License-Identifier: Apache-2.0
// The in-process transport's controls (transport_inproc.cpp implements
// transport.hpp for N simulated ranks in one process and one thread, linked
// instead of transport_mpi.cpp into ito_dsm_inproc, for tests only). Every
// one-sided operation is queued per origin, target and window and applied
// later: at random points the harness chooses (apply_one), at random inside
// other transport calls (eagerness), and at its origin's flush of its target,
// in a random order that keeps exactly transport.hpp's rules (the
// accumulate-like operations of one queue in issue order; gets and puts in
// any order before the flush). Mail goes into per-rank inboxes. A rank that
// waits (a flush, its mail's acknowledgements) lets the harness run other
// ranks' steps (set_yield): another rank's receiving is a step of the schedule.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::dist::detail::transport::inproc {

// `ranks` ranks, no windows open, no operation queued, no mail; random
// choices from `seed`.
void reset(int ranks, std::uint64_t seed);
// The rank whose code runs from now on: the origin of every operation, the
// receiver of receive_mail.
void set_rank(int rank) noexcept;
int rank() noexcept;
// Each transport call first applies one queued operation (apply_one) with
// this chance, in 1/1024ths.
void set_eagerness(unsigned per_1024) noexcept;
// Applies one queued operation, of any rank, chosen at random among those
// the rules allow now; false when none is queued.
bool apply_one();
// Operations queued (not applied yet): all, or those `origin` issued.
std::size_t queued() noexcept;
std::size_t queued_by(int origin) noexcept;
// Mails that arrived at `rank` and that it has not received yet.
std::size_t mail_waiting(int rank) noexcept;
// What a rank that waits calls (its rank set again after), with `arg`: at
// each flush before it completes, and in mail_delivered while its mail is
// not all acknowledged. There the harness runs other ranks' steps, as they
// would run meanwhile in a job (another rank's receiving among them).
void set_yield(void (*yield)(void*), void* arg) noexcept;

}  // namespace ito::dist::detail::transport::inproc
