// SPDX-License-Identifier: Apache-2.0
// The runtime: workers, stacks, timers. Constructing it turns the calling OS
// thread into the main ULT, bound to worker 0; destroying it waits for every
// ULT to finish and stops the workers.
#pragma once

#include <cstdio>

#include "ito/options.hpp"

namespace ito {

class runtime {
 public:
  // Throws config_error for bad options; exits with status 2 after naming a
  // bad ITO_* variable. Only one runtime may exist at a time (usage_error).
  explicit runtime(const options& requested = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  unsigned workers() const noexcept;
  const options& settings() const noexcept;
};

// True when the caller runs as a ULT of a live runtime.
bool in_ult() noexcept;
// The index of the worker running the caller, or -1 outside a ULT.
int current_worker_index() noexcept;

// Writes every live ULT of the running runtime to `out`, one per line: its id
// and state (running on worker N; runnable; blocked in a mutex, condition
// variable, join, sleep, I/O... and on which object; finished, not joined).
// For a hung program: also on a signal, with ITO_DUMP_SIGNAL=SIGUSR2 (or any
// signal name or number), and from gdb with the helper docs/DEBUGGING.md
// describes. Returns how many ULTs it listed (0 when no runtime runs). Safe
// from any thread, also while the runtime stops (the stop waits for it).
std::size_t dump_ults(std::FILE* out = stderr);

}  // namespace ito
