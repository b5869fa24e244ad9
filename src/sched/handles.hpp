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

#include <cstdint>

namespace ito::sched {

struct ult;

namespace handles {

using value = std::uint64_t;  // 0 is never a handle

// u's handle, giving it a slot on first use; 0 when 16M handles are live.
value of(ult* u) noexcept;

// The ULT h names while it lives (until release), else null.
ult* find(value h) noexcept;

// Takes h's right to join or detach: exactly one caller per life of the ULT
// gets its ULT; the others get null with *error = ESRCH (h is stale) or
// EINVAL (another joiner or detacher has it).
ult* claim(value h, int* error) noexcept;
// Gives the right back (the claimer found it may not join after all).
void unclaim(value h) noexcept;

// At release: u's handles go stale and its slot may be reused.
void drop(ult* u) noexcept;

// At runtime stop, when no ULT is left: every handle goes stale.
void drop_all() noexcept;

}  // namespace handles
}  // namespace ito::sched
