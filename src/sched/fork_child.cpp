// SPDX-License-Identifier: Apache-2.0
#include "sched/fork_child.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>

#include "sched/deadlock.hpp"
#include "sched/handles.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult_tls.hpp"

namespace ito::sched {
namespace {

// Runs in the child, on the thread that forked, before fork returns there.
void forget_runtime_in_child() noexcept {
  // First the TCB this thread runs on, perhaps a ULT's TLS block (also in a
  // child forked from such a child, whose runtime is gone or another).
  ult_tls::forked_child(current_worker());
  if (!g_runtime.load(std::memory_order_relaxed)) return;
  forget_helpers_in_child();
  handles::keep_in_forked_child(current_ult(), os_thread_identity());
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

void end_forked_child_thread() noexcept {
  runtime_state* rt = g_runtime.load(std::memory_order_acquire);
  if (rt && current_ult() == &rt->main_ult) {
    // CPython's thread bootstrap returns from the start routine of a thread
    // that forked, created and joined a thread in the child (test_threading's
    // test_3_join_in_forked_from_thread): the child hung here before.
    wait_until_all_finished(rt);
  }
  std::exit(0);
}

}  // namespace ito::sched
