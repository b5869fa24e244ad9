// SPDX-License-Identifier: Apache-2.0
// The low-level ULT API: allocate a ULT with room at the top of its
// stack, construct anything there, then fork it. Also join, detach, yield, exit.
#pragma once

#include "ito/cxx20.hpp"

#include <cstddef>
#include <cstdint>

namespace ito {

struct ult_id {
  void* p = nullptr;
  friend bool operator==(ult_id, ult_id) = default;
};

struct allocated_ult {
  ult_id id;
  void* ptr;  // `size` bytes, 16-byte aligned, at the top of the new ULT's stack
};

// All of these must be called from a ULT; outside one they throw usage_error(EPERM).
// allocate throws usage_error(E2BIG) when `size` does not fit the new ULT's
// stack with room left for it to run (docs/ARCHITECTURE.md, Stacks).
allocated_ult allocate(std::size_t size);
// Runs func(th.ptr) as a new ULT, child first: the caller resumes when a worker
// gets to it. An exception escaping func aborts the process.
void fork(allocated_ult th, void (*func)(void*));
// Waits for the ULT to end and frees it; the bytes at ptr are gone afterwards.
// Of two racing join/detach calls on one id exactly one succeeds; the other
// throws usage_error: EINVAL (detached, or being joined), ESRCH (joined),
// EDEADLK (itself). A ULT made by create_thread belongs to its future: EINVAL.
void join(ult_id id);
// The ULT will free itself when it ends; it must not be joined. Errors as join.
void detach(ult_id id);
// Lets other ULTs run. push_to_head: run after everything else on this worker,
// and be the first to be stolen.
void yield(bool push_to_head = false);
// Ends the calling ULT: unwinds its stack (destructors run) to its entry.
[[noreturn]] void exit();

// The running ULT's id (0 for the main ULT), or ~0 outside a ULT.
unsigned long long this_ult_id() noexcept;

// Suspends the calling ULT for at least `nanoseconds`; its worker runs others.
void sleep_for_ns(long long nanoseconds);

namespace detail {
// Used by the header-only parts of the C++ API.
[[noreturn]] void throw_outside_ult(const char* function);
bool ult_finished(ult_id id) noexcept;
void ult_wait(ult_id id);       // waits, does not free
void ult_release(ult_id id);    // frees a finished, waited-for ULT
bool ult_exited(ult_id id) noexcept;  // ended by exit()
// Destroys what a ULT's frame holds when the ULT is freed; orphaned_id is the
// ULT's id when nobody joined it (a stored exception is reported), else 0.
using frame_cleanup_fn = void (*)(void* frame, unsigned long long orphaned_id);
// Sets the running ULT's frame cleanup (a frame trivial to destroy has none
// until its ULT stores an exception there).
void set_own_cleanup(frame_cleanup_fn cleanup) noexcept;
// create_thread's two halves: allocate (throws usage_error outside a ULT; the
// cleanup destroys what the frame holds when the ULT is freed; on_exception
// runs inside the ULT entry's handler when the body throws), then start.
// Its id is only handed out after the start, which lets a child that ends
// before anyone else could see it skip an atomic exchange.
// result_local: the result type is not trivially copyable (the distributed
// mode keeps such a ULT in its process).
// error_offset: where in the frame a thrown exception is kept (a
// result_box<std::exception_ptr>), for the distributed mode to carry it to a
// joiner on another process; 0: not kept there.
allocated_ult spawn_prepare(std::size_t size, frame_cleanup_fn cleanup,
                            void (*on_exception)(void* frame, bool exiting),
                            std::uint32_t error_offset = 0, bool result_local = false);
void spawn_start(allocated_ult th, void (*func)(void*)) noexcept;
// spawn_start for create_thread(near(data)): in the distributed mode, the ULT
// may start in the process holding data instead.
void spawn_start_near(allocated_ult th, void (*func)(void*), const void* data) noexcept;
}  // namespace detail

}  // namespace ito
