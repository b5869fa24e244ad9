// SPDX-License-Identifier: Apache-2.0
// The ITO_* variables as a whole (environment.cpp): the warning about names
// settings.hpp does not declare, and the parser of ITO_DUMP_SIGNAL, whose
// values are signals (more than one layer reads it).
#pragma once

namespace ito {

// Warns once per process about each ITO_* variable ito does not know.
void warn_about_unknown_variables() noexcept;

// ITO_DUMP_SIGNAL's value as a signal number (a name such as SIGUSR2 or USR2,
// or a number); 0 when it is none, or one the process needs for itself
// (SIGKILL, SIGSTOP, SIGSEGV, SIGBUS).
int dump_signal_from(const char* text) noexcept;

}  // namespace ito
