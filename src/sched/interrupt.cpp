// SPDX-License-Identifier: Apache-2.0
#include "sched/interrupt.hpp"

#include <sched.h>

#include "arch/cpu_relax.hpp"

namespace ito::sched {
namespace {

// The slot's states besides a published record's address.
constexpr std::uintptr_t slot_idle = 0;
constexpr std::uintptr_t slot_busy = 1;   // an interrupter is using the record
constexpr std::uintptr_t slot_asked = 2;  // an interrupt came while nothing was published

}  // namespace

void arm_interruptible_wait(ult* self) noexcept {
  self->wait_interruptible = true;
  self->wait_interrupted = false;
}

bool disarm_interruptible_wait(ult* self) noexcept {
  const bool interrupted = self->wait_interrupted;
  self->wait_interruptible = false;
  self->wait_interrupted = false;
  return interrupted;
}

void clear_interrupt(ult* self) noexcept {
  // Read first: the common case has no note, and a locked CAS costs every
  // armed wait. A note that lands just after the read ends the next wait at
  // once, a stale interrupt, which every interruptible caller tolerates.
  if (self->interrupt_slot.load(std::memory_order_relaxed) != slot_asked) return;
  std::uintptr_t asked = slot_asked;
  self->interrupt_slot.compare_exchange_strong(asked, slot_idle, std::memory_order_seq_cst);
}

bool take_interruptible_arm(ult* self) noexcept {
  if (!self || !self->wait_interruptible) return false;
  self->wait_interruptible = false;
  return true;
}

bool publish_interruptible(ult* self, interruptible_wait* wait) noexcept {
  // seq_cst against interrupt(): either it sees the record, or this sees
  // its note (the reason it checked before asking was set before).
  std::uintptr_t idle = slot_idle;
  if (self->interrupt_slot.compare_exchange_strong(idle, reinterpret_cast<std::uintptr_t>(wait),
                                                   std::memory_order_seq_cst))
    return true;
  self->interrupt_slot.store(slot_idle, std::memory_order_relaxed);  // the note is used now
  return false;
}

void unpublish_interruptible(ult* self, interruptible_wait* wait) noexcept {
  std::uintptr_t mine = reinterpret_cast<std::uintptr_t>(wait);
  if (self->interrupt_slot.compare_exchange_strong(mine, slot_idle, std::memory_order_acq_rel))
    return;
  // An interrupter holds the record: it ends the wait and then lets go (it
  // may be an OS thread that lost its CPU, hence the yield after a while).
  for (unsigned round = 0; self->interrupt_slot.load(std::memory_order_acquire) == slot_busy;
       ++round) {
    if (round < 64) arch::cpu_relax();
    else ::sched_yield();
  }
}

void mark_interrupted(ult* self) noexcept { self->wait_interrupted = true; }

void interrupt(ult* u) noexcept {
  std::uintptr_t cur = u->interrupt_slot.load(std::memory_order_seq_cst);
  for (;;) {
    if (cur == slot_busy || cur == slot_asked) return;  // being interrupted, or noted
    const std::uintptr_t next = cur == slot_idle ? slot_asked : slot_busy;
    if (u->interrupt_slot.compare_exchange_weak(cur, next, std::memory_order_seq_cst)) break;
  }
  if (cur == slot_idle) return;
  auto* wait = reinterpret_cast<interruptible_wait*>(cur);
  wait->end(wait);
  u->interrupt_slot.store(slot_idle, std::memory_order_release);
}

}  // namespace ito::sched
