// SPDX-License-Identifier: Apache-2.0
// The join word (ult::join_state): who may free a ULT, and whether it has
// ended. This file is its one owner: every transition is a named function
// here, and nothing else writes the word (scripts/check-architecture.sh
// checks). Readers use join_word::read.
//
//   running           0      nobody has claimed it
//   finished          1      ended, unclaimed: the first CAS to released owns it
//   detached          2      it frees itself when it ends (state 3 meanwhile)
//   released          4      joined, reaped or claimed: the handle is dead
//   joiner address    J      J waits for it (J is 64-aligned, > remote)
//   J | ended         J+1    ended while J waited: J owns it
//   remote            6      the distributed mode keeps this ULT's join state
//                            elsewhere (its home's table): it migrated, or its
//                            joiner lives on another process
//
//            register_joiner            publish_end
//   running ───────────────▶ J ────────────────────▶ J|ended ─▶ (J releases)
//      ▲  (or host_inline)   │   (or claim_joiner_for_end, just before;
//      │                     │    end_hosted for a child J ran inline)
//      └──withdraw_joiner────┘
//     │  │ publish_end                                 ▲
//     │  └────────────▶ finished ──claim_finished──▶ released
//     │ detach_running      │ detach_finished          ▲
//     ▼                     └─────────────────────────▶┘
//   detached ──publish_end──▶ detached|ended ─▶ (it releases itself)
//   (start_detached: a ULT nobody will ever join begins at detached)
//
//   distributed mode, always under its table's lock:
//   running / J / detached ──hand_over──▶ remote ──restore──▶ what its table kept
//   remote ──end_away_for(J)──▶ J|ended,  ──released_elsewhere──▶ released,
//          ──finished_elsewhere──▶ finished
//
// Every transition out of running or finished is a CAS, so of two racing
// joiners or detachers exactly one wins. A joiner's wait may also be
// interrupted (a POSIX join: a signal's handler or a cancellation must run
// in it): withdraw_joiner takes J back to running, racing the ULT's end, so
// the transitions out of such a J (ult::may_withdraw_joins) are CASes too
// (claim_joiner_for_end: the end takes the joiner it switches to directly). Transitions out of the other
// states have one writer by construction (the ULT's end, its owner, or the
// distributed mode's table lock), so they are plain stores.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sched/ult.hpp"

