// SPDX-License-Identifier: Apache-2.0
// Starting the helper OS threads of this layer (pool threads, the poller).
#pragma once

#include <atomic>

namespace ito::detail {

// Starts a detached thread running fn(arg) with every signal blocked, so that
// signals meant for the program are delivered to its own threads, and the
// system calls run here never fail with EINTR. Returns 0 or an errno value.
int start_helper_thread(void* (*fn)(void*), void* arg) noexcept;

// For tests: when set, start_helper_thread calls it first and, if it returns
// an errno value, fails with it as pthread_create would (EAGAIN: out of
// threads). Lets a test fail thread creation at a chosen moment.
extern std::atomic<int (*)()> g_helper_start_hook;

}  // namespace ito::detail
