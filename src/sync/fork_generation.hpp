// SPDX-License-Identifier: Apache-2.0
// Which fork this process is: 0 in the process that started, one more in each
// forked child. A child holds copies of its parent's sync objects: their
// queues may hold the records of waiters whose threads the fork did not copy,
// and a once_flag may say "running" for a routine nobody runs there. Waiter
// records and a running once_flag carry the generation they were made in, so
// the child tells them apart. Only slow paths read it (a wait, a wake).
#pragma once

#include <atomic>
#include <cstdint>

namespace ito::detail {

// Written only in a forked child by its one thread, before it returns from fork.
extern std::atomic<std::uint32_t> g_fork_generation;

inline std::uint32_t fork_generation() noexcept {
  return g_fork_generation.load(std::memory_order_relaxed);
}

}  // namespace ito::detail
