// SPDX-License-Identifier: Apache-2.0
// Handles for the C and POSIX APIs (ito_ult_t, pthread_t): a slot index and
// that slot's reuse count, checked in a table that outlives every ULT. So a
// stale handle is recognised without reading the memory of the ULT it once
// named (a dedicated stack may be unmapped by then), and 40 bits of reuse
// count keep it stale for 10^12 reuses of its slot.
//
// Only ULTs whose handle is asked for (ito_create, pthread_create, ito_self)
// take a slot; create_thread's ULTs never pay for one.
#pragma once

#include <atomic>
#include <cstdint>

namespace ito::sched {

struct ult;

namespace handles {

using value = std::uint64_t;  // 0 is never a handle

// u's handle, giving it a slot on first use; 0 when 16M handles are live.
value of(ult* u) noexcept;

// The ULT h names while it lives (until release), else null.
ult* find(value h) noexcept;

// The POSIX layer's cancellation word of h's thread (0 when its handle was
// given out), or null for a stale handle. It stays valid while the handle
// is live, i.e. until the thread is joined or, detached, ends.
std::atomic<std::uint32_t>* cancel_word(value h) noexcept;

// The cell of h's slot where the POSIX layer keeps a thread's signal state
// (a record made on first use and kept for the slot's later handles: the
// record says whose it is), or null for a stale handle.
std::atomic<void*>* signal_cell(value h) noexcept;

// Takes h's right to join or detach: exactly one caller per life of the ULT
// gets its ULT; the others get null with *error = ESRCH (h is stale) or
// EINVAL (another joiner or detacher has it).
ult* claim(value h, int* error) noexcept;
// Gives the right back (the claimer found it may not join after all).
void unclaim(value h) noexcept;

// The slot index of a handle, and the live handle of a slot (0 when free):
// the POSIX layer numbers a thread for gettid() by its slot.
std::uint32_t index_of(value h) noexcept;
std::uint64_t reuses_of(value h) noexcept;  // how many handles the slot had before
value live_at(std::uint32_t index) noexcept;
// Indices below this may have been handed out (1 up): for a walk over the
// live handles with live_at (the POSIX layer's choice of a thread for a
// process-directed signal).
std::uint32_t slots_handed_out() noexcept;

// At release: u's handles go stale and its slot may be reused.
void drop(ult* u) noexcept;

// At runtime stop, when no ULT is left: every handle goes stale.
void drop_all() noexcept;

// The handle of a main ULT not started yet: the POSIX layer's pthread_self
// on an OS thread before the process's first runtime, which would otherwise
// have to start one only to name the caller. The OS thread `thread`
// (os_thread_identity, ult.hpp) gets a handle that names no ULT (find gives
// null) until a runtime starts on that thread and its main ULT adopts it.
// Once any runtime has started (a forked child too), or when another thread
// holds the reservation, 0: the caller must be a ULT to have a handle.
value before_start(const void* thread) noexcept;
// h is before_start's handle, not yet adopted: naming it needs the runtime.
bool is_before_start(value h) noexcept;
// Called as a runtime starts on `thread`, with its main ULT: that ULT adopts
// the thread's handle from before_start, if it has one.
void adopt_before_start(ult* main, const void* thread) noexcept;
// In a child forked while `self` ran on OS thread `thread`: the parent's
// other handles go stale, and self's stays that thread's (pthread_self keeps
// its value across fork, as under NPTL: CPython finds the forking thread by
// it), as before_start's handle until the child starts a runtime.
void keep_in_forked_child(const ult* self, const void* thread) noexcept;

}  // namespace handles
}  // namespace ito::sched
