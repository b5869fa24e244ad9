// Starting the helper OS threads of this layer (pool threads, the poller).
#pragma once

namespace ito::detail {

// Starts a detached thread running fn(arg) with every signal blocked, so that
// signals meant for the program are delivered to its own threads, and the
// system calls run here never fail with EINTR. Returns 0 or an errno value.
int start_helper_thread(void* (*fn)(void*), void* arg) noexcept;

}  // namespace ito::detail