namespace ito::sched {

inline constexpr std::uintptr_t join_running = 0;
inline constexpr std::uintptr_t join_finished = 1;
inline constexpr std::uintptr_t join_detached = 2;
inline constexpr std::uintptr_t join_released = 4;
inline constexpr std::uintptr_t join_remote = 6;
inline constexpr std::uintptr_t join_ended_bit = 1;
// Joiners are descriptors, 64-byte aligned: never one of the small states.
inline bool is_joiner(std::uintptr_t s) noexcept { return s > join_remote && !(s & join_ended_bit); }
inline bool has_ended(std::uintptr_t s) noexcept { return (s & join_ended_bit) != 0; }
// The state a joiner finds once the child ended while it waited.
inline std::uintptr_t ended_for(const ult* joiner) noexcept {
  return reinterpret_cast<std::uintptr_t>(joiner) | join_ended_bit;
}

namespace join_word {

inline std::uintptr_t read(const ult* u) noexcept {
  return u->join_state.load(std::memory_order_acquire);
}

// ---- The ULT's own life ----------------------------------------------------

// A descriptor readied for a new ULT (nobody knows it yet).
inline void start(ult* u) noexcept { u->join_state.store(join_running, std::memory_order_relaxed); }

// A descriptor readied for a new ULT that nobody will join (a stolen
// parallel_invoke branch), before anyone knows it: detached from the start.
inline void start_detached(ult* u) noexcept {
  u->join_state.store(join_detached, std::memory_order_relaxed);
}

// A descriptor whose ULT is gone (released, cached for reuse).
inline void retire(ult* u) noexcept { u->join_state.store(join_released, std::memory_order_relaxed); }

// Its end, when nobody but the parent resuming now can know it (quick
// resume): no joiner or detacher can race, so a plain store.
inline void end_unseen(ult* self) noexcept {
  self->join_state.store(join_finished, std::memory_order_release);
}

// The ULT, ending, switches straight to its joiner: J → J|ended, so that the
// joiner can no longer withdraw (and be woken twice). False: it withdrew.
inline bool claim_joiner_for_end(ult* self, std::uintptr_t joiner) noexcept {
  return self->join_state.compare_exchange_strong(joiner, joiner | join_ended_bit,
                                                  std::memory_order_acq_rel,
                                                  std::memory_order_acquire);
}

// Sets the ended bit; returns the state it found (the joiner, when
// claim_joiner_for_end took it already). A detach cannot change while the
// ULT runs, so only `running` and a joiner that may withdraw
// (ult::may_withdraw_joins) need an atomic read-modify-write: a plain store
// does the rest. (A fetch_or
// returning the old value compiles to a load and a lock cmpxchg loop; this
// is one load and, at most, one CAS but for a race with a withdrawal.)
inline std::uintptr_t publish_end(ult* self) noexcept {
  std::uintptr_t s = read(self);
  for (;;) {
    if (s == join_running) {
      if (self->join_state.compare_exchange_weak(s, join_finished, std::memory_order_acq_rel,
                                                 std::memory_order_acquire))
        return join_running;
    } else if (is_joiner(s)) {
      // A joiner that cannot withdraw leaves s stable (measured: the CAS
      // cost a help-first create+join ~9 ns, 21 -> 31).
      if (!reinterpret_cast<const ult*>(s)->may_withdraw_joins) {
        self->join_state.store(s | join_ended_bit, std::memory_order_release);
        return s;
      }
      if (self->join_state.compare_exchange_weak(s, s | join_ended_bit, std::memory_order_acq_rel,
                                                 std::memory_order_acquire))
        return s;
    } else if (has_ended(s) && s > join_remote) {
      return s & ~join_ended_bit;  // claim_joiner_for_end's
    } else {
      // A detacher came first, or the distributed mode has it: s is stable.
      self->join_state.store(s | join_ended_bit, std::memory_order_release);
      return s;
    }
  }
}

// A detached ULT that ended with its frame still to clean runs once more as
// a detached ULT (a new one, on the same descriptor, that nobody knows).
inline void rerun_detached(ult* self) noexcept {
  self->join_state.store(join_detached, std::memory_order_relaxed);
}

// ---- Joins and detaches ----------------------------------------------------

// running → joiner. False: the child is no longer running (it ended, or
// another joiner or a detacher came first).
inline bool register_joiner(ult* child, ult* joiner) noexcept {
  std::uintptr_t expected = join_running;
  return child->join_state.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(joiner),
                                                   std::memory_order_acq_rel,
                                                   std::memory_order_acquire);
}

// joiner → running: a joiner whose wait was interrupted leaves. False: the
// child ended first (its end owns the joiner's wake-up) or it withdrew already.
inline bool withdraw_joiner(ult* child, const ult* joiner) noexcept {
  auto expected = reinterpret_cast<std::uintptr_t>(joiner);
  return child->join_state.compare_exchange_strong(expected, join_running,
                                                   std::memory_order_acq_rel,
                                                   std::memory_order_acquire);
}

// running → joiner, for a child its joiner runs inline: it took the child,
// unstarted, from its own deque, and holds its future, so nobody else can
// join, detach or run it: a plain store. (Without a future: register_joiner.)
inline void host_inline(ult* child, ult* joiner) noexcept {
  child->join_state.store(reinterpret_cast<std::uintptr_t>(joiner), std::memory_order_relaxed);
}

// joiner → joiner|ended, for a child run inline as its body returns: the
// host registered itself and, running the child rather than waiting, has no
// wait to withdraw from; a J has no other writer. A plain store, where
// publish_end would read the word and the joiner's may_withdraw_joins.
inline void end_hosted(ult* child, const ult* host) noexcept {
  child->join_state.store(reinterpret_cast<std::uintptr_t>(host) | join_ended_bit, std::memory_order_release);
}

// finished → released (the caller owns the descriptor now). On failure `s`
// holds the state found.
inline bool claim_finished(ult* child, std::uintptr_t& s) noexcept {
  return child->join_state.compare_exchange_weak(s, join_released, std::memory_order_acq_rel,
                                                 std::memory_order_acquire);
}

// running → detached. On failure `s` holds the state found.
inline bool detach_running(ult* child, std::uintptr_t& s) noexcept {
  return child->join_state.compare_exchange_weak(s, join_detached, std::memory_order_acq_rel,
                                                 std::memory_order_acquire);
}

// ---- The distributed mode (under its table's lock) -------------------------

// s (running, a local joiner, detached) → remote: the distributed mode's
// table keeps what s said. On failure `s` holds the state found.
inline bool hand_over(ult* u, std::uintptr_t& s) noexcept {
  return u->join_state.compare_exchange_weak(s, join_remote, std::memory_order_acq_rel,
                                             std::memory_order_acquire);
}

// The word's bytes in the descriptor, for the one copy that must go around
// them: a ULT's image coming home from another process never writes the
// word, which joiners here read without a lock (dist's ult_image.cpp).
inline char* bytes_of(ult* u) noexcept { return reinterpret_cast<char*>(&u->join_state); }
inline constexpr std::size_t size_in_bytes = sizeof(ult::join_state);
// A copy of another process's ULT arrived here: its join lives at its home.
inline void host_foreign(ult* u) noexcept {
  u->join_state.store(join_remote, std::memory_order_release);
}

// Home again (or its remote joiner answered): the ordinary protocol resumes
// from what the table kept (running, a joiner, detached, or remote).
inline void restore(ult* u, std::uintptr_t s) noexcept {
  u->join_state.store(s, std::memory_order_release);
}

// It ended on another process (or its home answered a join here): `joiner`,
// waiting here, owns it.
inline void end_away_for(ult* u, const ult* joiner) noexcept {
  u->join_state.store(ended_for(joiner), std::memory_order_release);
}

// It ended elsewhere and nobody here will join it (its joiner is elsewhere,
// or it was detached): the descriptor is dead here.
inline void released_elsewhere(ult* u) noexcept {
  u->join_state.store(join_released, std::memory_order_release);
}

// It ended elsewhere, unclaimed: a later join here finds it finished.
inline void finished_elsewhere(ult* u) noexcept {
  u->join_state.store(join_finished, std::memory_order_release);
}

}  // namespace join_word
}  // namespace ito::sched
