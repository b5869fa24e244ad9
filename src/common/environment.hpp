// SPDX-License-Identifier: Apache-2.0
// The ITO_* variables as a whole (environment.cpp): which exist, and the ones
// whose values more than one layer reads.
#pragma once

namespace ito {

// Warns once per process about each ITO_* variable ito does not know.
void warn_about_unknown_variables() noexcept;

// ITO_DUMP_SIGNAL's value as a signal number (a name such as SIGUSR2 or USR2,
// or a number); 0 when it is none, or one the process needs for itself
// (SIGKILL, SIGSTOP, SIGSEGV, SIGBUS).
int dump_signal_from(const char* text) noexcept;

// ITO_DEADLOCK's value: 0 unset or empty, 1 report, 2 abort, 3 ignore, -1 none of these.
int deadlock_choice(const char* text) noexcept;

}  // namespace ito
