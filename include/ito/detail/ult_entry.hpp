// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): the
// runtime's entry points that the header-only parts of the C++ API call.
// Included by ito/ult.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ito/ult.hpp"

namespace ito {

namespace detail {

using lowlevel::allocated_ult;

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
