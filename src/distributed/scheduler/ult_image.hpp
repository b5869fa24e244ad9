// SPDX-License-Identifier: Apache-2.0
// A ULT's bytes crossing processes: which bytes a joiner reads, and how a
// copy that arrived is written over a home's descriptor or hosted here.
#pragma once

#include <cstddef>

#include "distributed/scheduler/wire.hpp"

namespace ito::sched {
struct ult;
}

namespace ito::dist::detail {

// Ends the job, naming this rank and the ULT.
[[noreturn]] void fail_for(const sched::ult* u, const char* what);

// The bytes of an ended ULT that its joiner reads: from its frame (or its
// descriptor, whichever is lower) to its stack's top.
char* frame_lo(const sched::ult* u);

// Bytes of a descriptor this process is home to, sent back by another. Its
// join word and the fields that are this process's own (registry links,
// sanitizer fiber, stack origin) are never written, not even for a moment:
// other threads read them meanwhile. The caller sets the join word after.
void write_home_copy(sched::ult* u, const header& h, const char* payload);

// Bytes of a foreign descriptor (and its frame, or its whole stack [lo, hi))
// hosted here from now on.
void write_foreign_copy(sched::ult* u, const header& h, const char* payload, const void* lo,
                        const void* hi);

// An acquire for one ULT in a process whose other ULTs keep running (see
// dsm.hpp release_and_invalidate); counted.
void acquire_for_ult();

}  // namespace ito::dist::detail
