// SPDX-License-Identifier: Apache-2.0
#include "io/fork_child.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace ito::detail {
namespace {

std::atomic<pid_t> g_pid{0};  // this process's, set at load and in a forked child

// pthread_atfork runs prepare handlers in reverse order of registration and
// the others in order: one handler per phase keeps the parts' order plain.
void before_fork() noexcept {
  pool_before_fork();
  poller_before_fork();
}
void after_fork_in_parent() noexcept {
  poller_after_fork_in_parent();
  pool_after_fork_in_parent();
}
void after_fork_in_child() noexcept {
  g_pid.store(getpid(), std::memory_order_relaxed);
  poller_after_fork_in_child();
  fd_table_after_fork_in_child();
  pool_after_fork_in_child();
}

// At load, in the parent: the handlers exist before any pool or poller does.
struct fork_handlers {
  fork_handlers() noexcept {
    g_pid.store(getpid(), std::memory_order_relaxed);
    pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
  }
} g_fork_handlers;

}  // namespace

bool in_vfork_child() noexcept { return getpid() != g_pid.load(std::memory_order_relaxed); }
int this_process_id() noexcept {
  const pid_t p = g_pid.load(std::memory_order_relaxed);
  return p != 0 ? p : getpid();  // before the handlers are registered
}

}  // namespace ito::detail
