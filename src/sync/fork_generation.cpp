// SPDX-License-Identifier: Apache-2.0
#include "sync/fork_generation.hpp"

#include <pthread.h>

namespace ito::detail {

std::atomic<std::uint32_t> g_fork_generation{0};

namespace {

void next_generation_in_child() noexcept {
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
}

// Registered from a constructor, not when a runtime starts: a child runs its
// fork handlers in the order they were registered, and a program's own child
// handler (an unlock of a mutex some parent thread waited on, the classic
// pthread_atfork pattern) must already see the child's generation.
[[gnu::constructor(101)]] void register_fork_generation_handler() {
  pthread_atfork(nullptr, nullptr, &next_generation_in_child);
}

}  // namespace
}  // namespace ito::detail
