// SPDX-License-Identifier: Apache-2.0
// An exception crossing processes. The exception object lives on the heap of
// the process where the ULT threw. It leaves as its type's name and what()
// (export_error, where it ended) and comes back as an ito::dist::remote_error
// (import_error, where it lands), placed in the frame's error box
// (ult::frame_error_offset).
#pragma once

#include <cstddef>
#include <string>

namespace ito::sched {
struct ult;
}

namespace ito::dist::detail {

// "type\0what" of what u threw, or empty; takes it out of the box (which then
// says it has one, holding a null pointer).
std::string export_error(sched::ult* u);

// Puts a remote_error made from export_error's text into u's box (if its
// frame has one and the text is not empty).
void import_error(sched::ult* u, const char* text, std::size_t len);

// A result that is not trivially copyable may hold this process's pointers
// (its heap is not the joiner's): such a ULT never migrates, and its result
// goes to no joiner on another process. An exception it threw instead
// travels as a remote_error; ito::exit leaves no result. Ends the job when u
// has such a result.
void require_exportable(const sched::ult* u);

}  // namespace ito::dist::detail
