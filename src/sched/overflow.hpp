// Stack-overflow reports: a SIGSEGV in a ULT's guard page prints the ULT and
// its stack size and aborts; any other SIGSEGV goes to the previous handler.
#pragma once

namespace ito::sched {

void install_overflow_handler();
// Gives the calling OS thread an alternate signal stack; returns it.
void* install_overflow_altstack();
void remove_overflow_altstack(void* altstack);

}  // namespace ito::sched
