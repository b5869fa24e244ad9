// SPDX-License-Identifier: Apache-2.0
// create_thread's records (ito/detail/task_record.hpp) as the scheduler sees
// them: items of a worker's branch deque, told apart from parallel_invoke's
// branches by a tag bit (records are 64-byte aligned; branches are 8-byte
// aligned records on their callers' stacks, never tagged).
#pragma once

#include <cstdint>

#include "ito/detail/task_record.hpp"
#include "sched/worker.hpp"

namespace ito::sched {

inline ito::detail::branch* queued_item(ito::detail::task_record* r) noexcept {
  return reinterpret_cast<ito::detail::branch*>(
      reinterpret_cast<std::uintptr_t>(static_cast<ito::detail::branch*>(r)) | 1);
}
inline bool is_queued_record(const ito::detail::branch* item) noexcept {
  return reinterpret_cast<std::uintptr_t>(item) & 1;
}
inline ito::detail::task_record* record_of_item(ito::detail::branch* item) noexcept {
  return static_cast<ito::detail::task_record*>(
      reinterpret_cast<ito::detail::branch*>(reinterpret_cast<std::uintptr_t>(item) & ~std::uintptr_t{1}));
}

// A queued record that someone other than its future's holder took: a
// detached ULT that runs it, then frees it or wakes the holder.
ult* record_as_ult(worker* w, ito::detail::branch* item) noexcept;

// Whether the calling ULT runs a record as a call right now (its join took
// it back): ito::exit() then ends that record, even on the main ULT. Walks
// the caller's frames: for that rare call only, never on a join.
bool runs_record_as_call() noexcept;

// The records' memory cached on w, freed at the runtime's end.
void drain_task_records(worker* w) noexcept;

}  // namespace ito::sched
