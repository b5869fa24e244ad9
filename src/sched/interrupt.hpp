// SPDX-License-Identifier: Apache-2.0
// Ending a ULT's wait before it ends by itself: what POSIX cancellation needs
// (a thread cancelled while it waits at a cancellation point leaves the wait).
//
// A wait opts in twice. The caller arms the ULT (arm_interruptible_wait),
// then a primitive that supports it takes the arming at its entry
// (take_interruptible_arm) and, while parked, publishes a record in the
// ULT's slot. interrupt(u) ends a published wait through the record, the way
// the wait's time-out would (the primitive then withdraws as from one), or,
// when none is published, leaves a note that ends the next one at once. The
// caller learns afterwards whether its wait was interrupted.
//
// The record lives on the waiting ULT's stack: the interrupter marks the slot
// busy while it uses the record, and the waiter, leaving, waits for that mark
// to go before its frame may die. Nothing here is on a fast path: only a ULT
// about to park reads or writes the slot.
#pragma once

#include <atomic>
#include <cstdint>

#include "sched/ult.hpp"

namespace ito::sched {

// A wait's way out, supplied by the primitive. end() claims the wait for the
// interrupter (as a time-out claims it) and makes the ULT runnable; a wait
// already claimed by a wake or a time-out is left alone.
struct interruptible_wait {
  void (*end)(interruptible_wait*) noexcept = nullptr;
};

// Arms the calling ULT: the next wait that supports interruption may be
// ended by interrupt() (and an interrupt asked since clear_interrupt ends it
// at once). disarm_interruptible_wait returns whether the wait was ended so,
// and leaves the ULT unarmed either way.
void arm_interruptible_wait(ult* self) noexcept;
bool disarm_interruptible_wait(ult* self) noexcept;
// Forgets an interrupt asked while no wait was published. The caller then
// looks at why one would be asked (a pending cancellation) before it arms.
void clear_interrupt(ult* self) noexcept;

// For a primitive, at its entry: whether the caller armed it (the arming is
// taken: a later park in the same call, a mutex relocked after a condition
// wait, is not interruptible).
bool take_interruptible_arm(ult* self) noexcept;
// Around the park of an armed wait. publish: false when an interrupt was
// already asked; the caller then ends the wait itself (wait->end). After
// unpublish, nobody touches the record; mark_interrupted records the outcome
// for disarm_interruptible_wait.
bool publish_interruptible(ult* self, interruptible_wait* wait) noexcept;
void unpublish_interruptible(ult* self, interruptible_wait* wait) noexcept;
void mark_interrupted(ult* self) noexcept;

// Ends u's published wait, or notes an interrupt for its next armed one.
// u must be a live descriptor (reused ones get at worst a spurious
// interruption, which every interruptible caller tolerates).
void interrupt(ult* u) noexcept;

}  // namespace ito::sched
