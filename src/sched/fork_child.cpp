// SPDX-License-Identifier: Apache-2.0
#include "sched/fork_child.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>

#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"

namespace ito::sched {
namespace {

// Runs in the child, on the thread that forked, before fork returns there.
void forget_runtime_in_child() noexcept {
  if (!g_runtime.load(std::memory_order_relaxed)) return;
  set_current_worker(nullptr);  // a plain OS thread from now on
  publish_debug_table(nullptr);
  g_runtime.store(nullptr, std::memory_order_release);
}

}  // namespace

void install_fork_handler() noexcept {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork(nullptr, nullptr, &forget_runtime_in_child);
}

void end_forked_child_thread() noexcept { std::exit(0); }

}  // namespace ito::sched
