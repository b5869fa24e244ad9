// SPDX-License-Identifier: Apache-2.0
// The one way a layer above the scheduler plugs into it. Each layer installs
// one object of this class in its slot (install_extension):
//
//   slot        installed by                 when
//   tasks       flow (stackless nodes)       static initialisation
//   ult_locals  ULT-local keys (sync/keys)   static initialisation
//   processes   the distributed scheduler    before its runtime starts, and
//                                            removed after it stopped
//
// The scheduler calls only the hooks of its slot on each object; the others
// keep their defaults. Fast paths test one pointer (the slot) with a
// predicted branch; a hook is called only when its layer is present.
//
// Contract (docs/ARCHITECTURE.md, "Extensions"), per hook: who calls, on
// which stack, what it may not do.
//
//  tasks
//   run_some     a worker's scheduler loop, on its scheduler stack, between
//                ULTs; no scheduler lock held. Runs some tasks (run-to-
//                completion code: must not suspend); true if it ran any.
//   has_work     a worker about to park (its idle-list lock not held), any
//                worker: may any task be runnable? Must not block.
//   worker state worker::task_state is the layer's own per-worker pointer.
//
//  ult_locals
//   ult_ending   on the ending ULT's own stack after its body returned (or
//                unwound), only when it has ULT-local values (ult::locals):
//                destroy them. May block (destructors run here).
//
//  processes     (ULTs that migrate between processes; sched/join_word.hpp's
//                remote state)
//   foreign      the address range of descriptors this process hosts copies
//                of (set once, before install): is_foreign() reads it inline.
//   stack_chunks where the runtime's stack pool maps its chunks (set before
//                install; read when a runtime starts).
//   wait         a ULT joining a foreign child, or one of this process in
//                state remote, on that ULT's stack; may suspend it. Returns
//                once the child's end is known here (ended state for the
//                caller), or the caller moved to the child's process; 0, or
//                EINVAL when another ULT joins it or it is detached.
//   detach       detach() of such a ULT, on the caller's stack; must not
//                block. 0 or EINVAL as sched::detach; EAGAIN: its state
//                changed meanwhile, look again.
//   ended        the exit hook found join_remote: on the next context's
//                stack (a switch hook): must not block or suspend.
//   release      release() of a descriptor whose stack is foreign (a copy
//                hosted here): it goes back to its home. Any stack; no block.
//   wants_work   an idle worker's scheduler loop after local stealing
//                failed, on its scheduler stack: ask other processes for
//                work now. Never blocks.
//   placement    create_thread(near(data)), on the creating ULT's stack,
//                before the child starts: the process the child should run
//                in; placement_here: data is here (the child starts here
//                and is not given to other processes' thieves); or
//                placement_none: data is nowhere known, or the child may not
//                leave (an ordinary fork). Never blocks.
//   send_new     then, when placement named a process: the child, ready
//                to start (its context made, counted as spawned here), goes
//                there. Never blocks.
//   Its presence also means: other processes steal from this one's workers
//   (no worker runs alone), an idle worker leaves its park to ask them, the
//   deadlock watch stays off, and ULTs count the reasons they must stay in
//   this process (ult::must_stay).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::sched {

struct ult;
struct worker;
struct runtime_state;

class extension {
 public:
  virtual ~extension() = default;

  // ---- tasks
  virtual bool run_some(worker*) { return false; }
  virtual bool has_work(runtime_state*) { return false; }

  // ---- ult_locals
  virtual void ult_ending(ult*) {}

  // ---- processes
  struct address_range {
    std::uintptr_t area_lo = 0, area_hi = 0;  // every process's descriptors
    std::uintptr_t mine_lo = 0, mine_hi = 0;  // this process's own
    bool contains_foreign(const void* u) const noexcept {
      const auto a = reinterpret_cast<std::uintptr_t>(u);
      return a - area_lo < area_hi - area_lo && a - mine_lo >= mine_hi - mine_lo;
    }
  };
  address_range foreign;
  // Where the runtime's stack pool maps its chunks (stack_pool::chunk_source,
  // same contract), or null: anywhere.
  void* (*stack_chunks)(std::size_t bytes) = nullptr;
  virtual int wait(ult*) { return 0; }
  virtual int detach(ult*) { return 0; }
  virtual void ended(worker*, ult*) noexcept {}
  virtual void release(ult*) noexcept {}
  virtual void wants_work(worker*) noexcept {}
  static constexpr int placement_none = -1, placement_here = -2;
  virtual int placement(const ult*, const void*) noexcept { return placement_none; }
  virtual void send_new(ult*, int) noexcept {}
};

enum class extension_slot : unsigned { tasks, ult_locals, processes };
inline constexpr unsigned extension_slots = 3;

// Installs (or, with null, removes) the slot's extension. tasks and
// ult_locals: before any runtime starts; processes: while none runs.
void install_extension(extension_slot slot, extension* e) noexcept;

namespace detail {
extern extension* g_extensions[extension_slots];
}

inline extension* tasks_extension() noexcept {
  return detail::g_extensions[static_cast<unsigned>(extension_slot::tasks)];
}
inline extension* locals_extension() noexcept {
  return detail::g_extensions[static_cast<unsigned>(extension_slot::ult_locals)];
}
// Null outside the distributed scheduler: one load and a predicted branch on
// the paths that test it.
inline extension* processes_extension() noexcept {
  return detail::g_extensions[static_cast<unsigned>(extension_slot::processes)];
}

// A descriptor of another process's slice: its memory here must not be read
// (its join goes through the processes extension's wait / detach).
inline bool is_foreign(const ult* u) noexcept {
  extension* p = processes_extension();
  return p && p->foreign.contains_foreign(u);
}

}  // namespace ito::sched
