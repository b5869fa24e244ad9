// SPDX-License-Identifier: Apache-2.0
// Where the scheduler hands over to the distributed mode (src/dist/sched/):
// ULTs whose stacks live in the iso-address stack area migrate between
// processes, and so do the joins and detaches that reach them there.
//
// The scheduler's own paths stay as they are; each one reaches here only
//   - through one test of a descriptor's address against this process's slice
//     of the stack area (a foreign descriptor's memory here is not its own:
//     its join state lives with its home, the process whose slice holds it), or
//   - through the join state `join_remote` (ult.hpp), which the distributed
//     mode stores in a descriptor whose join is handled by messages.
// `g_remote` is null outside the distributed scheduler: one load and a
// predicted branch on the paths that test it.
#pragma once

#include <cstdint>

namespace ito::sched {

struct ult;
struct worker;

struct remote_ops {
  // The stack area (same addresses on every process) and this process's slice.
  std::uintptr_t area_lo = 0, area_hi = 0;
  std::uintptr_t mine_lo = 0, mine_hi = 0;

  // Waits (suspending the running ULT) until `child`'s end is known here, then
  // leaves its frame and descriptor readable here with an ended join state
  // (the caller's own ended state: self | 1). For a foreign child, or one of
  // this process in state join_remote.
  // 0, or EINVAL when another ULT joins it or it is detached. (The caller
  // reads the join state again afterwards: it may have come back meanwhile,
  // or the caller may have moved to the child's process, whose result must
  // stay there; then the child is no longer foreign and is joined locally.)
  int (*wait)(ult* child) = nullptr;
  // detach() of such a ULT: 0 or EINVAL as sched::detach; EAGAIN: its state
  // changed meanwhile, look again.
  int (*detach)(ult* child) = nullptr;
  // The exit hook found join_remote: `self` ended and someone elsewhere must
  // learn it. On the next context's stack; must not block.
  void (*ended)(worker* w, ult* self) = nullptr;
  // release() of a foreign descriptor: its stack goes back to its home.
  void (*release)(ult* u) = nullptr;
  // From an idle worker's scheduler loop, after local stealing failed: lets
  // the distributed mode ask other processes for work now. Never blocks.
  void (*wants_work)(worker* w) = nullptr;

  bool is_foreign(const void* u) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(u);
    return a - area_lo < area_hi - area_lo && a - mine_lo >= mine_hi - mine_lo;
  }
};

// Set by the distributed scheduler before its runtime starts, cleared after
// the runtime stopped.
extern remote_ops* g_remote;

// A descriptor of another process's slice: its memory here must not be read
// (its join goes through g_remote->wait / detach).
inline bool is_foreign(const ult* u) noexcept { return g_remote && g_remote->is_foreign(u); }

}  // namespace ito::sched
