// SPDX-License-Identifier: Apache-2.0
// The exception globals of a second libstdc++ in the process.
//
// libito-preload.so links its own libstdc++, hidden (src/preload/
// CMakeLists.txt): a C++ program run under it throws and catches with the
// libstdc++ it was linked with, whose per-thread exception globals (the
// caught-exception stack, the uncaught count) are the worker's OS thread's
// as much as ito's own copy's are. A ULT that blocks inside a catch block
// must find its own there when it resumes, whichever worker it resumes on, so
// the switch carries both copies (switch_eh).
#pragma once

#include "sched/ult.hpp"

namespace ito::sched {

// The calling OS thread's globals in the process's global libstdc++ (the one
// dlsym(RTLD_DEFAULT) finds) when that is not ito's own copy; null when it is
// (libito.so, libito.a with a shared libstdc++) or when there is none (a C
// program under the preload). Looked up as each worker's thread starts: a
// libstdc++ loaded later (dlopen) is not carried.
eh_globals* program_eh_globals() noexcept;

}  // namespace ito::sched
